"""Ordering (priority, fair share, FIFO), preemption and reclaim, explanations of queue position."""

from __future__ import annotations

from sched_helpers import binds, cluster, job, node, queue, run

from gpuadmin.engine.scheduler import explain


def placed_on(gpus: range | list[int], node_name: str = "n1") -> list[dict[str, object]]:
    return [{"node": node_name, "gpu": g} for g in gpus]


# ------------------------------------------------------------------------------------------ order


def test_higher_job_priority_goes_first() -> None:
    state = cluster([node("n1", 1)], [job("low", gpus=1, priority=1), job("high", gpus=1, priority=9)])
    assert run(state).bound == ["high"]


def test_queue_priority_breaks_job_priority_ties() -> None:
    queues = [queue("a", 1, priority=1), queue("b", 1, priority=5)]
    state = cluster([node("n1", 1)], [job("ja", "a", gpus=1), job("jb", "b", gpus=1)], queues)
    assert run(state).bound == ["jb"]


def test_fifo_within_a_queue() -> None:
    state = cluster([node("n1", 2)], [job(f"j{i}", gpus=1) for i in range(4)])
    result = run(state)
    assert result.bound == ["j0", "j1"]
    exp = result.explanations["j3"]
    assert exp.queue_position == 2 and exp.ahead == ("j2",) and exp.ahead_count == 1


def test_deserved_quota_goes_before_borrowing() -> None:
    # queue a already runs its quota of 2; queue b has used nothing of its 2
    queues = [queue("a", 2), queue("b", 2)]
    running = job("ra", "a", gpus=2, placement=placed_on(range(2)))
    state = cluster([node("n1", 3)], [running, job("ja", "a", gpus=1), job("jb", "b", gpus=1)], queues)
    assert run(state).bound == ["jb"]


def test_over_quota_capacity_follows_the_weights() -> None:
    # both queues borrow (quota 0); b's weight is 3× a's, so b gets three of every four GPUs
    queues = [queue("a", 0, over_quota_weight=1), queue("b", 0, over_quota_weight=3)]
    jobs = [job(f"a{i}", "a", gpus=1) for i in range(8)] + [job(f"b{i}", "b", gpus=1) for i in range(8)]
    result = run(cluster([node("n1", 8)], jobs, queues))
    got = {q: sum(1 for n in result.bound if n.startswith(q)) for q in "ab"}
    assert got == {"a": 2, "b": 6}


def test_dominant_resource_fairness_counts_gpu_memory() -> None:
    # a uses 1 GPU of memory-heavy work already; with equal quotas the next GPU goes to b
    queues = [queue("a", 4), queue("b", 4)]
    running = job("ra", "a", gpus=1, placement=placed_on([0]))
    state = cluster([node("n1", 2)], [running, job("ja", "a", gpus=1), job("jb", "b", gpus=1)], queues)
    assert run(state).bound == ["jb"]


# ------------------------------------------------------------------------------------------ preemption


def test_priority_preemption_within_a_queue_takes_the_fewest_victims() -> None:
    jobs = [job("big", gpus=4, priority=1, placement=placed_on(range(4)))]
    jobs += [job(f"s{i}", gpus=1, priority=1, placement=placed_on([4 + i])) for i in range(4)]
    jobs.append(job("urgent", gpus=4, priority=10))
    result = run(cluster([node("n1", 8)], jobs))
    assert result.preempted == ["big"]
    assert result.bound == ["urgent"]
    assert [c.op for c in result.changes] == ["preempt-job", "bind-job"]
    assert result.plan.effects.evicted == ["big"]


def test_non_preemptible_work_is_never_preempted() -> None:
    jobs = [
        job("keep", gpus=8, priority=1, preemptible=False, placement=placed_on(range(8))),
        job("urgent", gpus=1, priority=10),
    ]
    result = run(cluster([node("n1", 8)], jobs, [queue("q", 8)]))
    assert result.preempted == [] and result.bound == []


