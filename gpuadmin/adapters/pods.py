"""Pod specs for jobs, with the GPU, MIG and RDMA resources, node affinity and a shared-storage PVC.

- GPUs: `nvidia.com/gpu: N` for `gpus: N`; `nvidia.com/mig-<profile>: 1` for `mig:` (the device plugin's
  mixed strategy); a fractional request (`fraction`, `gpu_memory_gib`) asks for one `nvidia.com/gpu` replica
  of a time-sliced GPU — except where it shares full GPUs dynamically (a running fraction on a full GPU of a
  `sharing: {fractions: dynamic}` node, or a pending one in an inventory that has such nodes): that is a
  Run:ai/KAI fraction pod, with no GPU resource, the annotation `gpu-fraction: "0.5"` or `gpu-memory: "<MiB>"`
  and `schedulerName: kai-scheduler` (KAI reserves the GPU with its reservation pod).
- RDMA (`rdma: true`): `rdma/rdma_shared_device_a: 1`, the resource of the k8s-rdma-shared-dev-plugin as
  the NVIDIA Network Operator deploys it by default (RDMA on bare metal without SR-IOV, as on OCI's
  cluster network); the pod also gets `IPC_LOCK` for registering memory.
- Placement: a running job is pinned to its node(s) (`kubernetes.io/hostname`); a pending job with a
  `model` is steered by GFD's `nvidia.com/gpu.product` label of that model.
- Storage: one `ReadWriteMany` PersistentVolumeClaim (default storage class `fss-dyn-storage`, OCI File
  Storage through its CSI driver) mounted by every pod at `/mnt/shared` for checkpoints and data.
- Gangs (`nodes: N`): N pods for a running gang (each pinned to its node, asking for the GPUs it holds
  there); an Indexed Job with
  `parallelism = completions = N` for a pending one.
"""

from __future__ import annotations

from typing import Any, Literal

from gpuadmin.adapters._common import dns_name, gfd_products
from gpuadmin.catalog import get_catalog
from gpuadmin.engine.sharing import is_fractional, shares_dynamically
from gpuadmin.model import Job, Node

RDMA_RESOURCE = "rdma/rdma_shared_device_a"
SHARED_MOUNT = "/mnt/shared"
QueueSystem = Literal["kai", "kueue", "none"]


def shared_pvc(
    name: str = "gpuadmin-shared",
    namespace: str = "gpuadmin",
    size: str = "1Ti",
    storage_class: str = "fss-dyn-storage",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        },
    }


def _fraction_annotations(job: Job) -> dict[str, str]:
    """KAI/Run:ai GPU-sharing annotations of a fractional job (`gpu-memory` is in MiB)."""
    if job.request.fraction is not None:
        return {"gpu-fraction": f"{job.request.fraction:g}"}
    return {"gpu-memory": str(round((job.request.gpu_memory_gib or 0.0) * 1024))}


def _resources(job: Job, gpus: int | None = None, kai_fraction: bool = False) -> dict[str, Any]:
    request = job.request
    limits: dict[str, Any] = {}
    if request.gpus is not None:
        limits["nvidia.com/gpu"] = gpus if gpus is not None else request.gpus
    elif request.mig is not None:
        limits[f"nvidia.com/mig-{request.mig}"] = 1
    elif not kai_fraction:  # a KAI fraction asks for no nvidia.com/gpu: KAI accounts it from its annotation
        limits["nvidia.com/gpu"] = 1
    if request.rdma:
        limits[RDMA_RESOURCE] = 1
    return {"limits": limits, "requests": dict(limits)}


def _affinity(key: str, values: list[str]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
                ]
            }
        }
    }


def _labels(job: Job, queue_system: QueueSystem) -> dict[str, str]:
    labels = {
        "app.kubernetes.io/managed-by": "gpuadmin",
        "gpuadmin/job": dns_name(job.name),
        "gpuadmin/queue": dns_name(job.queue),
    }
    if queue_system == "kai":
        labels["kai.scheduler/queue"] = dns_name(job.queue)
    elif queue_system == "kueue":
        labels["kueue.x-k8s.io/queue-name"] = dns_name(job.queue)
    return labels


