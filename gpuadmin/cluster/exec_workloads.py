"""Executors of the queue and job ops, and of restore (gpuadmin/cluster/execute.py).

Queues are KAI `Queue` objects (scheduling.run.ai/v2), written by server-side apply as field manager `gpuadmin`:
add-queue applies the queue as `gpuadmin export queues --format kai` writes it (under the root queue, applied first
where it is missing); set-quota applies only the fields it changes (`spec.resources.gpu`, `spec.priority`), so what
other managers own (the parent, cpu and memory) stays theirs; remove-queue deletes it.

Jobs are pods. submit-job creates what `gpuadmin export pods` writes for the job (the shared PVC where missing, then
its Pod, or the Indexed Job of a pending gang: KAI makes the gang's PodGroup from that Job); cancel-job deletes
the job's pods (the operator cancels the job: nothing evicts them gracefully, and no budget protects them from
it), and its Indexed Job, in the background as kubectl does; preempt-job evicts them (the Eviction API, which a
PodDisruptionBudget may refuse: retried as a drain is); bind-job posts the Binding subresource of each pod, to the
node the plan placed it on, for pods whose `schedulerName` is `gpuadmin` only, and a gang only when every one of
its pods can be bound (all or none: everything is checked before the first Binding).

A job's pods: a job synced from the cluster is named `NAMESPACE/POD` (that pod); a job gpuadmin submitted is found
by its labels (`app.kubernetes.io/managed-by=gpuadmin`, `gpuadmin/job=<name>`) in the jobs' namespace.
"""

from __future__ import annotations

from typing import Any

from gpuadmin.adapters._common import dns_name
from gpuadmin.adapters.pods import export_pods
from gpuadmin.adapters.queues import kai_queues
from gpuadmin.cluster.exec_api import KindName, Obj
from gpuadmin.cluster.exec_base import Context, Done, StepFailed
from gpuadmin.cluster.exec_gpus import reconcile_gpus
from gpuadmin.cluster.exec_nodes import evict_all, set_unschedulable
from gpuadmin.engine import changes as ch
from gpuadmin.engine.scheduler.cycle import GPUADMIN_SCHEDULER
from gpuadmin.model import Job, Node, Queue

MANIFEST_KINDS: dict[str, KindName] = {"PersistentVolumeClaim": "pvc", "Pod": "pod", "Job": "job"}
QUOTA_FIELDS = ("quota", "limit", "overQuotaWeight")

# --- queues --------------------------------------------------------------------------------------------------------


def _kai_queue(context: Context, queue: Queue) -> tuple[Obj, Obj]:
    """The root queue and the queue, as `export queues` writes them."""
    root, manifest = kai_queues([queue], root=context.settings.kai_root_queue)
    return root, manifest


def _same_quota(found: Obj, wanted: Obj) -> bool:
    have, want = found.get("spec") or {}, wanted["spec"]
    have_gpu, want_gpu = (have.get("resources") or {}).get("gpu") or {}, want["resources"]["gpu"]
    return all(have_gpu.get(k) == want_gpu[k] for k in QUOTA_FIELDS) and have.get("priority") == want["priority"]


def apply_queue(context: Context, queue: Queue) -> Done:
    root, manifest = _kai_queue(context, queue)
    name = manifest["metadata"]["name"]
    found = context.api.get("queue", name)
    if found is not None and _same_quota(found, manifest):
        return Done("already", f"queue {name} already exists with this quota")
    if found is None and context.api.get("queue", root["metadata"]["name"]) is None:
        context.api.apply("queue", root)
    context.api.apply("queue", manifest)
    return Done("executed", f"queue {name} applied")


def add_queue(context: Context, change: ch.AddQueue) -> Done:
    return apply_queue(context, change.queue)


def set_quota(context: Context, change: ch.SetQuota) -> Done:
    queue = context.queue(change.queue)
    if queue is None:
        raise StepFailed(f"queue {change.queue} is not in the plan's state")
    _, manifest = _kai_queue(context, queue)
    name = manifest["metadata"]["name"]
    found = context.api.get("queue", name)
    if found is None:
        raise StepFailed(f"queue {name} is not on the cluster (`gpuadmin sync` to see it as it is)")
    if _same_quota(found, manifest):
        return Done("already", f"queue {name} already has this quota")
    owned = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "metadata": {"name": name},
             "spec": {"priority": manifest["spec"]["priority"],
                      "resources": {"gpu": manifest["spec"]["resources"]["gpu"]}}}
    context.api.apply("queue", owned)
    return Done("executed", f"queue {name}: quota applied")


