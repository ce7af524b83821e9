"""The registry of change ops: one record per op says everything the rest of gpuadmin decides about it.

Its model (`engine.changes`), the planner handler that applies it to a view, the least role that may apply it,
whether it alone makes a plan destructive, whether applying it twice is a no-op, the console key that offers it,
its line in docs/changes.md, how it executes on each platform, and its imperative command (`verb`: `gpuadmin
cordon NODE...`, whose parser gpuadmin/cli/verb_table.py holds as stdlib data generated from these records).
The planner dispatches through it, the service's permission gate reads its role, the plan's confirmation reads
`destructive`, the console builds its bindings from `console`, and docs/changes.md's table is generated from it
(tests/engine/test_ops_registry.py fails when a model of `changes.Change` has no record, or a record lacks a
field: a verb, or why it has none). Adding an op is its model, its handler and one record here — as
kube-scheduler's plugins are one registry entry each — and it gets its command for free.

The module imports the planner's handlers, so the planner reads `OPS` when it plans, not when it loads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, get_args

from pydantic import BaseModel

from gpuadmin.engine import changes as ch
from gpuadmin.engine import evacuation, planner
from gpuadmin.engine.rules import Touched
from gpuadmin.engine.state import View

OpRole = Literal["operator", "admin"]  # the least role that applies the op (viewers only read and plan)
Target = Literal["baremetal", "kubernetes", "vsphere"]  # where a node's changes are enforced
TARGETS: tuple[Target, ...] = get_args(Target)
Handler = Callable[[View, Any, Touched], None]


@dataclass(frozen=True)
class Console:
    """The console key that opens the op's form (or makes it at once), and the binding's id and label."""

    key: str
    binding: str  # the binding id (remappable in the console's keymap)
    label: str


@dataclass(frozen=True)
class NotInConsole:
    """The op has no key of its own in the console, and why (it is made some other way)."""

    why: str


ArgKind = Literal["name", "text", "int", "float", "flag", "choice", "gpu", "indexes", "mig", "layout", "group",
                  "label"]


class Arg(NamedTuple):
    """One argument of an op's verb. `name` is how the command line spells it: `NODE` (positional) or
    `--replicas` (an option). `field` is the change field it fills, dotted into nested ones (`job.request.gpus`);
    `kind` is how its text is read: `gpu` is NODE/GPU (fills `node` and `gpu` beside `field`), `indexes` 0,1,3,
    `mig` PROFILE[@START] (an instance), `layout` a mig-parted config name (the instances it gives the GPU),
    `group` NAME=0,1 (a device group), `label` KEY=VALUE (one entry of a mapping). `many`: it takes several
    values (a list, or for `each` one change per value: `cordon NODE...`)."""

    name: str
    field: str
    kind: ArgKind
    help: str
    many: bool = False
    each: bool = False
    choices: tuple[str, ...] = ()


class Verb(NamedTuple):
    """The op's imperative command (`gpuadmin cordon NODE...`): its words, its arguments, the arguments of
    which exactly one is given (`one_of`), and the example its --help shows. The command builds the change a
    change file holds and plans, checks and applies it as `apply -f` does."""

    words: tuple[str, ...]
    args: tuple[Arg, ...]
    example: str
    one_of: tuple[str, ...] = ()


@dataclass(frozen=True)
class NoVerb:
    """The op has no command of its own, and why (it is made some other way)."""

    why: str


@dataclass(frozen=True)
class Runs:
    """What enforcing the op on a target means: the lines `engine.commands` renders into the plan (`commands`),
    printed for an operator to run on a state of files (on a state bound to a Kubernetes cluster, the executors of
    gpuadmin/cluster/execute.py carry the op out instead) — or a change of gpuadmin's own state that
    something else reads (`state`)."""

    kind: Literal["commands", "state"]
    how: str


@dataclass(frozen=True)
class Unsupported:
    """gpuadmin renders nothing that would enforce the op on this target (no executor is pretended)."""

    why: str


@dataclass(frozen=True)
class OpSpec:
    op: str
    model: type[BaseModel]
    handler: Handler
    role: OpRole
    destructive: bool  # the op alone makes a plan destructive (typed confirmation), whatever its effects
    idempotent: bool  # planning it again on the state it produced changes nothing (an empty diff)
    console: Console | NotInConsole
    fields: str  # docs/changes.md: the op's fields
    doc: str  # docs/changes.md: what it does
    runs: Mapping[Target, Runs | Unsupported]
    verb: Verb | NoVerb


_STATE_ONLY = Runs("state", "gpuadmin's state only (the node is not asked to do anything)")
_VGPU_ON_VCENTER = Unsupported(
    "no command is rendered for a state of files; on a vCenter-bound state apply runs ReconfigVM_Task on the "
    "powered-off VM, a VirtualPCIPassthrough device with the profile's vGPU type (VmiopBackingInfo) added or "
    "removed (gpuadmin/cluster/vcenter_execute.py)")
_NO_GROUPS_CALL = Unsupported(
    "vSphere has no call setting a host's device groups (its vendor driver offers them): the plan's diff is the "
    "instruction, and on a vCenter-bound state apply changes gpuadmin's state only, saying so")
_NO_MAINTENANCE_MODE = Unsupported("vCenter maintenance mode is not rendered")
_MAINTENANCE_MODE_ON_VCENTER = Unsupported(
    "no command is rendered for a state of files; on a vCenter-bound state apply runs the host's "
    "EnterMaintenanceMode_Task / ExitMaintenanceMode_Task (gpuadmin/cluster/vcenter_execute.py)")
_EVACUATION_ON_VCENTER = Unsupported(
    "no command is rendered for a state of files; on a vCenter-bound state apply runs, per VM in the plan's "
    "order, RelocateVM_Task to its target host (vMotion, the vGPU kept), or PowerOffVM_Task, RelocateVM_Task, "
    "PowerOnVM_Task for a VM with passthrough GPUs or a device group; then EnterMaintenanceMode_Task on the host "
    "(gpuadmin/cluster/vcenter_execute.py)")
_PASSTHROUGH_ON_VCENTER = Unsupported(
    "no command is rendered for a state of files; on a vCenter-bound state apply runs ReconfigVM_Task on the "
    "powered-off VM, a VirtualPCIPassthrough device (DeviceBackingInfo: the GPU's PCI address) added or removed "
    "per GPU; for a device group (vSphere 8) the group's vGPU devices, each with deviceGroupInfo, and the group in "
    "deviceGroups (gpuadmin/cluster/vcenter_execute.py)")
_HOSTS_VSPHERE_ONLY = Unsupported("only an ESXi host has VMs to evacuate: drain the node (refused: change.fields)")
_PODS_NOT_VMS = Unsupported("a Kubernetes node runs pods, not VMs")
_QUEUE_STATE = Runs("state", "gpuadmin's state; `gpuadmin export queues` writes the queue objects")
_RESTORED_COMMANDS = Runs("commands", "what the restored node's before/after renders, as the forward ops")
_VGPU_VSPHERE_ONLY = Unsupported("no hypervisor integration: vGPUs are rendered for vSphere hosts only")
_PASSTHROUGH_VSPHERE_ONLY = Unsupported("no hypervisor integration: passthrough is rendered for vSphere only")
_GROUPS_VSPHERE_ONLY = Unsupported("device groups exist only on vSphere hosts (refused: change.fields)")
_JOBS = Runs("state", "gpuadmin's state; `gpuadmin export pods` writes the pods and their placement")
_JOBS_HOST = Runs("state", "gpuadmin's state (gpuadmin is the scheduler of record)")
_HEALTH_STATE = Runs("state", "gpuadmin's state: its scheduler and placement rules keep new work off the GPU")
_MIG_SHELL = Runs("commands", "nvidia-smi -mig 1|0 and nvidia-smi mig -dci/-dgi/-cgi … -C on the host")

# The arguments verbs share.
_NODE = Arg("NODE", "node", "name", "the node")
_NODES = Arg("NODE", "node", "name", "the node (several: one change each, in one plan)", many=True, each=True)
_GPU = Arg("NODE/GPU", "", "gpu", "the GPU: its node and index (gpu-h100-08/4)")
_VM = Arg("VM", "vm", "name", "the VM")
_ON_NODE = Arg("--node", "node", "name", "the vSphere host that runs the VM")
_VM_GPUS = Arg("--gpus", "gpus", "indexes", "the GPUs by index (0,1)")
_VM_GROUP = Arg("--device-group", "device_group", "name", "the device group")
_JOBS_ARG = Arg("JOB", "name", "name", "the job (several: one change each, in one plan)", many=True, each=True)
_VGPU_ARGS = (_GPU, _VM, Arg("PROFILE", "profile", "name", "the vGPU type (H100XM-40C)"))


def _queue_args(prefix: str) -> tuple[Arg, ...]:
    """A queue's quota, limit, weight and priority, as `set-quota` and `add-queue` take them."""
    return (Arg("--quota", f"{prefix}quota.gpus", "int", "the GPUs the queue is guaranteed"),
            Arg("--quota-gib", f"{prefix}quota.gpu_memory_gib", "float", "the GPU memory it is guaranteed, GiB"),
            Arg("--limit", f"{prefix}limit.gpus", "int", "the most GPUs it may hold, borrowing included"),
            Arg("--limit-gib", f"{prefix}limit.gpu_memory_gib", "float", "the most GPU memory it may hold, GiB"),
            Arg("--weight", f"{prefix}over_quota_weight", "float", "its share of what is free beyond quotas"),
            Arg("--priority", f"{prefix}priority", "int", "its priority (int32)"))


