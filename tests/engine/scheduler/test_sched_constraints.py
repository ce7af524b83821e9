"""Each placement constraint alone, on small hand-built clusters."""

from __future__ import annotations

from sched_helpers import A100, H100, binds, cluster, job, node, nodes_of, queue, run

from gpuadmin.engine.scheduler import schedule


def full(i: int, model: str = H100) -> dict[str, object]:
    return {"index": i, "model": model, "mode": "full"}


def ts(i: int, replicas: int = 4, model: str = H100) -> dict[str, object]:
    return {"index": i, "model": model, "mode": "time-sliced", "replicas": replicas}


def mig(i: int, *instances: tuple[str, int], model: str = H100) -> dict[str, object]:
    return {
        "index": i,
        "model": model,
        "mode": "mig",
        "mig": [{"profile": p, "start": s} for p, s in instances],
    }


# ------------------------------------------------------------------------------------------ whole GPUs


def test_whole_gpus_bind_on_free_full_gpus() -> None:
    state = cluster([node("n1", 2)], [job("a", gpus=2)])
    result = run(state)
    assert binds(result) == {"a": [("n1", 0, None), ("n1", 1, None)]}
    assert result.bound == ["a"] and result.plan.effects.bound == ["a"]


def test_held_gpus_are_not_reused() -> None:
    state = cluster([node("n1", 2)], [job("r", gpus=1, placement=[{"node": "n1", "gpu": 0}]), job("a", gpus=1)])
    assert binds(run(state)) == {"a": [("n1", 1, None)]}


def test_whole_gpu_jobs_never_take_time_sliced_or_mig_gpus() -> None:
    state = cluster([node("n1", gpus=[ts(0), mig(1, ("7g.80gb", 0))])], [job("a", gpus=1)])
    result = run(state)
    assert result.bound == []
    exp = result.explanations["a"]
    assert exp.reason == "isolation"
    assert exp.message == (
        "needs 1 whole GPU, 0 free; 1 more idle GPU is time-sliced (shared), which whole-GPU jobs do not take"
    )


def test_binpack_fills_the_partly_used_node_and_spread_the_empty_one() -> None:
    # the running job is a 2-GPU one too, so that FGD's ΔF ties (both nodes still take 2-GPU jobs) and the
    # policy decides; with a 4-GPU job running, FGD keeps n2's 4 free GPUs for the 4-GPU class instead
    nodes = [node("n1", 8), node("n2", 8)]
    jobs = [job("r", gpus=2, placement=[{"node": "n2", "gpu": i} for i in range(2)]), job("a", gpus=2)]
    assert nodes_of(run(cluster(nodes, jobs)), "a") == {"n2"}
    assert nodes_of(run(cluster(nodes, jobs), "spread"), "a") == {"n1"}


def test_nvlink_job_stays_in_one_nvlink_domain() -> None:
    # nvlink pairs (0,1),(2,3): GPU 1 and 2 are free but in different pairs; 4+5 are a free pair
    running = [job("r", gpus=1, placement=[{"node": "n1", "gpu": i}]) for i in (0, 3)]
    running = [dict(r, name=f"r{i}") for i, r in enumerate(running)]
    state = cluster([node("n1", 6, nvlink="pairs")], [*running, job("a", gpus=2, nvlink=True)])
    assert binds(run(state))["a"] == [("n1", 4, None), ("n1", 5, None)]


def test_nvlink_fragmentation_is_explained_with_numbers() -> None:
    held = [{"node": "n1", "gpu": i} for i in (0, 2, 4, 6)]
    state = cluster([node("n1", 8, nvlink="pairs")], [job("r", gpus=4, placement=held), job("a", gpus=2, nvlink=True)])
    result = run(state)
    assert result.bound == []
    exp = result.explanation("a")
    assert exp.reason == "fragmentation"
    assert exp.message == "4 GPUs free, at most 1 in one NVLink domain"
    assert exp.details["free_gpus"] == 4 and exp.details["max_in_one_domain"] == 1