def delete_queue(context: Context, name: str) -> Done:
    kube_name = dns_name(name)
    if context.api.delete("queue", kube_name):
        return Done("executed", f"queue {kube_name} deleted")
    return Done("already", f"queue {kube_name} is not on the cluster")


def remove_queue(context: Context, change: ch.RemoveQueue) -> Done:
    return delete_queue(context, change.name)


# --- jobs ----------------------------------------------------------------------------------------------------------


def _job_pods(context: Context, name: str) -> list[Obj]:
    """The pods of a job: `NAMESPACE/POD` for one synced from the cluster, else the ones gpuadmin labelled."""
    if "/" in name:
        namespace, pod_name = name.split("/", 1)
        pod = context.api.get("pod", pod_name, namespace)
        return [pod] if pod is not None else []
    return sorted(context.api.list("pod", namespace=context.settings.jobs_namespace, labels={
        "app.kubernetes.io/managed-by": "gpuadmin", "gpuadmin/job": dns_name(name)}),
        key=lambda p: p["metadata"]["name"])


def _foreign_controller(pod: Obj) -> str | None:
    """The controller that would put a deleted pod back (not gpuadmin's own Indexed Job), as `Kind/name`."""
    for owner in pod.get("metadata", {}).get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") != "Job":
            return f"{owner.get('kind')}/{owner.get('name')}"
    return None


def _manifests(context: Context, job: Job) -> list[Obj]:
    warnings: list[str] = []
    out = export_pods([job], list(context.after.nodes()), namespace=context.settings.jobs_namespace,
                      queue_system=context.settings.queue_system, warnings=warnings)
    if len(out) < 2:  # the shared PVC alone: export writes no pod for this job
        raise StepFailed(f"job {job.name}: no pod can be written for it: {'; '.join(warnings) or 'not pending'}")
    for manifest in out:
        _addressed_to_gpuadmin(manifest)
    return out


def _addressed_to_gpuadmin(manifest: Obj) -> None:
    """A pod submitted through gpuadmin and not placed is gpuadmin's to schedule (`gpuadmin schedule` binds it);
    one that names a scheduler already (KAI's, for a queue system or a fraction) is left to that scheduler."""
    kind = manifest.get("kind")
    spec = manifest.get("spec") if kind == "Pod" else (manifest.get("spec") or {}).get("template", {}).get("spec")
    if kind in ("Pod", "Job") and isinstance(spec, dict) and not spec.get("nodeName") \
            and not spec.get("schedulerName"):
        spec["schedulerName"] = GPUADMIN_SCHEDULER


def submit(context: Context, job: Job) -> Done:
    created = []
    for manifest in _manifests(context, job):
        kind = MANIFEST_KINDS[manifest["kind"]]
        meta = manifest["metadata"]
        found = context.api.get(kind, meta["name"], meta.get("namespace"))
        if found is None:
            context.api.create(kind, manifest)
            created.append(f"{manifest['kind']} {meta['name']}")
        elif kind != "pvc" and (found["metadata"].get("labels") or {}).get("gpuadmin/job") != dns_name(job.name):
            raise StepFailed(f"{manifest['kind']} {meta.get('namespace')}/{meta['name']} exists and is not job "
                             f"{job.name}'s: rename the job")
    if not created:
        return Done("already", f"job {job.name}'s objects are already on the cluster")
    return Done("executed", "created " + ", ".join(created))


def submit_job(context: Context, change: ch.SubmitJob) -> Done:
    return submit(context, context.job(change.job.name) or change.job)


def cancel(context: Context, name: str) -> Done:
    pods = _job_pods(context, name)
    for pod in pods:
        controller = _foreign_controller(pod)
        if controller is not None:
            raise StepFailed(f"pod {pod['metadata']['name']} of job {name} belongs to {controller}, which would "
                             "start it again: scale or delete that instead")
    deleted = []
    # the Indexed Job first: deleted after its pods, it would have started new ones meanwhile
    if "/" not in name and context.api.delete("job", dns_name(name, 52), context.settings.jobs_namespace):
        deleted.append(f"Job {dns_name(name, 52)}")
    deleted += [p["metadata"]["name"] for p in pods
                if context.api.delete("pod", p["metadata"]["name"], p["metadata"].get("namespace"))]
    if not deleted:
        return Done("already", f"job {name} has no pod on the cluster")
    return Done("executed", "deleted " + ", ".join(deleted))