_JOB_ARGS = (
    Arg("NAME", "job.name", "name", "the job's name"),
    Arg("--queue", "job.queue", "name", "its queue (required)"),
    Arg("--gpus", "job.request.gpus", "int", "whole GPUs per node"),
    Arg("--mig", "job.request.mig", "name", "one MIG instance of this profile (1g.10gb)"),
    Arg("--fraction", "job.request.fraction", "float", "a fraction of a shared GPU (0.25)"),
    Arg("--gpu-memory-gib", "job.request.gpu_memory_gib", "float", "GPU memory of a shared GPU, GiB"),
    Arg("--model", "job.request.model", "name", "only GPUs of this model"),
    Arg("--nodes", "job.request.nodes", "int", "a gang of this many nodes (default 1)"),
    Arg("--nvlink", "job.request.nvlink", "flag", "its GPUs in one NVLink domain"),
    Arg("--rdma", "job.request.rdma", "flag", "nodes with RDMA NICs"),
    Arg("--cpus", "job.request.cpus", "float", "CPUs per node"),
    Arg("--memory-gib", "job.request.memory_gib", "float", "node memory per node, GiB"),
    Arg("--priority", "job.priority", "int", "its priority (int32)"),
    Arg("--isolation", "job.isolation", "choice", "exclusive: no other job on its GPUs",
        choices=("exclusive", "shared")),
    Arg("--selector", "job.node_selector", "label", "only nodes with this label (KEY=VALUE, repeatable)",
        many=True),
    Arg("--vm", "job.vm", "name", "run inside this vSphere VM, on GPUs it holds"),
)


