"""Independent physical-validity checks for sample and generated inventories.

These checks deliberately do not use `gpuadmin.catalog` or `gpuadmin.engine`: they restate the facts
of shared/reference/gpu-facts.md (§1.4 MIG geometry, §4 vGPU and vSphere) so the samples are held to
the hardware, not to whatever the engine currently believes. Each check returns a list of
human-readable problems.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from gpuadmin.model import Gpu, Inventory, Job, Node, Slot, Vm

# --------------------------------------------------------------------------------------------- MIG geometry


@dataclass(frozen=True)
class Profile:
    compute: int  # compute (SM) slices
    size: int  # memory slices occupied = placement size
    starts: tuple[int, ...]
    max_instances: int


def _eight_slice(one: str, one_me: str, one_double: str, two: str, three: str, four: str, seven: str) -> dict:
    return {
        one: Profile(1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        one_me: Profile(1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        one_double: Profile(1, 2, (0, 2, 4, 6), 4),
        two: Profile(2, 2, (0, 2, 4), 3),
        three: Profile(3, 4, (0, 4), 2),
        four: Profile(4, 4, (0,), 1),
        seven: Profile(7, 8, (0,), 1),
    }


_A100_40 = _eight_slice("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
_80GB = _eight_slice("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
_H100_94 = _eight_slice("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb")
_H200 = _eight_slice("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")
_B200 = _eight_slice("1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb")
_A30 = {
    "1g.6gb": Profile(1, 1, (0, 1, 2, 3), 4),
    "1g.6gb+me": Profile(1, 1, (0, 1, 2, 3), 1),
    "2g.12gb": Profile(2, 2, (0, 2), 2),
    "2g.12gb+me": Profile(2, 2, (0, 2), 1),
    "4g.24gb": Profile(4, 4, (0,), 1),
}

MIG_PROFILES: dict[str, dict[str, Profile]] = {
    "A100-SXM4-40GB": _A100_40,
    "A100-PCIE-40GB": _A100_40,
    "A100-SXM4-80GB": _80GB,
    "A100-PCIE-80GB": _80GB,
    "H100-SXM5-80GB": _80GB,
    "H100-PCIE-80GB": _80GB,
    "H100-NVL-94GB": _H100_94,
    "H200-SXM5-141GB": _H200,
    "B200": _B200,
    "A30": _A30,
}
MEMORY_SLICES = {model: (4 if model == "A30" else 8) for model in MIG_PROFILES}
COMPUTE_SLICES = {model: (4 if model == "A30" else 7) for model in MIG_PROFILES}

MEMORY_GB = {
    "A100-SXM4-40GB": 40,
    "A100-PCIE-40GB": 40,
    "A100-SXM4-80GB": 80,
    "A100-PCIE-80GB": 80,
    "A30": 24,
    "A40": 48,
    "A10": 24,
    "L40S": 48,
    "H100-SXM5-80GB": 80,
    "H100-PCIE-80GB": 80,
    "H100-NVL-94GB": 94,
    "H200-SXM5-141GB": 141,
    "B200": 180,
}
MODELS = set(MEMORY_GB)
# device totals in MiB (real nvidia-smi figures where known): what a `gpu_memory_gib` request is a share of
MEMORY_MIB = {model: gb * 1024 for model, gb in MEMORY_GB.items()} | {
    "H100-SXM5-80GB": 81559,
    "H200-SXM5-141GB": 143771,
}

# ------------------------------------------------------------------------------------------------ vGPU menu

# board prefix and the time-sliced C-series frame buffers (GB) it offers (gpu-facts §4.2, §4.3).
VGPU_MENU: dict[str, tuple[str, tuple[int, ...]]] = {
    "A100-PCIE-40GB": ("A100", (40, 20, 10, 8, 5, 4)),
    "A100-SXM4-40GB": ("A100X", (40, 20, 10, 8, 5, 4)),
    "A100-PCIE-80GB": ("A100D", (80, 40, 20, 16, 10, 8, 4)),
    "A100-SXM4-80GB": ("A100DX", (80, 40, 20, 16, 10, 8, 4)),
    "A30": ("A30", (24, 12, 8, 6, 4)),
    "A40": ("A40", (48, 24, 16, 12, 8, 6, 4)),
    "L40S": ("L40S", (48, 24, 16, 12, 8, 6, 4)),
    "H100-PCIE-80GB": ("H100", (80, 40, 20, 16, 10, 8, 5, 4)),
    "H100-SXM5-80GB": ("H100XM", (80, 40, 20, 16, 10, 8, 5, 4)),
}
_VGPU_RE = re.compile(r"^(?P<board>[A-Z0-9]+)-(?P<fb>[0-9]+)C$")


def esxi_max_hw(version: str) -> int:
    """Highest VM hardware version an ESXi release runs (gpu-facts §4.5)."""
    m = re.fullmatch(r"([0-9]+)\.([0-9]+)(?:U([0-9]+))?", version)
    assert m, version
    major, update = int(m[1]), int(m[3] or 0)
    if major >= 9:
        return 22
    if major == 8:
        return 21 if update >= 2 else 20
    if major == 7:
        return {0: 17, 1: 18}.get(update, 19)
    return 15


def _version_key(version: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"([0-9]+)\.([0-9]+)(?:U([0-9]+))?", version)
    assert m, version
    return int(m[1]), int(m[2]), int(m[3] or 0)


# ---------------------------------------------------------------------------------------------- the checks


def check_gpus(inv: Inventory) -> list[str]:
    problems: list[str] = []
    for node in inv.nodes:
        indices = [g.index for g in node.gpus]
        if len(set(indices)) != len(indices):
            problems.append(f"{node.name}: duplicate GPU indices {indices}")
        modes_sharing = {g.sharing or "time-slicing" for g in node.gpus if g.mode == "time-sliced"}
        if len(modes_sharing) > 1:
            problems.append(f"{node.name}: MPS and time-slicing mixed on one node")
        for gpu in node.gpus:
            where = f"{node.name}/gpu{gpu.index}"
            if gpu.model not in MODELS:
                problems.append(f"{where}: unknown model {gpu.model}")
                continue
            if gpu.mode == "mig":
                problems += check_mig_layout(where, gpu)
            if gpu.mode == "time-sliced" and (gpu.replicas or 0) < 2:
                problems.append(f"{where}: time-sliced with replicas {gpu.replicas}")
            if gpu.mode in ("vgpu", "passthrough") and node.platform != "vsphere":
                problems.append(f"{where}: {gpu.mode} outside vSphere")
    return problems


def check_mig_layout(where: str, gpu: Gpu) -> list[str]:
    problems: list[str] = []
    profiles = MIG_PROFILES.get(gpu.model)
    if profiles is None:
        return [f"{where}: {gpu.model} does not support MIG"]
    if not gpu.mig:
        return [f"{where}: MIG enabled with no instances"]
    used: set[int] = set()
    compute = 0
    per_profile: Counter[str] = Counter()
    for inst in gpu.mig:
        prof = profiles.get(inst.profile)
        if prof is None:
            problems.append(f"{where}: profile {inst.profile} does not exist on {gpu.model}")
            continue
        if inst.start is None:
            problems.append(f"{where}: {inst.profile} has no start (samples carry explicit starts)")
            continue
        if inst.start not in prof.starts:
            problems.append(f"{where}: {inst.profile} cannot start at {inst.start} (legal {prof.starts})")
        span = set(range(inst.start, inst.start + prof.size))
        if span & used:
            problems.append(f"{where}: {inst.profile}@{inst.start} overlaps slices {sorted(span & used)}")
        if max(span) >= MEMORY_SLICES[gpu.model]:
            problems.append(f"{where}: {inst.profile}@{inst.start} runs past the last memory slice")
        used |= span
        compute += prof.compute
        per_profile[inst.profile] += 1
    if compute > COMPUTE_SLICES[gpu.model]:
        problems.append(f"{where}: {compute} compute slices > {COMPUTE_SLICES[gpu.model]}")
    for name, count in per_profile.items():
        if count > profiles[name].max_instances:
            problems.append(f"{where}: {count}× {name} > max {profiles[name].max_instances}")
    if sum(c for n, c in per_profile.items() if "+me" in n) > 1:
        problems.append(f"{where}: more than one +me instance")
    return problems


def gpu_units(job: Job, gpu: Gpu) -> float:
    """What one slot of `job` on `gpu` costs against quota, in GPUs (conservative for MIG)."""
    req = job.request
    if req.gpus is not None:
        return 1.0
    if req.mig is not None:
        prof = MIG_PROFILES[gpu.model][req.mig]
        return max(prof.compute / COMPUTE_SLICES[gpu.model], prof.size / MEMORY_SLICES[gpu.model])
    if req.fraction is not None:
        return req.fraction
    assert req.gpu_memory_gib is not None
    return req.gpu_memory_gib * 1024 / MEMORY_MIB[gpu.model]


@dataclass
class _Holdings:
    """What the running jobs hold, gathered slot by slot, then checked as a whole."""

    whole: dict[tuple[str, int], str] = field(default_factory=dict)
    mig: dict[tuple[str, int, int], str] = field(default_factory=dict)
    shared: dict[tuple[str, int], list[tuple[str, float]]] = field(default_factory=lambda: defaultdict(list))
    # dynamic sharing (Run:ai fractions on a full GPU): the share of the memory left after the reserve
    dynamic: dict[tuple[str, int], list[tuple[str, float]]] = field(default_factory=lambda: defaultdict(list))
    used: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    used_nonpreemptible: dict[str, float] = field(default_factory=lambda: defaultdict(float))


def check_jobs(inv: Inventory) -> list[str]:
    problems: list[str] = []
    nodes: dict[str, Node] = {n.name: n for n in inv.nodes}
    queues = {q.name: q for q in inv.queues}
    names = [j.name for j in inv.jobs]
    if len(set(names)) != len(names):
        problems.append("duplicate job names")
    held = _Holdings()
    for job in inv.jobs:
        if job.queue not in queues:
            problems.append(f"{job.name}: unknown queue {job.queue}")
        if job.status != "running":
            continue
        problems += _shape_problems(job, nodes)
        for slot in job.placement:
            problems += _slot_problems(job, slot, nodes, held)
    problems += _sharing_problems(nodes, held)
    for name, q in queues.items():
        if q.limit is not None and q.limit.gpus is not None and held.used[name] > q.limit.gpus + 1e-9:
            problems.append(f"queue {name}: running {held.used[name]:.2f} GPUs > limit {q.limit.gpus}")
        if q.quota.gpus is not None and held.used_nonpreemptible[name] > q.quota.gpus + 1e-9:
            problems.append(f"queue {name}: non-preemptible {held.used_nonpreemptible[name]:.2f} > quota")
        limit, quota = (q.limit.gpus if q.limit else None), q.quota.gpus
        if limit is not None and quota is not None and limit < quota:
            problems.append(f"queue {name}: limit below quota")
    return problems


def _shape_problems(job: Job, nodes: dict[str, Node]) -> list[str]:
    """The running job's slots against its request's shape: counts per node, one RDMA network, NVLink."""
    problems: list[str] = []
    req, slots = job.request, job.placement
    slot_nodes = [s.node for s in slots]
    if req.gpus is not None:
        if len(slots) != req.gpus * req.nodes:
            problems.append(f"{job.name}: holds {len(slots)} slots, wants {req.gpus}×{req.nodes}")
        per_node = Counter(slot_nodes)
        if len(per_node) != req.nodes or set(per_node.values()) != {req.gpus}:
            problems.append(f"{job.name}: slots per node {dict(per_node)} do not match the gang shape")
    elif len(slots) != 1:
        problems.append(f"{job.name}: a {req.kind} request holds exactly one slot, has {len(slots)}")
    if req.rdma or req.nodes > 1:
        nets = {nodes[n].rdma.network if n in nodes and nodes[n].rdma else None for n in slot_nodes}
        if None in nets or len(nets) != 1:
            problems.append(f"{job.name}: RDMA gang spans networks {nets}")
    if req.nvlink:
        for n in set(slot_nodes):
            if n in nodes and nodes[n].nvlink != "nvswitch" and Counter(slot_nodes)[n] > 1:
                problems.append(f"{job.name}: NVLink job on {n} without an NVSwitch domain")
    return problems


def _slot_problems(job: Job, slot: Slot, nodes: dict[str, Node], held: _Holdings) -> list[str]:
    """One slot of a running job: the GPU exists and may take the job; what it holds is recorded in `held`
    (and counted against its queue) unless the slot is not a valid hold at all."""
    req = job.request
    where = f"{job.name} -> {slot.node}/gpu{slot.gpu}"
    node = nodes.get(slot.node)
    gpu = node.gpu(slot.gpu) if node else None
    if node is None or gpu is None:
        return [f"{where}: no such GPU"]
    problems: list[str] = []
    if node.state in ("down",):
        problems.append(f"{where}: running on a down node")
    if req.model is not None and gpu.model != req.model:
        problems.append(f"{where}: model {gpu.model} != requested {req.model}")
    counted = True
    if job.vm is not None:
        problems += _vm_slot_problems(job.vm, node, gpu, where)
    elif req.gpus is not None:
        if gpu.mode != "full" or slot.mig_start is not None:
            problems.append(f"{where}: whole-GPU job on a {gpu.mode} GPU")
        if (slot.node, slot.gpu) in held.whole:
            problems.append(f"{where}: double-booked with {held.whole[(slot.node, slot.gpu)]}")
        held.whole[(slot.node, slot.gpu)] = job.name
    elif req.mig is not None:
        counted = _hold_mig(job, slot, gpu, where, held, problems)
    else:
        counted = _hold_fraction(job, slot, node, gpu, where, held, problems)
    if counted:
        units = gpu_units(job, gpu)
        held.used[job.queue] += units
        if not job.preemptible:
            held.used_nonpreemptible[job.queue] += units
    return problems


def _vm_slot_problems(vm_name: str, node: Node, gpu: Gpu, where: str) -> list[str]:
    """A job inside a VM runs on what the VM holds: its vGPU on the GPU, or the GPU passed through."""
    vm = next((v for v in node.vms if v.name == vm_name), None)
    groups = {g.name: g.gpus for g in node.device_groups}
    held = vm is not None and (
        any(v.vm == vm.name for v in gpu.vgpus or [])
        or gpu.vm == vm.name
        or gpu.index in (vm.gpus or [])
        or gpu.index in groups.get(vm.device_group or "", [])
    )
    return [] if held else [f"{where}: VM {vm_name} does not hold this GPU"]


def _hold_mig(job: Job, slot: Slot, gpu: Gpu, where: str, held: _Holdings, problems: list[str]) -> bool:
    """Records the MIG instance the slot holds; False (nothing held) when the GPU has no instance there."""
    inst = [m for m in gpu.mig or [] if m.start == slot.mig_start]
    if gpu.mode != "mig" or not inst:
        problems.append(f"{where}: no MIG instance at start {slot.mig_start}")
        return False
    if inst[0].profile != job.request.mig:
        problems.append(f"{where}: instance is {inst[0].profile}, job wants {job.request.mig}")
    key = (slot.node, slot.gpu, slot.mig_start or 0)
    if key in held.mig:
        problems.append(f"{where}: MIG instance double-booked with {held.mig[key]}")
    held.mig[key] = job.name
    return True


def _hold_fraction(
    job: Job, slot: Slot, node: Node, gpu: Gpu, where: str, held: _Holdings, problems: list[str]
) -> bool:
    """Records a fractional job's share: dynamic on a full GPU of a sharing node, else a time-sliced replica;
    False (nothing held) on a GPU that takes no fractions."""
    req = job.request
    if job.isolation == "exclusive":
        problems.append(f"{where}: exclusive job on a shared replica")
    if node.sharing is not None and gpu.mode == "full" and slot.mig_start is None:
        usable_mib = MEMORY_MIB[gpu.model] - node.sharing.reserved_gib * 1024
        share = req.fraction if req.fraction is not None else (req.gpu_memory_gib or 0) * 1024 / usable_mib
        held.dynamic[(slot.node, slot.gpu)].append((job.name, share))
    elif gpu.mode != "time-sliced" or slot.mig_start is not None:
        problems.append(f"{where}: fractional job on a {gpu.mode} GPU")
        return False
    else:
        held.shared[(slot.node, slot.gpu)].append((job.name, gpu_units(job, gpu)))
    return True


def _sharing_problems(nodes: dict[str, Node], held: _Holdings) -> list[str]:
    """The sharers of each GPU together: replicas, fractions summing past one, whole jobs beside fractions."""
    problems: list[str] = []
    for (node_name, index), holders in held.shared.items():
        gpu = nodes[node_name].gpu(index)
        assert gpu is not None and gpu.replicas is not None
        if len(holders) > gpu.replicas:
            problems.append(f"{node_name}/gpu{index}: {len(holders)} sharers > {gpu.replicas} replicas")
        if sum(f for _, f in holders) > 1.0 + 1e-9:
            problems.append(f"{node_name}/gpu{index}: fractions sum to {sum(f for _, f in holders)}")
    for key, holders in held.dynamic.items():
        if key in held.whole:
            problems.append(f"{key[0]}/gpu{key[1]}: whole-GPU job {held.whole[key]} beside fractions")
        if sum(f for _, f in holders) > 1.0 + 1e-9:
            problems.append(f"{key[0]}/gpu{key[1]}: dynamic fractions sum to {sum(f for _, f in holders)}")
    return problems


def check_vsphere(inv: Inventory) -> list[str]:
    problems: list[str] = []
    for node in inv.nodes:
        if node.platform != "vsphere":
            continue
        assert node.vsphere is not None
        version = node.vsphere.version
        problems += _vm_problems(node, version)
        problems += _device_group_problems(node, version)
        vms = {vm.name: vm for vm in node.vms}
        per_vm: dict[str, list[str]] = defaultdict(list)  # VM → the vGPU profiles it holds
        for gpu in node.gpus:
            problems += _vsphere_gpu_problems(node, gpu, vms, per_vm)
        problems += _vm_holding_problems(node)
        problems += _multi_vgpu_problems(node, per_vm)
        problems += _group_gpu_owner_problems(node)
    return problems


def _vm_problems(node: Node, version: str) -> list[str]:
    problems: list[str] = []
    if len({vm.name for vm in node.vms}) != len(node.vms):
        problems.append(f"{node.name}: duplicate VM names")
    max_hw = esxi_max_hw(version)
    for vm in node.vms:
        if vm.hardware_version > max_hw:
            problems.append(f"{node.name}/{vm.name}: HW {vm.hardware_version} > {max_hw} on ESXi {version}")
    return problems


def _device_group_problems(node: Node, version: str) -> list[str]:
    """Device groups: sizes, overlaps, NVSwitch needs, and at most one VM attached to each."""
    problems: list[str] = []
    if node.device_groups and _version_key(version) < (8, 0, 1) and node.nvlink == "nvswitch":
        problems.append(f"{node.name}: NVSwitch device groups need ESXi 8.0 U1+")
    seen: set[int] = set()
    for g in node.device_groups:
        if len(g.gpus) not in (2, 4, 8):
            problems.append(f"{node.name}/{g.name}: size {len(g.gpus)} not 2/4/8")
        if set(g.gpus) & seen:
            problems.append(f"{node.name}/{g.name}: overlaps another group")
        seen |= set(g.gpus)
        for i in g.gpus:
            if node.gpu(i) is None:
                problems.append(f"{node.name}/{g.name}: no GPU {i}")
        if node.nvlink != "nvswitch" and len(g.gpus) > 2:
            problems.append(f"{node.name}/{g.name}: >2 GPUs without an NVSwitch board")
    groups = {g.name for g in node.device_groups}
    holders: Counter[str] = Counter(vm.device_group for vm in node.vms if vm.device_group)
    for name, count in holders.items():
        if name not in groups:
            problems.append(f"{node.name}: VM holds unknown group {name}")
        elif count > 1:
            problems.append(f"{node.name}: group {name} attached to {count} VMs")
    return problems


def _vsphere_gpu_problems(node: Node, gpu: Gpu, vms: dict[str, Vm], per_vm: dict[str, list[str]]) -> list[str]:
    """One GPU of a vSphere host: its vGPUs (recorded per VM in `per_vm`), its passthrough holder, its mode."""
    where = f"{node.name}/gpu{gpu.index}"
    if gpu.mode == "vgpu":
        assert node.vsphere is not None
        return _vgpu_problems(where, gpu, node.vsphere.version, vms, per_vm)
    if gpu.mode == "passthrough":
        problems: list[str] = []
        if node.nvlink == "nvswitch":
            problems.append(f"{where}: plain passthrough on an NVSwitch system")
        vm = vms.get(gpu.vm or "")
        if vm is None or gpu.index not in (vm.gpus or []):
            problems.append(f"{where}: passthrough holder {gpu.vm} does not list this GPU")
        return problems
    return [] if gpu.mode in ("full",) else [f"{where}: mode {gpu.mode} on a vSphere host"]


def _vgpu_problems(
    where: str, gpu: Gpu, version: str, vms: dict[str, Vm], per_vm: dict[str, list[str]]
) -> list[str]:
    problems: list[str] = []
    menu = VGPU_MENU.get(gpu.model)
    sizes: set[int] = set()
    total = 0
    for v in gpu.vgpus or []:
        m = _VGPU_RE.match(v.profile)
        if menu is None or m is None or m["board"] != menu[0] or int(m["fb"]) not in menu[1]:
            problems.append(f"{where}: vGPU type {v.profile} not offered on {gpu.model}")
            continue
        if v.vm not in vms:
            problems.append(f"{where}: vGPU for unknown VM {v.vm}")
        sizes.add(int(m["fb"]))
        total += int(m["fb"])
        per_vm[v.vm].append(v.profile)
    if total > MEMORY_GB[gpu.model]:
        problems.append(f"{where}: vGPU frame buffers {total} GB > {MEMORY_GB[gpu.model]} GB")
    if len(sizes) > 1 and _version_key(version) < (8, 0, 3):
        problems.append(f"{where}: mixed vGPU sizes {sizes} before ESXi 8.0 U3")
    return problems


def _vm_holding_problems(node: Node) -> list[str]:
    """Each VM holds what it lists: its passthrough GPUs, and every GPU of its device group alone."""
    problems: list[str] = []
    groups = {g.name: g for g in node.device_groups}
    for vm in node.vms:
        for i in vm.gpus or []:
            gpu = node.gpu(i)
            if gpu is None or gpu.mode != "passthrough" or gpu.vm != vm.name:
                problems.append(f"{node.name}/{vm.name}: lists GPU {i} it does not hold")
        if vm.device_group and vm.device_group in groups:
            for i in groups[vm.device_group].gpus:
                gpu = node.gpu(i)
                owners = {v.vm for v in (gpu.vgpus or [])} if gpu else set()
                if gpu is None or gpu.mode != "vgpu" or owners != {vm.name}:
                    problems.append(f"{node.name}/{vm.name}: does not hold all of {vm.device_group}")
                elif gpu.vgpus and len(gpu.vgpus) != 1:
                    problems.append(f"{node.name}/{vm.name}: group GPU {i} is shared")
    return problems


def _multi_vgpu_problems(node: Node, per_vm: dict[str, list[str]]) -> list[str]:
    """A VM's several vGPUs: at most 8, of one board, and whole boards only before vSphere 8."""
    problems: list[str] = []
    assert node.vsphere is not None
    for vm_name, profiles in per_vm.items():
        if len(profiles) > 8:
            problems.append(f"{node.name}/{vm_name}: {len(profiles)} vGPUs > 8")
        boards = {p.rsplit("-", 1)[0] for p in profiles}
        if len(boards) > 1:
            problems.append(f"{node.name}/{vm_name}: vGPUs of several boards {boards}")
        if len(profiles) > 1 and _version_key(node.vsphere.version) < (8, 0, 0):
            full = f"{_board_full(node, vm_name)}"
            if any(p != full for p in profiles):
                problems.append(f"{node.name}/{vm_name}: fractional multi-vGPU before vSphere 8")
    return problems


