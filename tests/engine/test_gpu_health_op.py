"""Issue 23: `set-gpu-health`, the checked change that fences a GPU as unhealthy (and an admin's that clears it).

The planner copies the fence onto the GPU (why, who, when); the fence survives the ops that rebuild a GPU (a
mode change); the service stamps who and when; the gate needs an admin for a plan that clears a fence, by any
op; a bind onto a fenced GPU is refused by rule `placement.gpu-healthy`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import inverse, plan
from gpuadmin.engine.state import ClusterState
from gpuadmin.service import NotPermitted, Service, check_action
from gpuadmin.service.caller import admin_reasons
from gpuadmin.store import load_inventory

SAMPLES = Path(__file__).resolve().parents[2] / "sample-inventories"
OCI = load_inventory(SAMPLES / "oci-h100.yaml")
WHEN = datetime(2026, 12, 4, 11, 0, tzinfo=UTC)


def changes(*values: dict[str, Any]) -> list[ch.Change]:
    return ch.CHANGE_LIST.validate_python(list(values))


def fence(node: str = "gpu-h100-12", gpu: int = 2, **extra: Any) -> dict[str, Any]:
    return {"op": "set-gpu-health", "node": node, "gpu": gpu, "health": "unhealthy",
            "reason": "XID 79: GPU has fallen off the bus", "by": "ops", "since": WHEN.isoformat(), **extra}


def fenced_state(node: str = "gpu-h100-12", gpu: int = 2) -> ClusterState:
    state = ClusterState.from_inventory(OCI)
    done = plan(state, changes(fence(node, gpu)))
    assert done.allowed, done.violations
    state.commit(done.view)
    return state


def test_a_fence_records_why_who_and_when_on_the_gpu() -> None:
    gpu = fenced_state().nodes["gpu-h100-12"].gpu(2)
    assert gpu is not None and gpu.health is not None
    assert (gpu.health.reason, gpu.health.by, gpu.health.since) == ("XID 79: GPU has fallen off the bus", "ops",
                                                                     WHEN)


def test_fencing_a_gpu_jobs_run_on_keeps_them_running() -> None:
    state = ClusterState.from_inventory(OCI)
    held = sorted(state.holders[("gpu-h100-04", 0)])
    done = plan(state, changes(fence("gpu-h100-04", 0)))
    assert done.allowed, done.violations
    assert done.effects.evicted == []
    assert sorted(done.view.holders("gpu-h100-04", 0)) == held


def test_the_op_is_idempotent_and_clearing_removes_the_fence() -> None:
    state = fenced_state()
    assert plan(state, changes(fence())).empty
    cleared = plan(state, changes({"op": "set-gpu-health", "node": "gpu-h100-12", "gpu": 2, "health": "healthy"}))
    assert cleared.allowed
    after = cleared.view.node("gpu-h100-12")
    assert after is not None and after.gpu(2) is not None and after.gpu(2).health is None  # type: ignore[union-attr]


def test_a_fence_survives_a_mode_change() -> None:
    state = fenced_state()
    done = plan(state, changes({"op": "set-mode", "node": "gpu-h100-12", "gpu": 2, "mode": "time-sliced",
                                "replicas": 2}))
    node = done.view.node("gpu-h100-12")
    assert node is not None and node.gpu(2) is not None and node.gpu(2).health is not None  # type: ignore[union-attr]


@pytest.mark.parametrize("bad, why", [
    ({"reason": None}, "needs a 'reason'"),
    ({"reason": "   "}, "says why"),
    ({"reason": "XID 79\x1b[31m"}, "printable"),
    ({"reason": "x" * 501}, "at most 500"),
    ({"health": "healthy"}, "takes no 'reason'"),
    ({"health": "sick"}, "healthy"),
    ({"gpu": 64}, "less than or equal"),
])
def test_bad_fences_are_bad_input(bad: dict[str, Any], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        changes({**fence(), **bad})


def test_a_fence_on_a_missing_gpu_is_refused() -> None:
    done = plan(ClusterState.from_inventory(OCI), changes(fence("gpu-h100-12", 9)))
    assert [v.rule for v in done.violations] == ["change.target-exists"]


def test_a_bind_onto_a_fenced_gpu_is_refused_by_the_rule() -> None:
    state = fenced_state("gpu-h100-12", 2)
    pending = next(j for j in state.jobs.values() if j.status == "pending" and j.request.gpus == 1)
    bind = {"op": "bind-job", "name": pending.name, "placement": [{"node": "gpu-h100-12", "gpu": 2}]}
    refused = plan(state, changes(bind))
    assert "placement.gpu-healthy" in [v.rule for v in refused.violations]
    elsewhere = plan(state, changes({**bind, "placement": [{"node": "gpu-h100-12", "gpu": 3}]}))
    assert "placement.gpu-healthy" not in [v.rule for v in elsewhere.violations]


def test_an_operator_fences_and_only_an_admin_clears_by_any_op() -> None:
    state = ClusterState.from_inventory(OCI)
    fenced = plan(state, changes(fence()))
    check_action("operator", "apply", fenced.changes, fenced.diff)
    state.commit(fenced.view)
    clear = plan(state, changes({"op": "set-gpu-health", "node": "gpu-h100-12", "gpu": 2, "health": "healthy"}))
    with pytest.raises(NotPermitted, match="clears the health fence of GPU 2 on node gpu-h100-12"):
        check_action("operator", "apply", clear.changes, clear.diff)
    check_action("admin", "apply", clear.changes, clear.diff)
    undo = plan(state, inverse(fenced.diff))  # an undo of the fence clears it too
    assert admin_reasons(undo.changes, undo.diff)


def test_the_service_stamps_who_fenced_and_when(tmp_path: Path) -> None:
    Service.init(tmp_path / "state", SAMPLES / "oci-h100.yaml")
    service = Service(state_dir=tmp_path / "state")
    unstamped = ch.SetGpuHealth(op="set-gpu-health", node="gpu-h100-12", gpu=2, health="unhealthy",
                                reason="DBE: 2 volatile double-bit ECC errors")
    service.apply(service.plan([unstamped]))
    health = service.state.nodes["gpu-h100-12"].gpus[2].health
    assert health is not None and health.by == service.caller.identity.name and health.since is not None
