"""An invariant checker written from the user docs, independent of the engine's rules.

The stateful test (test_state_machine.py) runs it after every step. It reads inventories as plain data and
the catalog's hardware facts (memory, MIG profile sizes), and never calls `gpuadmin.engine.rules`,
`gpuadmin.engine.sharing` or `gpuadmin.engine.usage`: a bug in the engine's notion of a slice must not hide
itself here. What it checks, and where the docs promise it:

- no slice is over-shared (docs/inventory.md "Jobs" and "Dynamic sharing", docs/sharing.md): a whole GPU, an
  unshared MIG instance and a passthrough GPU have one holder; a time-sliced GPU or MIG instance has at most
  `replicas` holders, and its fractional holders take one combined share ≤ 1 (`fraction: f` takes f,
  `gpu_memory_gib: g` takes g / the slice's memory); a dynamically shared full GPU holds one whole job or
  fractions whose combined share of the memory left after `reserved_gib` is ≤ 1; a MIG GPU is never held whole;
  a vGPU GPU serves jobs in the VMs that hold a vGPU on it, no more jobs per VM than its vGPUs there;
- no exclusive job shares (docs/inventory.md `isolation`: exclusive unless written `shared` or the request is
  fractional): it is the only holder of its slice and never on a time-sliced one;
- no new placement on a cordoned, draining or down node (docs/inventory.md `state`; docs/changes.md cordon,
  drain), nor on a GPU fenced as unhealthy (docs/changes.md `set-gpu-health`): a running job there holds only
  slots it already held before the step;
- no VM loses a vGPU, a passthrough GPU or its device group unless the plan says so (docs/changes.md
  `remove-vgpu`, `detach-vm`; removing or restoring the whole node);
- every state exports to an inventory that loads and validates, references included, and loads back equal
  (docs/inventory.md: "load → dump → load gives an equal inventory").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gpuadmin.catalog import get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.errors import InputError
from gpuadmin.model import Gpu, Inventory, Job, Node
from gpuadmin.store import dump_inventory, parse_inventory

# Floating sums (0.25 + 0.5 + 0.25) may land a hair above 1.
TOLERANCE = 1e-9

SlotKey = tuple[str, int, int | None]  # node, GPU index, MIG start


def exclusive(job: Job) -> bool:
    """docs/inventory.md `isolation`: "default: shared for fractional requests, exclusive otherwise"."""
    if job.isolation is not None:
        return job.isolation == "exclusive"
    return job.request.fraction is None and job.request.gpu_memory_gib is None


def fractional(job: Job) -> bool:
    return job.request.fraction is not None or job.request.gpu_memory_gib is not None


def _gpu_memory_gib(gpu: Gpu) -> float:
    model = get_catalog().model(gpu.model)
    if model is not None:
        return model.memory_mib / 1024
    return (gpu.not_in_catalog.memory_mib or 0) / 1024 if gpu.not_in_catalog is not None else 0.0


def _mig_instance_memory_gib(gpu: Gpu, profile_name: str) -> float:
    model = get_catalog().model(gpu.model)
    profile = model.mig_profile(profile_name) if model is not None else None
    if model is None or profile is None:
        return 0.0
    if profile.memory_gib is not None:
        return profile.memory_gib
    return model.memory_mib / 1024 * profile.memory_slices / model.memory_slices


@dataclass(frozen=True)
class Slice:
    """What one slot resolves to, as the docs describe slices."""

    where: str
    kind: str  # whole | mig | time-sliced | dynamic | passthrough | vgpu | mig-whole
    replicas: int | None = None  # time-sliced: how many holders it takes
    memory_gib: float = 0.0  # what a `gpu_memory_gib` request is a share of


def resolve(nodes: dict[str, Node], node_name: str, index: int, mig_start: int | None) -> Slice | None:
    node = nodes.get(node_name)
    gpu = next((g for g in node.gpus if g.index == index), None) if node is not None else None
    if node is None or gpu is None:
        return None
    where = f"{node_name}/{index}"
    if gpu.mode == "mig":
        if mig_start is None:
            return Slice(where, "mig-whole")
        instance = next((i for i in gpu.mig or () if i.start == mig_start), None)
        if instance is None:
            return None
        where = f"{where}/{instance.profile}@{mig_start}"
        memory = _mig_instance_memory_gib(gpu, instance.profile)
        if instance.replicas is not None:
            return Slice(where, "time-sliced", instance.replicas, memory)
        return Slice(where, "mig", memory_gib=memory)
    if mig_start is not None:
        return None  # a MIG start on a GPU that is not in MIG mode names nothing
    if gpu.mode == "time-sliced":
        return Slice(where, "time-sliced", gpu.replicas, _gpu_memory_gib(gpu))
    if gpu.mode == "full":
        if node.sharing is not None and get_catalog().model(gpu.model) is not None:
            return Slice(where, "dynamic", memory_gib=max(0.0, _gpu_memory_gib(gpu) - node.sharing.reserved_gib))
        return Slice(where, "whole", memory_gib=_gpu_memory_gib(gpu))
    return Slice(where, gpu.mode, memory_gib=_gpu_memory_gib(gpu))


def _share(job: Job, memory_gib: float) -> float:
    """The combined compute-and-memory share a fractional job takes of a slice of this much memory."""
    if job.request.fraction is not None:
        return job.request.fraction
    if job.request.gpu_memory_gib is not None:
        return job.request.gpu_memory_gib / memory_gib if memory_gib > 0 else float("inf")
    return 0.0


def _holders(inv: Inventory) -> dict[SlotKey, list[Job]]:
    out: dict[SlotKey, list[Job]] = {}
    for job in inv.jobs:
        if job.status == "running":
            for slot in job.placement:
                out.setdefault((slot.node, slot.gpu, slot.mig_start), []).append(job)
    return out


def slice_problems(inv: Inventory) -> list[str]:
    """Over-shared slices, slots that name nothing, and exclusive jobs that share."""
    nodes = {n.name: n for n in inv.nodes}
    problems: list[str] = []
    for job in inv.jobs:
        if job.status == "running" and not job.placement:
            problems.append(f"job {job.name} is running with no placement")
        if job.status != "running" and job.placement:
            problems.append(f"job {job.name} is {job.status} but keeps a placement")
    by_gpu: dict[tuple[str, int], dict[SlotKey, list[Job]]] = {}
    for key, jobs in _holders(inv).items():
        by_gpu.setdefault(key[:2], {})[key] = jobs
    for slots in by_gpu.values():
        resolved = {key: resolve(nodes, *key) for key in slots}
        for key, jobs in sorted(slots.items(), key=lambda kv: (kv[0][2] is not None, kv[0][2] or 0)):
            found = resolved[key]
            who = ", ".join(sorted(j.name for j in jobs))
            if found is None:
                problems.append(f"{who} hold{'s' if len(jobs) == 1 else ''} {key}, which does not exist")
                continue
            problems += _over_shared(found, jobs, who)
            problems += [f"exclusive job {j.name} shares {found.where} ({found.kind}) with {who}"
                         for j in jobs if exclusive(j) and (len(jobs) > 1 or found.kind == "time-sliced")]
    return problems


def _over_shared(found: Slice, jobs: Sequence[Job], who: str) -> list[str]:
    if found.kind == "mig-whole":
        return [f"{who} hold MIG-enabled GPU {found.where} whole"]
    if found.kind in ("whole", "mig", "passthrough") and len(jobs) > 1:
        return [f"{found.where} ({found.kind}) has {len(jobs)} holders: {who}"]
    if found.kind == "time-sliced":
        out = []
        if found.replicas is not None and len(jobs) > found.replicas:
            out.append(f"{found.where} has {len(jobs)} holders on {found.replicas} replicas: {who}")
        share = sum(_share(j, found.memory_gib) for j in jobs if fractional(j))
        if share > 1 + TOLERANCE:
            out.append(f"{found.where} is oversubscribed: fractions and memory take {share:.3f} of it ({who})")
        return out
    if found.kind == "dynamic":
        whole = [j for j in jobs if not fractional(j)]
        if whole and len(jobs) > 1:
            return [f"dynamically shared {found.where} holds a whole-GPU job and others: {who}"]
        share = sum(_share(j, found.memory_gib) for j in jobs if fractional(j))
        if share > 1 + TOLERANCE:
            return [f"dynamically shared {found.where} is oversubscribed: fractions take {share:.3f} ({who})"]
        return []
    return []  # vGPU and passthrough boards: judged per VM by vgpu_problems


def vgpu_problems(inv: Inventory) -> list[str]:
    """On a vGPU board every job runs in a VM that has a vGPU there, at most one job per vGPU; a passthrough GPU
    serves only jobs in its VM."""
    nodes = {n.name: n for n in inv.nodes}
    problems: list[str] = []
    for (node_name, index, _), jobs in sorted(_holders(inv).items(), key=lambda kv: str(kv[0])):
        node = nodes.get(node_name)
        gpu = next((g for g in node.gpus if g.index == index), None) if node is not None else None
        if gpu is None or gpu.mode not in ("vgpu", "passthrough"):
            continue
        if gpu.mode == "passthrough":
            strangers = [j.name for j in jobs if j.vm != gpu.vm]
            if strangers:
                problems.append(f"{node_name}/{index} is passed through to {gpu.vm} but held by {strangers}")
            continue
        vgpus = Counter(v.vm for v in gpu.vgpus or ())
        per_vm = Counter(j.vm for j in jobs)
        for vm, count in sorted(per_vm.items(), key=str):
            if count > vgpus.get(vm or "", 0):
                problems.append(f"{count} job(s) in VM {vm} hold {node_name}/{index}, where it has "
                                f"{vgpus.get(vm or '', 0)} vGPU(s)")
    return problems


def new_placement_problems(before: Inventory, after: Inventory) -> list[str]:
    """A running job on a cordoned, draining or down node holds only slots it held before this step."""
    held = {j.name: {(s.node, s.gpu, s.mig_start) for s in j.placement}
            for j in before.jobs if j.status == "running"}
    states = {n.name: n.state for n in after.nodes}
    fenced = {(n.name, g.index) for n in after.nodes for g in n.gpus if g.health is not None}
    problems = []
    for job in after.jobs:
        if job.status != "running":
            continue
        for slot in job.placement:
            if (slot.node, slot.gpu) in fenced and (slot.node, slot.gpu, slot.mig_start) not in held.get(job.name, ()):
                problems.append(f"job {job.name} was newly placed on {slot.node}/{slot.gpu}, fenced as unhealthy")
            state = states.get(slot.node)
            if state not in (None, "ready") and (slot.node, slot.gpu, slot.mig_start) not in held.get(job.name, ()):
                problems.append(f"job {job.name} was newly placed on {slot.node}/{slot.gpu}, which is {state}")
    return problems


def _vm_devices(inv: Inventory) -> dict[tuple[str, str], Counter[tuple[str, int | str, str]]]:
    """(node, VM) → what it holds: vGPUs by (GPU, profile), passthrough GPUs, its device group."""
    out: dict[tuple[str, str], Counter[tuple[str, int | str, str]]] = {}
    for node in inv.nodes:
        for vm in node.vms:
            held: Counter[tuple[str, int | str, str]] = Counter()
            if vm.device_group is not None:
                held[("device-group", vm.device_group, "")] += 1
            out[(node.name, vm.name)] = held
        for gpu in node.gpus:
            for v in gpu.vgpus or ():
                out.setdefault((node.name, v.vm), Counter())[("vgpu", gpu.index, v.profile)] += 1
            if gpu.mode == "passthrough" and gpu.vm is not None:
                out.setdefault((node.name, gpu.vm), Counter())[("passthrough", gpu.index, "")] += 1
    return out


def _explicitly_released(changes: Sequence[ch.Change], node: str, vm: str,
                         device: tuple[str, int | str, str]) -> int:
    """How many of this device the plan's own changes take from the VM (a whole node removed or restored takes
    them all)."""
    kind, where, profile = device
    count = 0
    for c in changes:
        if isinstance(c, ch.RemoveNode) and c.name == node:
            return 1 << 30
        if isinstance(c, ch.Restore) and c.kind == "node" and c.name == node:
            return 1 << 30
        if isinstance(c, ch.DetachVm) and c.node == node and c.vm == vm:
            everything = c.gpus is None and c.device_group is None
            if everything or (kind == "passthrough" and where in (c.gpus or ())) or (
                    kind == "device-group" and where == c.device_group):
                return 1 << 30
        if (isinstance(c, ch.RemoveVgpu) and kind == "vgpu" and (c.node, c.gpu, c.vm, c.profile)
                == (node, where, vm, profile)):
            count += 1
    return count


def vm_loss_problems(before: Inventory, after: Inventory, changes: Sequence[ch.Change]) -> list[str]:
    """No VM loses a vGPU, passthrough GPU or device group that the plan does not remove explicitly."""
    now = _vm_devices(after)
    problems = []
    for (node, vm), held in sorted(_vm_devices(before).items()):
        lost = held - now.get((node, vm), Counter())
        for device, count in sorted(lost.items(), key=str):
            if count > _explicitly_released(changes, node, vm, device):
                problems.append(f"VM {vm} on {node} lost {device[0]} {device[1]} {device[2]}".rstrip()
                                + " without a change that removes it")
    return problems


def export_problems(inv: Inventory) -> list[str]:
    """The state exports to an inventory that validates (references included) and reads back equal."""
    text = dump_inventory(inv)
    try:
        again = parse_inventory(text, "export")
    except InputError as bad:
        return [f"the exported inventory does not validate: {bad}"]
    if dump_inventory(again) != text:
        return ["the exported inventory does not read back equal"]
    return []


def state_problems(inv: Inventory) -> list[str]:
    return slice_problems(inv) + vgpu_problems(inv) + export_problems(inv)


def step_problems(before: Inventory, after: Inventory, changes: Sequence[ch.Change]) -> list[str]:
    return new_placement_problems(before, after) + vm_loss_problems(before, after, changes)