def _group_gpu_owner_problems(node: Node) -> list[str]:
    """A GPU in a device group is either free or wholly with the group's VM."""
    problems: list[str] = []
    group_vm = {vm.device_group: vm.name for vm in node.vms if vm.device_group}
    for g in node.device_groups:
        for i in g.gpus:
            gpu = node.gpu(i)
            if gpu is None:
                continue
            owners = {v.vm for v in gpu.vgpus or []} | ({gpu.vm} if gpu.vm else set())
            if owners and owners != {group_vm.get(g.name)}:
                problems.append(f"{node.name}/{g.name}: GPU {i} used by {owners} outside the group VM")
    return problems


def _board_full(node: Node, vm_name: str) -> str:
    for gpu in node.gpus:
        for v in gpu.vgpus or []:
            if v.vm == vm_name:
                prefix, sizes = VGPU_MENU[gpu.model]
                return f"{prefix}-{max(sizes)}C"
    return ""


def check_all(inv: Inventory) -> list[str]:
    names = [n.name for n in inv.nodes]
    problems = [] if len(set(names)) == len(names) else ["duplicate node names"]
    qnames = [q.name for q in inv.queues]
    if len(set(qnames)) != len(qnames):
        problems.append("duplicate queue names")
    return problems + check_gpus(inv) + check_jobs(inv) + check_vsphere(inv)
