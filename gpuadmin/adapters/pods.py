"""Pod specs for jobs, with the GPU, MIG and RDMA resources, node affinity and a shared-storage PVC.

- GPUs: `nvidia.com/gpu: N` for `gpus: N`; `nvidia.com/mig-<profile>: 1` for `mig:` (the device plugin's
  mixed strategy; the resource is named as the plugin advertises it, `+` as `.`: `nvidia.com/mig-1g.10gb.me`);
  a fractional request (`fraction`, `gpu_memory_gib`) asks for one `nvidia.com/gpu` replica of a time-sliced
  GPU — except where it shares full GPUs dynamically (a running fraction on a full GPU of a
  `sharing: {fractions: dynamic}` node, or a pending one in an inventory that has such nodes): that is a
  Run:ai/KAI fraction pod, with no GPU resource, the annotation `gpu-fraction: "0.5"` or `gpu-memory: "<MiB>"`
  and `schedulerName: kai-scheduler` (KAI reserves the GPU with its reservation pod).
- RDMA (`rdma: true`): `rdma/rdma_shared_device_a: 1`, the resource of the k8s-rdma-shared-dev-plugin as
  the NVIDIA Network Operator deploys it by default (RDMA on bare metal without SR-IOV, as on OCI's
  cluster network); the pod also gets `IPC_LOCK` for registering memory.
- CPU and memory (`request.cpus`, `request.memory_gib`): `cpu` and `memory` in both `requests` and
  `limits` (equal, as the GPU resources must be: the pod gets the Guaranteed QoS class, never throttled
  below what the job asked for nor evicted first under node memory pressure).
- Placement: a running job is pinned to its node(s) (`kubernetes.io/hostname`); a pending job with a
  `model` is steered by GFD's `nvidia.com/gpu.product` label of that model. The job's `node_selector` is the
  pod's `nodeSelector`; its `node_affinity` expressions join the same required `nodeSelectorTerm`
  (`affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`).
- A job in a VM (`vm:`) runs on the Kubernetes node that VM is: it is pinned to `kubernetes.io/hostname` =
  the VM's name (a kubelet registers under its host name, which for a VM is the VM's), pending or running.
- Who and when: `owner` as the annotation `gpuadmin/owner` (any login name, `DOMAIN\\user` or `a@corp`
  included, which a label value cannot hold) and also as the label `gpuadmin/owner` where it is a valid label
  value, so `kubectl get pods -l gpuadmin/owner=alice` selects (never a rewritten name: a label either is
  the owner or is absent); `submitted` as the annotation `gpuadmin/submitted` (ISO 8601), since
  `metadata.creationTimestamp` is set by the API server.
- Storage: one `ReadWriteMany` PersistentVolumeClaim (default storage class `fss-dyn-storage`, OCI File
  Storage through its CSI driver) mounted by every pod at `/mnt/shared` for checkpoints and data.
- Gangs (`nodes: N`): N pods for a running gang (each pinned to its node, asking for the GPUs it holds
  there); an Indexed Job with
  `parallelism = completions = N` for a pending one.
"""

from __future__ import annotations

from typing import Any, Literal

from gpuadmin.adapters._common import dns_name, gfd_products
from gpuadmin.adapters.k8s_names import label_value_problems
from gpuadmin.catalog import get_catalog, mig_device_resource_name
from gpuadmin.engine.sharing import is_fractional, shares_dynamically
from gpuadmin.model import Job, Node

RDMA_RESOURCE = "rdma/rdma_shared_device_a"
SHARED_MOUNT = "/mnt/shared"
QueueSystem = Literal["kai", "kueue", "none"]


def cpu_quantity(cpus: float) -> str:
    """A Kubernetes CPU quantity: whole CPUs as a number, fractions in millicores (0.5 → 500m)."""
    return str(int(cpus)) if cpus == int(cpus) else f"{round(cpus * 1000)}m"