def test_equal_priority_does_not_preempt() -> None:
    jobs = [job("r", gpus=1, priority=5, placement=placed_on([0])), job("p", gpus=1, priority=5)]
    assert run(cluster([node("n1", 1)], jobs)).preempted == []


def test_reclaim_from_a_queue_over_its_quota() -> None:
    queues = [queue("a", 4), queue("b", 4)]
    jobs = [job(f"b{i}", "b", gpus=2, placement=placed_on([2 * i, 2 * i + 1])) for i in range(4)]
    jobs.append(job("a0", "a", gpus=2))
    result = run(cluster([node("n1", 8)], jobs, queues))
    assert len(result.preempted) == 1 and result.bound == ["a0"]


def test_in_quota_work_is_not_reclaimed() -> None:
    queues = [queue("a", 4), queue("b", 4)]
    jobs = [job(f"b{i}", "b", gpus=2, placement=placed_on([2 * i, 2 * i + 1])) for i in range(2)]
    jobs.append(job("a0", "a", gpus=8))
    result = run(cluster([node("n1", 4)], jobs, queues))
    assert result.preempted == []


def test_a_preempted_job_is_not_rebound_in_the_same_cycle() -> None:
    jobs = [
        job("victim", gpus=2, priority=1, placement=placed_on(range(2))),
        job("urgent", gpus=2, priority=10),
    ]
    state = cluster([node("n1", 2), node("n2", 1, state="cordoned")], jobs)
    result = run(state)
    assert result.preempted == ["victim"] and "victim" not in binds(result)


def test_gang_preemption_frees_whole_nodes() -> None:
    nodes = [node(f"n{i}", 8, network="net") for i in range(2)]
    jobs = [job(f"low{i}", gpus=8, priority=1, placement=placed_on(range(8), f"n{i}")) for i in range(2)]
    jobs.append(job("gang", gpus=8, nodes=2, rdma=True, priority=10))
    result = run(cluster(nodes, jobs))
    assert sorted(result.preempted) == ["low0", "low1"] and result.bound == ["gang"]


# ------------------------------------------------------------------------------------------ explanations


def test_explain_names_the_preemptions_that_would_make_room() -> None:
    queues = [queue("a", 8), queue("b", 8)]
    jobs = [job("b-train", "b", gpus=8, placement=placed_on(range(8))), job("a-job", "a", gpus=8)]
    # b is within its quota, so reclaim does not apply; an operator could still preempt b-train
    exp = explain(cluster([node("n1", 8)], jobs, queues), "a-job")
    assert exp.reason == "capacity"
    assert exp.message == "needs 8 GPUs, 0 free"
    assert exp.victims == ("b-train",)
    assert exp.remedy == "preempting b-train would make room (preempt-job)"
    assert exp.summary == ("0/1 nodes fit: 1 fewer than 8 free GPUs; needs 8 GPUs, 0 free; "
                           "remedy: preempting b-train would make room (preempt-job)")
    data = exp.to_json()
    assert data["reason"] == "capacity" and data["victims"] == ["b-train"] and data["queue_position"] == 1


def test_explain_running_and_bound_jobs() -> None:
    jobs = [job("r", gpus=1, placement=placed_on([0])), job("p", gpus=1)]
    state = cluster([node("n1", 2)], jobs)
    assert explain(state, "r").message == "running on n1/0"
    exp = explain(state, "p")
    assert exp.status == "schedulable" and exp.message == "this cycle binds it on n1"


def test_every_pending_job_is_explained() -> None:
    jobs = [job(f"j{i}", gpus=i % 3 + 1) for i in range(12)]
    result = run(cluster([node("n1", 4)], jobs))
    assert set(result.explanations) == set(result.pending)
    assert set(result.pending) | set(result.bound) == {f"j{i}" for i in range(12)}
    assert all(e.summary for e in result.explanations.values())
