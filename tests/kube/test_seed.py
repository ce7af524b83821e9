"""The seeded cluster reads back as the inventory it came from (a differential test of tests/kube/seed.py against
gpuadmin/adapters/kube_cluster.py): every object is served by the API server double, listed over HTTP as a client
lists it, translated by `cluster_node` / `cluster_pod` / `kai_queue`, and compared with the inventory's node, job
or queue — equal in everything a Node, Pod or Queue carries, the documented differences (seed.py's docstring)
projected away on both sides by the same function."""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from gpuadmin.adapters.kube_cluster import ClusterNode, ClusterPod, cluster_node, cluster_pod, kai_queue
from gpuadmin.catalog import get_catalog
from gpuadmin.model import Inventory, Job, Node
from tests.kube import seed
from tests.kube.apiserver_double import ApiServerDouble

Obj = dict[str, Any]
STATES = {"draining": "cordoned"}  # a drain is a cordon and evictions: the cluster shows a cordoned node
NOT_MIG = SimpleNamespace(mig_capable=False)  # a GPU the catalog does not know: no MIG
STATUSES = {"preempted": "pending"}  # a preempted pod's workload is re-queued: pending again


def list_all(double: ApiServerDouble, path: str, limit: int = 50) -> list[Obj]:
    """Every item of a collection, paged with limit/continue as a client lists a large cluster."""
    items: list[Obj] = []
    token = ""
    while True:
        with urllib.request.urlopen(f"{double.url}{path}?limit={limit}{'&continue=' + token if token else ''}",
                                    timeout=10) as response:
            page = json.loads(response.read())
        items += page["items"]
        token = page["metadata"].get("continue", "")
        if not token:
            return items


@pytest.fixture(params=seed.KUBERNETES_SAMPLES)
def sample(request: pytest.FixtureRequest) -> Iterator[tuple[Inventory, ApiServerDouble]]:
    inventory = seed.load_sample(request.param)
    cluster = seed.cluster_of(inventory)
    with ApiServerDouble(mig_configs=cluster.mig_configs) as double:
        yield inventory, seed.seed(double, cluster)


def node_facts(node: Node) -> Obj:
    """What a Node object carries of gpuadmin's node. MIG instances as the node's multiset: GFD counts them per
    node, and which GPU holds which is the reader's deal; `sharing: time-slicing` is the default of a time-sliced
    GPU, which the labels say as no MPS."""
    return {
        "name": node.name, "platform": node.platform, "orchestrator": node.orchestrator,
        "state": STATES.get(node.state, node.state), "cpus": node.cpus, "memory_gib": node.memory_gib,
        "labels": node.labels,
        "gpus": len(node.gpus),
        "models": Counter(g.model for g in node.gpus),
        "time-sliced": Counter((g.replicas, g.sharing if g.sharing != "time-slicing" else None)
                               for g in node.gpus if g.mode == "time-sliced"),
        "mig": Counter((m.profile, m.replicas) for g in node.gpus for m in g.mig or ()),
    }


def own_labels(node: Node, inventory_node: Node) -> dict[str, str]:
    """The labels that are not GFD's to recompute, with what the kubelet sets on every node."""
    kubelet = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": node.name}
    return {**kubelet, **{k: v for k, v in node.labels.items() if not seed.recomputed(inventory_node, k)}}


def test_every_node_reads_back_as_its_inventory_node(sample: tuple[Inventory, ApiServerDouble]) -> None:
    inventory, double = sample
    read = [cluster_node(item, ("nodes", i))[0] for i, item in enumerate(list_all(double, "/api/v1/nodes"))]
    wanted = {n.name: n for n in inventory.nodes if n.kubernetes}
    assert sorted(c.node.name for c in read) == sorted(wanted)
    for got in read:
        node = wanted[got.node.name]
        assert {**node_facts(got.node), "labels": own_labels(got.node, node)} == {
            **node_facts(node), "labels": own_labels(node, node)}
        _assert_status(got, node)


def _assert_status(got: ClusterNode, node: Node) -> None:
    """What a Node says besides gpuadmin's node: why it is down, its taints, the mig-manager's state."""
    assert (got.down_reason is not None) == (node.state == "down"), node.name
    taints = {(t.key, t.effect) for t in got.taints}
    if node.state == "down":
        assert got.down_reason == "NodeStatusUnknown: Kubelet stopped posting node status."
        assert taints == {("node.kubernetes.io/unreachable", "NoSchedule"),
                          ("node.kubernetes.io/unreachable", "NoExecute")}
    elif node.state in ("cordoned", "draining"):
        assert taints == {("node.kubernetes.io/unschedulable", "NoSchedule")}
    else:
        assert taints == set()
    assert got.conditions == ()
    mig_capable = any((get_catalog().model(g.model) or NOT_MIG).mig_capable for g in node.gpus)
    assert got.mig_config_state == ("success" if mig_capable else None), node.name


def job_facts(job: Job) -> Obj:
    """What a job's pods carry of it (seed.py's docstring says what they cannot)."""
    request = job.request
    return {"name": job.name, "queue": job.queue, "priority": job.priority,
            "status": STATUSES.get(job.status, job.status), "pods": request.nodes,
            "request": request.model_dump(include={"gpus", "mig", "fraction", "gpu_memory_gib"}),
            "nodes": sorted({s.node for s in job.placement})}


