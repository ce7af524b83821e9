"""A cluster shaped like a real one, built from a gpuadmin inventory, for the API server double (issue 22).

`cluster_of(inventory)` turns each Kubernetes node (`orchestrator: kubernetes`), job and queue of an inventory into
the objects a real cluster running the GPU Operator and the KAI scheduler would hold for it, as `ClusterSeed`;
`seed(double, cluster)` creates them in an `ApiServerDouble`. `scale_cluster()` builds a large one (1,024 nodes,
10,000 pods) for the sync benchmark and the slow tests. The objects follow the same sources as
`tests/kube/cluster_objects.py` (see its docstring); what this module adds:

- Node labels: the inventory's own labels, with the GPU Feature Discovery labels recomputed from the node's GPUs,
  as GFD recomputes them on a real node: `nvidia.com/gpu.product` (`-SHARED` appended where the GPUs are
  time-sliced, as GFD does under a sharing config), `gpu.count`, `gpu.memory` (MiB), `gpu.replicas`,
  `gpu.sharing-strategy`, `mig.capable`, `mig.strategy` (`mixed` on a MIG-capable node, as the GPU Operator's
  cluster-wide strategy sets it; `none` elsewhere) and, per MIG profile on the node, `nvidia.com/mig-<dev>.count`
  (instances on the NODE, not per GPU: GFD counts them so), `.replicas`, `.memory`, `.product`, `.slices.gi` /
  `.slices.ci` and `.sharing-strategy` — the keys of the real H100 node in
  tests/adapters/fixtures/h100-mig-mixed-all-balanced_node-labels.json. The GPU Operator's own labels:
  `nvidia.com/mig.config` (`gpuadmin-<node>` where the node has MIG GPUs, a config the mig-parted ConfigMap
  holds; `all-disabled` on a MIG-capable node without), `nvidia.com/mig.config.state: success` and
  `nvidia.com/device-plugin.config: gpuadmin-<node>` (a key of the device-plugin ConfigMap).
- Node status: the `Ready` condition (a `down` node: `Unknown`, reason `NodeStatusUnknown`, as the node
  controller sets it when the kubelet stops posting), `allocatable` cpu and memory = the inventory's `cpus` and
  `memory_gib` (what the scheduler may hand out, which is what gpuadmin reads), `capacity` that plus the
  kubelet's reservation (1 CPU, 4 GiB), and the device plugin's resources: `nvidia.com/gpu` (whole GPUs, times
  their replicas where time-sliced; a MIG GPU gives none under the mixed strategy) and `nvidia.com/mig-<dev>`.
- Taints the node lifecycle controller adds: `node.kubernetes.io/unreachable` (NoSchedule and NoExecute) on a
  down node, `node.kubernetes.io/unschedulable:NoSchedule` on a cordoned (or draining) one, which also has
  `spec.unschedulable: true`.
- Pods, one per job (a gang of N nodes: N pods `<job>-<i>`), in the Run:ai project namespace of the job's queue
  (`runai-<queue>`), labelled `kai.scheduler/queue: <queue>`, with KAI's `pod-group-name` annotation (the job:
  the gang it is scheduled with), `schedulerName: kai-scheduler`, `priorityClassName` and the `priority` the
  admission controller resolves from it; GPU requests as `nvidia.com/gpu: N` (per node of a gang),
  `nvidia.com/mig-<dev>: 1`, or for a fraction KAI's `gpu-fraction` / `gpu-memory` (MiB) annotation with no GPU
  resource. A running job's pods have `spec.nodeName`, phase `Running`, `hostIP` and a `podIP`; a pending one's
  phase `Pending` with `PodScheduled=False/Unschedulable`; a completed one's `Succeeded`.
- KAI `Queue`s (scheduling.run.ai/v2): `spec.resources.gpu` quota, limit (-1: none), over-quota weight, and
  `spec.priority`.
- The GPU Operator's ConfigMaps in `gpu-operator`: `default-mig-parted-config` (NVIDIA's default mig-parted
  configs, tests/adapters/fixtures/mig-parted_config-default.yaml, as the operator creates it), and the ones its
  ClusterPolicy is pointed at, written by gpuadmin's exports as `ExecuteSettings` names them:
  `gpuadmin-mig-parted-config` (`all-disabled` and a `gpuadmin-<node>` config per MIG node; the mig-manager
  accepts these) and `gpuadmin-device-plugin-config` (one key per node).

What the objects cannot carry, so reading them back through gpuadmin/adapters/kube_cluster.py cannot restore
(held by tests/kube/test_seed.py, which checks everything else equal): a node's `shape`, `rdma`, `nvlink`,
`sharing` (dynamic fractions), device groups and VMs; which GPU holds which MIG instance (GFD counts per node:
the reader deals them to GPUs); GFD's recomputed labels (`recomputed`) replace the inventory's values; a
`draining` node reads as `cordoned` (a drain is a cordon and evictions), a `preempted` job as pending (its
workload is re-queued); a job's name gains its namespace
(`runai-research/llm-pretrain-70b`), a gang reads as one pod per node, and `nvlink`, `rdma`, `model`,
`cpus` / `memory_gib`, `isolation`, `preemptible`, `owner`, `submitted`, `node_selector`, `node_affinity` and the
placement's slots (which GPU: neither the Pod nor the device plugin's API says) are not read from a pod.
"""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpuadmin.adapters._common import gfd_products
from gpuadmin.adapters.device_plugin import export_device_plugin
from gpuadmin.adapters.mig_parted import MIG_MANAGER_KEY, export_mig_parted_configmap
from gpuadmin.catalog import MIG_RESOURCE_PREFIX, GpuModel, get_catalog, mig_device_resource_name
from gpuadmin.engine.commands import mig_config_name
from gpuadmin.model import Inventory, Job, Node, Queue
from gpuadmin.store.inventory_io import load_inventory
from tests.kube import gfd
from tests.kube.apiserver_double import ApiServerDouble
from tests.kube.cluster_objects import FIXTURES, cluster_policy, node_conditions