def _spec(model: type[BaseModel], handler: Handler, role: OpRole, *, destructive: bool = False,
          idempotent: bool, console: Console | NotInConsole, fields: str, doc: str,
          runs: Mapping[Target, Runs | Unsupported], verb: Verb | NoVerb) -> OpSpec:
    op = model.model_fields["op"].annotation
    (name,) = get_args(op)
    return OpSpec(str(name), model, handler, role, destructive, idempotent, console, fields, doc, runs, verb)


_SPECS = (
    _spec(ch.SetMig, planner._set_mig, "operator", idempotent=True,
          console=Console("m", "edit.mig", "MIG"),
          verb=Verb(("mig",), (_GPU, Arg("PROFILE", "instances", "mig", "an instance: PROFILE or PROFILE@START "
                                          "(3g.40gb@4); no START: the engine picks one", many=True),
                            Arg("--layout", "instances", "layout", "a named mig-parted layout (all-balanced)")),
                     "gpuadmin mig gpu-h100-12/3 3g.40gb 4g.40gb --dry-run\n"
                     "  gpuadmin mig gpu-h100-12/3 --layout all-balanced --yes", one_of=("PROFILE", "--layout")),
          fields="`node`, `gpu`, `instances: [{profile, start?, replicas?}]`",
          doc="MIG on, with exactly this layout; a missing `start` is chosen (see below).",
          runs={"baremetal": _MIG_SHELL, "vsphere": _MIG_SHELL,
                "kubernetes": Runs("commands", "the mig-parted configmap, kubectl label node nvidia.com/mig.config "
                                   "(mig-manager applies it)")}),
    _spec(ch.SetMode, planner._set_mode, "operator", idempotent=True,
          console=Console("M", "edit.mode", "Mode"),
          verb=Verb(("mode",), (_GPU, Arg("MODE", "mode", "choice", "the GPU's mode",
                                           choices=("full", "time-sliced", "vgpu", "passthrough")),
                             Arg("--replicas", "replicas", "int", "time-sliced: how many replicas")),
                     "gpuadmin mode gpu-h100-12/3 full --dry-run"),
          fields="`node`, `gpu`, `mode` (`full`/`time-sliced`/`vgpu`/`passthrough`), `replicas?`",
          doc="change the GPU's mode, leaving MIG.",
          runs={"baremetal": Runs("commands", "leaving MIG: nvidia-smi mig -dci/-dgi, nvidia-smi -mig 0"),
                "vsphere": Runs("commands", "leaving MIG: nvidia-smi mig -dci/-dgi, nvidia-smi -mig 0 on the host "
                                "(vGPU and passthrough modes are vCenter settings, not rendered)"),
                "kubernetes": Runs("commands", "the device-plugin config and kubectl label node "
                                   "nvidia.com/device-plugin.config (and the MIG configmap when leaving MIG)")}),
    _spec(ch.SetTimeSlicing, planner._set_time_slicing, "operator", idempotent=True,
          console=Console("t", "edit.time_slicing", "Time-slice"),
          verb=Verb(("time-slice",), (_GPU, Arg("--replicas", "replicas", "int", "replicas of the GPU (required)"),
                                   Arg("--mig-profile", "mig_profile", "name",
                                       "replicas of each MIG instance of this profile instead")),
                     "gpuadmin time-slice gpu-h100-12/3 --replicas 4 --dry-run"),
          fields="`node`, `gpu`, `replicas`, `mig_profile?`",
          doc="N replicas of the whole GPU, or of each MIG instance of `mig_profile`.",
          runs={"baremetal": Unsupported("time-slicing is the Kubernetes device plugin's; a bare host has none"),
                "vsphere": Unsupported("time-slicing is the Kubernetes device plugin's; vSphere shares by vGPU"),
                "kubernetes": Runs("commands", "gpuadmin export device-plugin | kubectl apply -f -, kubectl label "
                                   "node nvidia.com/device-plugin.config")}),
    _spec(ch.SetSharing, planner._set_sharing, "operator", idempotent=True,
          console=Console("F", "edit.sharing", "Sharing"),
          verb=Verb(("sharing",), (_NODE, Arg("FRACTIONS", "fractions", "choice", "dynamic: fractions share "
                                                 "full GPUs; off", choices=("dynamic", "off")),
                                Arg("--reserved-gib", "reserved_gib", "float", "memory kept back per shared GPU")),
                     "gpuadmin sharing gpu-h100-12 dynamic --reserved-gib 1 --dry-run"),
          fields="`node`, `fractions` (`dynamic`/`off`), `reserved_gib?`",
          doc="turn the node's dynamic GPU sharing on or off.",
          runs={"baremetal": _STATE_ONLY, "vsphere": _STATE_ONLY,
                "kubernetes": Runs("state", "a comment only: fractions are the KAI/Run:ai scheduler's setting")}),
    _spec(ch.SetDeviceGroups, planner._set_device_groups, "operator", idempotent=True,
          console=Console("D", "edit.device_groups", "Groups"),
          verb=Verb(("device-groups",), (_NODE, Arg("GROUP", "groups", "group", "a group: NAME=GPU,GPU (nvl-a=0,1)",
                                                     many=True)),
                     "gpuadmin device-groups esx-hgx-02 dg-a=0,1,2,3 dg-b=4,5 --dry-run     drops dg-c"),
          fields="`node`, `groups: [{name, gpus}]`",
          doc="replace a vSphere host's device groups.",
          runs={"baremetal": _GROUPS_VSPHERE_ONLY,
                "kubernetes": _GROUPS_VSPHERE_ONLY,
                "vsphere": _NO_GROUPS_CALL}),
    _spec(ch.AssignVgpu, planner._assign_vgpu, "operator", idempotent=False,
          console=Console("v", "edit.assign_vgpu", "vGPU+"),
          verb=Verb(("vgpu", "assign"), _VGPU_ARGS, "gpuadmin vgpu assign esx-vdi-01/0 vdi-13 A40-12C --dry-run"),
          fields="`node`, `gpu`, `vm`, `profile`",
          doc="add one vGPU to a VM, on a GPU in `vgpu` mode.",
          runs={"baremetal": _VGPU_VSPHERE_ONLY,
                "kubernetes": _PODS_NOT_VMS, "vsphere": _VGPU_ON_VCENTER}),
    _spec(ch.RemoveVgpu, planner._remove_vgpu, "operator", idempotent=False,
          console=Console("V", "edit.remove_vgpu", "vGPU-"),
          verb=Verb(("vgpu", "remove"), _VGPU_ARGS, "gpuadmin vgpu remove esx-vdi-01/0 vdi-04 A40-12C --dry-run"),
          fields="`node`, `gpu`, `vm`, `profile`",
          doc="take one vGPU from a VM: the only way a VM loses one (the plan is destructive).",
          runs={"baremetal": _VGPU_VSPHERE_ONLY,
                "kubernetes": _PODS_NOT_VMS, "vsphere": _VGPU_ON_VCENTER}),
    _spec(ch.AttachVm, planner._attach_vm, "operator", idempotent=False,
          console=Console("a", "edit.attach_vm", "Attach VM"),
          verb=Verb(("attach",), (_VM, _ON_NODE, _VM_GPUS, _VM_GROUP),
                     "gpuadmin attach hpc-vm-01 --node esx-legacy-01 --gpus 0,1 --dry-run",
                     one_of=("--gpus", "--device-group")),
          fields="`node`, `vm`, `gpus` or `device_group`",
          doc="pass GPUs (or a whole device group) through to a VM.",
          runs={"baremetal": _PASSTHROUGH_VSPHERE_ONLY,
                "kubernetes": _PODS_NOT_VMS, "vsphere": _PASSTHROUGH_ON_VCENTER}),
    _spec(ch.DetachVm, planner._detach_vm, "operator", idempotent=False,
          console=Console("A", "edit.detach_vm", "Detach VM"),
          verb=Verb(("detach",), (_VM, _ON_NODE, _VM_GPUS, _VM_GROUP),
                     "gpuadmin detach hpc-vm-01 --node esx-legacy-01 --dry-run     everything it holds"),
          fields="`node`, `vm`, `gpus?`, `device_group?`",
          doc="release a VM's GPUs or group; with neither field, everything it holds.",
          runs={"baremetal": _PASSTHROUGH_VSPHERE_ONLY,
                "kubernetes": _PODS_NOT_VMS, "vsphere": _PASSTHROUGH_ON_VCENTER}),
    _spec(ch.Cordon, planner._cordon, "operator", idempotent=True,
          console=Console("c", "edit.cordon", "Cordon"),
          verb=Verb(("cordon",), (_NODES,), "gpuadmin cordon gpu-h100-03 gpu-h100-04 --yes"),
          fields="`node`", doc="stop new placements on the node (never on a `down` node).",
          runs={"baremetal": _STATE_ONLY, "vsphere": _MAINTENANCE_MODE_ON_VCENTER,
                "kubernetes": Runs("commands", "kubectl cordon -- NODE")}),
    _spec(ch.Uncordon, planner._uncordon, "operator", idempotent=True,
          console=Console("u", "edit.uncordon", "Uncordon"),
          verb=Verb(("uncordon",), (_NODES,), "gpuadmin uncordon gpu-h100-03 --yes"),
          fields="`node`", doc="resume placements (a `down` node needs repair-node).",
          runs={"baremetal": _STATE_ONLY, "vsphere": _MAINTENANCE_MODE_ON_VCENTER,
                "kubernetes": Runs("commands", "kubectl uncordon -- NODE")}),
    _spec(ch.RepairNode, planner._repair, "admin", idempotent=False,
          console=NotInConsole("an admin records a repair in a change file (`apply -f`), with its note"),
          verb=Verb(("repair",), (_NODE, Arg("--note", "note", "text", "what was done (an RMA number; required)"),
                               Arg("--state", "state", "choice", "ready (default) or cordoned",
                                   choices=("ready", "cordoned"))),
                     "gpuadmin repair hgx-h200-03 --note 'RMA 4411: GPU 3 replaced' --yes"),
          fields="`node`, `note`, `state?` (`ready`/`cordoned`)",
          doc="bring a `down` node back after its repair, recording what was done.",
          runs={"baremetal": _STATE_ONLY, "vsphere": _NO_MAINTENANCE_MODE,
                "kubernetes": Runs("commands", "kubectl uncordon -- NODE (or kubectl cordon with state: cordoned)")}),
    _spec(ch.SetGpuHealth, planner._set_gpu_health, "operator", idempotent=True,
          console=NotInConsole("no console key yet: `gpuadmin gpu-health`, or a change file (`apply -f`)"),
          verb=Verb(("gpu-health",), (_GPU, Arg("HEALTH", "health", "choice", "unhealthy fences it; healthy "
                                                   "clears the fence (needs an admin)",
                                                   choices=("healthy", "unhealthy")),
                                      Arg("--reason", "reason", "text", "with unhealthy: why (an XID, ECC errors)")),
                     "gpuadmin gpu-health gpu-h100-03/4 unhealthy --reason 'XID 79: GPU has fallen off the bus' "
                     "--dry-run"),
          fields="`node`, `gpu`, `health` (`healthy`/`unhealthy`), `reason?`, `by?`, `since?`",
          doc="fence a GPU as unhealthy (why, who, when): no new placements on it; `healthy` clears it (admin).",
          runs={"baremetal": _HEALTH_STATE, "vsphere": _HEALTH_STATE,
                "kubernetes": Runs("state", "gpuadmin's state (its scheduler and rules); Kubernetes has no per-GPU "
                                   "fence to render: the NVIDIA device plugin withdraws a GPU its own health check "
                                   "finds failing, and a node is fenced with cordon or drain")}),
    _spec(ch.Drain, planner._drain, "operator", destructive=True, idempotent=True,
          console=Console("r", "edit.drain", "Drain"),
          verb=Verb(("drain",), (_NODES,), "gpuadmin drain gpu-h100-03 --dry-run"),
          fields="`node`", doc="cordon, and evict the node's preemptible jobs; a non-preemptible one blocks it. "
                                 "On a vSphere host: evacuate its VMs too (as `evacuate-host`).",
          runs={"baremetal": _STATE_ONLY, "vsphere": _EVACUATION_ON_VCENTER,
                "kubernetes": Runs("commands", "kubectl drain --ignore-daemonsets --delete-emptydir-data -- NODE")}),
    _spec(ch.EvacuateHost, evacuation.evacuate_host, "operator", destructive=True, idempotent=True,
          console=NotInConsole("the console's drain (r) on a vSphere host plans the evacuation"),
          verb=Verb(("evacuate",), (_NODE,), "gpuadmin evacuate esx-vdi-01 --dry-run"),
          fields="`node`",
          doc="maintenance mode for a vSphere host: each VM moved first (vMotion for vGPU VMs, within its "
              "tolerated stun time; power off and on elsewhere for passthrough or device-group VMs), as the "
              "engine plans it; `drain` on a vSphere host does the same.",
          runs={"baremetal": _HOSTS_VSPHERE_ONLY, "kubernetes": _HOSTS_VSPHERE_ONLY,
                "vsphere": _EVACUATION_ON_VCENTER}),
    _spec(ch.SubmitJob, planner._submit, "operator", idempotent=False,
          console=Console("n", "edit.submit_job", "New job"),
          verb=Verb(("submit",), _JOB_ARGS, "gpuadmin submit finetune-8b --queue research --gpus 8 --dry-run",
                     one_of=("--gpus", "--mig", "--fraction", "--gpu-memory-gib")),
          fields="`job` (a job as in the inventory)", doc="add a job to its queue.",
          runs={"baremetal": _JOBS_HOST, "vsphere": _JOBS_HOST, "kubernetes": _JOBS}),
    _spec(ch.CancelJob, planner._cancel, "operator", idempotent=False,
          console=Console("x", "edit.cancel_job", "Cancel job"),
          verb=Verb(("cancel",), (_JOBS_ARG,), "gpuadmin cancel eval-405b-shard --dry-run"),
          fields="`name`", doc="remove a job (a running one frees its slices).",
          runs={"baremetal": _JOBS_HOST, "vsphere": _JOBS_HOST, "kubernetes": _JOBS}),
    _spec(ch.BindJob, planner._bind, "operator", idempotent=False,
          console=NotInConsole("the scheduler emits it: `p` plans a scheduling cycle"),
          verb=NoVerb("the scheduler binds: `gpuadmin schedule`; a placement by hand goes in a change file"),
          fields="`name`, `placement: [{node, gpu, mig_start?}]`",
          doc="start a pending or preempted job on these slices.",
          runs={"baremetal": _JOBS_HOST, "vsphere": _JOBS_HOST, "kubernetes": _JOBS}),
    _spec(ch.PreemptJob, planner._preempt, "operator", idempotent=False,
          console=Console("P", "edit.preempt_job", "Preempt"),
          verb=Verb(("preempt",), (Arg("JOB", "name", "name", "the running job"),
                                Arg("--override", "override", "flag", "an admin stops a non-preemptible job"),
                                Arg("--reason", "reason", "text", "with --override: why (journaled)")),
                     "gpuadmin preempt vit-h-pretrain --dry-run"),
          fields="`name`, `override?`, `reason?`",
          doc="evict a running job; it is requeued as `preempted` (`override` needs an admin).",
          runs={"baremetal": _JOBS_HOST, "vsphere": _JOBS_HOST, "kubernetes": _JOBS}),
    _spec(ch.SetQuota, planner._set_quota, "admin", idempotent=True,
          console=Console("e", "edit.quota", "Edit quota"),
          verb=Verb(("quota",), (Arg("QUEUE", "queue", "name", "the queue"), *_queue_args("")),
                     "gpuadmin quota research --quota 24 --limit 40 --dry-run"),
          fields="`queue`, `quota?`, `limit?`, `over_quota_weight?`, `priority?`", doc="change a queue.",
          runs={"baremetal": _STATE_ONLY, "vsphere": _STATE_ONLY,
                "kubernetes": _QUEUE_STATE}),
    _spec(ch.AddQueue, planner._add_queue, "admin", idempotent=False,
          console=Console("n", "edit.add_queue", "New queue"),
          verb=Verb(("queue", "add"), (Arg("NAME", "queue.name", "name", "the new queue"), *_queue_args("queue.")),
                     "gpuadmin queue add evals --quota 2 --limit 4 --dry-run"),
          fields="`queue`", doc="add a queue.",
          runs={"baremetal": _STATE_ONLY, "vsphere": _STATE_ONLY,
                "kubernetes": _QUEUE_STATE}),
    _spec(ch.RemoveQueue, planner._remove_queue, "admin", idempotent=False,
          console=Console("x", "edit.remove_queue", "Remove queue"),
          verb=Verb(("queue", "remove"), (Arg("NAME", "name", "name", "the queue (it holds no jobs)"),),
                     "gpuadmin queue remove vdi --dry-run"),
          fields="`name`", doc="remove a queue without jobs.",
          runs={"baremetal": _STATE_ONLY, "vsphere": _STATE_ONLY,
                "kubernetes": _QUEUE_STATE}),
    _spec(ch.AddNode, planner._add_node, "admin", idempotent=False,
          console=Console("N", "edit.add_node", "Add node"),
          verb=NoVerb("a node is a whole inventory record: `gpuadmin import ... --apply`, or a change file"),
          fields="`node`", doc="add a node to the inventory.",
          runs={"baremetal": _STATE_ONLY, "vsphere": _STATE_ONLY, "kubernetes": _STATE_ONLY}),
    _spec(ch.RemoveNode, planner._remove_node, "admin", idempotent=False,
          console=Console("X", "edit.remove_node", "Remove node"),
          verb=Verb(("node", "remove"), (Arg("NAME", "name", "name", "the node (no job runs on it)"),),
                     "gpuadmin node remove gpu-h100-12 --dry-run"),
          fields="`name`", doc="remove a node without running jobs from the inventory.",
          runs={"baremetal": _STATE_ONLY, "vsphere": _STATE_ONLY, "kubernetes": _STATE_ONLY}),
    _spec(ch.Restore, planner._restore, "operator", idempotent=True,
          console=NotInConsole("undo and redo (ctrl+z, ctrl+y in the journal) are made of it"),
          verb=NoVerb("undo and redo are made of it: `gpuadmin undo`, `gpuadmin redo`"),
          fields="`kind` (`node`/`job`/`queue`), `name`, the entity under its kind or none, `seq?`",
          doc="put one entity back exactly as it was (undo is made of these); judged like the ops it amounts to.",
          runs={"baremetal": _RESTORED_COMMANDS,
                "vsphere": _RESTORED_COMMANDS,
                "kubernetes": _RESTORED_COMMANDS}),
)

