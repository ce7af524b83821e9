"""Host maintenance with evacuation (op `evacuate-host`, and `drain` on a vSphere host): every VM on the host is
given a destination, then the host enters maintenance mode.

A VM with only vGPUs moves by vMotion to a host whose GPUs accept its vGPUs; a VM with passthrough GPUs or a
device group cannot be vMotioned, so it is powered off, relocated and powered on again (a cold move: the plan
is destructive and confirmed). Whether a destination accepts a VM is never decided here: each candidate is
tried on the plan's view and judged by every rule (profile offered, frame buffer free, equal-size or
heterogeneous mode as the host's ESXi version allows, device groups whole, hardware version supported, the
stun time tolerated); the violations a candidate adds are its reasons, and the refusal of a VM with nowhere
to go quotes them (rule vsphere.evacuation-room). Of the accepted candidates the one that keeps the most room
free wins (`_room_kept`). The algorithm and its sources: docs/vsphere-evacuation.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import combinations, islice
from typing import Literal

from gpuadmin.catalog import get_catalog
from gpuadmin.catalog.catalog import StunEstimate
from gpuadmin.engine import planner
from gpuadmin.engine.changes import Drain, EvacuateHost, Restore
from gpuadmin.engine.planner import ChangeRefused
from gpuadmin.engine.rules import Touched, Violation, check
from gpuadmin.engine.rules.base import node_target
from gpuadmin.engine.rules.vsphere import passthrough_gpus, vm_gpus
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Gpu, Job, Node, Slot, VGpu, Vm

#: Candidate GPU sets tried per destination host for one VM: a VM with k vGPUs on distinct GPUs has C(n, k)
#: of them; an 8-GPU host gives at most 70 (k = 4), so this bound is never met by real hosts.
MAX_CANDIDATES_PER_HOST = 256

How = Literal["vmotion", "cold"]


@dataclass(frozen=True, slots=True)
class VmMove:
    """One VM's move off an evacuated host, as planned. `gpus` maps each GPU the VM holds on the source to the
    one it holds on the destination; `group` the device group it held to the one it holds there. `stun` is the
    vMotion's estimated stun time (None for a cold move, or where a host's vMotion link speed is unknown).
    A VM with nowhere to go has `target` None and `why_not`: per host, the reasons the rules gave."""

    vm: str
    source: str
    target: str | None
    how: How
    gpus: tuple[tuple[int, int], ...]
    group: tuple[str, str] | None
    framebuffer_gib: float
    link_gbps: float | None
    stun: StunEstimate | None
    tolerated_stun_s: float | None
    why_not: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "vm": self.vm, "from": self.source, "to": self.target, "how": self.how,
            "gpus": [{"from": a, "to": b} for a, b in self.gpus],
            "device_group": {"from": self.group[0], "to": self.group[1]} if self.group else None,
            "framebuffer_gib": self.framebuffer_gib, "link_gbps": self.link_gbps,
            "stun_s": round(self.stun.seconds, 1) if self.stun is not None else None,
            "stun_confidence": self.stun.confidence if self.stun is not None else None,
            "tolerated_stun_s": self.tolerated_stun_s, "why_not": list(self.why_not),
        }


def tolerated_stun(vm: Vm, host: Node) -> float | None:
    """The stun time a VM tolerates: its own, else its host's (the vSphere cluster's default)."""
    if vm.tolerated_stun_s is not None:
        return vm.tolerated_stun_s
    return host.vsphere.tolerated_stun_s if host.vsphere is not None else None


def link_gbps(source: Node, target: Node) -> float | None:
    """A vMotion runs at the slower host's link (vSphere 8 U2 docs: the estimate is made at the destination's
    speed when it is the lower); unknown when either host does not say."""
    speeds = [n.vsphere.vmotion_gbps if n.vsphere is not None else None for n in (source, target)]
    return min(s for s in speeds if s is not None) if all(s is not None for s in speeds) else None


def framebuffer_gib(node: Node, vm: str) -> float:
    """The frame buffer a vMotion copies while the VM is stunned: the sum of its vGPUs' (catalog)."""
    total = 0
    for gpu in node.gpus:
        model = get_catalog().model(gpu.model)
        for vgpu in gpu.vgpus or ():
            found = model.vgpu_type(vgpu.profile) if model is not None and vgpu.vm == vm else None
            total += found.framebuffer_mib if found is not None else 0
    return total / 1024


def _holds(node: Node, vm: Vm) -> How:
    passthrough = vm.gpus or any(g.mode == "passthrough" and g.vm == vm.name for g in node.gpus)
    return "cold" if passthrough or vm.device_group is not None else "vmotion"