Obj = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample-inventories"
#: The samples that hold Kubernetes nodes (vsphere-hgx.yaml holds none).
KUBERNETES_SAMPLES = ("oci-h100.yaml", "k8s-mixed.yaml")
GPU_OPERATOR_NAMESPACE = "gpu-operator"
NVIDIA_MIG_PARTED_CONFIGMAP = "default-mig-parted-config"  # the GPU Operator creates it: NVIDIA's configs
MIG_PARTED_CONFIGMAP = "gpuadmin-mig-parted-config"  # gpuadmin's export, which the operator is pointed at
DEVICE_PLUGIN_CONFIGMAP = "gpuadmin-device-plugin-config"
KAI_SCHEDULER = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
#: What the kubelet keeps back from the scheduler (kube-reserved + system-reserved): capacity less allocatable.
RESERVED_CPUS, RESERVED_MEMORY_GIB = 1, 4
#: Where a node's CPUs or memory are not in the inventory: a BM.GPU.H100.8's (OCI's shape reference)
DEFAULT_CPUS, DEFAULT_MEMORY_GIB = 112, 2048
# a preempted job's pod is evicted and its workload re-queued: on the cluster it is pending again
PHASES = {"running": "Running", "pending": "Pending", "completed": "Succeeded", "preempted": "Pending"}


@dataclass
class ClusterSeed:
    """The objects of one cluster, by kind, and the mig-parted config names its mig-manager accepts."""

    nodes: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    queues: list[Obj] = field(default_factory=list)
    configmaps: list[Obj] = field(default_factory=list)
    policies: list[Obj] = field(default_factory=list)  # the GPU Operator's ClusterPolicy, pointed at gpuadmin's maps
    mig_configs: set[str] = field(default_factory=set)

    def objects(self) -> list[Obj]:
        return [*self.policies, *self.configmaps, *self.queues, *self.nodes, *self.pods]


def load_sample(name: str = "oci-h100.yaml") -> Inventory:
    return load_inventory(SAMPLES / name)


def cluster_of(inventory: Inventory) -> ClusterSeed:
    """The objects a real cluster would hold for the inventory's Kubernetes nodes, its jobs on them and its queues."""
    nodes = [n for n in inventory.nodes if n.kubernetes]
    out = ClusterSeed()
    for index, node in enumerate(nodes):
        out.nodes.append(node_object(node, index))
    addresses = {n["metadata"]["name"]: n["status"]["addresses"][0]["address"] for n in out.nodes}
    pod_ips = (f"10.244.{i // 250}.{i % 250 + 2}" for i in itertools.count())
    for job in inventory.jobs:
        out.pods += pod_objects(job, addresses, pod_ips)
    out.queues = [queue_object(q) for q in inventory.queues]
    default, mig_parted = mig_parted_configmaps(nodes)
    out.configmaps = [default, mig_parted, export_device_plugin(nodes, name=DEVICE_PLUGIN_CONFIGMAP,
                                                                namespace=GPU_OPERATOR_NAMESPACE)]
    out.policies = [cluster_policy(mig_parted=MIG_PARTED_CONFIGMAP,
                                   device_plugin=DEVICE_PLUGIN_CONFIGMAP)]
    out.mig_configs = set(yaml.safe_load(mig_parted["data"][MIG_MANAGER_KEY])["mig-configs"])
    return out


