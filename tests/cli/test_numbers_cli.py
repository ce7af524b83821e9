"""Numbers are finite and bounded everywhere they enter (issue 18, points 4, 14 and 15), through the real CLI.

`.inf` once passed `validate`, was stored as `null` and left every later command on the state exiting 2; a
GPU index of 10^20 passed `validate`; a 5,000-digit integer crashed the reader with a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .clikit import SAMPLES, gpuadmin, state_from

OCI = (SAMPLES / "oci-h100.yaml").read_text(encoding="utf-8")
QUEUE = "  - {name: research, quota: {gpus: 32}, limit: {gpus: 48}, over_quota_weight: 2, priority: 100}"
GPU = "      - {index: 7, model: H100-SXM5-80GB, mode: full}"


def damaged(tmp_path: Path, old: str, new: str) -> Path:
    assert OCI.count(old) >= 1, old
    path = tmp_path / "damaged.yaml"
    path.write_text(OCI.replace(old, new, 1), encoding="utf-8")
    return path


INVENTORY_DAMAGE = [
    (QUEUE, QUEUE.replace("over_quota_weight: 2", "over_quota_weight: .inf"), "queues[0].over_quota_weight",
     "must be a finite number"),
    (QUEUE, QUEUE.replace("quota: {gpus: 32}", "quota: {gpus: 32, gpu_memory_gib: 1e999}"),
     "queues[0].quota.gpu_memory_gib", "must be a finite number"),
    (GPU, GPU.replace("index: 7", "index: 100000000000000000000"), ".gpus[7].index", "is out of range"),
    (GPU, GPU.replace("index: 7", "index: 64"), ".gpus[7].index", "must be at most 63"),
    (QUEUE, QUEUE.replace("priority: 100", "priority: " + "9" * 5000), "queues[0].priority", "is out of range"),
]


def test_the_damage_is_in_the_sample() -> None:
    assert QUEUE in OCI and GPU in OCI


@pytest.mark.parametrize(("old", "new", "path", "message"), INVENTORY_DAMAGE)
def test_validate_and_init_refuse_an_unbounded_number(tmp_path: Path, old: str, new: str, path: str,
                                                      message: str) -> None:
    inventory = damaged(tmp_path, old, new)
    for args in (("validate", inventory), ("--state", tmp_path / "state", "init", "--from", inventory),
                 ("--inventory", inventory, "get", "queues", "-o", "json")):
        result = gpuadmin(*args)
        assert result.code == 2, (args, result)
        assert f"{inventory}:" in result.err and path in result.err and message in result.err, result.err
        assert "Traceback" not in result.err and "Infinity" not in result.out
    assert not (tmp_path / "state").exists()


CHANGE_DAMAGE = [
    ("{op: set-quota, queue: research, over_quota_weight: .inf}", "changes[0].over_quota_weight",
     "must be a finite number"),
    ("{op: set-quota, queue: research, quota: {gpus: 1, gpu_memory_gib: 1e999}}", "changes[0].quota.gpu_memory_gib",
     "must be a finite number"),
    ("{op: set-quota, queue: research, limit: {gpus: 1, gpu_memory_gib: .nan}}", "changes[0].limit.gpu_memory_gib",
     "must be a finite number"),
    ("{op: set-sharing, node: gpu-h100-01, fractions: dynamic, reserved_gib: .inf}", "changes[0].reserved_gib",
     "must be a finite number"),
    ("{op: set-time-slicing, node: gpu-h100-01, gpu: 0, replicas: 100000}", "changes[0].replicas",
     "must be at most 1024"),
    ("{op: set-mode, node: gpu-h100-01, gpu: 100000000000000000000, mode: full}", "changes[0].gpu",
     "is out of range"),
    ("{op: submit-job, job: {name: j, queue: research, request: {gpus: 1, cpus: .inf}}}",
     "changes[0].job.request.cpus", "must be a finite number"),
    ("{op: add-node, node: {name: n, platform: baremetal, cpus: 1e999}}", "changes[0].node.cpus",
     "expected an integer"),
    ("{op: add-queue, queue: {name: q, over_quota_weight: 1e999}}", "changes[0].queue.over_quota_weight",
     "must be a finite number"),
    ("{op: restore, kind: queue, name: q, seq: 9223372036854775808}", "changes[0].seq", "is out of range"),
]


@pytest.mark.parametrize(("change", "path", "message"), CHANGE_DAMAGE)
def test_apply_refuses_an_unbounded_number_and_changes_nothing(tmp_path: Path, change: str, path: str,
                                                               message: str) -> None:
    state = state_from("oci-h100.yaml", tmp_path / "state")
    before = gpuadmin("--state", state, "get", "queues", "-o", "json")
    changes = tmp_path / "changes.yaml"
    changes.write_text(f"changes:\n  - {change}\n", encoding="utf-8")
    for command in ("plan", "apply"):
        result = gpuadmin("--state", state, command, "-f", changes, *(("--yes",) if command == "apply" else ()))
        assert result.code == 2, result
        assert f"{changes}:2:" in result.err and path in result.err and message in result.err, result.err
    after = gpuadmin("--state", state, "get", "queues", "-o", "json")
    assert after.code == 0 and after.out == before.out
