"""Objects as a live API server returns them → gpuadmin's model (issue 22 item 2), as pure functions.

Sources of the objects, none written for gpuadmin:
- the GFD labels of a real H100 node under the mixed MIG strategy: ../shared/data/gfd-labels (NVIDIA's
  cloud-native-docs), byte for byte, as copied into tests/adapters/fixtures;
- Node status shapes transcribed from Kubernetes' documentation ("Nodes" → "Node status": the Ready condition's
  `KubeletNotReady` and the node controller's `NodeStatusUnknown` "Kubelet stopped posting node status.";
  "Taints and Tolerations": `node.kubernetes.io/unreachable:NoExecute`) and the GPU Operator's taint
  `nvidia.com/gpu=present:NoSchedule`;
- Pods and the Queue transcribed from KAI-Scheduler's docs (docs/gpu-sharing: `gpu-fraction: "0.5"` and
  `gpu-memory: "2000"` pods with `kai.scheduler/queue: test`, `schedulerName: kai-scheduler`;
  docs/quickstart queues: `default` with `-1` quota/limit) and the GPU Operator's MIG docs (a pod asking
  `nvidia.com/mig-1g.10gb: 1`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import ValidationError

from gpuadmin.adapters.kube_cluster import cluster_node, cluster_pod, kai_queue
from gpuadmin.adapters.kube_nodes import parse_kube_nodes
from gpuadmin.errors import InputError
from gpuadmin.model import Node, Slot, Taint

# the copy in this checkout's fixtures, byte for byte ../shared/data/gfd-labels/ (fixtures/README.md): a clean
# clone has no ../shared beside it
GFD_LABELS = Path(__file__).resolve().parent / "fixtures" / "h100-mig-mixed-all-balanced_node-labels.json"


def _node(conditions: list[dict[str, str]] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "10.0.10.5", "resourceVersion": "48213",
                     "labels": json.loads(GFD_LABELS.read_text(encoding="utf-8"))},
        "spec": spec,
        "status": {
            "capacity": {"cpu": "224", "memory": "2113492Mi", "nvidia.com/gpu": "0"},
            "allocatable": {"cpu": "220", "memory": "2011092Mi", "nvidia.com/gpu": "0"},
            "conditions": conditions or [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"},
            ],
        },
    }


NOT_READY = {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
             "message": "container runtime network not ready: NetworkReady=false"}
UNKNOWN = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
           "message": "Kubelet stopped posting node status."}


def test_a_ready_gfd_node_reads_its_mig_devices_allocatable_and_mig_manager_state() -> None:
    read, _ = cluster_node(_node())
    assert read.node.state == "ready" and read.down_reason is None
    # all-balanced on one H100, as mig-parted lays it out
    assert [(m.profile, m.start) for m in read.node.gpus[0].mig] == \
        [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]
    assert (read.node.cpus, read.node.memory_gib) == (220, 1964)  # allocatable, not capacity (224, 2064)
    assert read.mig_config_state == "success" and read.resource_version == "48213"


@pytest.mark.parametrize(("ready", "reason"), [
    (NOT_READY, "KubeletNotReady: container runtime network not ready: NetworkReady=false"),
    (UNKNOWN, "NodeStatusUnknown: Kubelet stopped posting node status."),
])
def test_a_node_kubernetes_reports_not_ready_is_down_with_the_reason(ready: dict[str, str], reason: str) -> None:
    pressure = {"type": "DiskPressure", "status": "True", "reason": "KubeletHasDiskPressure"}
    read, _ = cluster_node(_node([ready, pressure]))
    assert (read.node.state, read.down_reason, read.conditions) == ("down", reason, ("DiskPressure",))


def test_kubectl_get_nodes_of_a_not_ready_node_imports_down_not_ready() -> None:
    nodes, _ = parse_kube_nodes(json.dumps({"kind": "List", "items": [_node([NOT_READY], unschedulable=True)]}))
    assert nodes[0].state == "down"


def test_taints_and_unschedulable_are_kept() -> None:
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
              {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-12-01T10:00:00Z"}]
    read, _ = cluster_node(_node(unschedulable=True, taints=taints))
    assert read.node.state == "cordoned"
    assert read.taints == (Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule"),
                           Taint(key="node.kubernetes.io/unreachable", value="", effect="NoExecute"))
    assert read.node.taints == list(read.taints)  # the model's node holds them


@pytest.mark.parametrize(("field", "patch", "where"), [
    ("name", lambda n: n["metadata"].update(name="gpu[red]\x1b[2J"), "nodes[0].metadata.name"),
    ("taint", lambda n: n["spec"].update(taints=[{"key": "x\x1b]0;pwn\x07", "effect": "NoSchedule"}]),
     "nodes[0].spec.taints[0].key"),
    ("taint value", lambda n: n["spec"].update(taints=[{"key": "a", "value": "[b]bold", "effect": "NoSchedule"}]),
     "nodes[0].spec.taints[0].value"),
])
def test_hostile_node_fields_are_refused_where_they_are(field: str, patch: Any, where: str) -> None:
    node = _node()
    patch(node)
    with pytest.raises(InputError) as refused:
        cluster_node(node)
    assert where in str(refused.value), field


def test_a_time_sliced_node_of_the_device_plugin_keeps_its_replicas_and_sharing() -> None:
    node = _node()
    labels = {k: v for k, v in node["metadata"]["labels"].items() if not k.startswith("nvidia.com/mig")}
    # GFD with the device plugin's time-slicing config: "-SHARED" product, replicas, the sharing strategy
    labels.update({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED", "nvidia.com/gpu.count": "8",
                   "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"})
    node["metadata"]["labels"] = labels
    read, _ = cluster_node(node)
    assert {(g.mode, g.replicas) for g in read.node.gpus} == {("time-sliced", 4)} and len(read.node.gpus) == 8


def test_an_unknown_mig_manager_state_is_a_warning_not_a_state() -> None:
    node = _node()
    node["metadata"]["labels"]["nvidia.com/mig.config.state"] = "rebooting"
    read, warnings = cluster_node(node)
    assert read.mig_config_state is None and any("mig.config.state" in w for w in warnings)


KAI_FRACTION_POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "gpu-sharing", "namespace": "team-a", "resourceVersion": "77",
                 "labels": {"kai.scheduler/queue": "test"}, "annotations": {"gpu-fraction": "0.5"}},
    "spec": {"schedulerName": "kai-scheduler",
             "containers": [{"name": "ubuntu", "image": "ubuntu", "args": ["sleep", "infinity"]}]},
    "status": {"phase": "Pending"},
}


def test_a_kai_fraction_pod_is_a_pending_fractional_job_of_its_queue() -> None:
    pod = cluster_pod(KAI_FRACTION_POD)
    assert (pod.job_name, pod.queue, pod.scheduler_name, pod.request.fraction) == \
        ("team-a/gpu-sharing", "test", "kai-scheduler", 0.5)
    assert pod.job().status == "pending"


def test_a_gpu_memory_pod_asks_for_mib_as_gib() -> None:
    pod = copy.deepcopy(KAI_FRACTION_POD)
    pod["metadata"]["annotations"] = {"gpu-memory": "2000"}
    assert cluster_pod(pod).request.gpu_memory_gib == pytest.approx(2000 / 1024)


def test_a_running_mig_pod_of_a_gang_is_a_running_job_on_its_node() -> None:
    pod = cluster_pod({
        "kind": "Pod",
        "metadata": {"name": "trainer-0", "namespace": "ml", "labels": {"runai/queue": "research"},
                     "annotations": {"pod-group-name": "pg-trainer"},
                     "ownerReferences": [{"kind": "Job", "name": "trainer", "controller": True}]},
        "spec": {"nodeName": "10.0.10.5", "priority": 100,
                 "containers": [{"name": "cuda", "resources": {"limits": {"nvidia.com/mig-1g.10gb": 1}}}]},
        "status": {"phase": "Running"},
    })
    assert (pod.request.mig, pod.node, pod.gang, pod.owner, pod.priority, pod.queue) == \
        ("1g.10gb", "10.0.10.5", "pg-trainer", "Job/trainer", 100, "research")
    job = pod.job([Slot(node="10.0.10.5", gpu=0, mig_start=6)])
    assert job.status == "running" and job.placement[0].node == "10.0.10.5"


def test_whole_gpus_sum_over_containers_and_the_owner_is_the_gang_without_a_pod_group() -> None:
    pod = cluster_pod({
        "kind": "Pod", "metadata": {"name": "w", "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}]},
        "spec": {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                                {"name": "b", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Succeeded"},
    })
    assert (pod.request.gpus, pod.status, pod.gang, pod.namespace) == (3, "completed", "ReplicaSet/rs", "default")


@pytest.mark.parametrize(("patch", "where"), [
    (lambda p: p["metadata"].update(name="evil\x1b[31m"), "pods[0].metadata.name"),
    (lambda p: p["metadata"]["labels"].update({"kai.scheduler/queue": "[red]q"}),
     "pods[0].metadata.labels.kai.scheduler/queue"),
    (lambda p: p["metadata"]["annotations"].update({"gpu-fraction": "1.5"}),
     "pods[0].metadata.annotations.gpu-fraction"),
    (lambda p: p["metadata"].update(annotations={}), "pods[0].spec.containers"),
    (lambda p: p["spec"].update(nodeName="node/../x"), "pods[0].spec.nodeName"),
])
def test_hostile_or_unreadable_pods_are_refused_where_they_are(patch: Any, where: str) -> None:
    pod = copy.deepcopy(KAI_FRACTION_POD)
    patch(pod)
    with pytest.raises(InputError) as refused:
        cluster_pod(pod)
    assert where in str(refused.value)


def test_kai_queues_of_the_quickstart_become_queues() -> None:
    default = kai_queue({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "default"},
                         "spec": {"resources": {"gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}})
    test = kai_queue({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "test"},
                      "spec": {"parentQueue": "default", "priority": 10,
                               "resources": {"gpu": {"quota": 8, "limit": 16, "overQuotaWeight": 2}}}})
    assert (default.name, default.quota.gpus, default.limit) == ("default", None, None)
    assert (test.quota.gpus, test.limit and test.limit.gpus, test.over_quota_weight, test.priority) == (8, 16, 2, 10)


def test_a_hostile_queue_name_is_refused() -> None:
    with pytest.raises(InputError) as refused:
        kai_queue({"kind": "Queue", "metadata": {"name": "q\x1b[2J"}, "spec": {}})
    assert "queues[0].metadata.name" in str(refused.value)


def test_a_down_reason_with_escape_bytes_is_kept_printable() -> None:
    hostile = {**NOT_READY, "message": "runtime down\x1b]0;pwn\x07\x1b[2J" + "x" * 2000}
    read, _ = cluster_node(_node([hostile]))
    reason = read.node.down_reason or ""
    assert reason.startswith("KubeletNotReady: runtime down") and len(reason) <= 512
    assert all(c.isprintable() for c in reason)


def test_the_cluster_facts_are_left_out_of_a_dump_while_unset() -> None:
    """A node from a file (no cluster facts) dumps, stores and hashes as before the fields existed."""
    node = Node(name="gpu-a", platform="baremetal")
    assert set(node.model_dump(mode="json")) & {"down_reason", "conditions", "taints", "mig_config_state"} == set()
    read, _ = cluster_node(_node([NOT_READY], taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]))
    dumped = read.node.model_dump(mode="json")
    assert dumped["taints"] == [{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}]
    assert Node.model_validate(dumped) == read.node  # and it reads back


def test_a_down_reason_belongs_to_a_down_node() -> None:
    with pytest.raises(ValidationError, match="only allowed with state: down"):
        Node(name="gpu-a", platform="baremetal", down_reason="KubeletNotReady")


def _read_only(value: Any) -> Any:
    """`value` with every dict made a read-only Mapping that is not a dict (as another client's decoder could give)."""
    if isinstance(value, dict):
        return MappingProxyType({k: _read_only(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_read_only(v) for v in value]
    return value


def test_pods_read_the_same_through_the_plain_dict_fast_path_and_the_general_mapping_path() -> None:
    """`_mapping` answers plain dicts (what JSON decodes to) before the Mapping ABC's check: the same objects as
    read-only Mappings that are not dicts take the general path and must translate equal."""
    fraction = copy.deepcopy(KAI_FRACTION_POD)
    fraction["metadata"]["labels"] = "not a mapping"  # hostile: read as no labels on both paths
    for pod in (KAI_FRACTION_POD, fraction):
        assert cluster_pod(_read_only(pod)) == cluster_pod(pod)
