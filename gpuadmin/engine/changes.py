"""The change operations of DESIGN §4, as a pydantic discriminated union on `op`.

The same objects come from change files, from the TUI's forms and from the scheduler. A change says
what to do, not whether it is allowed: the planner applies it to a view and the rules judge the result.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter, model_validator

from gpuadmin.model.inventory import (
    DEFAULT_RESERVED_GIB,
    DeviceGroup,
    GpuIndex,
    HealthReason,
    Job,
    MigInstance,
    Name,
    Node,
    Priority,
    Queue,
    Replicas,
    ReservedGib,
    Resources,
    Seq,
    Slot,
    StrictModel,
    Timestamp,
    Weight,
)


class SetMig(StrictModel):
    """Enable MIG with exactly this layout; a missing `start` is chosen by the engine."""

    op: Literal["set-mig"]
    node: Name
    gpu: GpuIndex
    instances: list[MigInstance]


class SetMode(StrictModel):
    """Change a GPU's mode, leaving MIG if it was on."""

    op: Literal["set-mode"]
    node: Name
    gpu: GpuIndex
    mode: Literal["full", "time-sliced", "vgpu", "passthrough"]
    replicas: Replicas | None = None


class SetTimeSlicing(StrictModel):
    """N replicas of the GPU, or of each MIG instance of `mig_profile`."""

    op: Literal["set-time-slicing"]
    node: Name
    gpu: GpuIndex
    replicas: Replicas
    mig_profile: Name | None = None


class SetSharing(StrictModel):
    """Turn a node's dynamic GPU sharing on (`fractions: dynamic`, as the inventory's `sharing` field) or off.

    `reserved_gib` is the memory kept back per shared GPU; omitted, the inventory's default. Turning sharing off,
    or raising the reserve, under running fractions is refused unless they are preempted in the same plan.
    """

    op: Literal["set-sharing"]
    node: Name
    fractions: Literal["dynamic", "off"]
    reserved_gib: ReservedGib | None = None

    @model_validator(mode="after")
    def _reserve_only_when_on(self) -> SetSharing:
        if self.fractions == "off" and self.reserved_gib is not None:
            raise ValueError("'reserved_gib' applies to fractions: dynamic, not off")
        return self

    @property
    def reserve(self) -> float:
        """The reserve the node gets when sharing is turned on."""
        return DEFAULT_RESERVED_GIB if self.reserved_gib is None else self.reserved_gib


class SetDeviceGroups(StrictModel):
    op: Literal["set-device-groups"]
    node: Name
    groups: list[DeviceGroup]


class AssignVgpu(StrictModel):
    op: Literal["assign-vgpu"]
    node: Name
    gpu: GpuIndex
    vm: Name
    profile: Name


class RemoveVgpu(StrictModel):
    op: Literal["remove-vgpu"]
    node: Name
    gpu: GpuIndex
    vm: Name
    profile: Name


class AttachVm(StrictModel):
    """Pass GPUs, or a whole device group, through to a VM."""

    op: Literal["attach-vm"]
    node: Name
    vm: Name
    gpus: list[GpuIndex] | None = None
    device_group: Name | None = None

    @model_validator(mode="after")
    def _one_target(self) -> AttachVm:
        if (self.gpus is None) == (self.device_group is None):
            raise ValueError("attach-vm needs exactly one of 'gpus' or 'device_group'")
        return self


class DetachVm(StrictModel):
    """Detach the named GPUs or device group from a VM; with neither, detach everything it holds."""

    op: Literal["detach-vm"]
    node: Name
    vm: Name
    gpus: list[GpuIndex] | None = None
    device_group: Name | None = None


class Cordon(StrictModel):
    op: Literal["cordon"]
    node: Name


class Uncordon(StrictModel):
    op: Literal["uncordon"]
    node: Name


class RepairNode(StrictModel):
    """Bring a `down` node back after its repair (admin only); `note` records what was done (an RMA number)."""

    op: Literal["repair-node"]
    node: Name
    note: str
    state: Literal["ready", "cordoned"] = "ready"


class SetGpuHealth(StrictModel):
    """Fence a GPU as unhealthy (`reason` required: an XID, a DBE count, what an operator saw) or clear it
    (`healthy`, an admin's). `by` and `since` are stamped by the service from the caller and the clock when the
    change does not say; the planner copies them onto the GPU."""

    op: Literal["set-gpu-health"]
    node: Name
    gpu: GpuIndex
    health: Literal["healthy", "unhealthy"]
    reason: HealthReason | None = None
    by: Name | None = None
    since: Timestamp | None = None

    @model_validator(mode="after")
    def _reason_with_unhealthy(self) -> SetGpuHealth:
        if self.health == "unhealthy" and self.reason is None:
            raise ValueError("set-gpu-health unhealthy needs a 'reason' (e.g. 'XID 79: GPU has fallen off the bus')")
        if self.health == "healthy" and (self.reason, self.by, self.since) != (None, None, None):
            raise ValueError("set-gpu-health healthy takes no 'reason', 'by' or 'since' (they describe a fence)")
        return self