def gang_facts(pods: list[ClusterPod]) -> Obj:
    first = pods[0]
    assert len({(p.queue, p.priority, p.status, p.request.model_dump_json(), p.namespace) for p in pods}) == 1, pods
    request = first.request.model_dump(include={"gpus", "mig", "fraction", "gpu_memory_gib"})
    return {"name": first.gang, "queue": first.queue, "priority": first.priority, "status": first.status,
            "pods": len(pods), "request": request, "nodes": sorted(p.node for p in pods if p.node)}


def test_every_job_reads_back_from_its_pods(sample: tuple[Inventory, ApiServerDouble]) -> None:
    inventory, double = sample
    pods = [cluster_pod(item, ("pods", i)) for i, item in enumerate(list_all(double, "/api/v1/pods"))]
    gangs: dict[str, list[ClusterPod]] = defaultdict(list)
    for pod in pods:
        assert pod.scheduler_name == "kai-scheduler" and pod.namespace == f"runai-{pod.queue}"
        assert pod.gang is not None
        gangs[pod.gang].append(pod)
    assert {name: gang_facts(members) for name, members in gangs.items()} == {
        job.name: job_facts(job) for job in inventory.jobs}


def test_every_queue_reads_back_as_its_inventory_queue(sample: tuple[Inventory, ApiServerDouble]) -> None:
    inventory, double = sample
    read = [kai_queue({"kind": "Queue", **item}, ("queues", i))
            for i, item in enumerate(list_all(double, "/apis/scheduling.run.ai/v2/queues"))]
    assert sorted(read, key=lambda q: q.name) == sorted(inventory.queues, key=lambda q: q.name)


def test_the_gpu_operator_configmaps_name_what_the_nodes_label(sample: tuple[Inventory, ApiServerDouble]) -> None:
    _, double = sample
    maps = {m["metadata"]["name"]: m for m in list_all(double, "/api/v1/namespaces/gpu-operator/configmaps")}
    mig_configs = yaml.safe_load(maps[seed.MIG_PARTED_CONFIGMAP]["data"]["config.yaml"])
    plugin_keys = set(maps[seed.DEVICE_PLUGIN_CONFIGMAP]["data"])
    nvidia = yaml.safe_load(maps[seed.NVIDIA_MIG_PARTED_CONFIGMAP]["data"]["config.yaml"])
    assert {"all-disabled", "all-balanced"} <= set(nvidia["mig-configs"])  # the operator's own, as it made it
    for node in list_all(double, "/api/v1/nodes"):
        labels = node["metadata"]["labels"]
        assert labels[seed.DEVICE_PLUGIN_CONFIG] in plugin_keys
        if seed.MIG_CONFIG in labels:
            assert labels[seed.MIG_CONFIG] in mig_configs["mig-configs"]


def test_the_mig_manager_accepts_a_seeded_config_and_refuses_an_unknown_one() -> None:
    cluster = seed.cluster_of(seed.load_sample())
    with ApiServerDouble(mig_delay_s=0.05, mig_configs=cluster.mig_configs) as double:
        seed.seed(double, cluster)
        for config, outcome in (("gpuadmin-gpu-h100-07", "success"), ("no-such-config", "failed")):
            request = urllib.request.Request(
                f"{double.url}/api/v1/nodes/gpu-h100-01", method="PATCH",
                data=json.dumps({"metadata": {"labels": {seed.MIG_CONFIG: config}}}).encode(),
                headers={"Content-Type": "application/merge-patch+json"})
            urllib.request.urlopen(request, timeout=5).close()
            _wait_for_state(double, "gpu-h100-01", outcome)


def _wait_for_state(double: ApiServerDouble, node: str, state: str) -> None:
    deadline = time.monotonic() + 5
    while (double.get("nodes", node) or {})["metadata"]["labels"].get(seed.MIG_CONFIG_STATE) != state:
        assert time.monotonic() < deadline, f"{node} never reached {state}"
        time.sleep(0.02)


def test_a_small_scale_cluster_is_shaped_like_the_large_one() -> None:
    cluster = seed.scale_cluster(nodes=16, pods=180)
    assert (len(cluster.nodes), len(cluster.pods)) == (16, 180)
    nodes = [cluster_node(n)[0].node for n in cluster.nodes]
    assert Counter(n.labels["pool"] for n in nodes) == {"training": 12, "mig": 4}
    pods = [cluster_pod(p) for p in cluster.pods]
    assert Counter(p.status for p in pods) == {"running": 162, "pending": 18}
    held = Counter((p.node, p.request.mig or "gpu") for p in pods if p.node)
    assert all(count <= (56 if kind != "gpu" else 8) for (_, kind), count in held.items())


@pytest.mark.slow
def test_the_1024_node_10000_pod_cluster_seeds_and_reads_back_whole() -> None:
    cluster = seed.scale_cluster()
    with ApiServerDouble() as double:
        seed.seed(double, cluster)
        nodes = list_all(double, "/api/v1/nodes", limit=500)
        pods = list_all(double, "/api/v1/pods", limit=500)
    assert (len(nodes), len(pods)) == (1024, 10_000)
    assert all(cluster_node(n)[0].node.gpus for n in nodes)
    assert Counter(cluster_pod(p).status for p in pods) == {"running": 9000, "pending": 1000}
