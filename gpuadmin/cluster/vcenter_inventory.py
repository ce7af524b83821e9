"""A vCenter snapshot as gpuadmin's inventory: each ESXi host a `platform: vsphere` node, its NVIDIA GPUs, and
the VMs that hold a GPU (a vGPU or a passthrough device) on it. Pure: nothing here talks to vCenter.

- A host's GPUs are its NVIDIA display and 3D controllers (`hardware.pciDevice`), indexed in PCI bus order (the
  driver's and nvidia-smi's order); the catalog model by PCI device id, else the device name as read, kept as
  not in the catalog with the graphics device's memory. NVSwitch chips (NVIDIA PCI bridges) make `nvlink:
  nvswitch`.
- A GPU enabled for DirectPath I/O (`config.pciPassthruInfo`) is `mode: passthrough`, held by the VM whose
  passthrough device names its PCI id; a `sharedDirect` graphics device (NVIDIA vGPU) is `mode: vgpu`, its
  `vgpus` the VMs the graphics device names (`config.graphicsInfo[].vm`, the running VMs on it) with their vGPU
  type as a profile (`grid_a40-12c` → `A40-12C`); any other is `full`.
- A VM with vGPU devices that no graphics device of its host names — ESXi names only the VMs that use a GPU, so a
  powered-off VM is in no list — has its vGPUs on no GPU here: `VcenterInventory.unplaced` says which, and the
  sync keeps the state's placement for them or reports them (`gpuadmin.service.cluster_sync`).
- A VM that holds no GPU device is passed over (counted). Its hardware version is `config.version`'s number, its
  power state vSphere's. The ESXi version `8.0.1` is `8.0U1`.
- The host's vMotion link speed (`vsphere.vmotion_gbps`) is its vMotion VMkernel NIC's slowest active uplink
  (`vcenter.vmotion_link`); a host where it cannot be read (no NIC enabled for vMotion, no uplink with a link, a
  speed beyond the model's bounds) has none, with a finding: never 0.
- Every name and value is hostile input: a host or VM that cannot be translated (a name with control characters
  or too long, no ESXi version, a hardware version that is not vmx-NN) is skipped with a finding, and the read
  goes on. A vGPU type the host does not offer is read as it is, with a finding.
- A VM's vendor device group (vSphere 8's `config.deviceGroups`, its member devices by `deviceGroupInfo`) is a
  device group of its host over the GPUs its member devices sit on: the passthrough members' PCI ids, and the GPUs
  whose graphics device names the VM for its vGPU members. It is named by its GPUs (`dg-4-5`; a sync keeps the
  state's name for it). Where that cannot be told — before vSphere 8, a VM that is off (ESXi names only running
  VMs on a GPU), a group name that is hostile, a VM with two groups or with vGPUs outside its group — the VM's
  group is not known (`VcenterInventory.groups_known` leaves it out) and a sync keeps the state's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from gpuadmin.adapters.kube_cluster import printable
from gpuadmin.catalog import get_catalog
from gpuadmin.catalog.entities import normalize_vgpu_type_name
from gpuadmin.cluster.read import Finding
from gpuadmin.cluster.vcenter import GraphicsDevice, HeldDeviceGroup, HostRead, VcenterSnapshot, VmRead
from gpuadmin.model import Inventory, Node
from gpuadmin.model.inventory import MAX_VMOTION_GBPS, DeviceGroup, Gpu, NotInCatalog, VGpu, Vm, VSphere

NAME_LIMIT = 80  # vCenter's own limit on an inventory object's name
GROUP_NAME_LIMIT = 253  # a vendor's device group name: the API gives no limit; gpuadmin's names hold 253
SHOWN = 80  # characters of a hostile name a finding shows
CLUSTER_LABEL = "vsphere.cluster"
_ESXI = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)$")
_HW = re.compile(r"^vmx-([0-9]{1,2})$")


@dataclass
class VcenterInventory:
    inventory: Inventory
    findings: list[Finding]
    other_vms: int = 0  # VMs holding no GPU, passed over
    # host name → the VMs on it whose device group (or none) vCenter told: a sync keeps the state's for the others
    groups_known: dict[str, frozenset[str]] = field(default_factory=dict)
    # host name → the VMs on it with vGPU devices that no graphics device names: VM name → (profile, vGPU count)
    unplaced: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)


@dataclass
class _Vms:
    """The VMs read, by moId: those kept (with a GPU device and a good name) and the findings on the way."""

    kept: dict[str, VmRead] = field(default_factory=dict)
    models: dict[str, Vm] = field(default_factory=dict)
    other: int = 0


def esxi_version(version: str | None) -> str | None:
    """vCenter's `8.0.1` as the inventory writes it (`8.0U1`; `8.0` for update 0), or None when it is not one."""
    match = _ESXI.match(version or "")
    if match is None:
        return None
    major, minor, update = match.groups()
    return f"{int(major)}.{int(minor)}" + (f"U{int(update)}" if int(update) else "")


