"""Objects read from a live Kubernetes API server → gpuadmin's model, as pure functions (issue 22 item 2).

Nothing here talks to a cluster: the caller lists or watches the objects (with the client chosen in
pyproject.toml's `kube` extra) and hands each one, already decoded from JSON, to these functions. Every name
in them came from the cluster and is hostile input like any other: what a Kubernetes name may not hold is
refused with an `InputError` located at the object's field (`pods[3].metadata.name`), never drawn or stored.

- Node (`cluster_node`): the GFD labels as `kube_nodes` reads them (model, count, MIG strategy and devices,
  time-slicing replicas, sharing), CPUs and memory from `status.allocatable` (what the scheduler may hand out),
  the `Ready` condition (not True → `down`, with its reason), the other conditions that hold (MemoryPressure,
  DiskPressure, PIDPressure, NetworkUnavailable), taints, `spec.unschedulable` (→ `cordoned`) and the GPU
  Operator mig-manager's `nvidia.com/mig.config.state` label.
- Pod (`cluster_pod`): GPU requests (`nvidia.com/gpu`, `nvidia.com/mig-<device>`, or KAI's `gpu-fraction` /
  `gpu-memory` annotations), node, phase, scheduler, priority, owner, gang (KAI's `pod-group-name` annotation,
  the coscheduling plugin's `scheduling.x-k8s.io/pod-group` label, else the controlling owner) and queue label.
- KAI `Queue` (`kai_queue`): `spec.resources.gpu` quota, limit and over-quota weight, and `spec.priority`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import ValidationError

from gpuadmin.adapters._common import held_by_the_models, input_error
from gpuadmin.adapters.kube_nodes import _quantity, node_of_object, node_state
from gpuadmin.adapters.pods import JOB_ANNOTATION, MANAGED_BY, QUEUE_ANNOTATION
from gpuadmin.catalog import MIG_RESOURCE_PREFIX, get_catalog, mig_device_resource_name
from gpuadmin.model import Job, Node, Queue, Slot, Taint, Toleration
from gpuadmin.model.inventory import (
    MAX_DOWN_REASON,
    JobStatus,
    MigConfigState,
    PressureCondition,
    Request,
    Resources,
    TaintEffect,
)
from gpuadmin.model.k8s_names import dns1123_subdomain_problems, label_value_problems

Place = tuple[str | int, ...]
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
TAINT_EFFECTS: tuple[str, ...] = get_args(TaintEffect)
PRESSURE_CONDITIONS: tuple[str, ...] = get_args(PressureCondition)
# the queue a pod names: KAI's label (Run:ai's older one), then Kueue's
QUEUE_LABELS = ("kai.scheduler/queue", "runai/queue", "kueue.x-k8s.io/queue-name")
DEFAULT_QUEUE = "default"
WHOLE_GPU = "nvidia.com/gpu"
# Pod phase → job status: a pod that ended (either way) holds nothing, like a completed job
PHASES: dict[str, JobStatus] = {"Pending": "pending", "Running": "running", "Succeeded": "completed",
                                "Failed": "completed"}
MAX_OBJECT_NAME = 253


@dataclass(frozen=True, slots=True)
class ClusterNode:
    """A Node as the cluster reports it: gpuadmin's node (with the cluster's facts: down reason, pressure
    conditions, taints, mig-manager state) and the object's resourceVersion."""

    node: Node
    resource_version: str | None

    @property
    def down_reason(self) -> str | None:
        return self.node.down_reason

    @property
    def conditions(self) -> tuple[str, ...]:
        return tuple(self.node.conditions or ())

    @property
    def taints(self) -> tuple[Taint, ...]:
        return tuple(self.node.taints or ())

    @property
    def mig_config_state(self) -> MigConfigState | None:
        return self.node.mig_config_state


