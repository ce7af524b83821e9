"""Node taints and job tolerations in the scheduler (kube-scheduler's TaintToleration filter): a NoSchedule or
NoExecute taint keeps off every job that does not tolerate it, PreferNoSchedule keeps off none, and the explanation
names the taint as the filter named it."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sched_helpers import binds, cluster, job, node, nodes_of, run

from gpuadmin.engine.scheduler.cycle import Cycle
from gpuadmin.engine.scheduler.node_filters import NodeNeeds, allowed_nodes, needs_of, taints_filter, untolerated
from gpuadmin.model import Taint, Toleration

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def tolerating(raw: dict[str, Any], *tolerations: dict[str, Any]) -> dict[str, Any]:
    return {**raw, "tolerations": list(tolerations)}


def tainted(name: str, *taints: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return node(name, taints=list(taints), **extra)


@pytest.mark.parametrize(("toleration", "taint", "tolerated"), [
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU_TAINT, True),
    ({"key": "nvidia.com/gpu", "value": "present"}, GPU_TAINT, True),  # operator Equal is the default
    ({"key": "nvidia.com/gpu", "value": "absent"}, GPU_TAINT, False),
    ({"key": "other", "operator": "Exists"}, GPU_TAINT, False),
    ({"operator": "Exists"}, GPU_TAINT, True),  # an empty key with Exists tolerates every taint
    ({"operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False),  # ...of its effect only, when it says one
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT, True),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU_TAINT, False),
])
def test_kubernetes_toleration_matching(toleration: dict[str, Any], taint: dict[str, Any], tolerated: bool) -> None:
    toleration_key = Toleration.model_validate(toleration).as_tuple()
    node_ = node("n", 1)
    node_["taints"] = [taint]
    state = cluster([node_], [])
    assert (untolerated(state.nodes["n"], (toleration_key,)) is None) is tolerated


@pytest.mark.parametrize("bad", [{"value": "x"}, {"key": "k", "operator": "Exists", "value": "v"},
                                 {"key": "Bad Key"}, {"key": "k", "value": "\x1b[31m"}])
def test_a_toleration_kubernetes_would_refuse_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Toleration.model_validate(bad)


def test_a_job_without_the_toleration_is_kept_off_the_tainted_node() -> None:
    state = cluster([tainted("gpu-a", GPU_TAINT), node("gpu-b", 8)], [job("x", gpus=8)])
    assert nodes_of(run(state), "x") == {"gpu-b"}


def test_a_job_with_the_toleration_may_go_there() -> None:
    state = cluster([tainted("gpu-a", GPU_TAINT)],
                    [tolerating(job("x", gpus=8), {"key": "nvidia.com/gpu", "operator": "Exists"})])
    assert nodes_of(run(state), "x") == {"gpu-a"}


def test_prefer_no_schedule_does_not_filter() -> None:
    state = cluster([tainted("gpu-a", {**GPU_TAINT, "effect": "PreferNoSchedule"})], [job("x", gpus=1)])
    assert nodes_of(run(state), "x") == {"gpu-a"}
    assert not taints_filter(state)  # nothing to filter: the cycle keeps its fast path


def test_no_execute_filters_too_and_the_explanation_names_the_taint() -> None:
    state = cluster([tainted("gpu-a", {"key": "maintenance", "value": "bios", "effect": "NoExecute"}),
                     tainted("gpu-b", GPU_TAINT)], [job("x", gpus=1)])
    result = run(state)
    assert binds(result) == {}
    why = result.explanation("x")
    assert why.reason == "untolerated-taint"
    assert why.nodes == ("0/2 nodes fit: 1 node(s) had untolerated taint {maintenance: bios}, "
                         "1 node(s) had untolerated taint {nvidia.com/gpu: present}")
    assert "every ready node has a taint it does not tolerate" in why.message
    assert "{nvidia.com/gpu: present}" in why.message and "{maintenance: bios}" in why.message
    assert why.remedy is not None and "toleration" in why.remedy


def test_a_cordoned_nodes_taint_does_not_slow_every_job() -> None:
    # the node controller's unschedulable taint on a cordoned node: the node-state filter says it, not the taint
    cordoned = tainted("c", {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, state="cordoned")
    state = cluster([cordoned, node("n", 1)], [job("x", gpus=1), job("y", gpus=1)])
    assert not taints_filter(state)
    result = run(state)
    assert nodes_of(result, "x") == {"n"}
    assert result.explanation("y").nodes == "0/2 nodes fit: 1 cordoned, 1 fewer than 1 free GPUs"


def test_another_schedulers_pod_that_cannot_fit_because_of_a_taint_is_explained_with_it() -> None:
    pod = {**job("team-a/infer", gpus=1), "scheduler": "kai-scheduler"}
    state = cluster([tainted("gpu-a", GPU_TAINT)], [pod])
    why = run(state).explanation("team-a/infer")
    assert why.reason == "untolerated-taint"
    assert "1 node: node(s) had untolerated taint {nvidia.com/gpu: present}" in why.message
    tolerated = tolerating(pod, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
    assert run(cluster([tainted("gpu-a", GPU_TAINT)], [tolerated])).explanation("team-a/infer").reason == \
        "other-scheduler"  # it fits: its own scheduler places it


def test_the_memoised_taint_filter_equals_the_filter_node_by_node() -> None:
    """Differential: `allowed_nodes` (labels and taints memoised per needs) keeps exactly the nodes the filter,
    asked node by node, passes — over random taints and tolerations."""
    rng = random.Random(7)
    keys, values = ["a", "b", "nvidia.com/gpu"], ["", "x", "y"]
    effects = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
    for _ in range(40):
        nodes = []
        for i in range(8):
            taints = [{"key": rng.choice(keys), "value": rng.choice(values), "effect": rng.choice(effects)}
                      for _ in range(rng.randrange(3))]
            nodes.append(node(f"n{i}", 1, taints=taints))
        tolerations = []
        for _ in range(rng.randrange(3)):
            exists = rng.random() < 0.5
            key = rng.choice(["", *keys]) if exists else rng.choice(keys)
            toleration: dict[str, Any] = {"key": key, "operator": "Exists" if exists else "Equal"}
            if not exists:
                toleration["value"] = rng.choice(values)
            if rng.random() < 0.5:
                toleration["effect"] = rng.choice(effects)
            tolerations.append(toleration)
        state = cluster(nodes, [tolerating(job("x", gpus=1), *tolerations)])
        cycle = Cycle(state)
        needs = needs_of(state.jobs["x"], taints_filter(state))
        memo: dict[NodeNeeds, set[int]] = {}
        allowed = allowed_nodes(cycle.index, needs, cycle.resources, memo)
        assert allowed_nodes(cycle.index, needs, cycle.resources, memo) == allowed  # from the memo
        reference = {nc.idx for nc in cycle.index.nodes
                     if not any(t.effect != "PreferNoSchedule" and not any(_tolerates(o, t) for o in tolerations)
                                for t in nc.node.taints or ())}
        assert allowed == reference


def _tolerates(toleration: dict[str, Any], taint: Taint) -> bool:
    """The rule as Kubernetes' API reference words it, written out again for the differential test."""
    if toleration.get("effect") not in (None, taint.effect):
        return False
    if toleration["operator"] == "Exists":
        return toleration["key"] in ("", taint.key)
    return toleration["key"] == taint.key and toleration.get("value", "") == taint.value


