"""`set-sharing` through the real CLI on a real SQLite state: refused while fractions would be stranded, applied
with them preempted in the same plan (the example of docs/changes.md, run as written), undone exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.clikit import ROOT, gpuadmin


def _doc_example() -> str:
    """The set-sharing change file docs/changes.md shows."""
    text = (ROOT / "docs" / "changes.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(changes:\n.*?)```", text, re.S)
    (example,) = [b for b in blocks if "set-sharing" in b]
    return example


def _export(state: Path) -> str:
    result = gpuadmin("--state", state, "export", "inventory")
    assert result.code == 0, result.err
    return result.out


def test_sharing_off_under_fractions_is_refused_and_changes_nothing(state: Path, tmp_path: Path) -> None:
    before = _export(state)
    changes = tmp_path / "off.yaml"
    changes.write_text("changes:\n  - {op: set-sharing, node: gpu-h100-09, fractions: off}\n", encoding="utf-8")
    refused = gpuadmin("--state", state, "apply", "-f", changes, "--yes", "-o", "json")
    assert refused.code == 1, refused.err
    violations = json.loads(refused.out)["violations"]
    first = violations[0]
    assert (first["rule"], first["target"]) == ("mode.sharing-change-evicts", "gpu-h100-09/0")
    assert "nb-alice" in first["message"] and "preempt" in first["hint"]
    assert {v["target"] for v in violations if v["rule"] == "mode.sharing-change-evicts"} == {
        "gpu-h100-09/0", "gpu-h100-09/1", "gpu-h100-09/2"}
    assert _export(state) == before


def test_the_documented_example_applies_and_undo_restores_the_state_exactly(state: Path, tmp_path: Path) -> None:
    before = _export(state)
    changes = tmp_path / "sharing.yaml"
    changes.write_text(_doc_example(), encoding="utf-8")
    planned = gpuadmin("--state", state, "plan", "-f", changes, "-o", "json")
    assert planned.code == 0, planned.out
    plan = json.loads(planned.out)
    assert len(plan["effects"]["evicted"]) == 8
    after = {d["name"]: d["after"] for d in plan["diff"] if d["kind"] == "node"}
    assert "sharing" not in after["gpu-h100-09"]
    assert after["gpu-h100-12"]["sharing"] == {"fractions": "dynamic", "reserved_gib": 1.0}
    applied = gpuadmin("--state", state, "apply", "-f", changes, "--yes")
    assert applied.code == 0, applied.err
    assert _export(state) != before
    undone = gpuadmin("--state", state, "undo", "--yes")
    assert undone.code == 0, undone.err
    assert _export(state) == before


def test_bad_set_sharing_fields_name_file_line_column_and_exit_2(state: Path, tmp_path: Path) -> None:
    changes = tmp_path / "bad.yaml"
    changes.write_text("changes:\n  - {op: set-sharing, node: gpu-h100-09, fractions: off, reserved_gib: 1}\n"
                       "  - {op: set-sharing, node: gpu-h100-09, fractions: sometimes}\n", encoding="utf-8")
    before = _export(state)
    bad = gpuadmin("--state", state, "apply", "-f", changes, "--yes")
    assert bad.code == 2
    assert f"{changes}:2:5: changes[0]: 'reserved_gib' applies to fractions: dynamic, not off" in bad.err
    assert f"{changes}:3:53: changes[1].fractions: expected one of dynamic, off, got 'sometimes'" in bad.err
    assert _export(state) == before