@dataclass(frozen=True, slots=True)
class ClusterPod:
    """A Pod as the cluster reports it. `job` builds gpuadmin's job: a running pod's slots (which GPUs it
    holds) are the caller's, since neither the Pod nor the device plugin's API says which GPU a container got."""

    namespace: str
    name: str
    resource_version: str | None
    request: Request
    status: JobStatus
    phase: str
    node: str | None
    scheduler_name: str
    queue: str
    priority: int
    gang: str | None  # the PodGroup (or owner) the pod is scheduled with: all of a gang or none
    owner: str | None  # the controlling owner, "Kind/name"
    pod_group: str | None = None  # the PodGroup alone (KAI's annotation or the coscheduling label), no owner
    gpuadmin_job: str | None = None  # the job gpuadmin submitted the pod for (`export pods`' annotation)
    tolerations: tuple[Toleration, ...] = ()  # spec.tolerations

    @property
    def job_name(self) -> str:
        return self.gpuadmin_job or f"{self.namespace}/{self.name}"

    def job(self, placement: list[Slot] | None = None) -> Job:
        return Job(name=self.job_name, queue=self.queue, request=self.request, priority=self.priority,
                   status=self.status, placement=(placement or []) if self.status == "running" else [],
                   tolerations=list(self.tolerations) or None)


def _mapping(value: Any) -> Mapping[str, Any]:
    # a decoded object's fields are plain dicts: `type(...) is dict` answers them without the ABC's
    # isinstance check (~150,000 calls a 10,000-pod sync); any other Mapping still passes the general test
    if type(value) is dict:
        return value
    return value if isinstance(value, Mapping) else {}


def _name(metadata: Mapping[str, Any], where: Place, file: str, key: str = "name") -> str:
    """metadata.name (or .namespace) as Kubernetes allows it (a DNS-1123 subdomain); else a located refusal."""
    value = metadata.get(key)
    if not isinstance(value, str) or not value:
        raise input_error(f"no metadata.{key}", file, path=(*where, "metadata", key))
    problems = dns1123_subdomain_problems(value)
    if problems:
        raise input_error(f"metadata.{key} {value[:40]!r} is not a Kubernetes name: {problems[0]}", file,
                          path=(*where, "metadata", key))
    return value


def _label_value(value: Any, what: str, where: Place, file: str) -> str:
    text = "" if value is None else str(value)
    problems = label_value_problems(text) if text else []
    if problems:
        raise input_error(f"{what} {text[:40]!r} is not a label value: {problems[0]}", file, path=where)
    return text


def _taints(spec: Mapping[str, Any], where: Place, file: str) -> tuple[Taint, ...]:
    out = []
    for i, raw in enumerate(spec.get("taints") or []):
        at = (*where, "spec", "taints", i)
        taint = _mapping(raw)
        key = taint.get("key")
        # a taint's key is a qualified name like a label's: its name part is a label value, its prefix a domain
        prefix, _, name = str(key).rpartition("/") if isinstance(key, str) else ("", "", "")
        if not name or label_value_problems(name) or (prefix and dns1123_subdomain_problems(prefix)):
            raise input_error(f"taint key {str(key)[:40]!r} is not a Kubernetes qualified name", file,
                              path=(*at, "key"))
        if taint.get("effect") not in TAINT_EFFECTS:
            raise input_error(f"taint effect {str(taint.get('effect'))[:40]!r} is not one of "
                              f"{', '.join(TAINT_EFFECTS)}", file, path=(*at, "effect"))
        value = _label_value(taint.get("value"), "taint value", (*at, "value"), file)
        out.append(Taint(key=str(key), value=value, effect=taint["effect"]))
    return tuple(out)


def _tolerations(spec: Mapping[str, Any], where: Place, file: str) -> tuple[Toleration, ...]:
    """A pod's `spec.tolerations`, each as Kubernetes validates it (a located refusal otherwise); its
    `tolerationSeconds` is not kept (it does not decide where the pod may go)."""
    raw_list = spec.get("tolerations") or []
    if not isinstance(raw_list, list):
        raise input_error("spec.tolerations is not a list", file, path=(*where, "spec", "tolerations"))
    out = []
    for i, raw in enumerate(raw_list):
        item = _mapping(raw)
        fields = {k: item[k] for k in ("key", "operator", "value", "effect") if item.get(k) not in (None, "")}
        try:
            out.append(Toleration.model_validate(fields))
        except ValidationError as bad:
            problem = bad.errors()[0]
            raise input_error(f"toleration: {problem['msg'][:200]}", file,
                              path=(*where, "spec", "tolerations", i)) from None
    return tuple(out)


