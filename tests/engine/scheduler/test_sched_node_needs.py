"""Node-level needs in the scheduler: CPU and memory requests, node selectors and affinity, jobs in a VM —
each placed where it fits and refused, with kube-scheduler's reasons, where it does not."""

from __future__ import annotations

from typing import Any

from sched_helpers import binds, cluster, job, node, nodes_of, run

from gpuadmin.engine.scheduler import explain


def sized(name: str, cpus: int, memory_gib: int, n: int = 2, **extra: Any) -> dict[str, Any]:
    return node(name, n, cpus=cpus, memory_gib=memory_gib, **extra)


def with_fields(raw: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**raw, **fields}


# ------------------------------------------------------------------------------------------ CPU and memory


def test_cpu_request_skips_the_node_without_room() -> None:
    state = cluster([sized("small", 16, 256), sized("big", 128, 1024)], [job("a", gpus=1, cpus=32)])
    assert nodes_of(run(state), "a") == {"big"}


def test_cpus_of_jobs_bound_in_one_cycle_add_up() -> None:
    # two GPUs and 48 CPUs: the first 32-CPU job fits, the second does not, though a GPU is still free
    state = cluster([sized("n1", 48, 512)], [job("a", gpus=1, cpus=32), job("b", gpus=1, cpus=32)])
    result = run(state)
    assert result.bound == ["a"]
    exp = result.explanations["b"]
    assert exp.reason == "node-resources"
    assert exp.nodes == "0/1 nodes fit: 1 Insufficient cpu"


def test_running_jobs_hold_their_memory() -> None:
    running = job("r", gpus=1, memory_gib=400, placement=[{"node": "n1", "gpu": 0}])
    state = cluster([sized("n1", 64, 512), sized("n2", 64, 512)], [running, job("a", gpus=1, memory_gib=200)])
    assert nodes_of(run(state), "a") == {"n2"}


def test_a_node_without_cpus_or_memory_is_not_checked() -> None:
    state = cluster([node("n1", 1)], [job("a", gpus=1, cpus=4096, memory_gib=100000)])
    assert nodes_of(run(state), "a") == {"n1"}


def test_kube_scheduler_summary_counts_each_reason() -> None:
    nodes = [sized(f"s{i}", 8, 64) for i in range(3)] + [sized("m", 64, 32), sized("c", 64, 512, state="cordoned")]
    result = run(cluster(nodes, [job("a", gpus=1, cpus=16, memory_gib=128)]))
    exp = result.explanations["a"]
    assert exp.nodes == "0/5 nodes fit: 3 Insufficient cpu, 1 Insufficient memory, 1 cordoned"
    assert exp.reason == "node-resources"
    assert "needs 16 CPUs and 128 GiB" in exp.message


# ------------------------------------------------------------------------------------------ labels


def test_node_selector_picks_the_labelled_node() -> None:
    nodes = [node("a1", 2, labels={"pool": "serving"}), node("t1", 2, labels={"pool": "training"})]
    state = cluster(nodes, [with_fields(job("x", gpus=1), node_selector={"pool": "training"})])
    assert nodes_of(run(state), "x") == {"t1"}


def test_affinity_operators() -> None:
    nodes = [
        node("spot", 1, labels={"pool": "training", "spot": "true"}),
        node("east", 1, labels={"pool": "training", "zone": "east"}),
        node("west", 1, labels={"pool": "training", "zone": "west"}),
    ]
    affinity = [
        {"key": "pool", "operator": "In", "values": ["training", "research"]},
        {"key": "spot", "operator": "DoesNotExist"},
        {"key": "zone", "operator": "NotIn", "values": ["east"]},
    ]
    state = cluster(nodes, [with_fields(job("x", gpus=1), node_affinity=affinity)])
    assert nodes_of(run(state), "x") == {"west"}


def test_no_matching_node_is_explained() -> None:
    nodes = [node("n1", 2, labels={"pool": "serving"}), node("n2", 2)]
    result = run(cluster(nodes, [with_fields(job("x", gpus=1), node_selector={"pool": "training"})]))
    assert result.bound == []
    exp = result.explanations["x"]
    assert exp.reason == "node-selector"
    assert exp.nodes == "0/2 nodes fit: 2 didn't match node selector/affinity"


def test_free_gpus_only_on_nodes_the_selector_rules_out() -> None:
    held = [{"node": "t1", "gpu": 0}]
    nodes = [node("t1", 1, labels={"pool": "training"}), node("s1", 4, labels={"pool": "serving"})]
    jobs = [job("r", gpus=1, placement=held), with_fields(job("x", gpus=1), node_selector={"pool": "training"})]
    exp = run(cluster(nodes, jobs)).explanations["x"]
    assert exp.reason == "node-selector"
    assert exp.nodes == "0/2 nodes fit: 1 didn't match node selector/affinity, 1 fewer than 1 free GPUs"


