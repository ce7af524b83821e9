"""Execute a checked plan on a live Kubernetes cluster, through its own control plane (issue 22 item 4).

`execute` runs each change of a plan that was planned and checked against the state gpuadmin synced from the
cluster, in plan order, with the executor the registry (`EXECUTORS`) holds for its op, and returns typed steps:
what each change did (`executed`; `already` where a re-run found the cluster already as wanted; `failed`;
`not-run` after an earlier failure; `state-only` for an op that changes gpuadmin's state alone), the API calls it
made ("PATCH nodes/gpu-a") and the API's message. The first failure stops the plan: what follows is `not-run`, and
the outcome says whether the cluster holds all of the plan (`executed`), none of it (`failed`) or part of it
(`partial`). The typed error of the failure (`Execution.error`: a 403 is ClusterForbidden, exit 4; a 409 on a
resourceVersion read at plan time is ClusterConflict, exit 3: sync and plan again) is the caller's to raise after it
has journaled the steps.

Every executor reads the object first and does nothing where the cluster already is as the plan wants it, so a
plan that failed half-way can be run again as it is. The executors of each op family live in their own module:
`exec_nodes` (cordon, uncordon, repair-node, drain), `exec_gpus` (MIG and the device plugin, the GPU Operator's
path), `exec_workloads` (KAI queues, pods). docs/kubernetes.md "What each op does on the cluster" lists their calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuadmin.cluster import exec_gpus, exec_nodes, exec_workloads
from gpuadmin.cluster.connect import Connection
from gpuadmin.cluster.errors import ClusterError
from gpuadmin.cluster.exec_api import Api
from gpuadmin.cluster.exec_base import Context, Done, ExecuteSettings, Executor
from gpuadmin.engine import changes as ch
from gpuadmin.engine.ops import spec_of
from gpuadmin.engine.state import View

StepStatus = Literal["executed", "already", "failed", "not-run", "state-only"]
Outcome = Literal["executed", "failed", "partial"]


@dataclass(frozen=True)
class NotExecuted:
    """The op changes nothing on a Kubernetes cluster, and why (its step is `state-only`)."""

    why: str


@dataclass(frozen=True)
class Executes:
    """The op's executor, and the API calls it makes, in words (what a plan on a bound state says `apply` will do
    on the cluster, `planned_steps`). `calls` may name the settings' places: {operator_namespace},
    {mig_parted_configmap}, {device_plugin_configmap}, {jobs_namespace}, {kai_root_queue}."""

    run: Executor
    calls: str


_CORDON_CALLS = "GET node; PATCH node spec.unschedulable (strategic merge, with the synced resourceVersion)"
_TIME_SLICING_CALLS = ("GET, then POST or PATCH ConfigMap {operator_namespace}/{device_plugin_configmap}; GET node; "
                       "PATCH node label nvidia.com/device-plugin.config")
_MIG_CALLS = ("GET, then POST or PATCH ConfigMap {operator_namespace}/{mig_parted_configmap} (config.yaml); GET node; "
              "PATCH node label nvidia.com/mig.config; GET node until nvidia.com/mig.config.state is success; then "
              "as set-time-slicing")
_PODS_READ = "GET the pod (or LIST the job's pods by label)"

EXECUTORS: dict[str, Executes | NotExecuted] = {
    "set-mig": Executes(exec_gpus.set_mig, _MIG_CALLS),
    "set-mode": Executes(exec_gpus.set_mode, "entering or leaving MIG: as set-mig (leaving: nvidia.com/mig.config="
                         "all-disabled); else " + _TIME_SLICING_CALLS),
    "set-time-slicing": Executes(exec_gpus.set_time_slicing, _TIME_SLICING_CALLS),
    "set-sharing": NotExecuted("dynamic sharing (fractions of whole GPUs) is the KAI scheduler's cluster-wide "
                               "setting: nothing on the node changes"),
    "set-device-groups": NotExecuted("device groups exist on vSphere hosts only"),
    "assign-vgpu": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "remove-vgpu": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "attach-vm": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "detach-vm": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "evacuate-host": NotExecuted("a Kubernetes node runs pods, not VMs: its drain evicts them"),
    "cordon": Executes(exec_nodes.cordon, _CORDON_CALLS),
    "uncordon": Executes(exec_nodes.uncordon, _CORDON_CALLS),
    "repair-node": Executes(exec_nodes.repair_node, _CORDON_CALLS + "; GET node (its Ready condition)"),
    "drain": Executes(exec_nodes.drain, _CORDON_CALLS + "; LIST pods on the node; POST pods/NS/NAME/eviction for "
                      "each but DaemonSet and mirror pods (a PodDisruptionBudget's 429 retried until the timeout); "
                      "LIST pods until they ended"),
    "submit-job": Executes(exec_workloads.submit_job, "GET, POST PVC {jobs_namespace}/gpuadmin-shared; GET, POST the "
                           "Pod (a pending gang: its Indexed batch/v1 Job) in {jobs_namespace}"),
    "cancel-job": Executes(exec_workloads.cancel_job, _PODS_READ + "; DELETE each pod; DELETE the job's Indexed Job"),
    "bind-job": Executes(exec_workloads.bind_job, _PODS_READ + "; POST pods/NS/NAME/binding for each (all or none)"),
    "preempt-job": Executes(exec_workloads.preempt_job, _PODS_READ + "; POST pods/NS/NAME/eviction for each"),
    "set-quota": Executes(exec_workloads.set_quota, "GET queue; server-side APPLY the KAI Queue's spec.resources.gpu "
                          "and spec.priority"),
    "add-queue": Executes(exec_workloads.add_queue, "GET queue; GET root queue {kai_root_queue} (APPLY it where "
                          "missing); server-side APPLY the KAI Queue"),
    "remove-queue": Executes(exec_workloads.remove_queue, "DELETE the KAI Queue"),
    "add-node": NotExecuted("a node joins a cluster by its kubelet registering, not through gpuadmin"),
    "remove-node": NotExecuted("gpuadmin forgets the node; deleting a Node object is the cluster's own "
                               "decommissioning, not gpuadmin's"),
    "restore": Executes(exec_workloads.restore, "a node: as cordon / uncordon, and as set-mig / set-time-slicing "
                        "where its GPUs changed; a queue: as add-queue or remove-queue; a job: as submit-job or "
                        "cancel-job"),
    "set-gpu-health": NotExecuted("a GPU's health fence is gpuadmin's own: its scheduler and rules keep new work off "
                                  "the GPU; nothing on the node changes (cordon or drain it to move pods)"),
}


@dataclass(frozen=True)
class PlannedStep:
    """What `apply` will do on the bound cluster for one change of a plan: the API calls its executor makes, or
    (`executes` False) why the change is gpuadmin's state only."""

    op: str
    target: str
    executes: bool
    calls: str

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "target": self.target, "executes": self.executes, "calls": self.calls}


