"""FGD scoring, checked against hand-computed fragmentation increases (docs/scheduling.md §3)."""

from __future__ import annotations

import pytest
from sched_helpers import H100, binds, cluster, job, node, run

from gpuadmin.engine.scheduler import Workload, cluster_fragmentation, schedule, workload_of
from gpuadmin.engine.scheduler.fgd import TaskClass
from gpuadmin.engine.scheduler.metrics import pool_fragmentation


def ts_node(name: str, n: int = 1) -> dict[str, object]:
    return node(name, gpus=[{"index": i, "model": H100, "mode": "time-sliced", "replicas": 8} for i in range(n)])


def share(s: float) -> TaskClass:
    return TaskClass("share", 1.0, share=s)


def unit(residual: float, replicas: int = 6) -> tuple[str, float, float, int, float, str]:
    return (H100, 79.647, residual, replicas, 1.0, "")


def test_fractional_delta_by_hand_and_fgd_differs_from_best_fit() -> None:
    """Node a: one GPU with 0.5 left; node b: one GPU with 0.7 left; a 0.2 job arrives.

    Workload (running and pending shapes): 0.5, 0.3, 0.2, one each, p = 1/3.
      a: before 0.5 is usable by all three → credit 0.5; after 0.3 by two → credit 0.3·2/3 = 0.2;
         ΔF = −0.2 − (0.2 − 0.5) = +0.1   (best-fit's choice: the least share left)
      b: before 0.7 → credit 0.7; after 0.5 → credit 0.5;  ΔF = −0.2 − (0.5 − 0.7) = 0.0   (FGD's choice)
    """
    w = Workload([share(0.5), share(0.3), share(0.2)])
    assert w.delta_ts((unit(0.5),), (unit(0.3, 5),)) == pytest.approx(0.1)
    assert w.delta_ts((unit(0.7),), (unit(0.5, 5),)) == pytest.approx(0.0)
    assert w.node_fragmentation((), (), (unit(0.3, 5),)) == pytest.approx(0.1)  # 0.3 useless to the 0.5 task

    state = cluster(
        [ts_node("a"), ts_node("b")],
        [
            job("r1", placement=[{"node": "a", "gpu": 0}], fraction=0.5),
            job("r2", placement=[{"node": "b", "gpu": 0}], fraction=0.3),
            job("new", fraction=0.2),
        ],
    )
    assert binds(run(state))["new"] == [("b", 0, None)]


def test_workload_of_the_pending_job_alone_ties_and_model_pinned_shapes_still_count() -> None:
    """Against the pending 0.2 alone both ΔF are 0 (0.3 and 0.5 both stay usable for it). In the cycle the
    running jobs (here pinned to H100, shapes of their own) are part of the workload, so b still wins."""
    w = Workload([share(0.2)])
    assert w.delta_ts((unit(0.5),), (unit(0.3, 5),)) == pytest.approx(0.0)
    assert w.delta_ts((unit(0.7),), (unit(0.5, 5),)) == pytest.approx(0.0)
    state = cluster(
        [ts_node("a"), ts_node("b")],
        [
            job("r1", placement=[{"node": "a", "gpu": 0}], fraction=0.5, model=H100, queue="q"),
            job("r2", placement=[{"node": "b", "gpu": 0}], fraction=0.3, model=H100, queue="q"),
            job("new", fraction=0.2),
        ],
    )
    # r1 and r2 now have a model, a different shape; the workload has 0.5@H100, 0.3@H100 and 0.2
    # ΔF(a) = −0.2 − (0.3·2/3 − 0.5) = +0.1, ΔF(b) = −0.2 − (0.5 − 0.7) = 0.0: still b
    assert binds(run(state))["new"] == [("b", 0, None)]