def cluster_node(item: Any, where: Place = ("nodes", 0), file: str = "<cluster>") -> tuple[ClusterNode, list[str]]:
    """A Node object from the API server, and warnings (GFD labels that had to be interpreted)."""
    warnings: list[str] = []
    with held_by_the_models(file):
        node = node_of_object(item, where, file, warnings, resources="allocatable")
    metadata, spec, status = (_mapping(item.get(k)) for k in ("metadata", "spec", "status"))
    _, down_reason = node_state(item)
    conditions = [
        c["type"] for c in status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("type") in PRESSURE_CONDITIONS and c.get("status") == "True"
    ]
    state = node.labels.get(MIG_CONFIG_STATE)
    mig_config_state: MigConfigState | None = None
    if state in ("pending", "success", "failed"):
        mig_config_state = state  # type: ignore[assignment]  # narrowed by the test above
    elif state is not None:
        warnings.append(f"{node.name}: unknown {MIG_CONFIG_STATE}={state[:40]!r}, read as no state")
    taints = _taints(spec, where, file)
    with held_by_the_models(file):
        node = node.model_copy(update={
            "down_reason": printable(down_reason, MAX_DOWN_REASON) if down_reason else None,
            "conditions": conditions or None,
            "taints": list(taints) or None,
            "mig_config_state": mig_config_state,
        })
    return ClusterNode(node=node, resource_version=_resource_version(metadata)), warnings


def printable(text: str, limit: int) -> str:
    """Text from the cluster as gpuadmin keeps it: control characters (terminal escapes among them) as
    spaces, at most `limit` characters."""
    return "".join(c if c.isprintable() else " " for c in text[:limit])


def _resource_version(metadata: Mapping[str, Any]) -> str | None:
    value = metadata.get("resourceVersion")
    return value if isinstance(value, str) else None


def _mig_profile(resource: str) -> str | None:
    """The MIG profile a device plugin resource (`nvidia.com/mig-1g.10gb.me`) is the plugin's name of."""
    for model in get_catalog().gpu_models.values():
        for profile in model.mig_profiles:
            if mig_device_resource_name(profile.name) == resource:
                return str(profile.name)
    return None


def _container_limits(spec: Mapping[str, Any]) -> dict[str, float]:
    """The pod's extended resources summed over its containers (for GPUs a request equals the limit, so the
    limit is read, falling back to the request); init containers run before and hold nothing after."""
    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        resources = _mapping(_mapping(container).get("resources"))
        amounts = {**_mapping(resources.get("requests")), **_mapping(resources.get("limits"))}
        for key, text in amounts.items():
            amount = _quantity(text)
            if amount is not None and (key == WHOLE_GPU or key.startswith(MIG_RESOURCE_PREFIX)):
                total[key] = total.get(key, 0.0) + amount
    return total


def _request(spec: Mapping[str, Any], annotations: Mapping[str, Any], where: Place, file: str) -> Request:
    """The pod's GPU request: whole GPUs, one MIG device, or a KAI fraction (`gpu-fraction` of one GPU, or
    `gpu-memory` in MiB); a pod asking for none of them, or for two kinds at once, is refused."""
    amounts = _container_limits(spec)
    fraction, memory = annotations.get("gpu-fraction"), annotations.get("gpu-memory")
    if fraction is not None:
        value = _quantity(fraction)
        if value is None or not 0 < value < 1:
            raise input_error(f"gpu-fraction {str(fraction)[:24]!r} is not a number between 0 and 1", file,
                              path=(*where, "metadata", "annotations", "gpu-fraction"))
        return _shared_request("fraction", value)
    if memory is not None:
        mib = _quantity(memory)
        if mib is None or not math.isfinite(mib) or mib <= 0:
            raise input_error(f"gpu-memory {str(memory)[:24]!r} is not a number of MiB", file,
                              path=(*where, "metadata", "annotations", "gpu-memory"))
        return _shared_request("gpu_memory_gib", mib / 1024)
    mig = {k: n for k, n in amounts.items() if k.startswith(MIG_RESOURCE_PREFIX) and n > 0}
    if mig:
        resource = next(iter(mig))
        profile = _mig_profile(resource)
        if profile is None or len(mig) > 1 or mig[resource] != 1 or amounts.get(WHOLE_GPU):
            raise input_error(f"MIG request {', '.join(f'{k}: {n:g}' for k, n in mig.items())[:80]} is not one "
                              "MIG device of a known profile", file, path=(*where, "spec", "containers"))
        return _shared_request("mig", profile)
    gpus = amounts.get(WHOLE_GPU, 0.0)
    if gpus <= 0 or not gpus.is_integer():
        raise input_error("the pod asks for no GPU (nvidia.com/gpu, nvidia.com/mig-*, gpu-fraction or "
                          "gpu-memory)", file, path=(*where, "spec", "containers"))
    return _shared_request("gpus", int(gpus))