def planned_steps(changes: Sequence[Any], settings: ExecuteSettings) -> list[PlannedStep]:
    """Each change as its executor will carry it out (`EXECUTORS`), in plan order, with the settings' places."""
    places = {"operator_namespace": settings.operator_namespace,
              "mig_parted_configmap": settings.mig_parted_configmap,
              "device_plugin_configmap": settings.device_plugin_configmap,
              "jobs_namespace": settings.jobs_namespace, "kai_root_queue": settings.kai_root_queue}
    out = []
    for change in changes:
        op = spec_of(change).op
        entry = EXECUTORS[op]
        if isinstance(entry, NotExecuted):
            out.append(PlannedStep(op, target_of(change), False, f"nothing on the cluster: {entry.why}"))
        else:
            out.append(PlannedStep(op, target_of(change), True, entry.calls.format(**places)))
    return out


@dataclass(frozen=True)
class Step:
    """One change as executed: its op, what it targets, its status, the API calls made and the API's message."""

    op: str
    target: str
    status: StepStatus
    calls: tuple[str, ...] = ()
    message: str = ""
    # a failed step's part that the cluster holds nonetheless, as changes (`Context.held`: a drain's cordon)
    held: tuple[Any, ...] = ()

    def as_journal(self) -> dict[str, Any]:
        """The step as the journal stores it (`JournalEntry.execution`)."""
        return {"op": self.op, "target": self.target, "status": self.status, "calls": list(self.calls),
                "message": self.message}

    def line(self) -> str:
        """The step in one line, as a failed plan's error lists it (render.plan.step_lines's format)."""
        return (f"{self.status:<10} {self.op} {self.target}" + (f"  {', '.join(self.calls)}" if self.calls else "")
                + (f"  ({self.message})" if self.message else ""))