def test_device_groups_bound_nvlink_jobs_on_vsphere() -> None:
    host = node(
        "esx1",
        8,
        platform="vsphere",
        vsphere={"version": "8.0U1"},
        # Fabric Manager partitions of an HGX H100 (group.fm-partition): modules {1,3} and {5,6,7,8}
        device_groups=[{"name": "dg-a", "gpus": [0, 2]}, {"name": "dg-b", "gpus": [4, 5, 6, 7]}],
    )
    state = cluster([host], [job("a", gpus=4, nvlink=True), job("b", gpus=2, nvlink=True)])
    got = binds(run(state))
    assert [g for _, g, _ in got["a"]] == [4, 5, 6, 7]
    assert [g for _, g, _ in got["b"]] == [0, 2]


def test_model_constraint() -> None:
    state = cluster([node("h", 1, H100), node("a", 1, A100)], [job("x", gpus=1, model=A100)])
    assert nodes_of(run(state), "x") == {"a"}


def test_unknown_model_is_explained() -> None:
    state = cluster([node("h", 1)], [job("x", gpus=1, model="B200"), job("y", gpus=1, model="Z9000")])
    result = run(state)
    assert result.explanations["x"].reason == "no-such-model"
    assert result.explanations["x"].message == "no node has B200 GPUs"
    assert result.explanations["y"].message == "model Z9000 is not in the catalog"


def test_cordoned_draining_and_down_nodes_take_nothing() -> None:
    nodes = [node("c", 2, state="cordoned"), node("d", 2, state="draining"), node("x", 2, state="down")]
    result = run(cluster(nodes, [job("a", gpus=2)]))
    assert result.bound == []
    exp = result.explanations["a"]
    assert exp.reason == "node-cordoned"
    assert exp.message == "needs 2 GPUs, 0 free on ready nodes; it would fit on c, which is cordoned"
    assert exp.remedy == "uncordon c"


def test_capacity_numbers() -> None:
    busy = job("r", gpus=3, preemptible=False, placement=[{"node": "n1", "gpu": i} for i in range(3)])
    state = cluster([node("n1", 8)], [busy, job("a", gpus=8)])
    exp = run(state).explanations["a"]
    assert (exp.reason, exp.message) == ("capacity", "needs 8 GPUs, 5 free")
    # a node of 5 GPUs can never hold 8: that is not a matter of capacity (issue 10, item 2)
    never = run(cluster([node("n1", 5)], [job("a", gpus=8)])).explanations["a"]
    assert never.reason == "unsatisfiable"


# ------------------------------------------------------------------------------------------ gangs / RDMA


def test_gang_lands_on_one_rdma_network_whole() -> None:
    nodes = [node("a1", 8, network="net-a"), node("b1", 8, network="net-b"), node("b2", 8, network="net-b")]
    result = run(cluster(nodes, [job("g", gpus=8, nodes=2, nvlink=True, rdma=True)]))
    assert nodes_of(result, "g") == {"b1", "b2"}
    assert len(binds(result)["g"]) == 16


def test_incomplete_gang_binds_nothing() -> None:
    nodes = [node("a1", 8, network="net-a"), node("b1", 8, network="net-b"), node("b2", 8, network="net-b")]
    busy = job("r", gpus=1, preemptible=False, placement=[{"node": "b2", "gpu": 0}])
    result = run(cluster(nodes, [busy, job("g", gpus=8, nodes=2, rdma=True)]))
    assert result.bound == []
    exp = result.explanations["g"]
    assert exp.reason == "gang-incomplete"
    assert exp.message == "needs 2 RDMA nodes with 8 free GPUs on one network, 1 found"


def test_rdma_job_without_rdma_nodes() -> None:
    result = run(cluster([node("n1", 8)], [job("g", gpus=8, nodes=2, rdma=True), job("s", gpus=1, rdma=True)]))
    assert result.bound == []
    assert result.explanations["g"].reason == "no-rdma"
    assert result.explanations["s"].message == "needs RDMA; no ready node has RDMA NICs"


# ------------------------------------------------------------------------------------------ MIG


def test_mig_job_takes_a_free_instance_of_its_profile() -> None:
    n = node("n1", gpus=[mig(0, ("3g.40gb", 0), ("3g.40gb", 4))])
    running = job("r", mig="3g.40gb", placement=[{"node": "n1", "gpu": 0, "mig_start": 0}])
    assert binds(run(cluster([n], [running, job("m", mig="3g.40gb")])))["m"] == [("n1", 0, 4)]


