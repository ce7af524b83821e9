"""Objects shaped like a real cluster's, for the API server double (tests/kube/apiserver_double.py).

Sources, so that what the double serves is what a real cluster sends, not what gpuadmin expects:
- Node labels: the GPU Feature Discovery labels of a real H100 node under the mixed MIG strategy,
  tests/adapters/fixtures/h100-mig-mixed-all-balanced_node-labels.json (a byte copy of
  ../shared/data/gfd-labels/, from NVIDIA/cloud-native-docs gpu-operator/manifests/output/mig-mixed-node-labels.json).
- The mig-parted config names the simulated mig-manager accepts: tests/adapters/fixtures/mig-parted_config-default.yaml
  (../shared/data/mig-parted/, NVIDIA/mig-parted deployments/systemd/config-default.yaml); the device-plugin
  ConfigMap: tests/adapters/fixtures/time-slicing-config-fine.yaml (../shared/data/device-plugin/).
- Node status (conditions Ready / MemoryPressure / DiskPressure / PIDPressure with the kubelet's reasons and
  messages, addresses, capacity / allocatable, nodeInfo): Kubernetes' "Node Status" reference page,
  https://kubernetes.io/docs/reference/node/node-status/, and the Node v1 API reference.
- Pods requesting MIG devices as `nvidia.com/mig-<profile>` limits: NVIDIA's "GPU Operator with MIG" page,
  https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-mig.html; pod status
  (phase, conditions, hostIP, podIP, qosClass): Kubernetes' "Pod Lifecycle" page.
- The OKE worker shape label (node.kubernetes.io/instance-type=BM.GPU.H100.8) as OCI's OKE sets it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

FIXTURES = Path(__file__).resolve().parent.parent / "adapters" / "fixtures"
GFD_LABELS: dict[str, str] = json.loads((FIXTURES / "h100-mig-mixed-all-balanced_node-labels.json").read_text())


def mig_parted_config_names() -> set[str]:
    """The configs the GPU Operator's default mig-parted ConfigMap defines; the mig-manager applies only these."""
    config = yaml.safe_load((FIXTURES / "mig-parted_config-default.yaml").read_text())
    return set(config["mig-configs"])


def device_plugin_configmap(namespace: str = "gpu-operator") -> Obj:
    configmap: Obj = yaml.safe_load((FIXTURES / "time-slicing-config-fine.yaml").read_text())
    configmap["metadata"]["namespace"] = namespace
    return configmap


def mig_parted_configmap(namespace: str = "gpu-operator") -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "default-mig-parted-config", "namespace": namespace},
            "data": {"config.yaml": (FIXTURES / "mig-parted_config-default.yaml").read_text()}}


def gpu_resources(labels: dict[str, str]) -> dict[str, str]:
    """What the device plugin advertises under the mixed strategy: one resource per MIG profile, from GFD's counts."""
    return {key.removesuffix(".count"): value for key, value in labels.items()
            if key.startswith("nvidia.com/mig-") and key.endswith(".count")}


def node(name: str, *, ready: bool = True, unschedulable: bool = False, taints: list[Obj] | None = None,
         labels: dict[str, str] | None = None) -> Obj:
    node_labels = {**GFD_LABELS, "kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "BM.GPU.H100.8",
                   **(labels or {})}
    for role in ("node-role.kubernetes.io/control-plane", "node.kubernetes.io/exclude-from-external-load-balancers"):
        node_labels.pop(role, None)  # the source node was a single-node cluster; a GPU worker is no control plane
    capacity = {"cpu": "112", "memory": "2113389Mi", "pods": "110", "ephemeral-storage": "40581564Ki",
                **gpu_resources(node_labels)}
    spec: Obj = {"providerID": f"ocid1.instance.oc1.double.{name}", "podCIDR": "10.244.0.0/25"}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": node_labels, "annotations": {
            "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": {**capacity, "cpu": "111500m", "memory": "2111289Mi"},
            "conditions": node_conditions(ready),
            "addresses": [{"type": "InternalIP", "address": "10.0.10.2"}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.32.1",
                         "kubeProxyVersion": "v1.32.1", "containerRuntimeVersion": "cri-o://1.32.1",
                         "kernelVersion": "5.15.0-307.178.5.el8uek.x86_64",
                         "osImage": "Oracle Linux Server 8.10", "machineID": "", "systemUUID": "", "bootID": ""},
        },
    }


