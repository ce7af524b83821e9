"""vSphere rules (DESIGN §5 vSphere limits, gpu-facts §4.5): VM hardware versions the host runs, passthrough
devices per VM by ESXi and hardware version, and VM references that hold together."""

from __future__ import annotations

from collections.abc import Iterable

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.rules.base import Violation, node_target, rule
from gpuadmin.engine.rules.nodes import names
from gpuadmin.engine.rules.vgpu import esxi_version
from gpuadmin.engine.state import View
from gpuadmin.model import Node, Vm


def passthrough_gpus(node: Node, vm: Vm) -> list[int]:
    """GPU indexes passed through to `vm`: listed by it, held by it in passthrough mode, or in its group."""
    held = set(vm.gpus or ())
    held |= {g.index for g in node.gpus if g.mode == "passthrough" and g.vm == vm.name}
    if vm.device_group is not None:
        for group in node.device_groups:
            if group.name == vm.device_group:
                held |= set(group.gpus)
    return sorted(held)


def vm_gpus(node: Node, vm: Vm) -> list[int]:
    """The GPUs a job inside `vm` may hold: its passthrough GPUs and device group, and GPUs with its vGPUs."""
    held = set(passthrough_gpus(node, vm))
    held |= {g.index for g in node.gpus if any(v.vm == vm.name for v in g.vgpus or ())}
    return sorted(held)


def vm_holders(node: Node) -> dict[int, str]:
    """GPU index → the VM holding it, for every GPU some VM on the host holds (the first VM where several
    share a GPU through vGPUs): GPUs a job outside that VM never lands on."""
    out: dict[int, str] = {}
    for vm in node.vms:
        for index in vm_gpus(node, vm):
            out.setdefault(index, vm.name)
    return out