def seed(double: ApiServerDouble, cluster: ClusterSeed) -> ApiServerDouble:
    """Create the cluster's objects in the double (copies: the seed stays as built)."""
    for obj in cluster.objects():
        double.create(copy.deepcopy(obj))
    return double


# --- nodes ------------------------------------------------------------------------------------------------------


def _model(node: Node) -> GpuModel | None:
    return get_catalog().model(node.gpus[0].model) if node.gpus else None


def gfd_labels(node: Node) -> dict[str, str]:
    """The GFD and GPU Operator labels of the node's GPUs, as GFD writes them (see the module's docstring)."""
    model = _model(node)
    if not node.gpus:
        return {}
    mig_capable = model is not None and model.mig_capable
    product = node.labels.get("nvidia.com/gpu.product") or (
        gfd_products(model)[0] if model is not None else node.gpus[0].model)
    product = product.removesuffix("-SHARED")
    sliced = [g for g in node.gpus if g.mode == "time-sliced"]
    replicas = max((g.replicas or 1 for g in sliced), default=1)
    has_mig = any(g.mode == "mig" for g in node.gpus)
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": f"{product}-SHARED" if sliced else product,
        "nvidia.com/gpu.count": str(len(node.gpus)),
        # under the mixed strategy with every GPU carved, no nvidia.com/gpu is left to replicate: GFD writes 0
        "nvidia.com/gpu.replicas": "0" if has_mig and all(g.mode == "mig" for g in node.gpus) else str(replicas),
        "nvidia.com/gpu.sharing-strategy": (sliced[0].sharing or "time-slicing") if sliced else "none",
        "nvidia.com/mig.capable": str(mig_capable).lower(),
        "nvidia.com/mig.strategy": "mixed" if mig_capable else "none",
    }
    if model is not None:
        labels["nvidia.com/gpu.memory"] = str(model.memory_mib)
        labels.update(_mig_labels(node, model, product))
    if mig_capable:
        labels[MIG_CONFIG] = mig_config_name(node.name) if has_mig else "all-disabled"
        labels[MIG_CONFIG_STATE] = "success"
    labels[DEVICE_PLUGIN_CONFIG] = mig_config_name(node.name)
    return labels


def _mig_labels(node: Node, model: GpuModel, product: str) -> dict[str, str]:
    counts: Counter[str] = Counter()
    replicas: dict[str, int] = {}
    for gpu in node.gpus:
        for instance in gpu.mig or ():
            counts[instance.profile] += 1
            replicas[instance.profile] = max(replicas.get(instance.profile, 1), instance.replicas or 1)
    return gfd.mig_labels(model, product, counts, replicas)


def device_plugin_resources(node: Node) -> dict[str, str]:
    """What the device plugin advertises: whole GPUs (times their replicas) and, mixed, one resource per profile."""
    whole = sum(g.replicas or 1 for g in node.gpus if g.mode in ("full", "time-sliced"))
    resources: Counter[str] = Counter()
    for gpu in node.gpus:
        for instance in gpu.mig or ():
            resources[mig_device_resource_name(instance.profile)] += instance.replicas or 1
    out = {"nvidia.com/gpu": str(whole)} if node.gpus else {}
    return {**out, **{k: str(v) for k, v in sorted(resources.items())}}


def recomputed(node: Node, key: str) -> bool:
    """Whether a label of the inventory's node is one GFD or the GPU Operator recomputes from the GPUs: those
    of `gfd_labels`, and every per-profile MIG label (`nvidia.com/mig-<dev>.*`, of profiles the node may no
    longer hold)."""
    return key.startswith(MIG_RESOURCE_PREFIX) or key in gfd_labels(node)


def node_labels(node: Node) -> dict[str, str]:
    """The inventory's labels, GFD's recomputed (`recomputed`), and what the kubelet sets on every node."""
    kept = {k: v for k, v in node.labels.items() if not k.startswith(MIG_RESOURCE_PREFIX)}
    return {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": node.name,
            **kept, **gfd_labels(node)}