class Drain(StrictModel):
    """Cordon, and evict the preemptible jobs; non-preemptible ones block the plan."""

    op: Literal["drain"]
    node: Name


class EvacuateHost(StrictModel):
    """Put a vSphere host into maintenance mode: every VM on it moved to another host first (vMotion for vGPU
    VMs; power off, relocate and power on for VMs with passthrough GPUs or a device group), as the engine plans
    it (gpuadmin/engine/evacuation.py). `drain` on a vSphere host plans the same."""

    op: Literal["evacuate-host"]
    node: Name


class SubmitJob(StrictModel):
    op: Literal["submit-job"]
    job: Job


class CancelJob(StrictModel):
    op: Literal["cancel-job"]
    name: Name


class BindJob(StrictModel):
    """Place a pending job on these slices (what the scheduler emits)."""

    op: Literal["bind-job"]
    name: Name
    placement: list[Slot] = Field(min_length=1)


class PreemptJob(StrictModel):
    """Evict a running job; it is requeued with status `preempted`.

    A non-preemptible job is never preempted, short of an admin's explicit override: `override: true` with the
    `reason` (journaled with the plan). Such a plan needs an admin and is destructive (typed confirmation).
    """

    op: Literal["preempt-job"]
    name: Name
    override: bool | None = None  # None, not False, by default: a plain preempt-job reads as it was written
    reason: str | None = None

    @model_validator(mode="after")
    def _override_has_reason(self) -> PreemptJob:
        if self.override and not (self.reason or "").strip():
            raise ValueError("override: true needs a 'reason' (it is journaled): why this non-preemptible job "
                             "must stop")
        if not self.override and self.reason is not None:
            raise ValueError("'reason' goes with override: true (preempting a non-preemptible job)")
        return self


class SetQuota(StrictModel):
    op: Literal["set-quota"]
    queue: Name
    quota: Resources | None = None
    limit: Resources | None = None
    over_quota_weight: Weight | None = None
    priority: Priority | None = None


class AddQueue(StrictModel):
    op: Literal["add-queue"]
    queue: Queue


class RemoveQueue(StrictModel):
    op: Literal["remove-queue"]
    name: Name


class AddNode(StrictModel):
    op: Literal["add-node"]
    node: Node


class RemoveNode(StrictModel):
    op: Literal["remove-node"]
    name: Name


class Restore(StrictModel):
    """Put one entity back exactly as it was (`value: null` removes it). Undo is made of these."""

    op: Literal["restore"]
    kind: Literal["node", "job", "queue"]
    name: Name
    node: Node | None = None
    job: Job | None = None
    queue: Queue | None = None
    seq: Seq | None = None  # where the entity goes (back) in FIFO order, removed or not; a position SQLite can store

    @model_validator(mode="after")
    def _value_matches_kind(self) -> Restore:
        given = [k for k in ("node", "job", "queue") if getattr(self, k) is not None]
        if given and given != [self.kind]:
            raise ValueError(f"restore of a {self.kind} takes only '{self.kind}'")
        value = getattr(self, self.kind)
        if value is not None and value.name != self.name:
            raise ValueError(f"restore of {self.kind} {self.name!r} holds a {self.kind} named {value.name!r}: "
                             "a restore puts back the entity it names")
        return self


Change = Annotated[
    SetMig
    | SetMode
    | SetTimeSlicing
    | SetSharing
    | SetDeviceGroups
    | AssignVgpu
    | RemoveVgpu
    | AttachVm
    | DetachVm
    | Cordon
    | Uncordon
    | RepairNode
    | SetGpuHealth
    | Drain
    | EvacuateHost
    | SubmitJob
    | CancelJob
    | BindJob
    | PreemptJob
    | SetQuota
    | AddQueue
    | RemoveQueue
    | AddNode
    | RemoveNode
    | Restore,
    Field(discriminator="op"),
]


class ChangeFile(StrictModel):
    changes: list[Change]


CHANGE_LIST: TypeAdapter[list[Change]] = TypeAdapter(list[Change])

__all__ = [
    "CHANGE_LIST",
    "AddNode",
    "AddQueue",
    "AssignVgpu",
    "AttachVm",
    "BindJob",
    "CancelJob",
    "Change",
    "ChangeFile",
    "Cordon",
    "DetachVm",
    "Drain",
    "EvacuateHost",
    "PreemptJob",
    "RemoveNode",
    "RemoveQueue",
    "RemoveVgpu",
    "RepairNode",
    "Restore",
    "SetDeviceGroups",
    "SetGpuHealth",
    "SetMig",
    "SetMode",
    "SetQuota",
    "SetSharing",
    "SetTimeSlicing",
    "SubmitJob",
    "Uncordon",
]