def _name_problem(name: str, limit: int = NAME_LIMIT) -> str | None:
    if not name:
        return "no name"
    if len(name) > limit:
        return f"a name of {len(name)} characters (vCenter's limit is {limit})" if limit == NAME_LIMIT else \
            f"a name of {len(name)} characters (more than {limit})"
    if any(not c.isprintable() for c in name):
        return "a name with control characters"
    return None


def vcenter_inventory(snapshot: VcenterSnapshot, cluster: str) -> VcenterInventory:
    """The snapshot as an inventory named `cluster`, with the findings of making it."""
    findings: list[Finding] = []
    vms = _read_vms(snapshot, findings)
    by_host: dict[str | None, dict[str, VmRead]] = {}
    for moid, vm in vms.kept.items():
        by_host.setdefault(vm.host, {})[moid] = vm
    nodes: list[Node] = []
    known: dict[str, frozenset[str]] = {}
    unplaced: dict[str, dict[str, tuple[str, int]]] = {}
    for host in sorted(snapshot.hosts, key=lambda h: h.name):
        mine = by_host.get(host.moid, {})
        node = _node(host, mine, vms, findings, known)
        if node is not None:
            nodes.append(node)
            named = {moid for g in host.graphics if g.kind == "sharedDirect" for moid in g.vms}
            unplaced[host.name] = {vm.name: (normalize_vgpu_type_name(vm.vgpus[0]), len(vm.vgpus))
                                   for moid, vm in mine.items() if vm.vgpus and moid not in named}
    inventory = Inventory(version=1, cluster=cluster, queues=[], nodes=nodes, jobs=[])
    return VcenterInventory(inventory, findings, vms.other, known, unplaced)


def _read_vms(snapshot: VcenterSnapshot, findings: list[Finding]) -> _Vms:
    vms = _Vms()
    for vm in sorted(snapshot.vms, key=lambda v: v.name):
        if not vm.vgpus and not vm.passthrough:
            vms.other += 1
            continue
        shown = printable(vm.name, SHOWN)
        hw = _HW.match(vm.version or "")
        name_problem = _name_problem(vm.name)
        if name_problem is not None:
            findings.append(Finding("vm", shown, "name", f"skipped: {name_problem}"))
            continue
        if hw is None:
            findings.append(Finding("vm", shown, "config.version", f"skipped: {printable(vm.version or '', 20)!r} "
                                                                     "is no hardware version (vmx-NN)"))
            continue
        if len(set(vm.vgpus)) > 1:
            types = ", ".join(sorted(set(vm.vgpus)))
            findings.append(Finding("vm", shown, "config.hardware.device", f"skipped: vGPUs of {len(set(vm.vgpus))} "
                                    f"types ({printable(types, SHOWN)}): vSphere gives a VM one type"))
            continue
        power = vm.power if vm.power in ("poweredOn", "poweredOff", "suspended") else None
        try:
            vms.models[vm.moid] = Vm.model_validate({"name": vm.name, "hardware_version": int(hw.group(1)),
                                                     "power_state": power})
        except ValidationError as invalid:
            findings.append(Finding("vm", shown, "", f"skipped: {invalid.errors()[0]['msg']}"))
            continue
        vms.kept[vm.moid] = vm
    return vms