def node_taints(node: Node) -> list[Obj]:
    if node.state == "down":
        return [{"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": "2026-12-01T00:05:00Z"}
                for effect in ("NoSchedule", "NoExecute")]
    if node.state in ("cordoned", "draining"):
        return [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                 "timeAdded": "2026-12-01T00:05:00Z"}]
    return []


def node_object(node: Node, index: int = 0) -> Obj:
    """A Node object for an inventory node, as the API server returns it (see the module's docstring)."""
    cpus, memory = node.cpus or DEFAULT_CPUS, node.memory_gib or DEFAULT_MEMORY_GIB
    gpus = device_plugin_resources(node)
    allocatable = {"cpu": str(cpus), "memory": f"{memory}Gi", "pods": "110", "ephemeral-storage": "36Gi", **gpus}
    capacity = {**allocatable, "cpu": str(cpus + RESERVED_CPUS), "memory": f"{memory + RESERVED_MEMORY_GIB}Gi",
                "ephemeral-storage": "40581564Ki"}
    spec: Obj = {"providerID": f"ocid1.instance.oc1.iad.double{index:05d}", "podCIDR": f"10.244.{index % 256}.0/25"}
    if node.state in ("cordoned", "draining"):
        spec["unschedulable"] = True
    taints = node_taints(node)
    if taints:
        spec["taints"] = taints
    address = f"10.0.{10 + index // 250}.{index % 250 + 2}"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": node_labels(node), "annotations": {
            "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": node_conditions(node.state != "down"),
            "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": node.name}],
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.32.1",
                         "kubeProxyVersion": "v1.32.1", "containerRuntimeVersion": "cri-o://1.32.1",
                         "kernelVersion": "5.15.0-307.178.5.el8uek.x86_64",
                         "osImage": "Oracle Linux Server 8.10", "machineID": "", "systemUUID": "", "bootID": ""},
        },
    }


# --- pods -------------------------------------------------------------------------------------------------------


def namespace_of(queue: str) -> str:
    """The Run:ai project namespace of a queue (Run:ai names a project's namespace `runai-<project>`)."""
    return f"runai-{queue}"


def _gpu_request(job: Job) -> tuple[dict[str, str], dict[str, str]]:
    """The container's GPU limits and the pod's annotations of a job's request."""
    request = job.request
    if request.fraction is not None:
        return {}, {"gpu-fraction": f"{request.fraction:g}"}
    if request.gpu_memory_gib is not None:
        return {}, {"gpu-memory": str(round(request.gpu_memory_gib * 1024))}
    if request.mig is not None:
        return {mig_device_resource_name(request.mig): "1"}, {}
    return {"nvidia.com/gpu": str(request.gpus)}, {}


def _pod_names(job: Job) -> list[str]:
    return [job.name] if job.request.nodes == 1 else [f"{job.name}-{i}" for i in range(job.request.nodes)]


def pod_objects(job: Job, addresses: dict[str, str], pod_ips: Any) -> list[Obj]:
    """The job's pods: one, or one per node of a gang (each on its own node where it runs)."""
    limits, annotations = _gpu_request(job)
    nodes = list(dict.fromkeys(slot.node for slot in job.placement)) if job.status == "running" else []
    pods = []
    for i, name in enumerate(_pod_names(job)):
        node = nodes[i] if i < len(nodes) else None
        pods.append(_pod(job, name, node, limits, annotations, addresses.get(node or "", "10.0.10.2"), pod_ips))
    return pods


def _pod(job: Job, name: str, node: str | None, limits: dict[str, str], annotations: dict[str, str],
         host_ip: str, pod_ips: Any) -> Obj:
    spec: Obj = {
        "schedulerName": KAI_SCHEDULER, "restartPolicy": "Never",
        "priorityClassName": f"priority-{job.priority}", "priority": job.priority,
        "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.10-py3",
                        "resources": {"limits": dict(limits), "requests": dict(limits)}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    status: Obj = {"phase": PHASES[job.status], "qosClass": "BestEffort"}
    if node is not None:
        spec["nodeName"] = node
        status.update(hostIP=host_ip, podIP=next(pod_ips),
                      conditions=[{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}])
    elif status["phase"] == "Pending":
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace_of(job.queue),
                         "labels": {QUEUE_LABEL: job.queue, "app": job.name},
                         "annotations": {"pod-group-name": job.name, **annotations}},
            "spec": spec, "status": status}