OPS: dict[str, OpSpec] = {spec.op: spec for spec in _SPECS}
BY_MODEL: dict[type[BaseModel], OpSpec] = {spec.model: spec for spec in _SPECS}
ADMIN_OPS = frozenset(spec.op for spec in _SPECS if spec.role == "admin")


def spec_of(change: ch.Change) -> OpSpec:
    return BY_MODEL[type(change)]




def console_of(op: str) -> Console:
    """The console key of an op the console offers (a KeyError names an op it does not)."""
    console = OPS[op].console
    if not isinstance(console, Console):
        raise KeyError(f"{op} has no console key: {console.why}")
    return console


def missing_fields(spec: OpSpec) -> list[str]:
    """The fields a record leaves empty: every op says all of them (what the registry test holds)."""
    out = [name for name in ("op", "fields", "doc") if not str(getattr(spec, name)).strip()]
    if not callable(spec.handler):
        out.append("handler")
    if spec.role not in get_args(OpRole):
        out.append("role")
    if isinstance(spec.console, Console) and not (spec.console.key and spec.console.binding and spec.console.label):
        out.append("console")
    if isinstance(spec.console, NotInConsole) and not spec.console.why.strip():
        out.append("console")
    out += [f"runs.{target}" for target in TARGETS if target not in spec.runs or not said(spec.runs[target])]
    if isinstance(spec.verb, NoVerb) and not spec.verb.why.strip():
        out.append("verb")
    if isinstance(spec.verb, Verb) and not (spec.verb.words and spec.verb.example.startswith("gpuadmin ")
                                            and all(arg.help.strip() for arg in spec.verb.args)):
        out.append("verb")
    return out


def said(runs: Runs | Unsupported) -> str:
    """How the op runs on a target, or why it does not, in words."""
    return (runs.how if isinstance(runs, Runs) else f"not supported: {runs.why}").strip()


__all__ = ["ADMIN_OPS", "BY_MODEL", "OPS", "TARGETS", "Arg", "Console", "NoVerb", "NotInConsole", "OpSpec", "Runs",
           "Unsupported", "Verb", "console_of", "missing_fields", "said", "spec_of"]
