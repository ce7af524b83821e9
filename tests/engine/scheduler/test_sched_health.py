"""Issue 23: a GPU fenced as unhealthy (`set-gpu-health`) takes no new work.

The scheduler's filters offer nothing on it and say so with their own code (`unhealthy`), which `explain` reads;
the planner's rule `placement.gpu-healthy` refuses a bind onto it by hand; the jobs already on it keep running.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sched_helpers import H100, binds, cluster, job, node, run

from gpuadmin.engine.scheduler.node_filters import NO_NEEDS, filter_node

FENCE = {"state": "unhealthy", "reason": "XID 79: GPU has fallen off the bus", "by": "ops"}


def _gpus(fenced: set[int], n: int = 8, **extra: Any) -> list[dict[str, Any]]:
    return [{"index": i, "model": H100, "mode": "full", **({"health": FENCE} if i in fenced else {}), **extra}
            for i in range(n)]


def test_a_whole_gpu_job_never_lands_on_a_fenced_gpu() -> None:
    state = cluster([node("n1", gpus=_gpus({3}))], [job("seven", gpus=7)])
    placed = binds(run(state))["seven"]
    assert sorted(g for _, g, _ in placed) == [0, 1, 2, 4, 5, 6, 7]


def test_a_node_short_because_of_a_fence_fails_with_the_filters_own_reason_and_explain_says_so() -> None:
    state = cluster([node("n1", gpus=_gpus({3})), node("n2", gpus=_gpus(set()), state="cordoned")],
                    [job("eight", gpus=8)])
    result = run(state)
    assert result.pending == ["eight"]
    cycle = result.cycle
    verdicts = Counter(filter_node(nc, cycle.shapes["eight"], NO_NEEDS, cycle.resources, cycle.vms).code
                       for nc in (*cycle.index.nodes, *cycle.index.blocked))
    assert verdicts == Counter({"unhealthy": 1, "node-state": 1})
    explained = result.explanations["eight"]
    assert explained.nodes is not None and "1 with GPUs fenced as unhealthy" in explained.nodes
    assert "fenced as unhealthy" in explained.message
    assert explained.details["nodes_short_by_fenced_gpus"] == 1


def test_a_fence_is_not_the_reason_where_healthy_gpus_alone_decide() -> None:
    # 8 GPUs, 1 fenced and 6 held: a job of 2 GPUs would not fit even with the fenced GPU healthy
    held = [job(f"h{i}", gpus=1, placement=[{"node": "n1", "gpu": i}]) for i in (0, 1, 2, 4, 5, 6)]
    state = cluster([node("n1", gpus=_gpus({3}))], [*held, job("two", gpus=3)])
    result = run(state)
    assert result.pending == ["two"]
    assert result.verdicts["two"].count("unhealthy") == 0
    assert result.verdicts["two"].count("capacity") == 1


def test_a_fenced_mig_gpu_offers_no_instance() -> None:
    mig = [{"profile": "1g.10gb", "start": s} for s in range(7)]
    gpus = [{"index": 0, "model": H100, "mode": "mig", "mig": mig, "health": FENCE},
            {"index": 1, "model": H100, "mode": "full"}]
    state = cluster([node("n1", gpus=gpus)], [job("small", mig="1g.10gb")])
    result = run(state)
    assert result.pending == ["small"]
    assert result.verdicts["small"].count("unhealthy") == 1
    # nor does the repartition remedy offer to re-carve the fenced GPU: only the healthy full one
    explained = result.explanations["small"]
    assert all(change.get("gpu") != 0 for change in explained.remedy_changes), explained.remedy_changes


def test_a_fence_keeps_the_jobs_already_running_on_the_gpu() -> None:
    state = cluster([node("n1", gpus=_gpus({3}))],
                    [job("on-it", gpus=1, placement=[{"node": "n1", "gpu": 3}]), job("more", gpus=1)])
    result = run(state)
    assert result.preempted == []
    assert binds(result)["more"] != [("n1", 3, None)]
