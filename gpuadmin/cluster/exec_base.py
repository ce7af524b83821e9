"""What every executor of gpuadmin/cluster/execute.py is given and returns, and the waiting they share."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from gpuadmin.adapters.pods import QueueSystem
from gpuadmin.cluster.errors import ClusterError
from gpuadmin.cluster.exec_api import Api
from gpuadmin.engine.state import View
from gpuadmin.model import Job, Node, Queue


@dataclass(frozen=True)
class ExecuteSettings:
    """Where the GPU Operator and gpuadmin's objects live on the cluster, and how patiently to wait.

    The ConfigMap names are the ones `gpuadmin export mig-parted` / `export device-plugin` write, which the GPU
    Operator is pointed at (`migManager.config.name`, `devicePlugin.config.name`); `jobs_namespace` and
    `queue_system` are `export pods`' (the pods `submit-job` creates are the ones it writes)."""

    operator_namespace: str = "gpu-operator"
    mig_parted_configmap: str = "gpuadmin-mig-parted-config"
    device_plugin_configmap: str = "gpuadmin-device-plugin-config"
    jobs_namespace: str = "gpuadmin"
    queue_system: QueueSystem = "none"
    kai_root_queue: str = "gpuadmin"
    poll_interval_s: float = 1.0  # how often a wait reads the object again (the mig-manager's state label)
    backoff_initial_s: float = 0.5  # the first wait after a PodDisruptionBudget's 429, doubled each time...
    backoff_cap_s: float = 8.0  # ...up to this


class Done(NamedTuple):
    """What an executor did: `executed`, or `already` where the cluster already was as wanted."""

    status: Literal["executed", "already"]
    message: str = ""


class StepFailed(ClusterError):
    """The cluster did not complete a step: the mig-manager reported `failed`, a PodDisruptionBudget still refused
    evictions at the timeout, a pod of another scheduler (exit 3: the cluster is where it is; sync to see it)."""

    label = "not executed on the cluster"


@dataclass
class Context:
    """One step's view of the execution: the API (recording its calls), the plan's before and after, the
    resourceVersions known (synced, then updated by the executions' own writes), the settings and the deadline."""

    api: Api
    before: View
    after: View
    versions: dict[tuple[str, str], str]
    settings: ExecuteSettings
    deadline: float  # time.monotonic() after which a wait gives up
    sleep: Callable[[float], None] = time.sleep
    # what of the step the cluster holds already, as changes, should the step fail after writing part of it (a
    # drain's cordon before an eviction is refused): the state of a partial outcome takes these too
    held: list[Any] = field(default_factory=list)

    def node(self, name: str) -> Node:
        node = self.after.node(name)
        if node is None:  # a checked plan names only nodes it has
            raise StepFailed(f"node {name} is not in the plan's state")
        return node

    def job(self, name: str) -> Job | None:
        return self.after.job(name)

    def queue(self, name: str) -> Queue | None:
        return self.after.queue(name)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def saw(self, kind: str, name: str, obj: dict[str, Any]) -> None:
        """Remember the resourceVersion of an object as this execution last saw it after its own write, so a later
        step of the same plan carries it (the plan's own changes are not a stale plan)."""
        version = obj.get("metadata", {}).get("resourceVersion")
        if isinstance(version, str):
            self.versions[(kind, name)] = version


Executor = Callable[[Context, Any], Done]