@rule(
    "vsphere.hardware-version", "A VM's hardware version is at most the highest its ESXi host runs.", "node"
)
def hardware_version(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    version = esxi_version(node) if node is not None else None
    if node is None or version is None or not node.vms:
        return
    try:
        top = get_catalog().vsphere.max_hardware_version(version)
    except ValueError as err:
        yield Violation(
            "vsphere.hardware-version",
            node_target(name),
            f"node {name}: {err}",
            "run a supported ESXi release",
        )
        return
    for vm in node.vms:
        if vm.hardware_version > top:
            yield Violation(
                "vsphere.hardware-version",
                node_target(name),
                f"VM {vm.name} on {name} has hardware version {vm.hardware_version}; ESXi {version} "
                f"runs at most {top}",
                f"use hardware version ≤ {top}, or upgrade the host",
            )


@rule(
    "vsphere.passthrough-limit",
    "A VM has at most the passthrough devices its ESXi version and hardware version allow (16/32/64/128).",
    "node",
)
def passthrough_limit(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    version = esxi_version(node) if node is not None else None
    if node is None or version is None:
        return
    limits = get_catalog().vsphere
    for vm in node.vms:
        held = passthrough_gpus(node, vm)
        if not held:
            continue
        try:
            limit = limits.passthrough_devices_per_vm(version, vm.hardware_version)
        except ValueError as err:
            yield Violation(
                "vsphere.passthrough-limit",
                node_target(name),
                f"VM {vm.name} on {name} has {len(held)} passthrough device(s), and {err}",
                "raise the VM's hardware version",
            )
            continue
        if len(held) > limit:
            yield Violation(
                "vsphere.passthrough-limit",
                node_target(name),
                f"VM {vm.name} on {name} has {len(held)} passthrough devices, at most {limit} on "
                f"ESXi {version} with hardware version {vm.hardware_version}",
                "detach devices, or raise the ESXi and hardware versions (128 from 8.0U2 with HW 21)",
            )


@rule(
    "vsphere.vm-references",
    "VMs, their passthrough GPUs, device groups and vGPUs name each other consistently.",
    "node",
)
def vm_references(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or node.platform != "vsphere":
        return
    vms = {vm.name: vm for vm in node.vms}
    groups = {g.name for g in node.device_groups}
    target = node_target(name)
    for gpu in node.gpus:
        for vgpu in gpu.vgpus or ():
            if vgpu.vm not in vms:
                yield Violation(
                    "vsphere.vm-references",
                    target,
                    f"GPU {gpu.index} on {name} has a vGPU ({vgpu.profile}) for VM {vgpu.vm}, which is "
                    "not defined on the node",
                    "define the VM, or remove the vGPU",
                )
        if gpu.mode == "passthrough" and gpu.vm is not None:
            vm = vms.get(gpu.vm)
            if vm is None:
                yield Violation(
                    "vsphere.vm-references",
                    target,
                    f"GPU {gpu.index} on {name} is passed through to VM {gpu.vm}, which is not defined",
                    "define the VM, or detach the GPU",
                )
            elif gpu.index not in (vm.gpus or ()):
                yield Violation(
                    "vsphere.vm-references",
                    target,
                    f"GPU {gpu.index} on {name} is passed through to VM {vm.name}, which does not list it",
                    "attach it with attach-vm so both sides agree",
                )
    for vm in node.vms:
        if vm.device_group is not None and vm.device_group not in groups:
            yield Violation(
                "vsphere.vm-references",
                target,
                f"VM {vm.name} on {name} holds device group {vm.device_group}, which does not exist",
                f"groups on {name}: {names(sorted(groups)) or 'none'}",
            )
        for index in vm.gpus or ():
            listed = node.gpu(index)
            if listed is None or listed.mode != "passthrough" or listed.vm != vm.name:
                state = (
                    "does not exist"
                    if listed is None
                    else (
                        f"is in {listed.mode} mode"
                        if listed.mode != "passthrough"
                        else f"is passed through to {listed.vm}"
                    )
                )
                yield Violation(
                    "vsphere.vm-references",
                    target,
                    f"VM {vm.name} on {name} lists passthrough GPU {index}, which {state}",
                    "attach the GPU with attach-vm (it sets the GPU to passthrough)",
                )


@rule(
    "vsphere.evacuation-room",
    "A host enters maintenance mode only with every VM given a destination: a VM with nowhere to go is named "
    "with each host's reasons (the rules' own).",
    "node",
)
def evacuation_room(view: View, name: str) -> Iterable[Violation]:
    for move in view.evacuations.get(name, ()):
        if move.target is None:
            yield Violation(
                "vsphere.evacuation-room",
                node_target(name),
                f"VM {move.vm} on {name} has nowhere to go: {'; '.join(move.why_not)}",
                "free room on a host that accepts it (or add one), power the VM off yourself, or enter "
                "maintenance mode later",
            )


@rule(
    "vsphere.stun-time",
    "A vMotion's estimated stun time (VMware's table, at the slower host's vMotion link) is at most what the VM "
    "tolerates, or else its vSphere cluster's default; with a tolerance set, an unknown link speed is refused.",
    "node",
)
def stun_time(view: View, name: str) -> Iterable[Violation]:
    for planned in view.evacuations.values():
        for move in planned:
            if move.target != name or move.how != "vmotion" or move.tolerated_stun_s is None:
                continue
            if move.stun is None:
                yield Violation(
                    "vsphere.stun-time",
                    node_target(name),
                    f"VM {move.vm}'s stun time moving {move.source} → {name} cannot be estimated: a host has "
                    f"no vmotion_gbps, and the VM tolerates {move.tolerated_stun_s:g} s",
                    "give both hosts 'vsphere: {vmotion_gbps: N}' in the inventory",
                )
            elif move.stun.seconds > move.tolerated_stun_s:
                yield Violation(
                    "vsphere.stun-time",
                    node_target(name),
                    f"VM {move.vm}'s vMotion {move.source} → {name} would stun it about {move.stun.seconds:.1f} s "
                    f"({move.framebuffer_gib:g} GiB of frame buffer at {move.link_gbps:g} Gbit/s, "
                    f"{move.stun.confidence}); it tolerates {move.tolerated_stun_s:g} s",
                    "a faster vMotion link, a higher tolerated_stun_s for the VM, or power it off for the move",
                )
