"""Issue 21, point 16b, through the real CLI: time-slicing replicas are bounded (1 to 1,024, exit 2 naming the
file, line and field; fewer than 2 is refused by the device plugin's rule), and a plan above 64 replicas of one
GPU warns, in text and JSON, without refusing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.clikit import ROOT, gpuadmin

CLUSTER = ROOT / "tests" / "tui" / "fixtures" / "cluster.yaml"


def _changes(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "changes.yaml"
    path.write_text(f"changes:\n{body}")
    return path


def test_replicas_past_their_bounds_are_bad_input(tmp_path: Path) -> None:
    path = _changes(tmp_path, "  - {op: set-time-slicing, node: gpu-h100-09, gpu: 0, replicas: 0}\n"
                              "  - {op: set-mode, node: gpu-h100-09, gpu: 1, mode: time-sliced, replicas: 100000}\n")
    result = gpuadmin("--inventory", CLUSTER, "plan", "-f", path)
    assert result.code == 2
    assert f"{path}:2:65: changes[0].replicas: must be at least 1, got 0" in result.err
    assert f"{path}:3:76: changes[1].replicas: must be at most 1024, got 100000" in result.err


def test_many_replicas_warn_and_are_allowed(tmp_path: Path) -> None:
    path = _changes(tmp_path, "  - {op: set-time-slicing, node: gpu-h100-09, gpu: 0, replicas: 100}\n")
    text = gpuadmin("--inventory", CLUSTER, "plan", "-f", path)
    assert text.code == 0, text.err
    assert "ALLOWED" in text.out and "Warnings (allowed, but look twice):" in text.out
    assert "! [mode.many-replicas] gpu-h100-09/0: GPU 0 on gpu-h100-09 is time-sliced 100 ways" in text.out
    as_json = json.loads(gpuadmin("--inventory", CLUSTER, "plan", "-f", path, "-o", "json").out)
    assert [w["rule"] for w in as_json["warnings"]] == ["mode.many-replicas"] and as_json["allowed"]
    quiet = _changes(tmp_path, "  - {op: set-time-slicing, node: gpu-h100-09, gpu: 0, replicas: 64}\n")
    assert json.loads(gpuadmin("--inventory", CLUSTER, "plan", "-f", quiet, "-o", "json").out)["warnings"] == []