def cancel_job(context: Context, change: ch.CancelJob) -> Done:
    return cancel(context, change.name)


def preempt_job(context: Context, change: ch.PreemptJob) -> Done:
    pods = [p for p in _job_pods(context, change.name) if p.get("spec", {}).get("nodeName")]
    if not pods:
        return Done("already", f"job {change.name} runs no pod on the cluster")
    evict_all(context, pods, f"preempt {change.name}")
    return Done("executed", f"evicted {len(pods)} pod(s) of job {change.name}")


def _binding_plan(name: str, pods: list[Obj], nodes: list[str]) -> list[tuple[Obj, str]]:
    """Which pod goes to which node, every pod checked before any is bound (a gang binds all or none)."""
    if not pods:
        raise StepFailed(f"job {name} has no pod on the cluster to bind")
    others = [p["metadata"]["name"] for p in pods if p.get("spec", {}).get("schedulerName") != GPUADMIN_SCHEDULER]
    if others:
        raise StepFailed(f"job {name}: pod(s) {', '.join(others)} are another scheduler's (schedulerName is not "
                         f"{GPUADMIN_SCHEDULER!r}): gpuadmin never binds them")
    if len(pods) != len(nodes):
        raise StepFailed(f"job {name} has {len(pods)} pod(s) for {len(nodes)} node(s): the gang is not whole, "
                         "nothing bound")
    pairs = list(zip(pods, nodes, strict=True))
    for pod, node in pairs:
        bound = pod.get("spec", {}).get("nodeName")
        if bound and bound != node:
            raise StepFailed(f"pod {pod['metadata']['name']} of job {name} is already on {bound}, not {node}: "
                             "nothing bound (`gpuadmin sync`, then plan again)")
    return pairs


def bind_job(context: Context, change: ch.BindJob) -> Done:
    nodes = list(dict.fromkeys(slot.node for slot in change.placement))
    pairs = _binding_plan(change.name, _job_pods(context, change.name), nodes)
    todo = [(pod, node) for pod, node in pairs if not pod.get("spec", {}).get("nodeName")]
    for pod, node in todo:
        context.api.bind(pod["metadata"]["name"], pod["metadata"].get("namespace", "default"), node)
    if not todo:
        return Done("already", f"job {change.name} is already bound to {', '.join(nodes)}")
    return Done("executed", f"job {change.name} bound to {', '.join(nodes)}")


# --- restore (undo and redo) ---------------------------------------------------------------------------------------


def _restore_node(context: Context, name: str) -> Done:
    node = context.after.node(name)
    if node is None or not node.kubernetes:
        return Done("already", f"node {name}: nothing of it to restore on the cluster")
    steps = []
    if node.state != "down":  # a down node's schedulability is left as the cluster has it
        steps.append(set_unschedulable(context, name, node.state in ("cordoned", "draining")))
    before = context.before.node(name)
    if before is None or before.gpus != node.gpus:  # only a GPU change asks the GPU Operator to do anything
        mig = (_mig_layouts(before) if before is not None else []) != _mig_layouts(node)
        steps.append(reconcile_gpus(context, name, mig=mig))
    executed = [s.message for s in steps if s.status == "executed"]
    return Done("executed", "; ".join(executed)) if executed else Done("already", f"node {name} is as it was")


def _mig_layouts(node: Node) -> list[tuple[str, Any]]:
    return [(g.mode, g.mig) for g in node.gpus if g.mode == "mig" or g.mig]


def _restore_job(context: Context, name: str) -> Done:
    job = context.job(name)
    if job is None or job.status not in ("pending", "running"):
        return cancel(context, name)
    if _job_pods(context, name):
        return Done("already", f"job {name} has its pods on the cluster")
    return submit(context, job)


def restore(context: Context, change: ch.Restore) -> Done:
    """Undo and redo: bring the one entity on the cluster to what the plan restored it to."""
    if change.kind == "node":
        return _restore_node(context, change.name)
    if change.kind == "queue":
        queue: Any = context.queue(change.name)
        return apply_queue(context, queue) if queue is not None else delete_queue(context, change.name)
    return _restore_job(context, change.name)
