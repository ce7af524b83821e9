"""Pod specs for jobs, with the GPU, MIG and RDMA resources, node affinity and a shared-storage PVC.

- GPUs: `nvidia.com/gpu: N` for `gpus: N`; for `mig:` what the device plugin of the job's node advertises
  (`nvidia.com/mig-<profile>: 1` under the mixed strategy, `+` as `.` as the plugin names it:
  `nvidia.com/mig-1g.10gb.me`; `nvidia.com/gpu: 1` under single; a pending job
  follows the nodes holding its profile — see `_single_mig_products`); a fractional request (`fraction`,
  `gpu_memory_gib`) asks for one replica of the time-sliced GPU or MIG instance it holds — except where it
  shares full GPUs dynamically (a running fraction on a full GPU of a `sharing: {fractions: dynamic}` node,
  or a pending one in an inventory that has such nodes): that is a
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
  (`affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`). Its `tolerations` are the pod's
  `spec.tolerations`, as Kubernetes writes them (an empty key or value and an unset effect left out).
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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuadmin.adapters._common import (
    ConsumerRefusal,
    dns_name,
    gfd_mig_products,
    gfd_products,
)
from gpuadmin.adapters.device_plugin import mig_strategy
from gpuadmin.catalog import get_catalog, mig_device_resource_name
from gpuadmin.engine.sharing import is_fractional, shares_dynamically
from gpuadmin.model import Job, MigInstance, Node
from gpuadmin.model.k8s_names import label_value_problems

RDMA_RESOURCE = "rdma/rdma_shared_device_a"
WHOLE_GPU = "nvidia.com/gpu"
COMPUTE_INSTANCES_CHECK = "export.pods.compute-instances"
SHARED_MOUNT = "/mnt/shared"
QueueSystem = Literal["kai", "kueue", "none"]


JOB_ANNOTATION = "gpuadmin/job"  # annotations on every exported pod: the job's and the queue's exact names
QUEUE_ANNOTATION = "gpuadmin/queue"
MANAGED_BY = ("app.kubernetes.io/managed-by", "gpuadmin")

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


def _resources(
    job: Job, gpus: int | None = None, kai_fraction: bool = False, device: str | None = None
) -> dict[str, Any]:
    """`device`: the resource the node's device plugin advertises the job's MIG instance (or the time-sliced
    MIG instance a fraction shares) as, where the node's MIG strategy decides it; else the mixed name."""
    request = job.request
    limits: dict[str, Any] = {}
    if request.gpus is not None:
        limits[WHOLE_GPU] = gpus if gpus is not None else request.gpus
    elif request.mig is not None:
        limits[device or mig_device_resource_name(request.mig)] = 1
    elif not kai_fraction:  # a KAI fraction asks for no nvidia.com/gpu: KAI accounts it from its annotation
        limits[device or WHOLE_GPU] = 1
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
    # the job's and its queue's names exactly (the labels hold them shortened to label values): what a sync of a
    # bound cluster reads back, so that the pod is the same job, in the same queue, as the one submitted
    annotations[JOB_ANNOTATION] = job.name
    annotations[QUEUE_ANNOTATION] = job.queue
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
    device: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": image,
        "resources": _resources(job, gpus, kai_fraction, device),
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
    if job.tolerations:
        spec["tolerations"] = [{k: v for k, v in t.model_dump(mode="json", exclude_none=True).items() if v != ""}
                               for t in job.tolerations]  # as kubectl shows them: no empty key or value
    return spec