def test_gpu_choice_inside_a_node_minimises_the_node_delta() -> None:
    """One node, two shared GPUs with 0.5 and 0.7 left: the same Δ as above picks GPU 1 (0.7 left)."""
    state = cluster(
        [ts_node("a", 2)],
        [
            job("r1", placement=[{"node": "a", "gpu": 0}], fraction=0.5),
            job("r2", placement=[{"node": "a", "gpu": 1}], fraction=0.3),
            job("new", fraction=0.2),
        ],
    )
    assert binds(run(state))["new"] == [("a", 1, None)]


def test_whole_gpu_delta_keeps_the_larger_domain() -> None:
    """Nodes with 2 and 4 free GPUs, a 1-GPU job, workload 1-GPU (p1) and 4-GPU (p4) tasks:
    ΔF(2→1) = −1 + p1, ΔF(4→3) = −1 + p1 + 4·p4: FGD keeps the node that can still take a 4-GPU task."""
    w = Workload([TaskClass("gpus", 3.0, gpus=1), TaskClass("gpus", 1.0, gpus=4)])
    p1, p4 = 0.75, 0.25
    assert w.delta_whole(((H100, 2),), ((H100, 1),)) == pytest.approx(-1 + p1)
    assert w.delta_whole(((H100, 4),), ((H100, 3),)) == pytest.approx(-1 + p1 + 4 * p4)
    state = cluster(
        [node("a", 2), node("b", 4)],
        [job("one", gpus=1), job("one-b", gpus=1), job("four", gpus=4)],
    )  # p1 = 2/3, p4 = 1/3: ΔF(a) = −1/3 < ΔF(b) = 1 for both 1-GPU jobs
    result = run(state)
    got = binds(result)
    assert {n for n, _, _ in got["four"]} == {"b"}
    assert {n for j in ("one", "one-b") for n, _, _ in got[j]} == {"a"}


def test_pool_fragmentation_leaves_out_the_other_pools() -> None:
    """A full node with 8 free GPUs and a shared GPU with 0.3 left; workload: 1-GPU and 0.5 tasks, half each.
    All-pool measure: the 1-GPU task cannot use the 0.3 (½·0.3) and the 0.5 task cannot use it either nor the
    whole GPUs (½·(8 + 0.3)) → 4.3. Per pool: whole 0 (the 1-GPU task fits), time-sliced 0.3."""
    state = cluster(
        [node("a", 8), ts_node("b")],
        [job("r", placement=[{"node": "b", "gpu": 0}], fraction=0.7)],
    )
    w = Workload([TaskClass("gpus", 1.0, gpus=1), share(0.5)])
    frag, idle = cluster_fragmentation(state, w)
    assert frag == pytest.approx(4.3)
    assert idle == pytest.approx(8.3)
    pools = pool_fragmentation(state, w)
    assert pools["whole"] == pytest.approx((0.0, 8.0))
    assert pools["time-sliced"] == pytest.approx((0.3, 0.3))
    assert pools["mig"] == (0.0, 0.0)


def test_running_jobs_count_in_the_cycle_workload() -> None:
    state = cluster(
        [ts_node("a")],
        [job("r1", placement=[{"node": "a", "gpu": 0}], fraction=0.5), job("p", fraction=0.25)],
    )
    result = run(state)
    shares = sorted(c.share for c in result.cycle.workload.classes)
    assert shares == [0.25, 0.5]
    assert workload_of(state.jobs.values()).total_weight == pytest.approx(1.0)


def test_a_given_target_workload_replaces_the_learned_one() -> None:
    """Same cluster as the first test; with a target workload of 0.2 tasks only, ΔF ties and binpack takes a."""
    state = cluster(
        [ts_node("a"), ts_node("b")],
        [
            job("r1", placement=[{"node": "a", "gpu": 0}], fraction=0.5),
            job("r2", placement=[{"node": "b", "gpu": 0}], fraction=0.3),
            job("new", fraction=0.2),
        ],
    )
    target = Workload([share(0.2)])
    result = schedule(state, workload=target)
    assert result.plan.allowed
    assert result.cycle.workload is target
    assert binds(result)["new"] == [("a", 0, None)]