def _empty(gpu: Gpu) -> bool:
    return not gpu.vgpus and gpu.vm is None


def _vm_record(node: Node, name: str) -> Vm | None:
    return next((v for v in node.vms if v.name == name), None)


# ------------------------------------------------------------------------------------------- applying a move


def _apply(view: View, move: VmMove, touched: Touched) -> None:
    """Take the VM, its vGPUs and passthrough GPUs off the source host and give them to it on the target."""
    source = view.node(move.source)
    target = view.node(move.target) if move.target is not None else None
    vm = _vm_record(source, move.vm) if source is not None else None
    if source is None or target is None or vm is None:
        raise RuntimeError(f"evacuation move of {move.vm} names a host or VM the view lacks")
    mapping = dict(move.gpus)
    src_gpus: list[Gpu] = []
    taken: dict[int, tuple[list[VGpu], bool]] = {}  # source GPU → (the VM's vGPUs on it, passed through)
    for gpu in source.gpus:
        if gpu.index not in mapping:
            src_gpus.append(gpu)
            continue
        mine = [v for v in gpu.vgpus or () if v.vm == vm.name]
        passed = gpu.mode == "passthrough" and gpu.vm == vm.name
        taken[gpu.index] = (mine, passed)
        if mine:
            view.remove_vgpus((source.name, gpu.index), [(v.vm, v.profile) for v in mine])
        # a passthrough GPU stays configured for passthrough on the host (an ESXi setting), free; a GPU left without
        # vGPUs has none (not an empty list), as an inventory writes it and a vCenter read gives it
        src_gpus.append(gpu.model_copy(update={
            "vgpus": [v for v in gpu.vgpus or () if v.vm != vm.name] or None,
            "vm": None if passed else gpu.vm}))
        touched.gpus.add((source.name, gpu.index))
    view.put_node(source.name, source.model_copy(update={
        "gpus": src_gpus, "vms": [v for v in source.vms if v.name != vm.name]}))
    back = {b: a for a, b in mapping.items()}
    dst_gpus: list[Gpu] = []
    for gpu in target.gpus:
        if gpu.index not in back:
            dst_gpus.append(gpu)
            continue
        mine, passed = taken[back[gpu.index]]
        if passed:
            gpu = gpu.model_copy(update={"vm": vm.name})
        if mine:
            gpu = gpu.model_copy(update={"vgpus": [*(gpu.vgpus or ()), *mine]})
        dst_gpus.append(gpu)
        touched.gpus.add((target.name, gpu.index))
    moved = vm.model_copy(update={
        "device_group": move.group[1] if move.group is not None else None,
        "gpus": sorted(mapping[i] for i in vm.gpus) if vm.gpus else vm.gpus})
    view.put_node(target.name, target.model_copy(update={"gpus": dst_gpus, "vms": [*target.vms, moved]}))
    touched.nodes |= {source.name, target.name}


@contextmanager
def _trial(view: View) -> Iterator[None]:
    """Edits made inside are undone on leaving: a candidate is tried on the plan's own view, then taken back."""
    nodes = dict(view.node_edits)
    removed = {key: counter.copy() for key, counter in view.vgpus_removed.items()}
    moves = {host: list(planned) for host, planned in view.evacuations.items()}
    try:
        yield
    finally:
        view.node_edits.clear()
        view.node_edits.update(nodes)
        view.vgpus_removed.clear()
        view.vgpus_removed.update(removed)
        view.evacuations.clear()
        view.evacuations.update(moves)


# ------------------------------------------------------------------------------------------- candidates


def _candidates(source: Node, vm: Vm, target: Node) -> Iterator[tuple[tuple[tuple[int, int], ...],
                                                                      tuple[str, str] | None]]:
    """The GPU mappings (and device group) the VM could take on `target`, for the rules to judge: a group of
    the same size for a VM with a group; free passthrough GPUs of the same model for passed-through GPUs; any
    vGPU-mode GPUs, one per vGPU, for a vGPU VM (the rules say which accept its types)."""
    held = vm_gpus(source, vm)
    if vm.device_group is not None:
        for group in target.device_groups:
            if len(group.gpus) == len(held):
                yield tuple(zip(held, sorted(group.gpus), strict=True)), (vm.device_group, group.name)
        return
    passed = [i for i in held if (g := source.gpu(i)) is not None and g.mode == "passthrough"]
    if passed:
        models = {g.model for i in passed if (g := source.gpu(i)) is not None}
        free = [g.index for g in target.gpus if g.mode == "passthrough" and g.vm is None and g.model in models]
    else:
        free = [g.index for g in target.gpus if g.mode == "vgpu"]
    for chosen in islice(combinations(free, len(held)), MAX_CANDIDATES_PER_HOST):
        yield tuple(zip(held, chosen, strict=True)), None