RequestKind = Literal["gpus", "mig", "fraction", "gpu_memory_gib"]


@functools.lru_cache(maxsize=4096)
def _shared_request(kind: RequestKind, value: int | float | str) -> Request:
    """One Request object for all pods that ask the same: a cluster's pods ask for a few dozen shapes, and
    validating one model per pod was a third of translating it (10,000 pods a sync). Safe as the store's
    shared requests are (`state_db._share_requests`): nothing mutates a model once built. Keyed by the kind
    as well as the value: 1 GPU and 1 GiB of GPU memory are equal numbers, not equal requests. A value the
    model refuses raises each time (an exception is not cached)."""
    return Request.model_validate({kind: value})


def _pod_group(labels: Mapping[str, str], annotations: Mapping[str, Any], where: Place, file: str) -> str | None:
    """The PodGroup the pod belongs to: KAI's `pod-group-name` annotation, else the coscheduling plugin's label."""
    if annotations.get("pod-group-name"):
        return _name({"pod-group-name": annotations["pod-group-name"]}, (*where, "metadata", "annotations"), file,
                     "pod-group-name")
    group = labels.get("scheduling.x-k8s.io/pod-group")
    if not group:
        return None
    return _label_value(group, "pod group", (*where, "metadata", "labels", "scheduling.x-k8s.io/pod-group"), file)


def asks_for_gpu(item: Any) -> bool:
    """Whether a Pod object asks for a GPU at all (a whole one, a MIG device, or a KAI fraction): the pods that
    do not (the cluster's own, CPU work) are none of gpuadmin's jobs and are passed over without a word."""
    if not isinstance(item, Mapping):
        return True  # not a pod: let `cluster_pod` say what is wrong with it
    annotations = _mapping(_mapping(item.get("metadata")).get("annotations"))
    if "gpu-fraction" in annotations or "gpu-memory" in annotations:
        return True
    for container in _mapping(item.get("spec")).get("containers") or []:
        resources = _mapping(_mapping(container).get("resources"))
        for amounts in (resources.get("limits"), resources.get("requests")):
            if any(isinstance(k, str) and (k == WHOLE_GPU or k.startswith(MIG_RESOURCE_PREFIX))
                   for k in _mapping(amounts)):
                return True
    return False


def _owner(metadata: Mapping[str, Any]) -> str | None:
    refs = [_mapping(r) for r in metadata.get("ownerReferences") or []]
    controller = next((r for r in refs if r.get("controller") is True), refs[0] if refs else None)
    if controller is None:
        return None
    return f"{controller.get('kind')}/{controller.get('name')}"