def _pod_spec(
    job: Job,
    affinity: dict[str, Any] | None,
    image: str,
    pvc: str,
    queue_system: QueueSystem,
    gpus: int | None = None,
    kai_fraction: bool = False,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": image,
        "resources": _resources(job, gpus, kai_fraction),
        "volumeMounts": [{"name": "shared", "mountPath": SHARED_MOUNT}],
        "env": [
            {"name": "CHECKPOINT_DIR", "value": f"{SHARED_MOUNT}/checkpoints/{dns_name(job.name)}"},
            {"name": "DATA_DIR", "value": f"{SHARED_MOUNT}/data"},
        ],
    }
    if job.request.rdma:
        container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [{"name": "shared", "persistentVolumeClaim": {"claimName": pvc}}],
    }
    if queue_system == "kai" or kai_fraction:
        spec["schedulerName"] = "kai-scheduler"
    if affinity is not None:
        spec["affinity"] = affinity
    return spec


def _model_affinity(job: Job) -> dict[str, Any] | None:
    if job.request.model is None:
        return None
    model = get_catalog().model(job.request.model)
    products = gfd_products(model) if model is not None else [job.request.model]
    return _affinity("nvidia.com/gpu.product", products)


def job_manifests(
    job: Job,
    *,
    namespace: str = "gpuadmin",
    image: str = "nvcr.io/nvidia/pytorch:24.05-py3",
    pvc: str = "gpuadmin-shared",
    queue_system: QueueSystem = "none",
    kai_fraction: bool = False,
) -> list[dict[str, Any]]:
    """The Pods (or the Indexed Job of a pending gang) of one job; `kai_fraction`: a fractional job that
    shares full GPUs dynamically, written as a Run:ai/KAI fraction pod."""
    name = dns_name(job.name, 52)
    labels = _labels(job, queue_system)
    meta_extra: dict[str, Any] = {"annotations": _fraction_annotations(job)} if kai_fraction else {}
    if job.status == "running":
        nodes = list(dict.fromkeys(slot.node for slot in job.placement))
        out = []
        for rank, node in enumerate(nodes):
            pod_name = name if len(nodes) == 1 else f"{name}-{rank}"
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": pod_name, "namespace": namespace, "labels": dict(labels), **meta_extra},
                    "spec": _pod_spec(
                        job,
                        _affinity("kubernetes.io/hostname", [node]),
                        image,
                        pvc,
                        queue_system,
                        sum(1 for slot in job.placement if slot.node == node),
                        kai_fraction,
                    ),
                }
            )
        return out
    affinity = _model_affinity(job)
    if job.request.nodes > 1:
        return [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                "spec": {
                    "completionMode": "Indexed",
                    "completions": job.request.nodes,
                    "parallelism": job.request.nodes,
                    "backoffLimit": 0,
                    "template": {
                        "metadata": {"labels": dict(labels)},
                        "spec": _pod_spec(job, affinity, image, pvc, queue_system),
                    },
                },
            }
        ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels), **meta_extra},
            "spec": _pod_spec(job, affinity, image, pvc, queue_system, kai_fraction=kai_fraction),
        }
    ]


def export_pods(
    jobs: list[Job],
    nodes: list[Node] | None = None,
    *,
    namespace: str = "gpuadmin",
    image: str = "nvcr.io/nvidia/pytorch:24.05-py3",
    pvc: str = "gpuadmin-shared",
    storage_class: str = "fss-dyn-storage",
    queue_system: QueueSystem = "none",
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The shared PVC, then the manifests of every pending and running job (by name).

    `nodes` is used to warn about running jobs placed on nodes no Kubernetes schedules on
    (`orchestrator: none`): their pods could not be bound there.
    """
    orchestrators = {n.name: n.orchestrator for n in nodes or ()}
    by_name = {n.name: n for n in nodes or ()}
    any_dynamic = any(n.sharing is not None for n in nodes or ())
    out: list[dict[str, Any]] = [shared_pvc(pvc, namespace, storage_class=storage_class)]
    for job in sorted(jobs, key=lambda j: j.name):
        if job.status not in ("pending", "running"):
            continue
        for slot in job.placement:
            if orchestrators.get(slot.node, "kubernetes") != "kubernetes" and warnings is not None:
                warnings.append(f"job {job.name} runs on {slot.node}, which is not a Kubernetes node "
                                f"(orchestrator: {orchestrators[slot.node]})")
                break
        out += job_manifests(job, namespace=namespace, image=image, pvc=pvc, queue_system=queue_system,
                             kai_fraction=_shares_dynamically(job, by_name, any_dynamic))
    return out


def _shares_dynamically(job: Job, nodes: dict[str, Node], any_dynamic: bool) -> bool:
    """A fractional job on (or, pending, headed for) a dynamically shared full GPU."""
    if not is_fractional(job):
        return False
    if job.status != "running":
        return any_dynamic
    node = nodes.get(job.placement[0].node)
    gpu = node.gpu(job.placement[0].gpu) if node is not None else None
    return job.placement[0].mig_start is None and shares_dynamically(node, gpu)