def _room_kept(view: View, move: VmMove) -> tuple[int, int, int, str, tuple[int, ...]]:
    """The order of accepted destinations, best first: one in the VM's own vSphere cluster; then the fewest
    empty GPUs taken (an empty GPU takes any type and size later; one already carved in equal-size mode takes
    only its size); then the least frame buffer left free on the GPUs taken (best fit: the big holes stay
    whole); then the host's name and the GPU indexes, so that the choice is the same on every run."""
    source = view.node(move.source)
    target = view.node(move.target or "")
    if source is None or target is None:
        raise RuntimeError("a scored move names a host the view lacks")
    away = int(source.labels.get("vsphere.cluster") != target.labels.get("vsphere.cluster"))
    to = [b for _, b in move.gpus]
    empties = sum(1 for i in to if (g := target.gpu(i)) is not None and _empty(g))
    left = 0
    for i in to:
        gpu = target.gpu(i)
        model = get_catalog().model(gpu.model) if gpu is not None else None
        if gpu is None or model is None:
            continue
        used = sum(t.framebuffer_mib for v in gpu.vgpus or () if (t := model.vgpu_type(v.profile)) is not None)
        left += (model.vgpu_framebuffer_mib or model.memory_mib) - used
    return away, empties, left, target.name, tuple(sorted(to))


def _new_violations(view: View, touched: Touched, before: set[Violation]) -> list[Violation]:
    return [v for v in check(view, touched) if v not in before]


def _reason(host: str, found: list[Violation]) -> str:
    """One host's refusal of a VM in words: the first reason the rules gave its closest candidate (the one the
    fewest rules refused), and the other rules that refused that candidate."""
    first = found[0]
    others = sorted({v.rule for v in found} - {first.rule})
    more = f"; also {', '.join(others)}" if others else ""
    return f"{host}: {first.message} ({first.rule}{more})"


def _plan_vm(view: View, host: Node, vm: Vm, inside: list[Job], targets: Iterable[Node]) -> VmMove:
    """The VM's move: every candidate on every target host tried under every rule, the best accepted one kept."""
    how = _holds(host, vm)
    fb = framebuffer_gib(host, vm.name) if how == "vmotion" else 0.0
    tolerated = tolerated_stun(vm, host) if how == "vmotion" else None
    kept = [j.name for j in inside if not j.preemptible]
    if how == "cold" and kept:  # the VM stays: node.drain-blocked refuses the maintenance, naming the jobs
        return VmMove(vm.name, host.name, None, how, (), None, fb, None, None, tolerated,
                      (f"it runs non-preemptible job(s) {', '.join(kept)}, which powering it off would stop",))
    stuns = get_catalog().vsphere.vmotion_stun_times
    best: tuple[tuple[int, int, int, str, tuple[int, ...]], VmMove] | None = None
    why_not: list[str] = []
    for target in targets:
        if target.state != "ready":
            why_not.append(f"{target.name}: the host is {target.state} and takes no VMs")
            continue
        gbps = link_gbps(host, target) if how == "vmotion" else None
        stun = stuns.estimate(fb, gbps) if gbps is not None else None
        touched_base = Touched(nodes={target.name}, gpus={(target.name, g.index) for g in target.gpus})
        before = set(check(view, touched_base))
        closest: list[Violation] = []  # the refused candidate nearest to acceptance: its reasons are the host's
        tried = accepted = False
        for gpus, group in _candidates(host, vm, target):
            tried = True
            move = VmMove(vm.name, host.name, target.name, how, gpus, group, fb, gbps, stun, tolerated)
            with _trial(view):
                touched = Touched()
                _apply(view, move, touched)
                view.evacuations.setdefault(host.name, []).append(move)
                problems = _new_violations(view, Touched(nodes={target.name},
                                                         gpus={k for k in touched.gpus if k[0] == target.name}),
                                           before)
                score = _room_kept(view, move)
            if problems:
                if not closest or len({v.rule for v in problems}) < len({v.rule for v in closest}):
                    closest = problems
                continue
            accepted = True
            if best is None or score < best[0]:
                best = (score, move)
        if not tried:
            what = ("device group of the same size" if vm.device_group is not None else
                    "free passthrough GPU of the same model" if how == "cold" else "GPU in vgpu mode")
            why_not.append(f"{target.name}: no {what}")
        elif not accepted:
            why_not.append(_reason(target.name, closest))
    if best is not None:
        return best[1]
    return VmMove(vm.name, host.name, None, how, (), None, fb, None, None, tolerated,
                  tuple(why_not) or ("no other vSphere host in the inventory",))


# ------------------------------------------------------------------------------------------- the evacuation