def _pending_affinity(job: Job, single_mig_products: list[str] | None = None) -> dict[str, Any] | None:
    if job.vm is not None:
        return _affinity(job, "kubernetes.io/hostname", [job.vm])
    if single_mig_products is not None:  # GFD's product of the MIG device itself (it holds the model's name)
        return _affinity(job, "nvidia.com/gpu.product", single_mig_products)
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
    nodes_by_name: Mapping[str, Node] | None = None,
    single_mig_products: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The Pods (or the Indexed Job of a pending gang) of one job; `kai_fraction`: a fractional job that
    shares full GPUs dynamically, written as a Run:ai/KAI fraction pod. `nodes_by_name`: a running job's MIG
    instance is asked for as the device plugin of its node advertises it (`nvidia.com/gpu` under the single
    strategy). `single_mig_products`: a pending MIG job goes to single-strategy nodes — `nvidia.com/gpu`,
    steered by GFD's `nvidia.com/gpu.product` of the MIG device (`<product>-MIG-<profile>`)."""
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
                        _device_on(job, (nodes_by_name or {}).get(node)),
                    ),
                }
            )
        return out
    affinity = _pending_affinity(job, single_mig_products)
    device = WHOLE_GPU if single_mig_products is not None else None
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
                        "spec": _pod_spec(job, affinity, image, pvc, queue_system, device=device),
                    },
                },
            }
        ]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": _metadata(job, name, namespace, labels, kai_fraction),
            "spec": _pod_spec(job, affinity, image, pvc, queue_system, kai_fraction=kai_fraction, device=device),
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
    mig_nodes = _nodes_by_mig_profile(nodes or ())
    out: list[dict[str, Any]] = [shared_pvc(pvc, namespace, storage_class=storage_class)]
    for job in sorted(jobs, key=lambda j: j.name):
        if job.status not in ("pending", "running"):
            continue
        refusal = _split_instance_refusal(job, by_name)
        if refusal is not None:  # no Pod could ever get what the job holds: write none
            if warnings is not None:
                warnings.append(refusal)
            continue
        for slot in job.placement if job.vm is None else ():  # a job in a VM runs on the VM's kubelet
            if orchestrators.get(slot.node, "kubernetes") != "kubernetes" and warnings is not None:
                warnings.append(f"job {job.name} runs on {slot.node}, which is not a Kubernetes node "
                                f"(orchestrator: {orchestrators[slot.node]})")
                break
        out += job_manifests(job, namespace=namespace, image=image, pvc=pvc, queue_system=queue_system,
                             kai_fraction=_shares_dynamically(job, by_name, any_dynamic), nodes_by_name=by_name,
                             single_mig_products=_single_mig_products(job, mig_nodes, warnings))
    return out


def _held_instances(job: Job, node: Node | None) -> list[tuple[int, MigInstance]]:
    """(GPU index, instance) of every MIG instance the job holds on `node`."""
    if node is None:
        return []
    held: list[tuple[int, MigInstance]] = []
    for slot in job.placement:
        gpu = node.gpu(slot.gpu) if slot.node == node.name and slot.mig_start is not None else None
        held += [(slot.gpu, i) for i in (gpu.mig or ()) if i.start == slot.mig_start] if gpu else []
    return held


def _device_on(job: Job, node: Node | None) -> str | None:
    """The resource the device plugin of `node` advertises the MIG instance the job holds there as: under
    the single strategy every MIG device is `nvidia.com/gpu` (NVIDIA/k8s-device-plugin internal/rm/rm.go,
    AddDefaultResourcesToConfig: `AddMIGResource("*", "gpu")`), under mixed `nvidia.com/mig-<profile>` — for
    a fraction on a time-sliced instance too (its replicas keep the name). None: no MIG instance there."""
    held = _held_instances(job, node)
    if not held or node is None:
        return None
    return WHOLE_GPU if mig_strategy(node) == "single" else mig_device_resource_name(held[0][1].profile)


def _split_instance_refusal(job: Job, nodes: Mapping[str, Node]) -> ConsumerRefusal | None:
    """A running job holding a GPU instance split into compute instances: the device plugin advertises the
    compute instances (or, under mixed, fails on them), never the GPU instance, so no Pod can ask for it."""
    for node_name in dict.fromkeys(slot.node for slot in job.placement):
        for gpu, instance in _held_instances(job, nodes.get(node_name)):
            if instance.split:
                return ConsumerRefusal(COMPUTE_INSTANCES_CHECK, (
                    f"job {job.name} holds GPU instance {instance.profile}@{instance.start} on {node_name} "
                    f"GPU {gpu}, which is split into compute instances "
                    f"({', '.join(instance.compute_instances or ())}); the device plugin advertises compute "
                    "instances, never their GPU instance, so no Pod can ask for it: its Pods are left out"
                ))
    return None


