"""gpuadmin's scheduler binds only its own pending jobs: those of an inventory file or of gpuadmin (`scheduler`
None or `gpuadmin`). A job read from a Pod of another scheduler (KAI, default-scheduler) is a fact: its
placement holds GPUs; one that fits is explained as another scheduler's (reason other-scheduler), one that does not
fit says why, with the remedy, and gpuadmin never evicts on its behalf."""

from __future__ import annotations

from sched_helpers import binds, cluster, job, node, run


def _of(scheduler: str | None, **kw: object) -> dict[str, object]:
    out = job(**kw)  # type: ignore[arg-type]
    if scheduler is not None:
        out["scheduler"] = scheduler
    return out


def test_explain_of_another_schedulers_pod_says_why_it_cannot_fit_and_the_remedy() -> None:
    # n1 is full with a low-priority preemptible job of the same queue: preempting it is the remedy
    state = cluster([node("n1")], [
        job("low", gpus=8, priority=0, placement=[{"node": "n1", "gpu": i} for i in range(8)]),
        _of("kai-scheduler", name="ns/big", gpus=4, priority=10),
    ])
    result = run(state)
    assert binds(result) == {}
    assert result.preempted == []  # gpuadmin does not preempt on behalf of another scheduler's pod
    why = result.explanation("ns/big")
    assert why.reason == "capacity"  # not "fits now": n1 is full until low is preempted
    assert why.message == "needs 4 GPUs, 0 free"
    assert why.nodes == "0/1 nodes fit: 1 fewer than 4 free GPUs"
    assert why.remedy is not None and "preempting low" in why.remedy


def test_a_gang_of_another_scheduler_is_never_bound_even_when_it_fits() -> None:
    state = cluster([node("n1"), node("n2")], [_of("kai-scheduler", name="ns/pg", gpus=8, nodes=2)])
    result = run(state)
    assert binds(result) == {}
    assert result.explanation("ns/pg").reason == "other-scheduler"


def test_a_gang_binds_all_or_none() -> None:
    fits = cluster([node("n1"), node("n2")], [_of("gpuadmin", name="ns/pg", gpus=8, nodes=2)])
    assert [s[0] for s in binds(run(fits))["ns/pg"]].count("n2") == 8
    # only one of the gang's two nodes has room: none of it is bound
    half = cluster([node("n1"), node("n2", n=4)], [_of("gpuadmin", name="ns/pg", gpus=8, nodes=2)])
    assert binds(run(half)) == {}


def test_room_an_eviction_for_another_schedulers_pod_would_free_is_not_handed_to_gpuadmins_jobs() -> None:
    # Were gpuadmin to preempt low for the KAI pod and then drop that eviction with the KAI pod's bind, the cycle
    # would think low's GPUs free and bind `ours` on top of low (the rules refused it: placement.slot-free). Now
    # `ours` preempts low itself, as its priority allows, and binds.
    state = cluster([node("n1")], [
        job("low", gpus=8, priority=0, placement=[{"node": "n1", "gpu": i} for i in range(8)]),
        _of("kai-scheduler", name="ns/big", gpus=4, priority=10),
        job("ours", gpus=4, priority=5),
    ])
    result = run(state)
    assert list(binds(result)) == ["ours"]
    assert result.preempted == ["low"]
