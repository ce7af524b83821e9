"""Property tests on random small clusters (some with dynamic sharing) and job sets: a scheduled plan always
passes the rules (the cycle's own index agreeing: nothing it bound is refused), gangs are whole or absent, no
queue exceeds its limit, non-preemptible jobs are never preempted, and the same input gives the same plan."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_helpers import A100, H100

from gpuadmin.engine.scheduler import schedule
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory

LAYOUTS = [
    [("3g.40gb", 0), ("3g.40gb", 4)],
    [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)],
    [("7g.80gb", 0)],
    [("4g.40gb", 0), ("1g.10gb", 4), ("1g.10gb", 5)],
]
PROFILES = ["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]


@st.composite
def gpus(draw: st.DrawFn, model: str) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        mode = draw(st.sampled_from(["full", "full", "full", "time-sliced", "mig"]))
        gpu: dict[str, Any] = {"index": i, "model": model, "mode": mode}
        if mode == "time-sliced":
            gpu["replicas"] = draw(st.integers(2, 4))
        elif mode == "mig":
            layout = draw(st.sampled_from(LAYOUTS))
            gpu["mig"] = [{"profile": p, "start": s} for p, s in layout]
            if draw(st.booleans()) and len(layout) > 1:
                gpu["mig"][0]["replicas"] = 2
        out.append(gpu)
    return out


@st.composite
def nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 4))):
        model = draw(st.sampled_from([H100, A100]))
        n: dict[str, Any] = {
            "name": f"n{i}",
            "platform": "baremetal",
            "gpus": draw(gpus(model)),
            "nvlink": draw(st.sampled_from(["nvswitch", "pairs", "none"])),
            "state": draw(st.sampled_from(["ready", "ready", "ready", "cordoned"])),
        }
        if draw(st.booleans()):  # fractions may share its full GPUs (Run:ai-style dynamic sharing)
            n["sharing"] = {"fractions": "dynamic", "reserved_gib": draw(st.sampled_from([0.0, 0.5, 4.0]))}
        net = draw(st.sampled_from([None, "net-a", "net-b"]))
        if net:
            n["rdma"] = {"nics": 4, "gbps": 200, "network": net}
        out.append(n)
    return out


@st.composite
def jobs(draw: st.DrawFn, prefix: str, count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, count))):
        kind = draw(st.sampled_from(["gpus", "gpus", "gang", "mig", "fraction", "memory"]))
        req: dict[str, Any]
        if kind == "gpus":
            req = {"gpus": draw(st.integers(1, 8)), "nvlink": draw(st.booleans())}
        elif kind == "gang":
            req = {
                "gpus": draw(st.integers(1, 8)),
                "nodes": draw(st.integers(2, 3)),
                "rdma": draw(st.booleans()),
            }
        elif kind == "mig":
            req = {"mig": draw(st.sampled_from(PROFILES))}
        elif kind == "fraction":
            req = {"fraction": draw(st.sampled_from([0.125, 0.25, 0.5, 0.75]))}
        else:
            req = {"gpu_memory_gib": draw(st.sampled_from([10, 20, 40]))}
        if draw(st.integers(0, 4)) == 0:
            req["model"] = draw(st.sampled_from([H100, A100]))
        j: dict[str, Any] = {
            "name": f"{prefix}{i}",
            "queue": draw(st.sampled_from(["a", "b"])),
            "request": req,
            "priority": draw(st.integers(0, 3)),
            "preemptible": draw(st.booleans()),
        }
        if kind in ("gpus", "mig") and draw(st.integers(0, 3)) == 0:
            j["isolation"] = draw(st.sampled_from(["exclusive", "shared"]))
        out.append(j)
    return out


@st.composite
def queues(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for name in ("a", "b"):
        quota = draw(st.integers(0, 12))
        q: dict[str, Any] = {
            "name": name,
            "quota": {"gpus": quota},
            "priority": draw(st.integers(0, 1)),
            "over_quota_weight": draw(st.sampled_from([0.5, 1.0, 2.0])),
        }
        if draw(st.booleans()):
            q["limit"] = {"gpus": quota + draw(st.integers(0, 8))}
        out.append(q)
    return out


def state_of(data: dict[str, Any]) -> ClusterState:
    return ClusterState.from_inventory(Inventory.model_validate(data, strict=False))


def scenario(draw: st.DrawFn) -> ClusterState:
    """A cluster with running work (placed by a first cycle) and a fresh batch of pending jobs."""
    base = {
        "version": 1,
        "cluster": "prop",
        "queues": draw(queues()),
        "nodes": draw(nodes()),
        "jobs": draw(jobs("r", 10)),
    }
    first = state_of(base)
    result = schedule(first)
    assert result.plan.allowed, result.plan.violations
    first.commit(result.plan.view)
    data = first.to_inventory().model_dump(mode="json", exclude_none=True)
    extra = draw(jobs("p", 10))
    for j in extra:
        j["priority"] += 5  # newcomers outrank the running work: preemption gets exercised
    data["jobs"] += extra
    return state_of(data)


@st.composite
def scenarios(draw: st.DrawFn) -> ClusterState:
    return scenario(draw)


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scenarios(), st.sampled_from(["binpack", "spread"]))
def test_scheduled_plans_pass_the_rules_and_keep_the_invariants(state: ClusterState, policy: str) -> None:
    result = schedule(state, "spread" if policy == "spread" else "binpack")
    plan = result.plan
    assert plan.allowed, plan.violations
    assert not result.cycle.refused, result.cycle.refused  # the index and the rules agree on every bind
    view = plan.view
    # gangs are whole or absent
    for name in result.bound:
        job = view.job(name)
        assert job is not None and job.status == "running"
        req = job.request
        if req.gpus is not None:
            per_node: dict[str, set[int]] = {}
            for s in job.placement:
                per_node.setdefault(s.node, set()).add(s.gpu)
            assert len(per_node) == req.nodes and all(len(g) == req.gpus for g in per_node.values())
        # nothing lands on a node that is not ready
        assert all(view.node(s.node).state == "ready" for s in job.placement)  # type: ignore[union-attr]
    # no queue exceeds its limit
    for q in view.queues():
        if q.limit is not None and q.limit.gpus is not None:
            assert view.queue_usage(q.name).gpus <= q.limit.gpus + 1e-9 or not any(
                view.job(n).queue == q.name for n in result.bound
            )  # type: ignore[union-attr]
    # non-preemptible jobs are never preempted, and a victim is not rebound
    for name in result.preempted:
        assert state.jobs[name].preemptible
        assert name not in result.bound
    # every pending job is bound or explained
    pending = {j.name for j in state.jobs.values() if j.status in ("pending", "preempted")}
    assert pending == set(result.bound) | set(result.pending)
    assert set(result.explanations) == set(result.pending)


@SETTINGS
@given(scenarios())
def test_same_input_same_plan(state: ClusterState) -> None:
    one, two = schedule(state), schedule(state)
    assert [c.model_dump() for c in one.changes] == [c.model_dump() for c in two.changes]
    assert one.plan.hash == two.plan.hash
    assert {k: v.to_json() for k, v in one.explanations.items()} == {
        k: v.to_json() for k, v in two.explanations.items()
    }