@pytest.mark.parametrize("sample", ["oci-h100.yaml", "k8s-mixed.yaml"])
def test_jobs_that_tolerate_every_taint_are_scheduled_as_on_an_untainted_cluster(sample: str) -> None:
    """Differential: a job tolerating every taint the filter acts on is not asked of it (the fast path); its cycle
    decides exactly what the same cycle decides without the taints. A job that does not tolerate them is kept off."""
    from pathlib import Path

    from gpuadmin.engine.scheduler import schedule
    from gpuadmin.engine.state import ClusterState
    from gpuadmin.store.inventory_io import load_inventory

    inventory = load_inventory(Path(__file__).resolve().parents[3] / "sample-inventories" / sample)
    data = inventory.model_dump(mode="json", exclude_none=True)
    for raw in data["nodes"]:
        if raw.get("state", "ready") == "ready":
            raw["taints"] = [GPU_TAINT, {"key": "pool", "value": "gpu", "effect": "NoExecute"}]
    for raw in data["jobs"]:
        raw["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}, {"key": "pool", "value": "gpu"}]
    plain = ClusterState.from_inventory(inventory)
    tainted = ClusterState.from_inventory(type(inventory).model_validate(data, strict=False))
    assert taints_filter(tainted) and not any(needs_of(j, taints_filter(tainted)).taints
                                              for j in tainted.jobs.values())
    assert binds(schedule(tainted)) == binds(schedule(plain))
    for raw in data["jobs"]:
        raw["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]  # not the pool taint
    kept_off = schedule(ClusterState.from_inventory(type(inventory).model_validate(data, strict=False)))
    assert binds(kept_off) == {}
    assert {kept_off.explanation(name).reason for name in kept_off.pending} <= {
        "untolerated-taint", "unknown-queue", "over-limit", "over-quota", "nonpreemptible-over-quota"}