# --- queues and ConfigMaps --------------------------------------------------------------------------------------


def queue_object(queue: Queue) -> Obj:
    """A KAI Queue (scheduling.run.ai/v2, cluster-scoped), as KAI's queue docs show one."""
    limit = queue.limit.gpus if queue.limit is not None and queue.limit.gpus is not None else -1
    gpu = {"quota": queue.quota.gpus if queue.quota.gpus is not None else -1, "limit": limit,
           "overQuotaWeight": queue.over_quota_weight}
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": queue.name},
            "spec": {"priority": queue.priority,
                     "resources": {"gpu": gpu, "cpu": dict(unlimited), "memory": dict(unlimited)}}}


def mig_parted_configmaps(nodes: list[Node]) -> list[Obj]:
    """The GPU Operator's own `default-mig-parted-config` (NVIDIA's configs, as the operator creates it), and the
    one its ClusterPolicy is pointed at (`migManager.config.name`): gpuadmin's mig-parted export, `all-disabled` and a
    `gpuadmin-<node>` config per node whose GPUs are carved, which the node's `nvidia.com/mig.config` names."""
    default = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": NVIDIA_MIG_PARTED_CONFIGMAP, "namespace": GPU_OPERATOR_NAMESPACE},
               "data": {MIG_MANAGER_KEY: (FIXTURES / "mig-parted_config-default.yaml").read_text()}}
    carved = [n for n in nodes if any(g.mode == "mig" for g in n.gpus)]
    return [default, export_mig_parted_configmap(carved, MIG_PARTED_CONFIGMAP, GPU_OPERATOR_NAMESPACE)]


# --- a large cluster ----------------------------------------------------------------------------------------------


def scale_cluster(nodes: int = 1024, pods: int = 10_000) -> ClusterSeed:
    """A large OKE-like cluster: H100 nodes, one in four carved all-1g.10gb (7 instances a GPU), the rest whole;
    pods fill whole GPUs and MIG instances in turn, and those that find no room stay pending. Built as an
    inventory and then `cluster_of`, so it is shaped exactly like the samples' clusters."""
    inventory = load_sample("oci-h100.yaml")
    template = inventory.nodes[0]
    mig_template = next(n for n in inventory.nodes if n.name == "gpu-h100-07")
    one_g = mig_template.gpus[1]  # all-1g.10gb
    built: list[Node] = []
    for i in range(nodes):
        name = f"gpu-{i:04d}"
        labels = {**template.labels, "kubernetes.io/hostname": name, "pool": "mig" if i % 4 == 3 else "training"}
        gpus = ([g.model_copy(update={"index": k}) for k, g in enumerate([one_g] * 8)] if i % 4 == 3
                else template.gpus)
        built.append(template.model_copy(update={"name": name, "labels": labels, "gpus": gpus}))
    jobs = _scale_jobs(built, pods, [q.name for q in inventory.queues])
    big = inventory.model_copy(update={"nodes": built, "jobs": jobs})
    return cluster_of(big)


def _scale_jobs(nodes: list[Node], count: int, queues: list[str]) -> list[Job]:
    free_gpus = [(n.name, g.index) for n in nodes if n.labels.get("pool") == "training" for g in n.gpus]
    free_mig = [(n.name, g.index, m.start) for n in nodes if n.labels.get("pool") == "mig"
                for g in n.gpus for m in g.mig or ()]
    jobs = []
    for i in range(count):
        queue = queues[i % len(queues)]
        name = f"job-{i:05d}"
        if i % 10 == 9:  # a tenth waits
            jobs.append(Job.model_validate({"name": name, "queue": queue, "request": {"gpus": 1 + i % 4}}))
        elif i % 2 == 0 and free_gpus:
            node, gpu = free_gpus.pop()
            jobs.append(Job.model_validate({"name": name, "queue": queue, "request": {"gpus": 1},
                                            "status": "running", "placement": [{"node": node, "gpu": gpu}]}))
        elif i % 2 == 1 and free_mig:
            node, gpu, start = free_mig.pop()
            jobs.append(Job.model_validate({"name": name, "queue": queue, "request": {"mig": "1g.10gb"},
                                            "status": "running",
                                            "placement": [{"node": node, "gpu": gpu, "mig_start": start}]}))
        else:
            jobs.append(Job.model_validate({"name": name, "queue": queue, "request": {"gpus": 8}}))
    return jobs