def _node(host: HostRead, mine: dict[str, VmRead], vms: _Vms, findings: list[Finding],
          known: dict[str, frozenset[str]]) -> Node | None:
    """The host as a node, with `mine`, the VMs read that run on it (by moId); `known` takes the VMs on it whose
    device group the read tells."""
    shown = printable(host.name, SHOWN)
    problem = _name_problem(host.name)
    if problem is not None:
        findings.append(Finding("host", shown, "name", f"skipped: {problem}"))
        return None
    version = esxi_version(host.version)
    if version is None:
        findings.append(Finding("host", shown, "summary.config.product.version",
                                f"skipped: {printable(host.version or '', 20)!r} is no ESXi version"))
        return None
    graphics = {g.pci_id: g for g in host.graphics}
    offered = {t.lower() for t in host.vgpu_types}
    gpus = [_gpu(index, pci.pci_id, pci.device_id, pci.name, graphics.get(pci.pci_id), host, mine, vms, findings)
            for index, pci in enumerate(host.gpus)]
    for vm in mine.values():
        for vgpu in sorted(set(vm.vgpus)):
            if vgpu.lower() not in offered:
                findings.append(Finding("vm", printable(vm.name, SHOWN), "config.hardware.device",
                                        f"vGPU type {printable(vgpu, 40)!r} is not one host {shown} offers"))
    index_of = {pci.pci_id: index for index, pci in enumerate(host.gpus)}
    groups = _device_groups(host, mine, index_of, findings)
    node_vms = []
    for moid, vm in sorted(mine.items(), key=lambda item: item[1].name):
        held = sorted(index_of[p] for p in vm.passthrough if p in index_of)
        group = groups.get(moid)
        node_vms.append(vms.models[moid].model_copy(update={
            "gpus": held or None, "device_group": group.name if group is not None else None}))
    known[host.name] = frozenset(mine[moid].name for moid in groups)
    state = "down" if host.connection != "connected" else "cordoned" if host.maintenance else "ready"
    vmotion = _vmotion_gbps(host, shown, findings)
    try:
        return Node.model_validate({
            "name": host.name, "platform": "vsphere", "vsphere": VSphere(version=version, vmotion_gbps=vmotion),
            "cpus": host.cpus, "memory_gib": host.memory_bytes // 2**30 if host.memory_bytes else None,
            "labels": {CLUSTER_LABEL: host.cluster} if host.cluster else {}, "state": state,
            "down_reason": f"connectionState: {printable(host.connection, 40)}" if state == "down" else None,
            "nvlink": "nvswitch" if host.nvswitches else None, "gpus": gpus, "vms": node_vms,
            "device_groups": sorted((g for g in groups.values() if g is not None), key=lambda g: g.gpus)})
    except ValidationError as invalid:
        problem_at = invalid.errors()[0]
        where = ".".join(str(p) for p in problem_at["loc"])
        findings.append(Finding("host", shown, where, f"skipped: {problem_at['msg']}"))
        return None


def _vmotion_gbps(host: HostRead, shown: str, findings: list[Finding]) -> float | None:
    """The host's vMotion link in Gbit/s (vSphere's Mbit/s / 1000), or None with a finding saying why not."""
    mbps = host.vmotion.mbps
    if mbps is not None and mbps / 1000 <= MAX_VMOTION_GBPS:
        return mbps / 1000
    why = host.vmotion.unknown if mbps is None else \
        f"a link speed of {mbps} Mbit/s is beyond {MAX_VMOTION_GBPS:g} Gbit/s"
    findings.append(Finding("host", shown, "config.virtualNicManagerInfo.netConfig",
                            f"vMotion link speed unknown: {why}; a vMotion's stun time cannot be estimated"))
    return None


