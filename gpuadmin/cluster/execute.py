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


EXECUTORS: dict[str, Executor | NotExecuted] = {
    "set-mig": exec_gpus.set_mig,
    "set-mode": exec_gpus.set_mode,
    "set-time-slicing": exec_gpus.set_time_slicing,
    "set-sharing": NotExecuted("dynamic sharing (fractions of whole GPUs) is the KAI scheduler's cluster-wide "
                               "setting: nothing on the node changes"),
    "set-device-groups": NotExecuted("device groups exist on vSphere hosts only"),
    "assign-vgpu": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "remove-vgpu": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "attach-vm": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "detach-vm": NotExecuted("a Kubernetes node runs pods, not VMs"),
    "cordon": exec_nodes.cordon,
    "uncordon": exec_nodes.uncordon,
    "repair-node": exec_nodes.repair_node,
    "drain": exec_nodes.drain,
    "submit-job": exec_workloads.submit_job,
    "cancel-job": exec_workloads.cancel_job,
    "bind-job": exec_workloads.bind_job,
    "preempt-job": exec_workloads.preempt_job,
    "set-quota": exec_workloads.set_quota,
    "add-queue": exec_workloads.add_queue,
    "remove-queue": exec_workloads.remove_queue,
    "add-node": NotExecuted("a node joins a cluster by its kubelet registering, not through gpuadmin"),
    "remove-node": NotExecuted("gpuadmin forgets the node; deleting a Node object is the cluster's own "
                               "decommissioning, not gpuadmin's"),
    "restore": exec_workloads.restore,
    "set-gpu-health": NotExecuted("a GPU's health fence is gpuadmin's own: its scheduler and rules keep new work off "
                                  "the GPU; nothing on the node changes (cordon or drain it to move pods)"),
}


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
        run.steps.append(_step(run, executor, change, Context(
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


__all__ = ["EXECUTORS", "ExecuteSettings", "Execution", "NotExecuted", "Step", "execute", "target_of"]
