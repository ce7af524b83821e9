"""`describe` reads like `kubectl describe`: Name/Kind/Status first, for a pending job why it waits right after
(not `reason: -` with the explanation two pages down), labels one per line, Allocations, and the object's history
from the journal as Events (who changed it, when, at which revision)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.clikit import SAMPLES, gpuadmin, state  # noqa: F401  (state: a fixture)
from tests.cli.test_golden import check_golden, invoke

PENDING = "gpt-pretrain-405b"  # pending in the OCI sample: its queue is at its limit


@pytest.mark.parametrize("fmt", ("text", "json"))
def test_describe_pending_job(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, err = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "describe", "job", PENDING,
                            "-o", fmt)
    assert code == 0, err
    check_golden(f"describe-job-pending.{fmt}", out)


def test_a_pending_job_says_why_it_waits_first(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "describe", "job", PENDING)
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines[:5]] == ["Name", "Kind", "Status", "Pending", "  Message"]
    assert lines[3].split() == ["Pending:", "over-limit"]
    assert any(line.strip().startswith("Remedy:") for line in lines[:8])
    assert "reason: -" not in out.lower()
    _, data, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "describe", "job", PENDING,
                        "-o", "json")
    described = json.loads(data)
    assert described["pending"]["reason"] == "over-limit"
    assert described["summary"]["reason"] == described["pending"]["summary"]  # what `get jobs` says


def test_labels_one_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "describe", "node", "gpu-h100-07")
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("Labels:"))
    assert lines[first].split() == ["Labels:", "pool=mig"]
    assert lines[first + 1].strip() == "node-role.kubernetes.io/runai-gpu-worker=true"
    assert lines[first + 1].startswith(" " * 8)


def test_events_come_from_the_journal(state: Path, tmp_path: Path) -> None:  # noqa: F811
    me = json.loads(gpuadmin("whoami", "-o", "json").out)["user"]
    changes = tmp_path / "cordon.yaml"
    changes.write_text("changes:\n  - op: cordon\n    node: gpu-h100-07\n", encoding="utf-8")
    assert gpuadmin("--state", state, "apply", "-f", changes, "--yes").code == 0
    assert gpuadmin("--state", state, "undo", "--yes").code == 0
    text = gpuadmin("--state", state, "describe", "node", "gpu-h100-07").out
    events = text[text.index("Events:"):].splitlines()
    assert events[1].split()[:4] == ["REVISION", "AGE", "BY", "CHANGE"]
    newest, older = events[2].split(), events[3].split()
    assert newest[0] == "2" and newest[2] == me and newest[3:6] == ["restore", "(undoes", "#2)"]
    assert older[0] == "1" and older[2] == me and older[3] == "cordon"
    assert events[3].endswith("state: ready -> cordoned")
    data = json.loads(gpuadmin("--state", state, "describe", "node", "gpu-h100-07", "-o", "json").out)
    assert [(e["revision"], e["ops"], e["actor"]) for e in data["events"]] == [(2, ["restore"], me),
                                                                              (1, ["cordon"], me)]
    other = json.loads(gpuadmin("--state", state, "describe", "node", "gpu-h100-01", "-o", "json").out)
    assert other["events"] == []  # an entry that touched another node is not this one's history


def test_a_job_history_names_who_submitted_it(state: Path, tmp_path: Path) -> None:  # noqa: F811
    me = json.loads(gpuadmin("whoami", "-o", "json").out)["user"]
    changes = tmp_path / "submit.yaml"
    changes.write_text("changes:\n  - op: submit-job\n    job: {name: probe, queue: interns, request: {gpus: 1},"
                       " status: pending}\n", encoding="utf-8")
    assert gpuadmin("--state", state, "apply", "-f", changes, "--yes").code == 0
    data = json.loads(gpuadmin("--state", state, "describe", "job", "probe", "-o", "json").out)
    assert [(e["revision"], e["ops"], e["actor"]) for e in data["events"]] == [(1, ["submit-job"], me)]