def _gpu(index: int, pci_id: str, device_id: int, name: str, graphics: GraphicsDevice | None, host: HostRead,
         mine: dict[str, VmRead], vms: _Vms, findings: list[Finding]) -> Gpu:
    catalog = get_catalog()
    model = catalog.model_by_pci_id(f"{device_id:04x}")
    fields: dict[str, object] = {"index": index}
    if model is not None:
        fields["model"] = model.name
    else:
        memory = graphics.memory_kib // 1024 if graphics is not None and graphics.memory_kib else None
        fields["model"] = printable(name, 80).strip() or f"PCI 10de:{device_id:04x}"
        fields["not_in_catalog"] = NotInCatalog(memory_mib=memory, pci_device_id=f"0x{device_id:04X}")
    if pci_id in host.passthrough:
        holders = [vm.name for vm in mine.values() if pci_id in vm.passthrough]
        fields.update(mode="passthrough", vm=holders[0] if holders else None)
    elif graphics is not None and graphics.kind == "sharedDirect":
        vgpus = []
        for moid in graphics.vms:
            vm = vms.kept.get(moid)
            if vm is None or vm.host != host.moid:
                continue  # a VM skipped with a finding, or one vCenter moved since
            if not vm.vgpus:
                findings.append(Finding("vm", printable(vm.name, SHOWN), "", f"uses GPU {index} of host "
                                        f"{printable(host.name, SHOWN)} but has no vGPU device"))
                continue
            vgpus.append(VGpu(vm=vm.name, profile=normalize_vgpu_type_name(vm.vgpus[0])))
        fields.update(mode="vgpu", vgpus=vgpus or None)
    return Gpu.model_validate(fields)


def _device_groups(host: HostRead, mine: dict[str, VmRead], index_of: dict[str, int],
                   findings: list[Finding]) -> dict[str, DeviceGroup | None]:
    """The device group each VM on the host holds, by moId: a group, None for a VM that holds none, and no entry for
    a VM whose group cannot be told (vCenter does not report groups, the VM is off, or a finding says why)."""
    shown_host = printable(host.name, SHOWN)
    offered = {g.name for g in host.device_groups} if host.device_groups is not None else None
    graphics = {g.pci_id: g for g in host.graphics}
    on_gpu: dict[str, list[int]] = {}  # VM moId → the GPUs whose graphics device names it
    for index, pci in enumerate(host.gpus):
        for moid in graphics[pci.pci_id].vms if pci.pci_id in graphics else ():
            on_gpu.setdefault(moid, []).append(index)
    held: dict[str, DeviceGroup | None] = {}
    taken: set[int] = set()
    for moid, vm in sorted(mine.items(), key=lambda item: item[1].name):
        if vm.device_groups is None:
            continue
        shown = printable(vm.name, SHOWN)
        problems = [p for p in (_name_problem(g.name, GROUP_NAME_LIMIT) for g in vm.device_groups) if p is not None]
        if problems:
            findings.append(Finding("vm", shown, "config.deviceGroups", f"device group not read: {problems[0]}"))
            continue
        if len(vm.device_groups) > 1:
            findings.append(Finding("vm", shown, "config.deviceGroups", f"device groups not read: it holds "
                                    f"{len(vm.device_groups)}, and gpuadmin gives a VM one"))
            continue
        if not vm.device_groups:
            held[moid] = None
            continue
        group = vm.device_groups[0]
        if offered is not None and group.name not in offered:
            findings.append(Finding("vm", shown, "config.deviceGroups", f"device group "
                                    f"{printable(group.name, 60)!r} is not one host {shown_host} offers"))
        gpus = _group_gpus(group, vm, on_gpu.get(moid, []), index_of)
        if gpus is None:
            continue  # off, or placed nowhere ESXi says: the state's group stays
        if isinstance(gpus, str) or taken & set(gpus):
            problem = gpus if isinstance(gpus, str) else "its GPUs are in another VM's device group"
            findings.append(Finding("vm", shown, "config.deviceGroups", f"device group not read: {problem}"))
            continue
        taken |= set(gpus)
        held[moid] = DeviceGroup(name="dg-" + "-".join(map(str, gpus)), gpus=gpus)
    return held


