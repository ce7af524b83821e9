"""Device-group rules (DESIGN §2, §5 Device groups; gpu-facts §1.8, §4.6): sizes from the catalog, one NVLink
domain per group, no overlaps, a VM holds a whole group, and what NVSwitch systems take on vSphere."""

from __future__ import annotations

from collections.abc import Iterable

from gpuadmin.catalog import Board, FmPartition, get_catalog
from gpuadmin.engine.rules.base import Violation, node_target, rule
from gpuadmin.engine.rules.nodes import model_of, names
from gpuadmin.engine.rules.vgpu import esxi_version, vgpu_types
from gpuadmin.engine.state import View
from gpuadmin.model import Node


def nvlink_domain(node: Node, index: int) -> int:
    """The NVLink domain of a GPU: one per NVSwitch board or all-to-all mesh, one per bridged pair (0,1),(2,3)…,
    else the GPU (`none`, and `unknown`: no NVLink is promised where the topology could not tell)."""
    kind = node.nvlink_kind
    if kind in ("nvswitch", "mesh"):
        return 0
    if kind == "pairs":
        return index // 2
    return index


@rule("group.size", "A device group has one of the catalog's sizes (2, 4 or 8 GPUs).", "node")
def size(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None:
        return
    sizes = get_catalog().vsphere.device_group_sizes
    for group in node.device_groups:
        count = len(set(group.gpus))
        if count not in sizes or count != len(group.gpus):
            dup = " (a GPU is listed twice)" if count != len(group.gpus) else ""
            yield Violation(
                "group.size",
                node_target(name),
                f"device group {group.name} on {name} has {len(group.gpus)} GPUs{dup}; a group has "
                f"{' or '.join(map(str, sizes))}",
                f"make the group {' or '.join(map(str, sizes))} distinct GPUs",
            )


@rule(
    "group.esxi-version",
    "Device groups need the catalog's ESXi version (8.0; on NVSwitch boards 8.0U1).",
    "node",
)
def esxi(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    version = esxi_version(node) if node is not None else None
    if node is None or version is None or not node.device_groups:
        return
    limits = get_catalog().vsphere
    nvswitch = node.nvlink_kind == "nvswitch"
    if not limits.allows_device_groups(version, nvswitch=nvswitch):
        since = limits.nvswitch_device_groups_since if nvswitch else limits.device_groups_since
        board = "an NVSwitch board" if nvswitch else "a host"
        yield Violation(
            "group.esxi-version",
            node_target(name),
            f"{name} runs ESXi {version}; device groups on {board} need ESXi ≥ {since}",
            f"upgrade {name} to ESXi {since}+, or remove its device groups",
        )


@rule(
    "group.one-nvlink-domain",
    "All GPUs of a device group are in one NVLink domain (NVSwitch board or bridged pair).",
    "node",
)
def one_nvlink_domain(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None:
        return
    for group in node.device_groups:
        domains = {nvlink_domain(node, i) for i in group.gpus}
        if len(domains) > 1:
            yield Violation(
                "group.one-nvlink-domain",
                node_target(name),
                f"device group {group.name} on {name} spans {len(domains)} NVLink domains "
                f"(GPUs {names(map(str, group.gpus))}; {name} has nvlink: {node.nvlink_kind})",
                f"set {name}'s nvlink (nvswitch, mesh, pairs or none) once its board is known"
                if node.nvlink_kind == "unknown"
                else "group GPUs that share an NVSwitch board, an NVLink mesh or one NVLink bridge",
            )


def nvswitch_board(node: Node) -> Board | None:
    """The catalog's NVSwitch board a node is: its GPU model and count on one; None where none fits."""
    models = {gpu.model for gpu in node.gpus}
    for board in get_catalog().boards.values():
        if board.nvlink == "nvswitch" and board.gpus == len(node.gpus) and models <= set(board.gpu_models):
            return board
    return None


def _module_of(node: Node) -> tuple[dict[int, int], bool]:
    """GPU index → module id, and whether the ids are the node's own. Fabric Manager names a board's GPUs
    by module id (the slot, from 1); where the inventory gives none for some GPU, index i is taken as
    module i + 1, which a real board need not follow (an HGX H100 has GPU 0 in module 7)."""
    if node.gpus and all(g.module_id is not None for g in node.gpus):
        return {g.index: g.module_id for g in node.gpus if g.module_id is not None}, True
    return {g.index: g.index + 1 for g in node.gpus}, False


def _indexes(partition: FmPartition, index_of: dict[int, int]) -> tuple[int, ...]:
    return tuple(sorted(index_of[m] for m in partition.gpus if m in index_of))


@rule(
    "group.fm-partition",
    "On an NVSwitch board, a device group is one of the GPU partitions Fabric Manager offers there.",
    "node",
)
def fm_partition(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or not node.device_groups or node.nvlink_kind != "nvswitch" or node.platform != "vsphere":
        return  # device groups elsewhere are change.fields' to refuse, not a partition question
    board = nvswitch_board(node)
    if board is None or not board.fm_partitions:
        return  # no documented partitions for this board: nothing to hold the group to
    module_of, own_ids = _module_of(node)
    index_of = {module: index for index, module in module_of.items()}
    allowed = {frozenset(_indexes(p, index_of)): p.id for p in board.fm_partitions}
    numbering = ("by the GPUs' module ids" if own_ids
                 else "taking GPU index i as module i+1: set each GPU's module_id (nvidia-smi -q 'Module ID') "
                      "where the board differs")
    for group in node.device_groups:
        if frozenset(group.gpus) in allowed or len(set(group.gpus)) != len(group.gpus):
            continue  # a duplicate is group.size's to report
        same_size = [_indexes(p, index_of) for p in board.fm_partitions if len(p.gpus) == len(group.gpus)]
        offered = ", ".join("{" + ",".join(map(str, s)) + "}" for s in same_size) or "none"
        yield Violation(
            "group.fm-partition",
            node_target(name),
            f"device group {group.name} on {name} (GPUs {names(map(str, sorted(group.gpus)))}) is no Fabric "
            f"Manager partition of the {board.name} board; its {len(group.gpus)}-GPU partitions are {offered} "
            f"(GPU indexes, {numbering})",
            "make the group one of those sets: Fabric Manager trains NVLinks only inside an activated partition",
        )


@rule("group.no-overlap", "Device groups of a node do not share GPUs.", "node")
def no_overlap(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None:
        return
    owner: dict[int, str] = {}
    for group in node.device_groups:
        for index in dict.fromkeys(group.gpus):
            first = owner.get(index)
            if first is not None:
                yield Violation(
                    "group.no-overlap",
                    node_target(name),
                    f"GPU {index} on {name} is in device groups {first} and {group.name}",
                    "give each GPU to one group at most",
                )
            else:
                owner[index] = group.name


@rule(
    "group.vm-holds-whole-group",
    "A device group is held by at most one VM, whole, and its GPUs serve no one else.",
    "node",
)
def vm_holds_whole_group(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or not node.device_groups:
        return
    target = node_target(name)
    holders: dict[str, list[str]] = {}
    for vm in node.vms:
        if vm.device_group is not None:
            holders.setdefault(vm.device_group, []).append(vm.name)
    for group in node.device_groups:
        vms = holders.get(group.name, [])
        if len(vms) > 1:
            yield Violation(
                "group.vm-holds-whole-group",
                target,
                f"device group {group.name} on {name} is attached to {len(vms)} VMs: {names(vms)}",
                "attach a group to one VM",
            )
        holder = vms[0] if len(vms) == 1 else None
        for index in group.gpus:
            gpu = node.gpu(index)
            if gpu is None:
                yield Violation(
                    "group.vm-holds-whole-group",
                    target,
                    f"device group {group.name} on {name} names GPU {index}, which {name} does not have",
                    "fix the group's GPU list",
                )
                continue
            users = {v.vm for v in gpu.vgpus or ()} if gpu.mode == "vgpu" else set()
            if gpu.mode == "passthrough" and gpu.vm is not None:
                users.add(gpu.vm)
            strangers = sorted(users - ({holder} if holder else set()))
            if strangers:
                whose = f"held by VM {holder}" if holder else "not attached to a VM"
                yield Violation(
                    "group.vm-holds-whole-group",
                    target,
                    f"GPU {index} of device group {group.name} on {name} ({whose}) serves {names(strangers)}",
                    "a group's GPUs serve only the VM that holds the group; "
                    "detach them or move those VMs to GPUs outside the group",
                )
            elif holder is not None and holder not in users:
                yield Violation(
                    "group.vm-holds-whole-group",
                    target,
                    f"VM {holder} holds device group {group.name} on {name} but not its GPU {index} "
                    f"(mode {gpu.mode})",
                    "a VM holds every GPU of its group: give it a vGPU on each",
                )


@rule(
    "group.nvswitch-vgpu",
    "NVSwitch systems on vSphere take time-sliced vGPUs only: no MIG-backed vGPUs, no plain passthrough.",
    "node",
)
def nvswitch_vgpu(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or node.platform != "vsphere" or node.nvlink_kind != "nvswitch":
        return
    allowed = get_catalog().vsphere.nvswitch
    target = node_target(name)
    for gpu in node.gpus:
        if gpu.mode == "passthrough" and not allowed.plain_passthrough:
            yield Violation(
                "group.nvswitch-vgpu",
                target,
                f"GPU {gpu.index} on {name} is in plain passthrough, which vSphere does not support on "
                "NVSwitch systems",
                "present the GPUs through a device group of time-sliced vGPUs",
            )
        types = vgpu_types(gpu, model_of(gpu))
        backed = [t.name for _, t in types if t.mig_backed]
        if backed and not allowed.mig_backed_vgpu:
            yield Violation(
                "group.nvswitch-vgpu",
                target,
                f"GPU {gpu.index} on {name} has MIG-backed vGPUs ({names(backed)}), which NVSwitch "
                "systems do not support",
                "use time-sliced vGPU types on NVSwitch boards",
            )
        if gpu.mode == "mig" and not allowed.mig_backed_vgpu:
            yield Violation(
                "group.nvswitch-vgpu",
                target,
                f"GPU {gpu.index} on {name} is in MIG mode; an NVSwitch vSphere host serves only "
                "time-sliced vGPUs",
                "set the GPU to vgpu mode with time-sliced types",
            )