def test_profile_not_carved_with_repartition_remedy() -> None:
    n = node("n1", gpus=[mig(0, ("3g.40gb", 0), ("3g.40gb", 4)), mig(1, ("4g.40gb", 0), ("1g.10gb", 4))])
    running = [
        job("r0", mig="3g.40gb", placement=[{"node": "n1", "gpu": 0, "mig_start": 0}]),
        job("r1", mig="3g.40gb", placement=[{"node": "n1", "gpu": 0, "mig_start": 4}]),
        job("r2", mig="4g.40gb", placement=[{"node": "n1", "gpu": 1, "mig_start": 0}]),
    ]
    result = run(cluster([n], [*running, job("m", mig="3g.40gb")]))
    exp = result.explanation("m")
    assert exp.reason == "profile-not-carved"
    assert exp.message == "no free 3g.40gb instance; 2 exist, both held"
    assert exp.details == {"profile": "3g.40gb", "instances": 2, "held": 2}
    # GPU 1 keeps the held 4g.40gb@0; the idle 1g.10gb@4 makes way for 3g.40gb@4
    assert exp.remedy == "repartition n1/1 to 4g.40gb@0, 3g.40gb@4 (no running job affected)"
    assert exp.remedy_kind == "repartition"


def test_exclusive_mig_job_never_takes_a_time_sliced_instance() -> None:
    sliced = {
        "index": 0,
        "model": H100,
        "mode": "mig",
        "mig": [{"profile": "3g.40gb", "start": 0, "replicas": 2}],
    }
    result = run(
        cluster(
            [node("n1", gpus=[sliced])],
            [job("x", mig="3g.40gb", isolation="exclusive"), job("s", mig="3g.40gb", isolation="shared")],
        )
    )
    assert binds(result) == {"s": [("n1", 0, 0)]}
    assert result.explanations["x"].reason == "isolation"


def test_no_fraction_joins_a_time_sliced_instance_a_default_exclusive_mig_job_holds() -> None:
    """A MIG job that writes no isolation is exclusive: the instance it holds, time-sliced since (the inventory
    says so), offers its free replica to nobody, as for isolation: exclusive."""
    sliced = {
        "index": 0,
        "model": H100,
        "mode": "mig",
        "mig": [{"profile": "3g.40gb", "start": 0, "replicas": 2}],
    }
    holder = job("m", mig="3g.40gb", placement=[{"node": "n1", "gpu": 0, "mig_start": 0}])
    result = run(cluster([node("n1", gpus=[sliced])], [holder, job("f", fraction=0.25), job("s", mig="3g.40gb",
                                                                                            isolation="shared")]))
    assert binds(result) == {}


def test_mig_profile_unknown() -> None:
    result = run(cluster([node("n1", 1)], [job("m", mig="5g.50gb")]))
    assert result.explanations["m"].reason == "no-such-profile"


# ------------------------------------------------------------------------------------------ fractions


def test_fractions_never_oversubscribe_a_gpu() -> None:
    state = cluster([node("n1", gpus=[ts(0, 4), ts(1, 4)])], [job(f"f{i}", fraction=0.5) for i in range(5)])
    result = run(state)
    placed = binds(result)
    assert len(placed) == 4
    per_gpu = [sum(1 for slots in placed.values() if slots[0][1] == g) for g in (0, 1)]
    assert per_gpu == [2, 2]
    exp = result.explanations["f4"]
    assert exp.reason == "capacity"
    assert exp.message == "needs 0.5 of a time-sliced GPU; the largest unreserved share is 0 (2 time-sliced GPUs)"


def test_replicas_cap_shared_jobs() -> None:
    state = cluster([node("n1", gpus=[ts(0, 2)])], [job(f"f{i}", fraction=0.125) for i in range(3)])
    result = run(state)
    assert len(result.bound) == 2
    assert "all replicas" in result.explanations["f2"].message


def test_memory_requests_count_against_the_gpu_memory() -> None:
    # 80 GiB H100 (79.6 GiB by nvidia-smi): two 30 GiB fit, a third does not
    state = cluster([node("n1", gpus=[ts(0, 8)])], [job(f"m{i}", gpu_memory_gib=30) for i in range(3)])
    result = run(state)
    assert result.bound == ["m0", "m1"]


