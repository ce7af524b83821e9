"""Issue 10, item 10: `get journal -o wide` shows each entry's command line and what it changed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.clikit import gpuadmin


def test_journal_wide_shows_the_command_line(state: Path, tmp_path: Path) -> None:
    change = tmp_path / "cordon.yaml"
    change.write_text("changes: [{op: cordon, node: gpu-h100-03}]\n", encoding="utf-8")
    assert gpuadmin("--state", state, "apply", "-f", change, "--yes").code == 0
    wide = gpuadmin("--state", state, "get", "journal", "-o", "wide")
    assert wide.code == 0
    header, *rows = wide.out.splitlines()
    assert "COMMAND" in header.split() and "DIFF" in header.split()
    assert f"apply -f {change} --yes" in rows[-1] and "node/gpu-h100-03" in rows[-1]
    items = json.loads(gpuadmin("--state", state, "get", "journal", "-o", "json").out)["items"]
    assert items[-1]["command"].endswith(f"apply -f {change} --yes")