def memory_quantity(gib: float) -> str:
    """A Kubernetes memory quantity in Gi, or Mi where the GiB are not whole (0.5 → 512Mi)."""
    return f"{int(gib)}Gi" if gib == int(gib) else f"{round(gib * 1024)}Mi"


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
        limits[mig_device_resource_name(request.mig)] = 1
    elif not kai_fraction:  # a KAI fraction asks for no nvidia.com/gpu: KAI accounts it from its annotation
        limits["nvidia.com/gpu"] = 1
    if request.rdma:
        limits[RDMA_RESOURCE] = 1
    if request.cpus is not None:
        limits["cpu"] = cpu_quantity(request.cpus)
    if request.memory_gib is not None:
        limits["memory"] = memory_quantity(request.memory_gib)
    return {"limits": limits, "requests": dict(limits)}


def _affinity(job: Job, key: str | None = None, values: list[str] | None = None) -> dict[str, Any] | None:
    """Required node affinity: `key In values` (a pin or a GPU product) and the job's own expressions, all
    in one nodeSelectorTerm (they must all hold); None where there is nothing to require."""
    expressions: list[dict[str, Any]] = []
    if key is not None and values is not None:
        expressions.append({"key": key, "operator": "In", "values": values})
    for term in job.node_affinity or ():
        expression: dict[str, Any] = {"key": term.key, "operator": term.operator}
        if term.values:
            expression["values"] = list(term.values)
        expressions.append(expression)
    if not expressions:
        return None
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
        }
    }


def _metadata(job: Job, name: str, namespace: str, labels: dict[str, str],
              kai_fraction: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels)}
    annotations: dict[str, str] = _fraction_annotations(job) if kai_fraction else {}
    if job.owner is not None:
        annotations["gpuadmin/owner"] = job.owner
    if job.submitted is not None:
        annotations["gpuadmin/submitted"] = job.submitted.isoformat()
    if annotations:
        meta["annotations"] = annotations
    return meta


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
    if job.owner is not None and not label_value_problems(job.owner):
        labels["gpuadmin/owner"] = job.owner
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
    if job.node_selector:
        spec["nodeSelector"] = dict(sorted(job.node_selector.items()))
    if affinity is not None:
        spec["affinity"] = affinity
    return spec


def _pending_affinity(job: Job) -> dict[str, Any] | None:
    if job.vm is not None:
        return _affinity(job, "kubernetes.io/hostname", [job.vm])
    if job.request.model is None:
        return _affinity(job)
    model = get_catalog().model(job.request.model)
    products = gfd_products(model) if model is not None else [job.request.model]
    return _affinity(job, "nvidia.com/gpu.product", products)


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
    if job.status == "running":
        nodes = list(dict.fromkeys(slot.node for slot in job.placement))
        out = []
        for rank, node in enumerate(nodes):
            pod_name = name if len(nodes) == 1 else f"{name}-{rank}"
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _metadata(job, pod_name, namespace, labels, kai_fraction),
                    "spec": _pod_spec(
                        job,
                        _affinity(job, "kubernetes.io/hostname", [job.vm or node]),
                        image,
                        pvc,
                        queue_system,
                        sum(1 for slot in job.placement if slot.node == node),
                        kai_fraction,
                    ),
                }
            )
        return out
    affinity = _pending_affinity(job)
    if job.request.nodes > 1:
        return [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": _metadata(job, name, namespace, labels),
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
            "metadata": _metadata(job, name, namespace, labels, kai_fraction),
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
    (`orchestrator: none`): their pods could not be bound there. A job in a VM is not warned about:
    it runs on the Kubernetes node the VM is.
    """
    orchestrators = {n.name: n.orchestrator for n in nodes or ()}
    by_name = {n.name: n for n in nodes or ()}
    any_dynamic = any(n.sharing is not None for n in nodes or ())
    out: list[dict[str, Any]] = [shared_pvc(pvc, namespace, storage_class=storage_class)]
    for job in sorted(jobs, key=lambda j: j.name):
        if job.status not in ("pending", "running"):
            continue
        for slot in job.placement if job.vm is None else ():  # a job in a VM runs on the VM's kubelet
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
