"""plan → check → apply: every change, an operator's or the scheduler's, passes through here.

`plan(state, changes)` applies the changes to a copy-on-write `View`, runs the rules on what they
touched and returns a `Plan`: the verdict, the diff, the effects and the node-side commands. Planning
never writes; the store persists an allowed plan's view (`apply`), and `undo` plans the inverse of a
journal entry as `restore` changes, checked like any other plan.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from gpuadmin.catalog import GpuModel, get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.commands import node_commands
from gpuadmin.engine.mig import Request, explain_layout, place
from gpuadmin.engine.rules import Touched, Violation, check
from gpuadmin.engine.rules.base import gpu_target, job_target, node_target, queue_target, target_of
from gpuadmin.engine.state import ClusterState, EntityKind, SlotKey, View
from gpuadmin.errors import Diagnostic, InputError
from gpuadmin.model import DynamicSharing, Gpu, GpuHealth, Job, Node, Queue, VGpu
from gpuadmin.model.diagnostics import dotted
from gpuadmin.model.inventory import STORED
from gpuadmin.model.references import hosts_of_vms, job_references, node_references

# Checks the planner makes while applying a change to the view, before the rules run. Their ids share
# the rules' namespace and are listed with them in docs/rules.md.
CHANGE_CHECKS: dict[str, str] = {
    "change.target-exists": "The node, GPU, VM, device group, job or queue a change names exists.",
    "change.unique-name": "A submitted job, added queue or added node does not reuse a name.",
    "change.references": "A node or job a change adds or edits names only what exists, as an inventory's "
                         "reference checks require (shape, GPU models, VMs, device groups, queue, placement): "
                         "the state still exports to an inventory that validates.",
    "change.fields": "A change's fields fit its operation (e.g. replicas only with time-sliced), and it leaves "
                     "every node valid as the inventory defines it (device groups only on vSphere hosts).",
    "change.job-status": "Only pending or preempted jobs are bound (by bind-job, or by a restore that runs a job, "
                         "undo's own give-backs aside); only running jobs are preempted.",
    "change.in-use": "A queue with jobs or a node with running jobs is not removed.",
    "change.node-down": "A down node is not cordoned, drained or uncordoned: only repair-node (admin) brings it "
                        "back, recording the repair; repair-node applies only to a down node.",
    "mig.layout-fits": "A set-mig layout with starts omitted, valid under every other MIG rule, has at least one "
                       "placement whose instances do not overlap in memory slices.",
    "vgpu.mode": "vGPUs are assigned only to GPUs in vgpu mode.",
}


class ChangeRefused(Exception):
    """A change the planner refuses itself: one that cannot even be applied to the view (its target is missing,
    say), or a removal in use, which its handler applies to the view first so that the rules judge it too."""

    def __init__(self, rule: str, target: str, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.violation = Violation(rule, target, message, hint)


@dataclass(frozen=True, slots=True)
class EntityDiff:
    kind: EntityKind
    name: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    seq: int | None = None  # the entity's position in its table before the change
    moved_to: int | None = None  # where a restore's `seq` put it, when not where it was: what a redo puts back

    @property
    def action(self) -> str:
        if self.before is None:
            return "add"
        if self.after is None:
            return "remove"
        return "modify"

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "name": self.name, "action": self.action,
               "before": self.before, "after": self.after, "seq": self.seq}
        if self.moved_to is not None:
            out["moved_to"] = self.moved_to
        return out


@dataclass
class Effects:
    evicted: list[str] = field(default_factory=list)  # running jobs this plan stops
    bound: list[str] = field(default_factory=list)  # jobs this plan starts
    submitted: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, list[str]]:
        return {"evicted": self.evicted, "bound": self.bound, "submitted": self.submitted,
                "cancelled": self.cancelled}


@dataclass
class Plan:
    base_revision: int
    changes: list[ch.Change]
    violations: list[Violation]
    diff: list[EntityDiff]
    effects: Effects
    commands: dict[str, list[str]]  # node → shell lines it would run (none for a refused plan)
    hash: str
    view: View
    caused_by: dict[int, int] = field(default_factory=dict)  # violation index → the violation it follows from
    # the slots an undo or redo gives back without the new-placement rules (see `released_slots`); a re-plan
    # of this plan (apply, under the lock) passes them again
    released: dict[str, frozenset[SlotKey]] = field(default_factory=dict)
    # what the rules allow but an operator should look at twice (e.g. 100 replicas of one GPU); never refuses
    warnings: list[Violation] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return not self.violations

    @property
    def empty(self) -> bool:
        return not self.diff

    @property
    def destructive(self) -> bool:
        """Stops running work or removes something: evictions, a destructive op (a drain), a removal, a VM's vGPU
        taken away. Such a plan is confirmed by typing the name of what it hits, not by a yes."""
        from gpuadmin.engine.ops import spec_of  # the registry imports this module's handlers

        return (bool(self.effects.evicted) or any(d.action == "remove" for d in self.diff)
                or any(spec_of(c).destructive for c in self.changes) or self.vgpus_lost > 0)

    @property
    def vgpus_lost(self) -> int:
        """How many vGPUs the nodes this plan keeps lose (a removed node's go with it: that is a removal)."""
        moved = {m.vm for planned in self.view.evacuations.values() for m in planned if m.target is not None}
        return sum(count for (_, vm, _), count in
                   sum((_vgpus(d.before) - _vgpus(d.after) for d in self.diff
                        if d.kind == "node" and d.action == "modify"), Counter()).items()
                   if vm not in moved)  # an evacuated VM takes its vGPUs along to its new host

    @property
    def confirmation_token(self) -> str:
        """What an operator types to apply a destructive plan: the node it hits (the first by name), else the
        first entity it removes; "yes" for any other plan."""
        if not self.destructive:
            return "yes"
        if self.view.evacuations:  # the host going into maintenance, not the first host a VM moves to
            return sorted(self.view.evacuations)[0]
        nodes = sorted({d.name for d in self.diff if d.kind == "node"})
        if nodes:
            return nodes[0]
        removed = sorted(d.name for d in self.diff if d.action == "remove")
        evicted = sorted(self.effects.evicted)
        return (removed or evicted or ["yes"])[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "base_revision": self.base_revision,
            "hash": self.hash,
            "changes": [c.model_dump(mode="json", exclude_none=True) for c in self.changes],
            "violations": [{"rule": v.rule, "target": v.target, "message": v.message, "hint": v.hint,
                            **({"caused_by": self.caused_by[i]} if i in self.caused_by else {})}
                           for i, v in enumerate(self.violations)],
            "warnings": [{"rule": w.rule, "target": w.target, "message": w.message, "hint": w.hint}
                         for w in self.warnings],
            "diff": [d.to_json() for d in self.diff],
            "effects": self.effects.to_json(),
            "commands": self.commands,
            # each evacuated host's VM moves (evacuate-host, drain on vSphere); absent from every other plan
            **({"evacuations": {host: [m.to_json() for m in moves]
                                for host, moves in sorted(self.view.evacuations.items())}}
               if self.view.evacuations else {}),
        }


def _vgpus(node: dict[str, Any] | None) -> Counter[tuple[int, str, str]]:
    """A dumped node's vGPUs: (GPU index, VM, profile) → how many."""
    return Counter((g["index"], v["vm"], v["profile"]) for g in (node or {}).get("gpus") or ()
                   for v in g.get("vgpus") or ())


def dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# change handlers: each applies one change to the view and says what it touched


def _node(view: View, name: str) -> Node:
    node = view.node(name)
    if node is None:
        raise ChangeRefused("change.target-exists", node_target(name), f"node {name!r} does not exist")
    return node


def _gpu(view: View, node_name: str, index: int) -> tuple[Node, Gpu]:
    node = _node(view, node_name)
    gpu = node.gpu(index)
    if gpu is None:
        raise ChangeRefused("change.target-exists", gpu_target(node_name, index),
                            f"node {node_name!r} has no GPU {index}")
    return node, gpu


def _job(view: View, name: str) -> Job:
    job = view.job(name)
    if job is None:
        raise ChangeRefused("change.target-exists", job_target(name), f"job {name!r} does not exist")
    return job


def _queue(view: View, name: str) -> Queue:
    queue = view.queue(name)
    if queue is None:
        raise ChangeRefused("change.target-exists", queue_target(name), f"queue {name!r} does not exist")
    return queue


def _put_gpu(view: View, node: Node, gpu: Gpu, touched: Touched) -> None:
    gpus = [gpu if g.index == gpu.index else g for g in node.gpus]
    view.put_node(node.name, node.model_copy(update={"gpus": gpus}))
    touched.gpus.add((node.name, gpu.index))


def _set_mig(view: View, c: ch.SetMig, touched: Touched) -> None:
    node, gpu = _gpu(view, c.node, c.gpu)
    model = get_catalog().model(gpu.model)
    instances = list(c.instances)
    if model is not None and model.mig_capable and any(i.start is None for i in instances):
        unknown = [i.profile for i in instances if model.mig_profile(i.profile) is None]
        if unknown:  # a typo is a typo, starts given or not: the same rule, with the model's profiles
            raise ChangeRefused("mig.profile-exists", gpu_target(c.node, c.gpu),
                                f"{gpu.model} GPU {gpu.index} on {node.name}: MIG profile {unknown[0]!r} does not "
                                f"exist on {model.name}",
                                f"profiles of {model.name}: {', '.join(p.name for p in model.mig_profiles)}")
        requests = [(i.profile, i.start) for i in instances]
        chosen = place(model, requests)
        if chosen is not None:
            instances = [i.model_copy(update={"profile": p, "start": s})
                         for (p, s), i in zip(chosen, instances, strict=True)]
        elif all(p.kind == "no-placement" for p in explain_layout(model, requests)):
            raise ChangeRefused("mig.layout-fits", gpu_target(c.node, c.gpu),
                                f"{gpu.model} GPU {gpu.index} on {node.name}: {_placement_conflict(model, requests)}",
                                _placement_remedy(model, requests, f"{node.name}/{gpu.index}"))
        # else the layout breaks a rule whatever the starts (too many compute slices or instances, a second
        # media extension, a start outside its placements): it is kept unplaced, and the MIG rules name each
        # problem under its own id instead of one "does not fit"
    _put_gpu(view, node, Gpu(index=gpu.index, model=gpu.model, mode="mig", mig=instances,
                             not_in_catalog=gpu.not_in_catalog, health=gpu.health), touched)


def _placement_conflict(model: GpuModel, requests: Sequence[Request]) -> str:
    """Why instances that break no other rule cannot be placed: their memory slices, against the model's."""
    wanted = ", ".join(f"{p}@{s}" if s is not None else p for p, s in requests)
    needed = 0
    for name, _ in requests:
        profile = model.mig_profile(name)
        needed += profile.memory_slices if profile is not None else 0
    if needed > model.memory_slices:
        return f"[{wanted}] need {needed} memory slices, a {model.name} has {model.memory_slices}"
    return (f"no placement of [{wanted}] fits a {model.name}: wherever they start, two of them overlap in "
            f"memory slices (each profile starts only at its own placements)")


def _placement_remedy(model: GpuModel, requests: Sequence[Request], where: str) -> str:
    """The instances whose removal lets the rest be placed: a remedy checked by placing what is left."""
    fits_without: list[str] = []
    for index, (name, _) in enumerate(requests):
        rest = [*requests[:index], *requests[index + 1:]]
        if name not in fits_without and place(model, rest) is not None:
            fits_without.append(name)
    placements = f"`gpuadmin describe gpu {where}` lists each profile's placements"
    if fits_without:
        return f"drop one {' or one '.join(fits_without)} and the rest fits; {placements}"
    return f"drop instances or use smaller profiles; {placements}"


def _set_mode(view: View, c: ch.SetMode, touched: Touched) -> None:
    node, gpu = _gpu(view, c.node, c.gpu)
    if c.mode == "time-sliced":
        if c.replicas is None:
            raise ChangeRefused("mode.time-slice-replicas", gpu_target(c.node, c.gpu),
                                "set-mode time-sliced needs 'replicas'")
        new = Gpu(index=gpu.index, model=gpu.model, mode="time-sliced", replicas=c.replicas,
                  sharing=gpu.sharing, not_in_catalog=gpu.not_in_catalog, health=gpu.health)
    elif c.replicas is not None:
        raise ChangeRefused("change.fields", gpu_target(c.node, c.gpu),
                            f"'replicas' applies to mode time-sliced, not {c.mode}")
    else:
        new = Gpu(index=gpu.index, model=gpu.model, mode=c.mode,
                  vgpus=[] if c.mode == "vgpu" else None, not_in_catalog=gpu.not_in_catalog, health=gpu.health)
    _put_gpu(view, node, new, touched)


def _set_time_slicing(view: View, c: ch.SetTimeSlicing, touched: Touched) -> None:
    node, gpu = _gpu(view, c.node, c.gpu)
    if c.mig_profile is None:
        if gpu.mode == "mig":
            raise ChangeRefused("mode.mig-not-whole", gpu_target(c.node, c.gpu),
                                "the GPU is in MIG mode: time-slice its instances with 'mig_profile', "
                                "or leave MIG first with set-mode")
        new = Gpu(index=gpu.index, model=gpu.model, mode="time-sliced", replicas=c.replicas,
                  sharing=gpu.sharing, not_in_catalog=gpu.not_in_catalog, health=gpu.health)
    else:
        if gpu.mode != "mig" or not any(i.profile == c.mig_profile for i in gpu.mig or ()):
            raise ChangeRefused("change.target-exists", gpu_target(c.node, c.gpu),
                                f"GPU has no MIG instance of profile {c.mig_profile!r}")
        replicas = c.replicas if c.replicas >= 2 else None
        mig = [i.model_copy(update={"replicas": replicas}) if i.profile == c.mig_profile else i
               for i in gpu.mig or ()]
        new = gpu.model_copy(update={"mig": mig})
    _put_gpu(view, node, new, touched)


def _set_sharing(view: View, c: ch.SetSharing, touched: Touched) -> None:
    node = _node(view, c.node)
    sharing = DynamicSharing(fractions="dynamic", reserved_gib=c.reserve) if c.fractions == "dynamic" else None
    view.put_node(node.name, node.model_copy(update={"sharing": sharing}))
    touched.nodes.add(node.name)
    # every GPU: their holders' placement and oversubscription are judged again under the new sharing
    touched.gpus |= {(node.name, g.index) for g in node.gpus}


def _set_device_groups(view: View, c: ch.SetDeviceGroups, touched: Touched) -> None:
    node = _node(view, c.node)
    names = {g.name for g in c.groups}
    for vm in node.vms:
        if vm.device_group is not None and vm.device_group not in names:
            raise ChangeRefused("group.vm-holds-whole-group", node_target(c.node),
                                f"VM {vm.name!r} holds device group {vm.device_group!r}, which this change "
                                "removes", "detach the VM first (detach-vm)")
    view.put_node(node.name, node.model_copy(update={"device_groups": list(c.groups)}))
    touched.nodes.add(node.name)


def _vm_names(node: Node) -> set[str]:
    return {vm.name for vm in node.vms}


def _assign_vgpu(view: View, c: ch.AssignVgpu, touched: Touched) -> None:
    node, gpu = _gpu(view, c.node, c.gpu)
    if c.vm not in _vm_names(node):
        raise ChangeRefused("change.target-exists", node_target(c.node), f"node has no VM {c.vm!r}")
    if gpu.mode != "vgpu":
        raise ChangeRefused("vgpu.mode", gpu_target(c.node, c.gpu),
                            f"GPU is in mode {gpu.mode}, not vgpu", "set-mode vgpu first")
    vgpus = [*(gpu.vgpus or ()), VGpu(vm=c.vm, profile=c.profile)]
    _put_gpu(view, node, gpu.model_copy(update={"vgpus": vgpus}), touched)
    touched.nodes.add(node.name)


def _remove_vgpu(view: View, c: ch.RemoveVgpu, touched: Touched) -> None:
    node, gpu = _gpu(view, c.node, c.gpu)
    vgpus = list(gpu.vgpus or ())
    for i, v in enumerate(vgpus):
        if v.vm == c.vm and v.profile == c.profile:
            del vgpus[i]
            break
    else:
        raise ChangeRefused("change.target-exists", gpu_target(c.node, c.gpu),
                            f"GPU has no vGPU {c.profile} for VM {c.vm!r}")
    _put_gpu(view, node, gpu.model_copy(update={"vgpus": vgpus}), touched)
    view.remove_vgpus((node.name, gpu.index), [(c.vm, c.profile)])
    touched.nodes.add(node.name)


def _attach_vm(view: View, c: ch.AttachVm, touched: Touched) -> None:
    node = _node(view, c.node)
    vm = next((v for v in node.vms if v.name == c.vm), None)
    if vm is None:
        raise ChangeRefused("change.target-exists", node_target(c.node), f"node has no VM {c.vm!r}")
    gpus = list(node.gpus)
    if c.device_group is not None:
        if c.device_group not in {g.name for g in node.device_groups}:
            raise ChangeRefused("change.target-exists", node_target(c.node),
                                f"node has no device group {c.device_group!r}")
        vm = vm.model_copy(update={"device_group": c.device_group})
    for index in c.gpus or ():
        gpu = node.gpu(index)
        if gpu is None:
            raise ChangeRefused("change.target-exists", gpu_target(c.node, index),
                                f"node {c.node!r} has no GPU {index}")
        if view.holders(c.node, index):
            raise ChangeRefused("placement.slot-free", gpu_target(c.node, index),
                                f"GPU {index} is held by {', '.join(sorted(view.holders(c.node, index)))}")
        gpus = [Gpu(index=index, model=gpu.model, mode="passthrough", vm=c.vm,
                    not_in_catalog=gpu.not_in_catalog, health=gpu.health) if g.index == index else g
                for g in gpus]
        touched.gpus.add((c.node, index))
    if c.gpus:
        vm = vm.model_copy(update={"gpus": sorted({*(vm.gpus or ()), *c.gpus})})
    vms = [vm if v.name == c.vm else v for v in node.vms]
    view.put_node(node.name, node.model_copy(update={"vms": vms, "gpus": gpus}))
    touched.nodes.add(node.name)


def _detach_vm(view: View, c: ch.DetachVm, touched: Touched) -> None:
    node = _node(view, c.node)
    vm = next((v for v in node.vms if v.name == c.vm), None)
    if vm is None:
        raise ChangeRefused("change.target-exists", node_target(c.node), f"node has no VM {c.vm!r}")
    everything = c.gpus is None and c.device_group is None
    release = set(vm.gpus or ()) if everything else set(c.gpus or ())
    update: dict[str, Any] = {"gpus": sorted(set(vm.gpus or ()) - release) or None}
    if everything or (c.device_group is not None and vm.device_group == c.device_group):
        update["device_group"] = None
    vms = [vm.model_copy(update=update) if v.name == c.vm else v for v in node.vms]
    gpus = [Gpu(index=g.index, model=g.model, mode="full", not_in_catalog=g.not_in_catalog, health=g.health)
            if g.index in release and g.vm == c.vm else g for g in node.gpus]
    touched.gpus |= {(c.node, i) for i in release}
    view.put_node(node.name, node.model_copy(update={"vms": vms, "gpus": gpus}))
    touched.nodes.add(node.name)


def _set_state(view: View, name: str, state: str, touched: Touched) -> None:
    node = _node(view, name)
    # a node no longer down has no down reason (what its Ready condition said while it was)
    view.put_node(name, node.model_copy(update={"state": state, "down_reason": None}))
    touched.nodes.add(name)


def _change_state(view: View, name: str, state: str, op: str, touched: Touched) -> None:
    """cordon, uncordon and drain move a node between ready, cordoned and draining; never out of `down`."""
    node = _node(view, name)
    if node.state == "down":
        raise ChangeRefused("change.node-down", node_target(name),
                            f"node {name} is down; {op} does not bring a down node back",
                            f"after the repair, record it: op: repair-node, node: {name}, note: WHAT WAS DONE "
                            "(needs an admin)")
    _set_state(view, name, state, touched)


def _cordon(view: View, c: ch.Cordon, touched: Touched) -> None:
    _change_state(view, c.node, "cordoned", "cordon", touched)


def _uncordon(view: View, c: ch.Uncordon, touched: Touched) -> None:
    _change_state(view, c.node, "ready", "uncordon", touched)


def _repair(view: View, c: ch.RepairNode, touched: Touched) -> None:
    node = _node(view, c.node)
    if node.state != "down":
        raise ChangeRefused("change.node-down", node_target(c.node),
                            f"node {c.node} is {node.state}, not down; repair-node is for a down node",
                            "use uncordon for a cordoned node")
    if not c.note.strip():
        raise ChangeRefused("change.fields", node_target(c.node), "repair-node needs a note: what was repaired")
    _set_state(view, c.node, c.state, touched)


def _set_gpu_health(view: View, c: ch.SetGpuHealth, touched: Touched) -> None:
    """Fence a GPU (or clear its fence). Its running holders stay, as a cordon keeps a node's: fencing stops
    new placements (rule `placement.gpu-healthy`, and the scheduler's filters); drain or preempt what runs."""
    node, gpu = _gpu(view, c.node, c.gpu)
    health = (GpuHealth(state="unhealthy", reason=c.reason, by=c.by, since=c.since)
              if c.health == "unhealthy" and c.reason is not None else None)
    _put_gpu(view, node, gpu.model_copy(update={"health": health}), touched)
    touched.nodes.add(node.name)


def _evict(view: View, job: Job, touched: Touched) -> None:
    view.put_job(job.name, job.model_copy(update={"status": "preempted", "placement": []}))
    touched.jobs.add(job.name)


def _running_on(view: View, node: Node) -> list[Job]:
    names: set[str] = set()
    for gpu in node.gpus:
        names |= view.holders(node.name, gpu.index)
    jobs = [view.job(n) for n in sorted(names)]
    return [j for j in jobs if j is not None]


def _drain(view: View, c: ch.Drain, touched: Touched) -> None:
    node = _node(view, c.node)
    _change_state(view, c.node, "draining", "drain", touched)
    if node.platform == "vsphere":  # an ESXi host is drained of its VMs: maintenance mode with evacuation
        from gpuadmin.engine.evacuation import evacuate  # it imports this module's handlers' helpers

        evacuate(view, c.node, touched)
    for job in _running_on(view, node):
        if job.preemptible:
            _evict(view, job, touched)
        else:
            touched.jobs.add(job.name)  # the nodes.drain-blocked rule refuses the plan


def _submit(view: View, c: ch.SubmitJob, touched: Touched) -> None:
    if view.job(c.job.name) is not None:
        raise ChangeRefused("change.unique-name", job_target(c.job.name), f"job {c.job.name!r} exists")
    if c.job.status != "pending":
        raise ChangeRefused("change.fields", job_target(c.job.name),
                            f"a submitted job is pending, not {c.job.status}", "bind it with bind-job")
    _queue(view, c.job.queue)
    view.put_job(c.job.name, c.job)
    touched.jobs.add(c.job.name)


def _cancel(view: View, c: ch.CancelJob, touched: Touched) -> None:
    job = _job(view, c.name)
    touched.jobs.add(job.name)
    touched.queues.add(job.queue)
    view.put_job(job.name, None)


def _bind(view: View, c: ch.BindJob, touched: Touched) -> None:
    job = _job(view, c.name)
    if job.status not in ("pending", "preempted"):
        raise ChangeRefused("change.job-status", job_target(c.name),
                            f"job {c.name!r} is {job.status}; only pending or preempted jobs are bound")
    view.put_job(job.name, job.model_copy(update={"status": "running", "placement": list(c.placement)}))
    touched.jobs.add(job.name)


def _preempt(view: View, c: ch.PreemptJob, touched: Touched) -> None:
    job = _job(view, c.name)
    if job.status != "running":
        raise ChangeRefused("change.job-status", job_target(c.name), f"job {c.name!r} is not running")
    if c.override:
        view.overridden.add(job.name)  # placement.non-preemptible-kept lets it go; the service asks for an admin
    _evict(view, job, touched)


def _set_quota(view: View, c: ch.SetQuota, touched: Touched) -> None:
    queue = _queue(view, c.queue)
    update = {k: getattr(c, k) for k in ("quota", "limit", "over_quota_weight", "priority")
              if getattr(c, k) is not None}
    view.put_queue(queue.name, queue.model_copy(update=update))
    touched.queues.add(queue.name)


def _add_queue(view: View, c: ch.AddQueue, touched: Touched) -> None:
    if view.queue(c.queue.name) is not None:
        raise ChangeRefused("change.unique-name", queue_target(c.queue.name),
                            f"queue {c.queue.name!r} exists")
    view.put_queue(c.queue.name, c.queue)
    touched.queues.add(c.queue.name)


def _remove_queue(view: View, c: ch.RemoveQueue, touched: Touched) -> None:
    """The queue goes from the view and is touched, so `expand` checks the jobs that still name it
    (quota.queue-exists); if any does, `change.in-use` is the one summary their violations follow from."""
    _queue(view, c.name)
    users = [j.name for j in view.jobs() if j.queue == c.name]
    view.put_queue(c.name, None)
    touched.queues.add(c.name)
    if users:
        raise ChangeRefused("change.in-use", queue_target(c.name),
                            f"queue {c.name!r} still has {len(users)} job(s), e.g. {users[0]!r}",
                            "cancel its jobs first (cancel-job; it removes a job, and stops it if it runs), in "
                            "the same plan or before; no op moves a job to another queue")


def _add_node(view: View, c: ch.AddNode, touched: Touched) -> None:
    if view.node(c.node.name) is not None:
        raise ChangeRefused("change.unique-name", node_target(c.node.name), f"node {c.node.name!r} exists")
    view.put_node(c.node.name, c.node)
    touched.nodes.add(c.node.name)
    touched.gpus |= {(c.node.name, g.index) for g in c.node.gpus}


def _remove_node(view: View, c: ch.RemoveNode, touched: Touched) -> None:
    """The node goes from the view and it and its GPUs are touched, so `expand` checks the jobs still holding
    them (placement.slot-exists); if any runs there, `change.in-use` is the one summary those follow from, with
    the remedy that works for this node."""
    node = _node(view, c.name)
    running = _running_on(view, node)
    view.put_node(c.name, None)
    touched.nodes.add(c.name)
    touched.gpus |= {(c.name, g.index) for g in node.gpus}
    if running:
        raise ChangeRefused("change.in-use", node_target(c.name),
                            f"node {c.name!r} runs {len(running)} job(s), e.g. {running[0].name!r}",
                            _emptying_hint(node, running))


def _emptying_hint(node: Node, running: Sequence[Job]) -> str:
    """How to stop what runs on a node before it is removed. drain does it, but not on a down node (repair-node
    is the only way out of down), and not past a non-preemptible job (node.drain-blocked)."""
    kept = [j.name for j in running if not j.preemptible]
    if kept:
        others = f" and {len(kept) - 1} other(s)" if len(kept) > 1 else ""
        return (f"non-preemptible {kept[0]!r}{others} must complete first, or an admin preempts them (preempt-job, "
                f"override: true, a reason); then " + ("preempt the rest (preempt-job): the node is down"
                                                        if node.state == "down" else f"drain {node.name}"))
    if node.state == "down":
        return "preempt its jobs first (preempt-job), in the same plan or before: drain does not apply to a down node"
    return f"drain it first (op: drain, node: {node.name}), in the same plan or before: drain preempts its jobs"


def _restore(view: View, c: ch.Restore, touched: Touched) -> None:
    if c.seq is not None:  # back at its old position, whether it is gone or now elsewhere (re-submitted, say)
        view.put_at(c.kind, c.name, c.seq)
    if c.kind == "node":
        before = view.node(c.name)
        view.put_node(c.name, c.node)
        if before is not None and c.node is not None:
            _restored_vgpus(view, before, c.node)
        for node in (before, c.node):
            if node is not None:
                touched.gpus |= {(node.name, g.index) for g in node.gpus}
        touched.nodes.add(c.name)
    elif c.kind == "job":
        current = view.job(c.name)
        if (c.job is not None and c.job.status == "running" and current is not None
                and current.status not in ("pending", "preempted", "running") and c.name not in view.released):
            # it amounts to a bind-job, which starts only a pending or preempted job
            raise ChangeRefused("change.job-status", job_target(c.name),
                                f"a restore would run job {c.name!r} again, which is {current.status}; only "
                                "pending or preempted jobs are bound", "submit it again as a new job")
        view.put_job(c.name, c.job)
        touched.jobs.add(c.name)
    else:
        view.put_queue(c.name, c.queue)
        touched.queues.add(c.name)


def _restored_vgpus(view: View, before: Node, after: Node) -> None:
    """A restore writes a node whole: a vGPU it leaves out is removed explicitly, as by remove-vgpu."""
    for gpu in before.gpus:
        kept = after.gpu(gpu.index)
        lost = _vgpu_count(gpu) - (_vgpu_count(kept) if kept is not None else Counter())
        if lost:
            view.remove_vgpus((before.name, gpu.index), lost.elements())


def _vgpu_count(gpu: Gpu) -> Counter[tuple[str, str]]:
    return Counter((v.vm, v.profile) for v in gpu.vgpus or ())




# ---------------------------------------------------------------------------------------------


def _diff(view: View) -> list[EntityDiff]:
    out: list[EntityDiff] = []
    tables: list[tuple[EntityKind, dict[str, Any], dict[str, Any]]] = [
        ("node", view.node_edits, view.base.nodes),
        ("queue", view.queue_edits, view.base.queues),
        ("job", view.job_edits, view.base.jobs),
    ]
    for kind, edits, base in tables:
        for name, after in edits.items():
            before_d, after_d = dump(base.get(name)), dump(after)
            was_at, now_at = view.base.seq_of(kind, name), view.seq_edits.get((kind, name))
            moved_to = now_at if after_d is not None and now_at is not None and now_at != was_at else None
            # a restore that only moves an entity (same data, another position) is a change too: journaled, undone
            # by the restore to the position it had (`seq`), redone by the one to where it went (`moved_to`)
            if before_d != after_d or (moved_to is not None and before_d is not None):
                out.append(EntityDiff(kind, name, before_d, after_d, was_at, moved_to))
    return out


def _effects(view: View) -> Effects:
    effects = Effects()
    for name, after in view.job_edits.items():
        before = view.base.jobs.get(name)
        was_running = before is not None and before.status == "running"
        is_running = after is not None and after.status == "running"
        if before is None and after is not None:
            effects.submitted.append(name)
        if after is None and before is not None:
            effects.cancelled.append(name)
        if was_running and not is_running:
            effects.evicted.append(name)
        if is_running and (not was_running or (before is not None and after is not None
                                                and before.placement != after.placement)):
            effects.bound.append(name)
    return effects


def _nodes_outside_schema(view: View) -> list[Violation]:
    """Nodes the inventory schema itself would refuse. Handlers edit nodes with `model_copy`, which skips the
    model's own checks, so a change could leave, say, device groups on a bare-metal node: a state that no longer
    exports or reads back. Only edited nodes are re-read (a node is small; job and queue edits carry values the
    change schema has validated)."""
    out: list[Violation] = []
    for name, node in view.node_edits.items():
        if node is None:
            continue
        # a node the state already held keeps the name it was stored with (one from before the DNS-1123 check
        # still changes and undoes); a node this plan adds was checked as the change that adds it
        stored = STORED if name in view.base.nodes else None
        try:
            Node.model_validate(node.model_dump(exclude_none=True), context=stored)
        except ValidationError as invalid:
            problem = invalid.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            message = str(problem["msg"]).removeprefix("Value error, ")
            out.append(Violation("change.fields", node_target(name),
                                 f"the change leaves node {name} invalid: {where + ': ' if where else ''}{message}"))
    return out


def _vms_moved(view: View) -> set[str]:
    """The VMs whose host the plan changes or removes: only a job naming one of them can lose its VM. Most node
    edits (a repartition, a cordon) keep every VM where it was, and then no job needs checking again."""
    before: set[tuple[str, str]] = set()  # (VM, host): a VM defined twice is two pairs, never one overwritten
    after: set[tuple[str, str]] = set()
    for name, node in view.node_edits.items():
        old = view.base.nodes.get(name)
        before.update((vm.name, name) for vm in (old.vms if old is not None else ()))
        after.update((vm.name, name) for vm in (node.vms if node is not None else ()))
    return {vm for vm, _ in before ^ after}


def _reference_problems(view: View) -> list[Violation]:
    """The inventory's reference checks (`gpuadmin.model.references`) on every node and job the plan adds or
    edits: a plan that would leave a state whose export no longer validates is refused with the check's
    reason. A job is checked again when the plan removes or moves the VM it names. Only what the plan breaks
    is reported: a problem the entity already had in the base state (a state written before these checks)
    does not block every later change to it."""
    base = view.base
    nodes = [node for node in view.node_edits.values() if node is not None]
    jobs = {name: job for name, job in view.job_edits.items() if job is not None}
    moved_vms = _vms_moved(view)
    if moved_vms:  # the one scan of every job, only for a plan that takes a VM away or to another host
        jobs.update((job.name, job) for job in view.jobs() if job.vm in moved_vms)
    out: list[Violation] = []
    for node in nodes:
        before = base.nodes.get(node.name)
        had = {(d.path, d.message) for d in node_references(before)} if before is not None else set()
        out += [Violation("change.references", node_target(node.name), f"{dotted(d.path)}: {d.message}", d.hint)
                for d in node_references(node) if (d.path, d.message) not in had]
    if jobs:
        after_nodes = {node.name: node for node in view.nodes()}
        after_queues = {queue.name for queue in view.queues()}
        after_hosts = hosts_of_vms(after_nodes.values())
        base_hosts = hosts_of_vms(base.nodes.values())
        for job in jobs.values():
            before_job = base.jobs.get(job.name)
            had_job = ({(d.path, d.message) for d in job_references(before_job, (), base.nodes, base.queues,
                                                                     base_hosts)}
                       if before_job is not None else set())
            out += [Violation("change.references", job_target(job.name), f"{dotted(d.path)}: {d.message}", d.hint)
                    for d in job_references(job, (), after_nodes, after_queues, after_hosts)
                    if (d.path, d.message) not in had_job]
    return out


def plan(state: ClusterState, changes: Sequence[ch.Change],
         released: Mapping[str, frozenset[SlotKey]] | None = None) -> Plan:
    """`released`: the slots the journal entries an undo or redo reverts released, by job (`released_slots`);
    none for any other plan, whose restores are judged like the forward changes they amount to."""
    from gpuadmin.engine.ops import spec_of  # the registry imports the handlers above: read it when planning

    view = View(state)
    view.released = dict(released or {})
    touched = Touched()
    refusals: list[Violation] = []
    for change in changes:
        try:
            spec_of(change).handler(view, change, touched)
        except ChangeRefused as refused:
            refusals.append(refused.violation)
    refusals += _nodes_outside_schema(view)
    _check_positions(view, changes)
    violations = refusals + _reference_problems(view) + check(view, touched)
    diff = _diff(view)
    commands = node_commands(view, diff) if not violations else {}  # nothing to run for a refused plan
    digest = hashlib.sha256(_canonical({
        "base_revision": state.revision,
        "changes": [c.model_dump(mode="json") for c in changes],
        "diff": [d.to_json() for d in diff],
    }).encode()).hexdigest()
    return Plan(state.revision, list(changes), violations, diff, _effects(view), commands, digest, view,
                follow_ons(state, violations), dict(view.released), _many_replicas(view, touched))


#: Time-slicing replicas of one GPU (or MIG instance) above which a plan warns. The device plugin takes any count
#: from 2 up (and the inventory up to MAX_REPLICAS), but every replica is one more process sharing the GPU's
#: memory, unisolated, and its time slices: GKE caps sharers at 48; past 64 it is more likely a typo than a plan.
MANY_REPLICAS = 64


def _many_replicas(view: View, touched: Touched) -> list[Violation]:
    """A warning for each GPU or MIG instance the plan leaves time-sliced more than MANY_REPLICAS ways."""
    out = []
    for key in sorted(touched.gpus):
        found = view.gpu_at(key)
        if found is None:
            continue
        gpu = found[1]
        counts = [(f"GPU {key[1]} on {key[0]}", gpu.replicas if gpu.mode == "time-sliced" else None)]
        counts += [(f"MIG {i.profile}@{i.start} of GPU {key[1]} on {key[0]}", i.replicas) for i in gpu.mig or ()]
        out += [Violation("mode.many-replicas", gpu_target(*key),
                          f"{what} is time-sliced {count} ways: each replica shares its memory, unisolated",
                          f"more than {MANY_REPLICAS} replicas is rarely meant; check the number")
                for what, count in counts if count is not None and count > MANY_REPLICAS]
    return out


def _check_positions(view: View, changes: Sequence[ch.Change]) -> None:
    """A restore's `seq` puts an entity at a free position of its table, or keeps it at its own: two entities at
    one position is bad input (exit 2), not a rule. Judged once every change is applied, so that an undo which
    removes the entity now there frees its position in the same plan. One scan of a table, and only for a plan
    that gives positions in it."""
    if not view.seq_edits:
        return
    at: dict[tuple[EntityKind, int], list[str]] = {}  # (kind, position) → who would be there
    for (kind, name), seq in view.seq_edits.items():
        at.setdefault((kind, seq), []).append(name)
    lookup = {"node": view.node, "job": view.job, "queue": view.queue}
    for kind in sorted({kind for kind, _ in view.seq_edits}):
        for other, seq in view.base.seqs[kind].items():
            if (kind, seq) in at and (kind, other) not in view.seq_edits and lookup[kind](other) is not None:
                at[(kind, seq)].append(other)
    for (kind, seq), holders in at.items():
        if len(holders) > 1:
            name, other = holders[0], holders[1]
            index = next(i for i, c in enumerate(changes)
                         if isinstance(c, ch.Restore) and c.kind == kind and c.name == name)
            raise InputError([Diagnostic(
                f"restore of {kind} {name!r} puts it at position {seq}, which {kind} {other!r} holds",
                ("changes", index, "seq"),
                hint="leave 'seq' out to put it at the end, or give a free position")])


# A violation of one of these is a cause: on the same target, or on the jobs that held the GPU it hits, the
# violations that come after it follow from it (a typo'd profile, then the layout rules that cannot judge it;
# a repartition that destroys held slices, then each holder's placement rules).
_ROOT_RULES = ("change.", "mig.profile-exists", "mig.model-supports", "mig.repartition-evicts", "mode.change-evicts",
               "mode.sharing-change-evicts")


def follow_ons(state: ClusterState, violations: Sequence[Violation]) -> dict[int, int]:
    """violation index → the index of the violation it follows from."""
    roots: dict[str, int] = {}  # target → the root violation on it (or on the GPU its job held)
    out: dict[int, int] = {}
    for i, v in enumerate(violations):
        root = roots.get(v.target)
        if root is not None:
            out[i] = root
            continue
        if v.rule.startswith(_ROOT_RULES):
            roots[v.target] = i
            for dependent in _dependents(state, v):
                roots.setdefault(job_target(dependent), i)
    return out


def _dependents(state: ClusterState, root: Violation) -> set[str]:
    """The jobs a root violation breaks besides its own target: those that held the GPU it hits; for a removal
    refused as in use (`change.in-use`), the jobs running on the node or naming the queue."""
    kind, name, gpu = target_of(root.target)
    if kind == "gpu" and gpu is not None:
        return set(state.holders.get((name, gpu), ()))
    if root.rule != "change.in-use":
        return set()
    node = state.nodes.get(name) if kind == "node" else None
    if node is not None:
        return set().union(*(state.holders.get((name, g.index), ()) for g in node.gpus))
    if kind == "queue":
        return {job.name for job in state.jobs.values() if job.queue == name}
    return set()


def released_slots(diffs: Iterable[EntityDiff]) -> dict[str, frozenset[SlotKey]]:
    """The slots each job held before these diffs and not after: what reverting them gives back. An undo (or a
    redo) passes them to `plan`; they are the only placements a restore makes without the new-placement rules."""
    out: dict[str, frozenset[SlotKey]] = {}
    for d in diffs:
        if d.kind == "job":
            given_back = _held(d.before) - _held(d.after)
            if given_back:
                out[d.name] = frozenset(given_back)
    return out


def _held(job: dict[str, Any] | None) -> set[SlotKey]:
    if job is None or job.get("status") != "running":
        return set()
    return {(s["node"], s["gpu"], s.get("mig_start")) for s in job.get("placement") or ()}


def inverse(diffs: Iterable[EntityDiff]) -> list[ch.Change]:
    """The `restore` changes that put every entity of these diffs back to its `before`."""
    out: list[ch.Change] = []
    for d in diffs:
        value: dict[str, Any] = {"op": "restore", "kind": d.kind, "name": d.name}
        if d.before is not None:
            value[d.kind] = d.before
            if d.seq is not None:  # its old position too: a removed and re-added entity has a new one
                value["seq"] = d.seq
        out.append(ch.Restore.model_validate(value, strict=False, context=STORED))
    return out
