"""Issue 10, item 5: a refused plan prints no node commands and no "No changes"; follow-on violations are
grouped under their cause; a typo'd MIG profile is `mig.profile-exists` with the model's profiles, starts given
or not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.clikit import SAMPLES, gpuadmin

OCI = SAMPLES / "oci-h100.yaml"
PROFILES = "profiles of H100-SXM5-80GB: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"


def _plan(tmp_path: Path, body: str, *extra: str) -> tuple[int, str, str]:
    changes = tmp_path / "changes.yaml"
    changes.write_text(f"changes:\n  - {body}\n", encoding="utf-8")
    result = gpuadmin("--inventory", OCI, "plan", "-f", changes, *extra)
    return result.code, result.out, result.err


@pytest.mark.parametrize("instance", ["{profile: 3g.45gb}", "{profile: 3g.45gb, start: 4}"])
def test_a_typod_profile_is_profile_exists_with_or_without_a_start(tmp_path: Path, instance: str) -> None:
    code, out, _ = _plan(tmp_path, f"{{op: set-mig, node: gpu-h100-06, gpu: 1, instances: [{instance}]}}")
    assert code == 1
    assert "[mig.profile-exists]" in out and PROFILES in out
    assert "mig.layout-fits" not in out
    assert "Node commands" not in out and "nvidia-smi" not in out
    assert "No changes" not in out


def test_a_refused_plan_has_no_commands_in_json(tmp_path: Path) -> None:
    code, out, _ = _plan(tmp_path, "{op: set-mig, node: gpu-h100-06, gpu: 1, instances: [{profile: 3g.45gb, "
                                   "start: 4}]}", "-o", "json")
    data = json.loads(out)
    assert code == 1 and not data["allowed"] and data["commands"] == {}


def test_follow_on_violations_are_grouped_under_their_cause(tmp_path: Path) -> None:
    code, out, _ = _plan(tmp_path, "{op: set-mig, node: gpu-h100-07, gpu: 0, instances: [{profile: 7g.80gb, "
                                   "start: 0}]}")
    assert code == 1
    lines = out.splitlines()
    cause = next(i for i, line in enumerate(lines) if "[mig.repartition-evicts]" in line)
    assert lines[cause].startswith("  ✗")
    assert "which also breaks (3):" in out
    follow = [line for line in lines if "[placement." in line]
    assert len(follow) == 3 and all(line.startswith("        - ") for line in follow)
    assert all(i > cause for i, line in enumerate(lines) if "[placement." in line)
    data = json.loads(_plan(tmp_path, "{op: set-mig, node: gpu-h100-07, gpu: 0, instances: [{profile: 7g.80gb, "
                                      "start: 0}]}", "-o", "json")[1])
    assert [v.get("caused_by") for v in data["violations"]] == [None, 0, 0, 0]
