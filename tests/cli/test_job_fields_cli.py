"""The job fields a pod spec needs, through the real CLI on a real state: submit-job stamps the owner and
the submit time, `get jobs` shows AGE and OWNER (and selects by owner), and undo restores the state exactly."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpuadmin.render.rows import age_text
from gpuadmin.store import login_identity
from tests.cli.clikit import gpuadmin, state_from


@pytest.fixture
def vsphere(tmp_path: Path) -> Path:
    return state_from("vsphere-hgx.yaml", tmp_path / "state")


def _job(state: Path, name: str) -> dict[str, object]:
    result = gpuadmin("--state", state, "get", "jobs", name, "-o", "json")
    assert result.code == 0, result.err
    item: dict[str, object] = json.loads(result.out)["items"][0]
    return item


def test_submit_job_stamps_owner_and_time(vsphere: Path, tmp_path: Path) -> None:
    changes = tmp_path / "submit.yaml"
    changes.write_text("changes:\n  - {op: submit-job, job: {name: probe, queue: vdi, request: {gpus: 1}}}\n",
                       encoding="utf-8")
    before = datetime.now(UTC).replace(microsecond=0)
    assert gpuadmin("--state", vsphere, "apply", "-f", changes, "--yes").code == 0
    after = datetime.now(UTC)
    item = _job(vsphere, "probe")
    assert item["owner"] == login_identity().name
    submitted = datetime.fromisoformat(str(item["submitted"]))
    assert before <= submitted <= after
    assert str(item["age"]).endswith("s") or item["age"] == "1m"


def test_get_jobs_shows_age_and_owner_and_selects_by_owner(vsphere: Path) -> None:
    before = datetime.now(UTC)
    wide = gpuadmin("--state", vsphere, "get", "jobs", "-o", "wide")
    after = datetime.now(UTC)
    assert wide.code == 0, wide.err
    header, *lines = wide.out.splitlines()
    columns = header.split()
    assert columns[:7] == ["NAME", "QUEUE", "STATUS", "REQUEST", "PLACEMENT", "AGE", "REASON"]
    assert "OWNER" in columns and "VM" in columns
    row = next(line for line in lines if line.startswith("bert-ft-vm02 "))
    ages = {age_text("2026-11-28T09:12:00+00:00", t) for t in (before, after)}
    assert any(f" {age} " in row for age in ages), (ages, row)
    assert " priya " in row and "esx-hgx-02/vm:train-vm-02" in row
    unstamped = next(line for line in lines if line.startswith("sweep-vm04 "))
    assert " tomas " in unstamped
    assert _job(vsphere, "sweep-vm04")["age"] == "-"  # no submit time in the inventory
    owned = gpuadmin("--state", vsphere, "get", "jobs", "-l", "owner=priya", "-o", "name")
    assert owned.code == 0, owned.err
    assert owned.out.split() == ["job/bert-ft-vm02", "job/llm-eval-vm02"]


def test_undo_of_a_submit_with_every_new_field_restores_the_state(vsphere: Path, tmp_path: Path) -> None:
    exported = gpuadmin("--state", vsphere, "export", "inventory")
    assert exported.code == 0, exported.err
    changes = tmp_path / "submit.yaml"
    changes.write_text(
        "changes:\n"
        "  - op: submit-job\n"
        "    job: {name: full, queue: ml-training, vm: train-vm-03, owner: ana, submitted: 2026-12-02T08:00:00Z,\n"
        "          request: {gpus: 1, cpus: 8, memory_gib: 64}}\n"
        "  - op: submit-job\n"
        "    job: {name: labelled, queue: ml-training, request: {gpus: 1, cpus: 4},\n"
        "          node_selector: {vsphere.cluster: hgx-train},\n"
        "          node_affinity: [{key: hardware, operator: NotIn, values: [PowerEdge-R750xa]}]}\n",
        encoding="utf-8")
    assert gpuadmin("--state", vsphere, "apply", "-f", changes, "--yes").code == 0
    full = _job(vsphere, "full")
    assert full["spec"] == {
        "name": "full", "queue": "ml-training", "request": {"gpus": 1, "nodes": 1, "nvlink": False, "rdma": False,
                                                            "cpus": 8.0, "memory_gib": 64.0},
        "priority": 0, "preemptible": True, "status": "pending", "placement": [], "owner": "ana",
        "submitted": "2026-12-02T08:00:00+00:00", "vm": "train-vm-03",
    }
    entry = gpuadmin("--state", vsphere, "get", "journal", "-o", "json")
    last = json.loads(entry.out)["items"][-1]
    described = gpuadmin("--state", vsphere, "describe", "entry", str(last["id"]))
    assert "node_affinity" in described.out and "cpus" in described.out  # the journal's diff carries them
    assert gpuadmin("--state", vsphere, "undo", "--yes").code == 0
    again = gpuadmin("--state", vsphere, "export", "inventory")
    assert again.out == exported.out


def test_describe_node_says_what_is_not_checked(tmp_path: Path) -> None:
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("version: 1\ncluster: t\nnodes:\n"
                         "  - {name: bare, platform: baremetal, gpus: [{index: 0, model: A30}]}\n"
                         "  - {name: sized, platform: baremetal, cpus: 64, memory_gib: 512,"
                         " gpus: [{index: 0, model: A30}]}\n", encoding="utf-8")
    bare = json.loads(gpuadmin("--inventory", inventory, "describe", "node", "bare", "-o", "json").out)
    assert bare["not_checked"] == ["cpus not known: jobs' cpus requests are not checked on this node",
                                   "memory_gib not known: jobs' memory_gib requests are not checked on this node"]
    sized = json.loads(gpuadmin("--inventory", inventory, "describe", "node", "sized", "-o", "json").out)
    assert "not_checked" not in sized