def node_conditions(ready: bool) -> list[Obj]:
    when = "2026-12-01T00:00:00Z"
    pressure = [("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available")]
    conditions = [{"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": when,
                   "lastTransitionTime": when} for t, r, m in pressure]
    reason, message = (("KubeletReady", "kubelet is posting ready status") if ready
                       else ("NodeStatusUnknown", "Kubelet stopped posting node status."))
    conditions.append({"type": "Ready", "status": "True" if ready else "Unknown", "reason": reason, "message": message,
                       "lastHeartbeatTime": when, "lastTransitionTime": when})
    return conditions


def pod(name: str, *, namespace: str = "default", node_name: str | None = None, resource: str = "nvidia.com/gpu",
        count: int = 1, labels: dict[str, str] | None = None, scheduler: str = "default-scheduler",
        phase: str | None = None) -> Obj:
    limits = {resource: str(count)}
    spec: Obj = {"schedulerName": scheduler, "restartPolicy": "Never", "containers": [{
        "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"],
        "resources": {"limits": limits, "requests": limits}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    status: Obj = {"phase": phase or ("Running" if node_name else "Pending"), "qosClass": "BestEffort"}
    if node_name:
        spec["nodeName"] = node_name
        status.update(hostIP="10.0.10.2", podIP="10.244.0.17",
                      conditions=[{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}])
    else:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec, "status": status}


def disruption_budget(name: str, match_labels: dict[str, str], *, namespace: str = "default",
                      min_available: int | None = None, max_unavailable: int | None = None) -> Obj:
    spec: Obj = {"selector": {"matchLabels": match_labels}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def kai_queue(name: str, *, parent: str | None = None, gpu_quota: int = -1) -> Obj:
    """A KAI scheduler Queue (scheduling.run.ai/v2, cluster-scoped), as KAI's queue docs show it."""
    spec: Obj = {"resources": {"gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1},
                               "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                               "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def kai_pod_group(name: str, *, namespace: str = "default", min_member: int = 1, queue: str = "default") -> Obj:
    """A KAI PodGroup (scheduling.run.ai/v2alpha2), as KAI-Scheduler's docs (docs/batch) show one: the pods that
    carry its name in the `pod-group-name` annotation are scheduled together, at least `minMember` of them."""
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": min_member, "queue": queue}}


def whole_gpu_labels(count: int = 8) -> dict[str, str]:
    """GFD's (`nvidia.com/`) labels of the same H100 with MIG off (`nvidia.com/mig.config=all-disabled`, the
    mig-manager's config for it): the per-profile `nvidia.com/mig-*` keys gone, `count` whole GPUs. Derived from the
    fixture above (GFD writes no MIG device keys when MIG is disabled), not copied from a real node."""
    labels = {k: v for k, v in GFD_LABELS.items()
              if k.startswith("nvidia.com/") and not k.startswith("nvidia.com/mig-")}
    labels.update({"nvidia.com/gpu.count": str(count), "nvidia.com/mig.config": "all-disabled",
                   "nvidia.com/mig.strategy": "single"})
    return labels


def whole_gpu_node(name: str, count: int = 8, **options: Any) -> Obj:
    """A node of `count` whole H100s (no MIG), advertising them as `nvidia.com/gpu` as the device plugin does."""
    made = node(name, **options)
    labels = {k: v for k, v in made["metadata"]["labels"].items() if not k.startswith("nvidia.com/mig-")}
    labels.update(whole_gpu_labels(count), **(options.get("labels") or {}))
    made["metadata"]["labels"] = labels
    for amounts in (made["status"]["capacity"], made["status"]["allocatable"]):
        for key in [k for k in amounts if k.startswith("nvidia.com/mig-")]:
            del amounts[key]
        amounts["nvidia.com/gpu"] = str(count)
    return made


def cluster_policy(*, mig_parted: str = "default-mig-parted-config", device_plugin: str | None = None) -> Obj:
    """The GPU Operator's ClusterPolicy (nvidia.com/v1, cluster-scoped, `cluster-policy` as its Helm chart names
    it), with the two fields gpuadmin reads: `migManager.config.name` and `devicePlugin.config.name` (NVIDIA's
    "GPU Operator with MIG" and "Time-Slicing GPUs in Kubernetes" pages patch exactly these)."""
    spec: Obj = {"migManager": {"enabled": True, "config": {"name": mig_parted, "default": "all-disabled"}},
                 "devicePlugin": {"enabled": True}}
    if device_plugin is not None:
        spec["devicePlugin"]["config"] = {"name": device_plugin, "default": ""}
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
            "spec": spec}