@dataclass(frozen=True)
class Execution:
    """The steps of a plan executed on the cluster, its outcome, and the typed error of its failure (if any)."""

    steps: tuple[Step, ...]
    outcome: Outcome
    error: ClusterError | None = None
    # the resourceVersions as the execution last saw them after its own writes (the synced ones besides): what
    # `Store.commit(..., cluster_versions=)` keeps, so the next plan's cordon does not take gpuadmin's own write
    # for someone else's
    versions: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def failed_step(self) -> Step | None:
        return next((s for s in self.steps if s.status == "failed"), None)


def target_of(change: Any) -> str:
    """What a change acts on, as its step names it: `node gpu-a`, `node gpu-a GPU 3`, `job train`, `queue q`."""
    if isinstance(change, ch.SubmitJob):
        return f"job {change.job.name}"
    if isinstance(change, ch.AddQueue):
        return f"queue {change.queue.name}"
    if isinstance(change, ch.SetQuota):
        return f"queue {change.queue}"
    if isinstance(change, ch.RemoveQueue):
        return f"queue {change.name}"
    if isinstance(change, ch.Restore):
        return f"{change.kind} {change.name}"
    if isinstance(change, ch.AddNode):
        return f"node {change.node.name}"
    node = getattr(change, "node", None)
    if isinstance(node, str):
        gpu = getattr(change, "gpu", None)
        return f"node {node}" + (f" GPU {gpu}" if gpu is not None else "")
    return f"job {getattr(change, 'name', '?')}"


@dataclass
class _Run:
    """The plan's execution so far."""

    steps: list[Step] = field(default_factory=list)
    error: ClusterError | None = None
    changed: bool = False  # a step executed (or was found done): the cluster holds part of the plan


def execute(conn: Connection, changes: Sequence[Any], before: View, after: View,
            versions: Mapping[tuple[str, str], str], *, timeout: float, settings: ExecuteSettings,
            sleep: Callable[[float], None] = time.sleep) -> Execution:
    """Run `changes` (planned and checked: `before` is the synced state, `after` the plan's view) on the cluster.

    `versions` are the resourceVersions gpuadmin read at sync (`Store.cluster_versions()`): a node's cordon carries
    its own, so a node changed on the cluster since is a 409 (a stale plan), never overwritten. `timeout` bounds
    each step's waiting (a PodDisruptionBudget's 429s, the mig-manager's work), in seconds."""
    run = _Run()
    known = dict(versions)
    for change in changes:
        op = spec_of(change).op
        if run.error is not None:
            run.steps.append(Step(op, target_of(change), "not-run"))
            continue
        executor = EXECUTORS[op]
        if isinstance(executor, NotExecuted):
            run.steps.append(Step(op, target_of(change), "state-only", message=executor.why))
            continue
        run.steps.append(_step(run, executor.run, change, Context(
            api=Api(conn.client), before=before, after=after, versions=known, settings=settings,
            deadline=time.monotonic() + timeout, sleep=sleep)))
    if run.error is not None:
        run.error.steps = tuple(step.line() for step in run.steps)
    return Execution(tuple(run.steps), _outcome(run), run.error, known)


def _step(run: _Run, executor: Executor, change: Any, context: Context) -> Step:
    op, target = spec_of(change).op, target_of(change)
    try:
        done: Done = executor(context, change)
    except ClusterError as error:
        run.error = error
        run.changed = run.changed or context.api.wrote
        return Step(op, target, "failed", tuple(context.api.calls), str(error), tuple(context.held))
    run.changed = True
    return Step(op, target, done.status, tuple(context.api.calls), done.message)


def _outcome(run: _Run) -> Outcome:
    if run.error is None:
        return "executed"
    return "partial" if run.changed else "failed"


__all__ = ["EXECUTORS", "ExecuteSettings", "Executes", "Execution", "NotExecuted", "PlannedStep", "Step", "execute",
           "planned_steps", "target_of"]