def test_binpack_fills_the_fullest_shared_gpu() -> None:
    # running 0.25 and pending 0.25: ΔF ties (0.5 and 0.75 left both serve 0.25 tasks), binpack decides
    running = job("r", fraction=0.25, placement=[{"node": "n1", "gpu": 1}])
    state = cluster([node("n1", gpus=[ts(0), ts(1)])], [running, job("f", fraction=0.25)])
    assert binds(run(state))["f"] == [("n1", 1, None)]


def test_fgd_keeps_a_shared_remainder_the_workload_can_use() -> None:
    # running 0.5 and pending 0.25 (p = 1/2 each): on GPU 1 (0.5 left) ΔF = −0.25 − (0.25·½ − 0.5) = +0.125,
    # on GPU 0 (idle) ΔF = −0.25 − (0.75 − 1) = 0: FGD takes GPU 0, where best-fit would take GPU 1
    running = job("r", fraction=0.5, placement=[{"node": "n1", "gpu": 1}])
    state = cluster([node("n1", gpus=[ts(0), ts(1)])], [running, job("f", fraction=0.25)])
    assert binds(run(state))["f"] == [("n1", 0, None)]


def test_no_time_sliced_gpu_remedy() -> None:
    result = run(cluster([node("n1", 1)], [job("f", fraction=0.25)]))
    exp = result.explanations["f"]
    assert exp.message == "needs 0.25 of a time-sliced GPU; no ready node has a time-sliced GPU"
    assert exp.remedy == "set n1/0 to time-sliced, 4 replicas (no running job affected)"


# ------------------------------------------------------------------------------------------ quota


def test_queue_limit_is_respected_and_explained() -> None:
    nodes = [node(f"n{i}", 8) for i in range(5)]
    running = job(
        "big",
        "research",
        gpus=8,
        nodes=4,
        placement=[{"node": f"n{i}", "gpu": g} for i in range(4) for g in range(8)],
    )
    state = cluster(nodes, [running, job("more", "research", gpus=1)], [queue("research", 16, 32)])
    result = run(state)
    assert result.bound == []
    exp = result.explanations["more"]
    assert exp.reason == "over-limit"
    assert exp.message == "queue research at 32/32 GPUs, limit 32; the job needs 1"
    assert exp.details == {"used_gpus": 32.0, "limit_gpus": 32, "needs_gpus": 1.0}


def test_limit_stops_binding_midway() -> None:
    state = cluster([node("n1", 8)], [job(f"j{i}", gpus=2) for i in range(4)], [queue("q", 2, 4)])
    assert run(state).bound == ["j0", "j1"]


def test_nonpreemptible_work_stays_within_quota() -> None:
    state = cluster([node("n1", 8)], [job("np", gpus=4, preemptible=False), job("p", gpus=4)], [queue("q", 2, 8)])
    result = run(state)
    assert result.bound == ["p"]
    assert result.explanations["np"].reason == "nonpreemptible-over-quota"


def test_unknown_queue() -> None:
    state = cluster([node("n1", 1)], [job("x", "nowhere", gpus=1)])
    result = schedule(state)
    assert result.bound == [] and result.explanations["x"].reason == "unknown-queue"


def test_another_schedulers_job_is_planned_and_explained_but_never_bound() -> None:
    """Issue 22 item 5: a pod of KAI's (schedulerName kai-scheduler) is a fact gpuadmin reads and explains; gpuadmin
    binds only its own jobs and pods whose schedulerName is gpuadmin. The foreign job still holds the room its
    scheduler would give it in the cycle, and one that cannot fit says why, as any job does."""
    kai = {**job("kai-fits", gpus=2), "scheduler": "kai-scheduler"}
    ours = {**job("ours", gpus=2), "scheduler": "gpuadmin"}
    plain = job("plain", gpus=2)
    too_big = {**job("kai-too-big", gpus=16), "scheduler": "kai-scheduler"}
    result = schedule(cluster([node("n1", 8)], [kai, ours, plain, too_big], [queue("q", 8, 8)]))
    assert sorted(result.bound) == ["ours", "plain"]
    assert not any(getattr(c, "name", None) == "kai-fits" for c in result.changes)
    fits = result.explanations["kai-fits"]
    assert fits.reason == "other-scheduler" and "kai-scheduler" in fits.message and "never binds" in fits.message
    assert result.explanations["kai-too-big"].reason == "unsatisfiable"  # why it cannot fit, as for any job