def cluster_pod(item: Any, where: Place = ("pods", 0), file: str = "<cluster>") -> ClusterPod:
    """A Pod object from the API server (`kubectl get pod -o json`), as a job to be."""
    if not isinstance(item, Mapping) or item.get("kind", "Pod") != "Pod":
        raise input_error("not a Pod", file, path=where)
    metadata, spec, status = (_mapping(item.get(k)) for k in ("metadata", "spec", "status"))
    namespace = _name(metadata, where, file, "namespace") if "namespace" in metadata else "default"
    name = _name(metadata, where, file)
    labels = {str(k): str(v) for k, v in _mapping(metadata.get("labels")).items()}
    annotations = _mapping(metadata.get("annotations"))
    queue_label = next((key for key in QUEUE_LABELS if key in labels), None)
    queue = (_label_value(labels[queue_label], f"label {queue_label}", (*where, "metadata", "labels", queue_label),
                          file) if queue_label else DEFAULT_QUEUE)
    node = spec.get("nodeName")
    if node is not None and (not isinstance(node, str) or dns1123_subdomain_problems(node)):
        raise input_error(f"spec.nodeName {str(node)[:40]!r} is not a Kubernetes node name", file,
                          path=(*where, "spec", "nodeName"))
    phase = str(status.get("phase") or "Pending")
    owner = _owner(metadata)
    pod_group = _pod_group(labels, annotations, where, file)
    priority = spec.get("priority")
    with held_by_the_models(file):
        request = _request(spec, annotations, where, file)
    submitted = _submitted_as(labels, annotations, where, file)
    if submitted is not None and submitted[1] is not None and queue_label is None:
        queue = submitted[1]
    return ClusterPod(
        namespace=namespace,
        name=name,
        resource_version=_resource_version(metadata),
        request=request,
        status=_status(phase, node),
        phase=phase,
        node=node,
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        queue=queue,
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
        gang=pod_group or owner,
        owner=owner,
        pod_group=pod_group,
        gpuadmin_job=submitted[0] if submitted is not None else None,
        tolerations=_tolerations(spec, where, file),
    )


def _status(phase: str, node: str | None) -> JobStatus:
    """A pod bound to a node holds its GPUs there from the binding on, as kube-scheduler counts it: one still
    `Pending` there (pulling its image, its containers starting) is running as far as slots go."""
    status = PHASES.get(phase, "pending")
    return "running" if status == "pending" and node else status


def _submitted_as(labels: Mapping[str, str], annotations: Mapping[str, Any], where: Place,
                  file: str) -> tuple[str, str | None] | None:
    """The job and queue a pod gpuadmin submitted was made for (`export pods`' annotations), checked as the model's
    names are (1 to 253 characters); None for a pod gpuadmin did not make."""
    if labels.get(MANAGED_BY[0]) != MANAGED_BY[1] or JOB_ANNOTATION not in annotations:
        return None
    names: list[str | None] = []
    for key in (JOB_ANNOTATION, QUEUE_ANNOTATION):
        value = annotations.get(key)
        if value is None and key == QUEUE_ANNOTATION:
            names.append(None)
            continue
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_OBJECT_NAME:
            raise input_error(f"annotation {key} is not a gpuadmin name", file,
                              path=(*where, "metadata", "annotations", key))
        names.append(value)
    return str(names[0]), names[1]


def _gpu_amount(resources: Mapping[str, Any], key: str) -> float | None:
    """KAI writes -1 for "no quota / no limit"; any other negative number is refused by KAI's webhook."""
    value = _mapping(resources.get("gpu")).get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def kai_queue(item: Any, where: Place = ("queues", 0), file: str = "<cluster>") -> Queue:
    """A KAI `Queue` (scheduling.run.ai/v2) as gpuadmin's queue: its GPU quota, limit (-1: none) and
    over-quota weight, and its priority. The queue's name is its `metadata.name` (what pods' queue label says)."""
    if not isinstance(item, Mapping) or item.get("kind", "Queue") != "Queue":  # a list's items carry no kind
        raise input_error("not a KAI Queue", file, path=where)
    metadata, spec = _mapping(item.get("metadata")), _mapping(item.get("spec"))
    name = _name(metadata, where, file)
    resources = _mapping(spec.get("resources"))
    quota, limit = _gpu_amount(resources, "quota"), _gpu_amount(resources, "limit")
    weight = _mapping(resources.get("gpu")).get("overQuotaWeight", 1)
    priority = spec.get("priority", 0)
    with held_by_the_models(file):
        return Queue(
            name=name,
            quota=Resources(gpus=round(quota) if quota is not None else None),
            limit=Resources(gpus=round(limit)) if limit is not None else None,
            over_quota_weight=weight,
            priority=priority,
        )