def _order(host: Node) -> list[Vm]:
    """Hardest to place first: most whole GPUs held (passthrough, device group), then most frame buffer; then
    by name."""
    return sorted(host.vms, key=lambda vm: (-len(passthrough_gpus(host, vm)), -framebuffer_gib(host, vm.name),
                                            vm.name))


def _jobs_in(view: View, vms: set[str]) -> dict[str, list[Job]]:
    """The running jobs inside each of these VMs: one scan of the jobs for a whole evacuation."""
    out: dict[str, list[Job]] = {}
    for job in view.jobs():
        if job.vm in vms and job.status == "running":
            out.setdefault(job.vm, []).append(job)
    return out


def _carry_jobs(view: View, move: VmMove, inside: list[Job], touched: Touched) -> None:
    """Jobs inside a vMotioned VM keep running on the same GPUs, now on the destination; a powered-off VM's
    jobs stop: the preemptible ones are evicted, a non-preemptible one stays and blocks the maintenance (rule
    node.drain-blocked), as a drain's would."""
    mapping = dict(move.gpus)
    for job in inside:
        if move.how == "vmotion" and move.target is not None:
            placement = [Slot(node=move.target, gpu=mapping.get(s.gpu, s.gpu), mig_start=s.mig_start)
                         if s.node == move.source else s for s in job.placement]
            view.put_job(job.name, job.model_copy(update={"placement": placement}))
        elif job.preemptible:
            view.put_job(job.name, job.model_copy(update={"status": "preempted", "placement": []}))
        touched.jobs.add(job.name)


def evacuate(view: View, host_name: str, touched: Touched) -> list[VmMove]:
    """Plan every VM of the host off it, applying each accepted move to the view before the next VM chooses
    (room one VM takes is gone for the next); VMs with nowhere to go stay, and rule vsphere.evacuation-room
    refuses the plan naming each with its reasons."""
    host = view.node(host_name)
    if host is None:
        raise RuntimeError(f"evacuate names a host the view lacks: {host_name}")
    targets = [n for n in view.nodes() if n.platform == "vsphere" and n.name != host_name]
    targets.sort(key=lambda n: n.name)
    moves: list[VmMove] = []
    jobs = _jobs_in(view, {vm.name for vm in host.vms})
    for vm in _order(host):
        current = view.node(host_name) or host
        record = _vm_record(current, vm.name) or vm
        inside = jobs.get(vm.name, [])
        move = _plan_vm(view, current, record, inside, [view.node(t.name) or t for t in targets])
        if move.target is not None:
            _apply(view, move, touched)
            _carry_jobs(view, move, inside, touched)
        view.evacuations.setdefault(host_name, []).append(move)
        moves.append(move)
    touched.nodes.add(host_name)
    return moves


def moved_only(state: ClusterState, moves: Iterable[VmMove]) -> list[Restore]:
    """What the estate holds once `moves` alone are made (an evacuation stopped part-way: these VMs moved, the
    rest where they were, the host not in maintenance mode), as restores of the nodes and jobs they touch: the
    part of a failed evacuation a vCenter-bound state takes."""
    view = View(state)
    touched = Touched()
    for move in moves:
        inside = _jobs_in(view, {move.vm}).get(move.vm, [])
        _apply(view, move, touched)
        _carry_jobs(view, move, inside, touched)
    return ([Restore(op="restore", kind="node", name=n, node=view.node(n)) for n in sorted(touched.nodes)]
            + [Restore(op="restore", kind="job", name=j, job=view.job(j)) for j in sorted(touched.jobs)])


def moves_into(view: View, host: str) -> list[VmMove]:
    """The planned moves whose destination is `host`, across every evacuation in the plan."""
    return [m for planned in view.evacuations.values() for m in planned if m.target == host]


__all__ = ["How", "VmMove", "evacuate", "evacuate_host", "framebuffer_gib", "link_gbps", "moved_only", "moves_into",
           "tolerated_stun"]


def evacuate_host(view: View, c: EvacuateHost, touched: Touched) -> None:
    """The op's handler: a vSphere host only; then exactly what `drain` does on one (maintenance mode is the
    host's `draining` state, which takes no new VMs or jobs)."""
    node = view.node(c.node)
    if node is None:
        raise ChangeRefused("change.target-exists", node_target(c.node), f"node {c.node!r} does not exist")
    if node.platform != "vsphere":
        raise ChangeRefused("change.fields", node_target(c.node),
                            f"evacuate-host moves VMs off a vSphere host; {c.node} is a {node.platform} node",
                            f"drain it: op: drain, node: {c.node}")
    planner._drain(view, Drain(op="drain", node=c.node), touched)
