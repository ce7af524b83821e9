"""`schedule` and `explain` through the CLI: dry runs write nothing, a real run applies a checked plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.clikit import SAMPLES, gpuadmin
from tests.cli.test_golden import check_golden, invoke


def test_dry_run_places_what_fits_and_explains_the_rest(state: Path) -> None:
    result = gpuadmin("--state", state, "schedule", "--dry-run", "-o", "json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["allowed"] is True and data["applied_revision"] is None
    assert data["bound"], "the OCI sample has pending jobs that fit"
    for item in data["pending"]:
        assert item["reason"] and item["message"], item
    reasons = {item["job"]: item for item in data["pending"]}
    assert reasons["gpt-pretrain-405b"]["reason"] == "over-limit"
    assert "repartition gpu-h100-07/0 to" in (reasons["video-caption-serve"]["remedy"] or "")
    journal = json.loads(gpuadmin("--state", state, "get", "journal", "-o", "json").out)["items"]
    assert len(journal) == 1, "a dry run writes nothing"


def test_schedule_applies_and_binds(state: Path) -> None:
    dry = json.loads(gpuadmin("--state", state, "schedule", "--dry-run", "-o", "json").out)
    applied = gpuadmin("--state", state, "schedule", "--yes", "-o", "json")
    assert applied.code == 0, applied.err
    data = json.loads(applied.out)
    assert data["applied_revision"] == 1 and data["bound"] == dry["bound"]
    jobs = json.loads(gpuadmin("--state", state, "get", "jobs", "-o", "json").out)["items"]
    status = {j["name"]: j["status"] for j in jobs}
    assert all(status[name] == "running" for name in data["bound"])
    again = json.loads(gpuadmin("--state", state, "schedule", "--dry-run", "-o", "json").out)
    assert again["bound"] == [], "a second cycle finds nothing more to place"


def test_viewer_may_dry_run_but_not_schedule(state: Path) -> None:
    assert gpuadmin("--state", state, "--as-role", "viewer", "schedule", "--dry-run").code == 0
    assert gpuadmin("--state", state, "--as-role", "viewer", "schedule", "--yes").code == 4


def test_explain_unknown_job_is_exit_2() -> None:
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "explain", "nope")
    assert result.code == 2 and "job 'nope' not found" in result.err


@pytest.mark.parametrize("fmt", ("text", "json"))
def test_explain_golden(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "explain", "eval-405b-shard",
                          "-o", fmt)
    assert code == 0
    check_golden(f"explain.{fmt}", out)


@pytest.mark.parametrize("fmt", ("text", "json"))
def test_schedule_golden(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "schedule", "--dry-run",
                          "-o", fmt)
    assert code == 0
    if fmt == "json":
        data = json.loads(out)
        data.pop("stats")  # timings
        out = json.dumps(data, indent=2) + "\n"
    check_golden(f"schedule.{fmt}", out)