def _group_gpus(group: HeldDeviceGroup, vm: VmRead, on_gpu: list[int],
                index_of: dict[str, int]) -> list[int] | str | None:
    """The GPUs (by index) a VM's device group holds; None where ESXi names none (the VM is off); why not, where
    the devices and the GPUs do not add up."""
    if group.vgpus and vm.vgpus_outside_groups:
        return "the VM has vGPUs outside its device group, so which GPUs the group holds cannot be told"
    gpus = set(on_gpu) if group.vgpus else set()
    gpus |= {index_of[p] for p in group.passthrough if p in index_of}
    devices = group.vgpus + len(group.passthrough)
    if not devices:
        return "none of its devices is a GPU"
    if group.vgpus and not on_gpu:
        return None
    if len(gpus) != devices:
        return f"its {devices} GPU device(s) sit on {len(gpus)} GPU(s) of the host"
    return sorted(gpus)


def placed_from_state(node: Node, before: Node | None,
                      unplaced: dict[str, tuple[str, int]]) -> tuple[Node, list[Finding]]:
    """The host read, with each VM of `unplaced` (its vGPUs on no GPU: vCenter names a GPU only for a running VM)
    given back the GPUs `before`, the state's host, gives it — where the state's VM holds as many vGPUs of that
    profile there, each on a GPU the read has in vGPU mode — else left on none, with a finding: never a GPU made
    up. The state's order of each GPU's vGPUs is kept, so that keeping them is no drift."""
    findings: list[Finding] = []
    read_gpus = {gpu.index: gpu for gpu in node.gpus}
    kept: dict[int, list[VGpu]] = {}
    host = printable(node.name, SHOWN)
    for vm, (profile, count) in sorted(unplaced.items()):
        held = [(gpu.index, vgpu) for gpu in (before.gpus if before is not None else ())
                for vgpu in gpu.vgpus or () if vgpu.vm == vm]
        if held and len(held) == count and all(
                vgpu.profile.lower() == profile.lower() and index in read_gpus and read_gpus[index].mode == "vgpu"
                for index, vgpu in held):
            for index, vgpu in held:
                kept.setdefault(index, []).append(vgpu)
            on = ", ".join(str(index) for index, _ in held)
            findings.append(Finding("vm", printable(vm, SHOWN), "config.graphicsInfo", f"placement kept from the "
                                    f"state: vCenter names a GPU only for a running VM (GPU {on} of host {host})"))
            continue
        findings.append(Finding("vm", printable(vm, SHOWN), "config.graphicsInfo", f"{count} vGPU(s) "
                                f"{printable(profile, 40)} on no GPU of host {host}: placed when powered on "
                                "(vCenter names a GPU only for a running VM)"))
    if not kept:
        return node, findings
    before_gpus = {gpu.index: gpu for gpu in before.gpus} if before is not None else {}
    gpus = []
    for gpu in node.gpus:
        if gpu.index not in kept:
            gpus.append(gpu)
            continue
        order = {vgpu.vm: i for i, vgpu in enumerate(before_gpus[gpu.index].vgpus or ())}
        vgpus = sorted([*(gpu.vgpus or ()), *kept[gpu.index]], key=lambda v: order.get(v.vm, len(order)))
        gpus.append(gpu.model_copy(update={"vgpus": vgpus}))
    return node.model_copy(update={"gpus": gpus}), findings