@dataclass
class _ProfileNodes:
    """The Kubernetes nodes holding instances of one MIG profile, by their device plugin's MIG strategy:
    single → GPU model → GFD's product values of the MIG device; mixed → the GPU models."""

    single: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    mixed: dict[str, set[str]] = field(default_factory=dict)


def _nodes_by_mig_profile(nodes: list[Node] | tuple[()]) -> dict[str, _ProfileNodes]:
    """MIG profile → where it is (the candidates of a pending MIG job); split instances are not offered."""
    out: dict[str, _ProfileNodes] = {}
    for node in nodes:
        if not node.kubernetes or not any(g.mode == "mig" for g in node.gpus):
            continue
        strategy = mig_strategy(node)
        # GFD adds -SHARED to the product of a time-sliced resource (internal/lm/resource.go getProductName);
        # under single the one resource, nvidia.com/gpu, is time-sliced where any instance is
        shared = any(i.replicas for g in node.gpus for i in g.mig or ())
        for gpu in node.gpus:
            for instance in gpu.mig or ():
                if instance.split:
                    continue
                where = out.setdefault(instance.profile, _ProfileNodes())
                if strategy != "single":
                    where.mixed.setdefault(node.name, set()).add(gpu.model)
                    continue
                model = get_catalog().model(gpu.model)
                products = gfd_mig_products(model, instance.profile) if model is not None else []
                where.single.setdefault(node.name, {}).setdefault(gpu.model, set()).update(
                    f"{p}-SHARED" if shared else p for p in products)
    return out


def _few(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _single_mig_products(
    job: Job, mig_nodes: dict[str, _ProfileNodes], warnings: list[str] | None
) -> list[str] | None:
    """For a pending MIG job whose profile only single-strategy nodes hold: GFD's product values of that MIG
    device there, to steer its `nvidia.com/gpu` request (on a whole-GPU node it would get a whole GPU).
    None: the mixed name `nvidia.com/mig-<profile>`, which only nodes holding the profile advertise. Where
    nodes of both strategies hold it, a Pod still asks for one resource name: the mixed one, with a warning
    naming the single-strategy nodes it cannot reach."""
    if job.status != "pending" or job.request.mig is None or job.vm is not None:
        return None
    where = mig_nodes.get(job.request.mig)
    if where is None:
        return None
    wanted = get_catalog().model(job.request.model) if job.request.model is not None else None
    wanted_name = wanted.name if wanted is not None else job.request.model

    def fits(model: str) -> bool:
        return wanted_name is None or model == wanted_name

    mixed = sorted(n for n, models in where.mixed.items() if any(fits(m) for m in models))
    single = {n: sorted(p for m, ps in models.items() if fits(m) for p in ps) for n, models in where.single.items()}
    single = {n: ps for n, ps in single.items() if ps}
    if not single:
        return None
    if not mixed:
        return sorted({p for ps in single.values() for p in ps})
    if warnings is not None:
        warnings.append(
            f"job {job.name}: MIG {job.request.mig} is on nodes of both MIG strategies — {_few(mixed)} (mixed) "
            f"advertise it as {mig_device_resource_name(job.request.mig)}, {_few(sorted(single))} (single) as "
            f"{WHOLE_GPU}; a Pod asks for one resource name, so it asks for "
            f"{mig_device_resource_name(job.request.mig)} and only the mixed nodes can run it"
        )
    return None


def _shares_dynamically(job: Job, nodes: dict[str, Node], any_dynamic: bool) -> bool:
    """A fractional job on (or, pending, headed for) a dynamically shared full GPU."""
    if not is_fractional(job):
        return False
    if job.status != "running":
        return any_dynamic
    node = nodes.get(job.placement[0].node)
    gpu = node.gpu(job.placement[0].gpu) if node is not None else None
    return job.placement[0].mig_start is None and shares_dynamically(node, gpu)
