"""Random change sequences through plan → check → apply → undo (Hypothesis).

After every step: the state passes every rule; a refused plan leaves the state byte-identical; re-planning
an applied, idempotent change is a no-op (an empty diff) and a non-idempotent one is refused; undo (the
inverse plan) is allowed and restores the previous state exactly. CI runs 500 sequences; `-m slow` 10,000.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gpuadmin.catalog import get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.ops import OPS
from gpuadmin.engine.planner import inverse, plan, released_slots
from gpuadmin.engine.state import ClusterState
from gpuadmin.service import check_state
from gpuadmin.store import load_inventory

SAMPLES = Path(__file__).resolve().parents[2] / "sample-inventories"
IDEMPOTENT = tuple(spec.model for spec in OPS.values() if spec.idempotent)  # what the registry claims, held here
BASE = load_inventory(SAMPLES / "oci-h100.yaml")


def snapshot(state: ClusterState) -> str:
    return json.dumps(state.to_inventory().model_dump(mode="json"), sort_keys=True)


def _mig_layout(draw: Any, model_name: str) -> list[dict[str, Any]]:
    model = get_catalog().model(model_name)
    assert model is not None
    profiles = [p for p in model.mig_profiles]
    count = draw(st.integers(1, 4))
    out = []
    for _ in range(count):
        p = draw(st.sampled_from(profiles))
        start = draw(st.one_of(st.none(), st.sampled_from(p.starts), st.integers(0, 7)))
        out.append({"profile": p.name, "start": start})
    return out


@st.composite
def a_change(draw: Any, state: ClusterState) -> ch.Change:
    nodes = sorted(state.nodes)
    node = state.nodes[draw(st.sampled_from(nodes))]
    gpu = draw(st.sampled_from(node.gpus))
    jobs = list(state.jobs.values())
    kind = draw(st.sampled_from(["set-mig", "set-mode", "set-ts", "sharing", "cordon", "uncordon", "drain",
                                 "quota", "bind", "preempt", "cancel", "submit"]))
    value: dict[str, Any]
    if kind == "set-mig":
        value = {"op": "set-mig", "node": node.name, "gpu": gpu.index, "instances": _mig_layout(draw, gpu.model)}
    elif kind == "set-mode":
        mode = draw(st.sampled_from(["full", "time-sliced"]))
        value = {"op": "set-mode", "node": node.name, "gpu": gpu.index, "mode": mode}
        if mode == "time-sliced":
            value["replicas"] = draw(st.integers(1, 8))
    elif kind == "set-ts":
        value = {"op": "set-time-slicing", "node": node.name, "gpu": gpu.index, "replicas": draw(st.integers(1, 8))}
    elif kind == "sharing":
        value = {"op": "set-sharing", "node": node.name, "fractions": draw(st.sampled_from(["dynamic", "off"]))}
        if value["fractions"] == "dynamic" and draw(st.booleans()):
            value["reserved_gib"] = draw(st.sampled_from([0, 0.5, 4, 40]))
    elif kind in ("cordon", "uncordon", "drain"):
        value = {"op": kind, "node": node.name}
    elif kind == "quota":
        queue = draw(st.sampled_from(sorted(state.queues)))
        value = {"op": "set-quota", "queue": queue, "limit": {"gpus": draw(st.integers(0, 64))}}
    elif kind == "bind":
        pending = [j for j in jobs if j.status in ("pending", "preempted")] or jobs
        job = draw(st.sampled_from(pending))
        slots = []
        for _ in range(draw(st.integers(1, 3))):
            n = state.nodes[draw(st.sampled_from(nodes))]
            g = draw(st.sampled_from(n.gpus))
            starts = [i.start for i in g.mig or () if i.start is not None]
            slot: dict[str, Any] = {"node": n.name, "gpu": g.index}
            if starts and draw(st.booleans()):
                slot["mig_start"] = draw(st.sampled_from(starts))
            slots.append(slot)
        value = {"op": "bind-job", "name": job.name, "placement": slots}
    elif kind == "preempt":
        value = {"op": "preempt-job", "name": draw(st.sampled_from(jobs)).name}
    elif kind == "cancel":
        value = {"op": "cancel-job", "name": draw(st.sampled_from(jobs)).name}
    else:
        value = {"op": "submit-job", "job": {
            "name": f"hyp-{draw(st.integers(0, 10_000))}", "queue": draw(st.sampled_from(sorted(state.queues))),
            "request": draw(st.sampled_from([{"gpus": 1}, {"mig": "1g.10gb"}, {"fraction": 0.5},
                                             {"gpus": 8, "nvlink": True}]))}}
    return ch.CHANGE_LIST.validate_python([value])[0]


def run_sequence(data: Any, steps: int) -> None:
    state = ClusterState.from_inventory(BASE)
    assert check_state(state) == []
    for _ in range(steps):
        changes = data.draw(st.lists(a_change(state), min_size=1, max_size=3))
        before = snapshot(state)
        result = plan(state, changes)
        assert snapshot(state) == before, "planning must never write"
        event("allowed" if result.allowed else "refused")
        if not result.allowed:
            continue  # refused: nothing to apply, the state is byte-identical (asserted above)
        state.commit(result.view)
        assert check_state(state) == [], "an allowed plan led to a state that breaks a rule"
        after = snapshot(state)

        again = plan(state, changes)
        if all(isinstance(c, IDEMPOTENT) for c in changes):
            assert again.diff == [], "re-planning applied idempotent changes must be a no-op"
        else:
            assert again.diff == [] or not again.allowed

        undo_changes = inverse(result.diff)
        undo = plan(state, undo_changes, released_slots(result.diff))
        stopped = [v.target.removeprefix("job/") for v in undo.violations
                   if v.rule == "placement.non-preemptible-kept"]
        if stopped:  # undoing the bind of a non-preemptible job stops it: only an admin's override may
            assert set(stopped) <= set(result.effects.bound), undo.violations
            overrides: list[ch.Change] = [ch.PreemptJob(op="preempt-job", name=n, override=True, reason="undo")
                                          for n in stopped]
            undo = plan(state, overrides + undo_changes, released_slots(result.diff))
        assert undo.allowed, f"undo refused: {undo.violations}"
        state.commit(undo.view)
        assert snapshot(state) == before, "undo must restore the previous state exactly"
        reverted = [type(d)(d.kind, d.name, d.after, d.before) for d in result.diff]
        redo = plan(state, inverse(reverted), released_slots(reverted))
        state.commit(redo.view)
        assert snapshot(state) == after


_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


@settings(max_examples=150, **_COMMON)  # type: ignore[arg-type]
@given(st.data())
def test_random_change_sequences(data: Any) -> None:
    run_sequence(data, steps=4)


@pytest.mark.slow  # more examples of the CI slice's sequences; the long run below goes further still
@settings(max_examples=500, **_COMMON)  # type: ignore[arg-type]
@given(st.data())
def test_random_change_sequences_500(data: Any) -> None:
    run_sequence(data, steps=4)


@pytest.mark.slow  # the long stress run: 10,000 sequences of 6 steps
@settings(max_examples=10_000, **_COMMON)  # type: ignore[arg-type]
@given(st.data())
def test_random_change_sequences_long(data: Any) -> None:
    run_sequence(data, steps=6)
