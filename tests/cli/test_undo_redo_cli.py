"""`undo` twice walks back two changes (it once undid its own undo); `redo` walks forward again."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.clikit import gpuadmin


def _state_of(state: Path, node: str) -> str:
    result = gpuadmin("--state", state, "get", "nodes", node, "-o", "json")
    assert result.code == 0, result.err
    return str(json.loads(result.out)["items"][0]["state"])


def test_undo_undo_redo(state: Path, tmp_path: Path) -> None:
    for node in ("gpu-h100-12", "gpu-h100-10"):
        changes = tmp_path / f"{node}.yaml"
        changes.write_text(f"changes:\n  - {{op: cordon, node: {node}}}\n", encoding="utf-8")
        assert gpuadmin("--state", state, "apply", "-f", changes, "--yes").code == 0
    first = gpuadmin("--state", state, "undo", "--yes")
    assert first.code == 0 and "undo entry" in first.err and "revision 2" in first.err
    second = gpuadmin("--state", state, "undo", "--yes")
    assert second.code == 0 and "revision 1" in second.err
    assert (_state_of(state, "gpu-h100-12"), _state_of(state, "gpu-h100-10")) == ("ready", "ready")
    nothing = gpuadmin("--state", state, "undo", "--yes")
    assert nothing.code == 2 and "nothing to undo" in nothing.err
    redo = gpuadmin("--state", state, "redo", "--yes")
    assert redo.code == 0 and "redo entry" in redo.err
    assert _state_of(state, "gpu-h100-12") == "cordoned" and _state_of(state, "gpu-h100-10") == "ready"