def test_a_gang_takes_only_matching_nodes() -> None:
    nodes = [node(f"n{i}", 2, labels={"pool": "training" if i % 2 else "serving"}) for i in range(4)]
    state = cluster(nodes, [with_fields(job("g", gpus=2, nodes=2), node_selector={"pool": "training"})])
    assert nodes_of(run(state), "g") == {"n1", "n3"}


def test_preemption_for_a_selector_job_evicts_on_a_matching_node() -> None:
    nodes = [node("t1", 1, labels={"pool": "training"}), node("s1", 1, labels={"pool": "serving"})]
    jobs = [
        job("low-t", gpus=1, priority=1, placement=[{"node": "t1", "gpu": 0}]),
        job("low-s", gpus=1, priority=1, placement=[{"node": "s1", "gpu": 0}]),
        with_fields(job("hi", gpus=1, priority=10), node_selector={"pool": "training"}),
    ]
    result = run(cluster(nodes, jobs))
    assert result.preempted == ["low-t"]
    assert nodes_of(result, "hi") == {"t1"}


# ------------------------------------------------------------------------------------------ jobs in a VM


def esx_host(name: str = "esx1", state: str = "ready") -> dict[str, Any]:
    gpus = [{"index": i, "model": "A100-SXM4-80GB", "mode": "vgpu",
             "vgpus": [{"vm": "train-vm", "profile": "A100DX-80C"}]} for i in range(4)]
    gpus += [{"index": i, "model": "A100-SXM4-80GB", "mode": "full"} for i in range(4, 8)]
    return {
        "name": name,
        "platform": "vsphere",
        "vsphere": {"version": "8.0U1"},
        "nvlink": "nvswitch",
        "state": state,
        "cpus": 128,
        "memory_gib": 1024,
        "gpus": gpus,
        "device_groups": [{"name": "dg-a", "gpus": [0, 1, 2, 3]}],
        "vms": [{"name": "train-vm", "hardware_version": 20, "device_group": "dg-a"}],
    }


def test_a_vm_job_lands_on_its_vms_gpus_and_others_stay_off_them() -> None:
    jobs = [with_fields(job("in-vm", gpus=2), vm="train-vm"), job("outside", gpus=4)]
    got = binds(run(cluster([esx_host()], jobs)))
    assert got["in-vm"] == [("esx1", 0, None), ("esx1", 1, None)]
    assert [g for _, g, _ in got["outside"]] == [4, 5, 6, 7]


def test_jobs_in_one_vm_share_out_its_gpus() -> None:
    running = with_fields(job("r", gpus=3, placement=[{"node": "esx1", "gpu": i} for i in range(3)]), vm="train-vm")
    jobs = [running, with_fields(job("a", gpus=1), vm="train-vm"), with_fields(job("b", gpus=1), vm="train-vm")]
    result = run(cluster([esx_host()], jobs))
    assert binds(result) == {"a": [("esx1", 3, None)]}
    exp = result.explanations["b"]
    assert exp.reason == "vm-capacity"
    assert exp.message == (
        "needs 1 GPU in VM train-vm on esx1: fewer than 1 free GPUs in VM train-vm (0 of the VM's 4 GPUs free)"
    )


def test_a_vm_on_a_cordoned_host_waits() -> None:
    result = run(cluster([esx_host(state="cordoned")], [with_fields(job("a", gpus=1), vm="train-vm")]))
    assert result.bound == []
    assert result.explanations["a"].reason == "node-cordoned"
    assert result.explanations["a"].remedy == "uncordon esx1"


def test_a_vm_job_needs_its_hosts_cpus() -> None:
    result = run(cluster([esx_host()], [with_fields(job("a", gpus=1, cpus=256), vm="train-vm")]))
    exp = result.explanations["a"]
    assert exp.reason == "node-resources"
    assert exp.nodes == "0/1 nodes fit: 1 Insufficient cpu"


def test_the_preemption_remedy_only_frees_a_node_the_selector_allows() -> None:
    # the cheaper victim runs on the serving node, which the job's selector rules out: preempting it frees nothing
    nodes = [node("t1", 1, labels={"pool": "training"}), node("s1", 1, labels={"pool": "serving"})]
    jobs = [
        job("dear", gpus=1, priority=5, placement=[{"node": "t1", "gpu": 0}]),
        job("cheap", gpus=1, priority=0, placement=[{"node": "s1", "gpu": 0}]),
        with_fields(job("x", gpus=1), node_selector={"pool": "training"}),
    ]
    exp = explain(cluster(nodes, jobs), "x")  # main offered `cheap`, then rejected it: nothing offered
    assert exp.victims == ("dear",) and "remedy_rejected" not in exp.details
    assert exp.remedy == "preempting dear would make room (preempt-job)"
