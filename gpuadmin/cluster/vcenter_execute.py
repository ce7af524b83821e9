"""Execute a checked plan on a vCenter as vSphere tasks (issue 24 item 2), the vSphere half of `execute.py`.

Each change runs with the executor `VSPHERE_EXECUTORS` holds for its op, in plan order; each executor reads the
object first and answers `already` where vCenter already is as the plan wants it (a re-run of a plan that failed
half-way does nothing twice), else starts one task and waits for it. A task that fails stops the plan: its step is
`failed` with the task's fault message, what follows is `not-run`, and the outcome is `partial` or `failed` as
`execute.py`'s. The steps and the outcome are `execute.py`'s types, so the journal records both bindings alike.

- cordon: `HostSystem.EnterMaintenanceMode_Task(timeout)`, refused before any task while a VM on the host is
  powered on (vCenter would wait for it to leave, and DRS moves no vGPU VM by itself).
- evacuate-host, drain (of a vSphere host): the plan's moves off the host in order (`evacuate_host`), each VM's
  `RelocateVM_Task` (a cold move between `PowerOffVM_Task` and `PowerOnVM_Task`), then maintenance mode as cordon.
- uncordon: `HostSystem.ExitMaintenanceMode_Task(timeout)`.
- assign-vgpu / remove-vgpu: `VirtualMachine.ReconfigVM_Task` adding (removing) one `VirtualPCIPassthrough` whose
  backing is a `VirtualPCIPassthroughVmiopBackingInfo(vgpu=TYPE)`, the type the host offers for the profile
  (`A40-12C` → `grid_a40-12c`). vSphere adds or removes a PCI device of a powered-off VM only: a VM that is not
  powered off fails the step before any task (power it off first; gpuadmin powers nothing off by itself).
- attach-vm / detach-vm of GPUs: `VirtualMachine.ReconfigVM_Task` adding (removing) one `VirtualPCIPassthrough`
  per GPU whose backing is a `VirtualPCIPassthroughDeviceBackingInfo` naming the GPU's PCI address (the host's
  `hardware.pciDevice[].id`), with the `systemId` vCenter offers for that device (`QueryConfigTarget(host)
  .pciPassthrough`); the same power rule; a GPU the host has not enabled and activated for passthrough
  (`config.pciPassthruInfo`) fails the step before any task, naming the host setting.

- attach-vm / detach-vm of a device group (vSphere 8): one `ReconfigVM_Task` on the powered-off VM. gpuadmin's
  group is the VM's vGPUs on the group's GPUs; vCenter's is those vGPU devices joined by `deviceGroupInfo` and
  named in `deviceGroups` (a vendor group the host offers, `RetrieveVendorDeviceGroupInfo`). So an attach replaces
  the VM's ungrouped vGPU devices of the type by the group's (one per GPU of the group, each with
  `deviceGroupInfo(groupInstanceKey, sequenceId)`, and the group in `deviceGroups`, a temporary negative key as
  vSphere asks), and a detach removes the group's devices and the group, adding back, ungrouped, the vGPUs the
  plan leaves the VM (vSphere adds and removes a group's devices only whole, in the request that adds or removes
  the group).

set-device-groups and the ops without an executor have no vSphere execution (`vsphere_unexecuted`): a host's
device groups are what its vendor driver offers, and vSphere has no call that sets them. A plan holding one is
applied to gpuadmin's state alone, and says so.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuadmin.catalog.entities import normalize_vgpu_type_name
from gpuadmin.cluster.errors import ClusterError, ClusterForbidden, ClusterUnreachable
from gpuadmin.cluster.exec_base import Done, StepFailed
from gpuadmin.cluster.execute import Execution, PlannedStep, Step, _outcome, _Run, target_of
from gpuadmin.cluster.vcenter import DEVICE_GROUPS_PATH, PciGpu, VcenterConnection, _pyvmomi, _short, nvidia_gpus
from gpuadmin.engine import changes as ch
from gpuadmin.engine.evacuation import VmMove, moved_only
from gpuadmin.engine.ops import spec_of
from gpuadmin.engine.state import View

POLL_S = 0.2  # how often a task's state is read again while it runs


@dataclass
class VsphereContext:
    """One step's view of the execution: the vCenter session, the plan's after-view, the calls made so far (for
    its step) and whether one of them changed vCenter, and the deadline of its waiting."""

    connection: VcenterConnection
    before: View  # the synced state, which a partial evacuation's moves are applied to (`held`)
    after: View
    deadline: float  # time.monotonic() after which a task still running fails the step
    sleep: Callable[[float], None]
    calls: list[str]
    wrote: bool = False
    # a failed step's part that vCenter holds nonetheless, as changes (an evacuation's VMs moved before the failure)
    held: list[Any] = field(default_factory=list)

    def find(self, kind: str, name: str) -> Any:
        """The one HostSystem or VirtualMachine named `name`; a step failure where there is none, or several."""
        vim, _ = _pyvmomi()
        content = self.connection.service.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [getattr(vim, kind)], True)
        try:
            found = [obj for obj in view.view if obj.name == name]
        finally:
            view.Destroy()
        what = "host" if kind == "HostSystem" else "VM"
        if len(found) != 1:
            raise StepFailed(f"vCenter has {'no' if not found else len(found)} {what}{'s' if found else ''} named "
                             f"{name!r}: sync to see the estate as it is")
        return found[0]

    def vms_on(self, host: Any) -> list[Any]:
        """The VMs whose `runtime.host` is the host. Not `HostSystem.vm`: VMware's simulator does not update it on
        RelocateVM_Task (govmomi simulator/virtual_machine.go), and the VM's own runtime is what vCenter and
        gpuadmin's read (vcenter.py) go by."""
        vim, _ = _pyvmomi()
        content = self.connection.service.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.VirtualMachine], True)
        try:
            return [vm for vm in view.view if vm.runtime.host is not None and vm.runtime.host._moId == host._moId]
        finally:
            view.Destroy()

    def task(self, method: str, obj: Any, start: Callable[[], Any], what: str = "") -> None:
        """Start a task (`method` on `obj`, recorded as the step's call, with `what` it does in words) and wait for
        it; its fault fails the step."""
        self.calls.append(f"{method} {obj._moId}" + (f" ({what})" if what else ""))
        task = start()
        while True:
            info = task.info
            state = str(info.state)
            if state == "success":
                self.wrote = True
                return
            if state == "error":
                fault = info.error
                message = getattr(fault, "msg", None) or type(fault).__name__
                raise StepFailed(f"{method} failed: {_short(str(message))}")
            if time.monotonic() > self.deadline:
                self.wrote = True  # the task may yet finish: vCenter may hold this step
                raise StepFailed(f"{method} did not finish in time (task {task._moId} is still {state} on vCenter; "
                                 "--timeout SECONDS waits longer)")
            self.sleep(POLL_S)


VsphereExecutor = Callable[[VsphereContext, Any], Done]


def _timeout(context: VsphereContext) -> int:
    return max(1, int(context.deadline - time.monotonic()))


def enter_maintenance(context: VsphereContext, change: ch.Cordon) -> Done:
    host = context.find("HostSystem", change.node)
    if host.runtime.inMaintenanceMode:
        return Done("already", "the host is in maintenance mode")
    running = sorted(vm.name for vm in context.vms_on(host) if str(vm.runtime.powerState) == "poweredOn")
    if running:  # vCenter's task would wait for them to leave, and DRS moves no vGPU VM by itself
        shown = ", ".join(running[:5]) + (f" and {len(running) - 5} more" if len(running) > 5 else "")
        raise StepFailed(f"{len(running)} VM(s) powered on on {change.node} ({shown}): maintenance mode would wait "
                         f"for them to leave; move them first: gpuadmin evacuate {change.node}")
    context.task("EnterMaintenanceMode_Task", host, lambda: host.EnterMaintenanceMode_Task(timeout=_timeout(context)))
    return Done("executed")


def exit_maintenance(context: VsphereContext, change: ch.Uncordon) -> Done:
    host = context.find("HostSystem", change.node)
    if not host.runtime.inMaintenanceMode:
        return Done("already", "the host is not in maintenance mode")
    context.task("ExitMaintenanceMode_Task", host, lambda: host.ExitMaintenanceMode_Task(timeout=_timeout(context)))
    return Done("executed")


def _pci_devices(vm: Any, backing: Any) -> list[Any]:
    """The VM's VirtualPCIPassthrough devices whose backing is of the type `backing`."""
    vim, _ = _pyvmomi()
    if vm.config is None:  # an inaccessible or orphaned VM: vCenter has no configuration to show
        raise StepFailed(f"vCenter shows no configuration of VM {vm.name!r} (inaccessible?): sync to see it")
    return [d for d in vm.config.hardware.device or ()
            if isinstance(d, vim.vm.device.VirtualPCIPassthrough) and isinstance(d.backing, backing)]


def _vgpu_devices(vm: Any, profile: str) -> list[Any]:
    """The VM's vGPU devices of `profile` (its vmiop backings whose type is the profile)."""
    vim, _ = _pyvmomi()
    return [d for d in _pci_devices(vm, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
            if normalize_vgpu_type_name(str(d.backing.vgpu or "")) == profile]


def _wanted(context: VsphereContext, node: str, vm: str, profile: str) -> int:
    """How many vGPUs of `profile` the plan's after-view gives the VM on the node."""
    after = context.after.node(node)
    if after is None:  # a checked plan names only nodes it has
        raise StepFailed(f"node {node} is not in the plan's state")
    return sum(1 for gpu in after.gpus for v in gpu.vgpus or () if v.vm == vm and v.profile == profile)


def _powered_off(vm: Any, name: str, doing: str) -> None:
    power = str(vm.runtime.powerState)
    if power != "poweredOff":
        raise StepFailed(f"vSphere {doing} a powered-off VM only: {name} is {power} (power it off first)")


def assign_vgpu(context: VsphereContext, change: ch.AssignVgpu) -> Done:
    vim, _ = _pyvmomi()
    vm = context.find("VirtualMachine", change.vm)
    have, wanted = len(_vgpu_devices(vm, change.profile)), _wanted(context, change.node, change.vm, change.profile)
    if have >= wanted:
        return Done("already", f"the VM has {have} vGPU(s) of {change.profile}")
    host = context.find("HostSystem", change.node)
    offered = host.config.sharedPassthruGpuTypes if host.config is not None else None  # None: disconnected
    types = [t for t in offered or () if normalize_vgpu_type_name(str(t)) == change.profile]
    if not types:
        raise StepFailed(f"host {change.node} offers no vGPU type for {change.profile}: sync to see what it offers")
    _powered_off(vm, change.vm, "adds a vGPU to")
    device = vim.vm.device.VirtualPCIPassthrough(
        key=-1, backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=str(types[0])))
    spec = vim.vm.ConfigSpec(deviceChange=[vim.vm.device.VirtualDeviceSpec(operation="add", device=device)])
    context.task("ReconfigVM_Task", vm, lambda: vm.ReconfigVM_Task(spec=spec))
    return Done("executed", f"vGPU {types[0]} added")


def remove_vgpu(context: VsphereContext, change: ch.RemoveVgpu) -> Done:
    vim, _ = _pyvmomi()
    vm = context.find("VirtualMachine", change.vm)
    devices = _vgpu_devices(vm, change.profile)
    if len(devices) <= _wanted(context, change.node, change.vm, change.profile):
        return Done("already", f"the VM has {len(devices)} vGPU(s) of {change.profile}")
    _powered_off(vm, change.vm, "removes a vGPU from")
    spec = vim.vm.ConfigSpec(deviceChange=[vim.vm.device.VirtualDeviceSpec(operation="remove", device=devices[-1])])
    context.task("ReconfigVM_Task", vm, lambda: vm.ReconfigVM_Task(spec=spec))
    return Done("executed", f"vGPU {devices[-1].backing.vgpu} removed")


def _passthrough_devices(vm: Any) -> dict[str, Any]:
    """The VM's passthrough devices (device backings) by the PCI address of the host device each names."""
    vim, _ = _pyvmomi()
    return {str(d.backing.id): d for d in _pci_devices(vm, vim.vm.device.VirtualPCIPassthrough.DeviceBackingInfo)}


def _host_gpus(host: Any, node: str, indexes: Sequence[int]) -> dict[int, PciGpu]:
    """The host's GPUs of gpuadmin's `indexes`, as vCenter shows them now (the read's order: PCI address)."""
    gpus = nvidia_gpus(host.hardware.pciDevice if host.hardware is not None else ())
    beyond = [index for index in indexes if index >= len(gpus)]
    if beyond:
        raise StepFailed(f"vCenter shows {len(gpus)} NVIDIA GPU(s) on host {node}, no GPU {beyond[0]}: sync to "
                         "see the host as it is")
    return {index: gpus[index] for index in indexes}


def _on_host(vm: Any, host: Any, change: ch.AttachVm | ch.DetachVm) -> None:
    """The VM runs on the plan's host: a GPU's PCI address means a device of that host only."""
    if vm.runtime.host is None or vm.runtime.host._moId != host._moId:
        raise StepFailed(f"VM {change.vm} is not on host {change.node} in vCenter: sync to see where it is")


def _passthrough_ready(host: Any, node: str, gpus: dict[int, PciGpu]) -> None:
    """Each GPU is enabled for passthrough on the host, and active (ESXi activates it at the next reboot)."""
    config = host.config.pciPassthruInfo if host.config is not None else None  # None: a disconnected host
    state = {str(info.id): info for info in config or ()}
    for index, gpu in sorted(gpus.items()):
        info = state.get(gpu.pci_id)
        if info is None or not info.passthruEnabled:
            raise StepFailed(f"GPU {index} ({gpu.pci_id}) of host {node} is not enabled for passthrough: enable it "
                             "in the host's PCI device settings (Configure > Hardware > PCI Devices; "
                             "config.pciPassthruInfo passthruEnabled), then reboot the host")
        if not info.passthruActive:
            raise StepFailed(f"GPU {index} ({gpu.pci_id}) of host {node} is enabled for passthrough but not active "
                             "yet (config.pciPassthruInfo passthruActive): reboot the host")


def _indexes(indexes: Sequence[int]) -> str:
    return ", ".join(str(index) for index in indexes)


def attach_vm(context: VsphereContext, change: ch.AttachVm) -> Done:
    """Pass the plan's GPUs, or its device group, through to the VM."""
    if change.device_group is not None:
        return attach_device_group(context, change, change.device_group)
    vim, _ = _pyvmomi()
    indexes = sorted(set(change.gpus or ()))
    vm = context.find("VirtualMachine", change.vm)
    host = context.find("HostSystem", change.node)
    _on_host(vm, host, change)
    gpus = _host_gpus(host, change.node, indexes)
    held = _passthrough_devices(vm)
    missing = [index for index in indexes if gpus[index].pci_id not in held]
    if not missing:
        return Done("already", f"the VM has GPU(s) {_indexes(indexes)} passed through")
    _passthrough_ready(host, change.node, {index: gpus[index] for index in missing})
    _powered_off(vm, change.vm, "adds a PCI device to")
    # vCenter's own list of the devices a VM on the host may take, with the system id each backing must name
    target = vm.environmentBrowser.QueryConfigTarget(host=host)
    offered = {str(p.pciDevice.id): p for p in (target.pciPassthrough if target is not None else None) or ()}
    changes = []
    for key, index in enumerate(missing, start=1):
        device = offered.get(gpus[index].pci_id)
        if device is None:
            raise StepFailed(f"vCenter offers no passthrough device {gpus[index].pci_id} (GPU {index}) of host "
                             f"{change.node} to a VM (EnvironmentBrowser.QueryConfigTarget): sync to see the host")
        backing = vim.vm.device.VirtualPCIPassthrough.DeviceBackingInfo(
            id=gpus[index].pci_id, deviceId=f"{device.pciDevice.deviceId & 0xFFFF:x}", systemId=device.systemId,
            vendorId=device.pciDevice.vendorId, deviceName=device.pciDevice.deviceName or "")
        changes.append(vim.vm.device.VirtualDeviceSpec(
            operation="add", device=vim.vm.device.VirtualPCIPassthrough(key=-key, backing=backing)))
    spec = vim.vm.ConfigSpec(deviceChange=changes)
    context.task("ReconfigVM_Task", vm, lambda: vm.ReconfigVM_Task(spec=spec), f"add GPU(s) {_indexes(missing)}")
    return Done("executed", f"GPU(s) {_indexes(missing)} passed through"
                + (f" ({_indexes(sorted(set(indexes) - set(missing)))} already were)" if len(missing) < len(indexes)
                   else ""))


def _released(context: VsphereContext, change: ch.DetachVm) -> list[int]:
    """The GPUs the detach releases: its `gpus`, or (neither field) every GPU the synced state gives the VM. A VM
    holding a device group there is refused: the group would be released in gpuadmin's state alone."""
    if change.gpus is not None:
        return sorted(set(change.gpus))
    node = context.before.node(change.node)
    vm = next((v for v in node.vms if v.name == change.vm), None) if node is not None else None
    if vm is None:  # a checked plan names only VMs the state has
        raise StepFailed(f"VM {change.vm} is not on node {change.node} in the synced state")
    if vm.device_group is not None:
        raise StepFailed(f"VM {change.vm} holds device group {vm.device_group}: detach it by name "
                         f"(--device-group {vm.device_group}), or its GPUs by index (--gpus)")
    return sorted(vm.gpus or ())


def detach_vm(context: VsphereContext, change: ch.DetachVm) -> Done:
    """Take the plan's passthrough GPUs, or its device group, from the VM."""
    if change.device_group is not None:
        return detach_device_group(context, change, change.device_group)
    vim, _ = _pyvmomi()
    indexes = _released(context, change)
    if not indexes:
        return Done("already", "no passthrough GPU to release")
    vm = context.find("VirtualMachine", change.vm)
    host = context.find("HostSystem", change.node)
    _on_host(vm, host, change)
    gpus = _host_gpus(host, change.node, indexes)
    held = _passthrough_devices(vm)
    present = [index for index in indexes if gpus[index].pci_id in held]
    if not present:
        return Done("already", f"the VM has none of GPU(s) {_indexes(indexes)} passed through")
    _powered_off(vm, change.vm, "removes a PCI device from")
    spec = vim.vm.ConfigSpec(deviceChange=[
        vim.vm.device.VirtualDeviceSpec(operation="remove", device=held[gpus[index].pci_id]) for index in present])
    context.task("ReconfigVM_Task", vm, lambda: vm.ReconfigVM_Task(spec=spec), f"remove GPU(s) {_indexes(present)}")
    return Done("executed", f"GPU(s) {_indexes(present)} released")


def _held_groups(context: VsphereContext, vm: Any) -> list[Any]:
    """The vendor device groups the VM holds (`config.deviceGroups`, asked for by name: a whole `config` does not
    carry it from every server); a vCenter before 8.0 has none to change."""
    vim, vmodl = _pyvmomi()
    collector = vmodl.query.PropertyCollector
    spec = collector.FilterSpec(objectSet=[collector.ObjectSpec(obj=vm)],
                                propSet=[collector.PropertySpec(type=vim.VirtualMachine, pathSet=[DEVICE_GROUPS_PATH])])
    try:
        result = context.connection.service.RetrieveContent().propertyCollector.RetrievePropertiesEx(
            [spec], collector.RetrieveOptions())
    except (vmodl.fault.InvalidProperty, vmodl.fault.InvalidType) as older:
        raise StepFailed(f"vCenter {context.connection.server} has no device groups (vSphere 8 API, "
                         f"{DEVICE_GROUPS_PATH}: {type(older).__name__})") from older
    values = [p.val for o in (result.objects if result is not None else ()) for p in o.propSet or ()]
    return [g for v in values for g in getattr(v, "deviceGroup", None) or ()]


def _shown(vendor_name: Any) -> str:
    """A vendor's group name from vCenter (hostile) as a message shows it: its control characters as spaces."""
    return _short("".join(c if c.isprintable() else " " for c in str(vendor_name or "")))


def _members(vm: Any, key: int) -> list[Any]:
    """The VM's devices of the group whose instance key is `key`."""
    return [d for d in vm.config.hardware.device or ()
            if getattr(getattr(d, "deviceGroupInfo", None), "groupInstanceKey", None) == key]


def _ungrouped_vgpus(vm: Any, vgpu_type: str) -> list[Any]:
    vim, _ = _pyvmomi()
    return [d for d in _pci_devices(vm, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
            if str(d.backing.vgpu or "") == vgpu_type and getattr(d, "deviceGroupInfo", None) is None]


def _group_vgpus(context: VsphereContext, change: ch.AttachVm, name: str) -> tuple[list[int], str]:
    """The group's GPUs in the plan's after-view and the one vGPU profile the VM holds on each of them."""
    after = context.after.node(change.node)
    group = next((g for g in after.device_groups if g.name == name), None) if after is not None else None
    if after is None or group is None:  # a checked plan names only groups the node has
        raise StepFailed(f"node {change.node} has no device group {name} in the plan's state")
    gpus = sorted(group.gpus)
    profiles = {gpu.index: {v.profile for v in gpu.vgpus or () if v.vm == change.vm} for gpu in after.gpus
                if gpu.index in gpus}
    held = {p for index in gpus for p in profiles.get(index, set())}
    bare = [index for index in gpus if not profiles.get(index)]
    if bare or len(held) != 1:
        raise StepFailed(f"a vCenter device group is its member vGPUs: the plan gives VM {change.vm} "
                         + (f"no vGPU on GPU(s) {_indexes(bare)}" if bare else f"vGPUs of {len(held)} profiles")
                         + f" of group {name} (assign-vgpu one profile on each, in this plan or before)")
    return gpus, held.pop()


def attach_device_group(context: VsphereContext, change: ch.AttachVm, name: str) -> Done:
    """The VM's vGPUs on the group's GPUs made the host's vendor device group of their type (module docstring)."""
    vim, _ = _pyvmomi()
    gpus, profile = _group_vgpus(context, change, name)
    vm = context.find("VirtualMachine", change.vm)
    host = context.find("HostSystem", change.node)
    _on_host(vm, host, change)
    offered = host.config.sharedPassthruGpuTypes if host.config is not None else None
    vgpu_type = next((str(t) for t in offered or () if normalize_vgpu_type_name(str(t)) == profile), None)
    if vgpu_type is None:
        raise StepFailed(f"host {change.node} offers no vGPU type for {profile}: sync to see what it offers")
    vendor = _offered_group(host, change.node, len(gpus), vgpu_type)
    for group in _held_groups(context, vm):
        if str(group.deviceGroupName) == vendor.deviceGroupName and len(_members(vm, group.groupInstanceKey)) == \
                len(gpus):
            return Done("already", f"the VM holds {_shown(vendor.deviceGroupName)}")
        raise StepFailed(f"VM {change.vm} holds device group {_shown(group.deviceGroupName)} on vCenter: "
                         "detach it first (a VM holds one group in gpuadmin's model)")
    _powered_off(vm, change.vm, "adds a device group (PCI devices) to")
    replaced = _ungrouped_vgpus(vm, vgpu_type)[:len(gpus)]
    templates = list(vendor.componentDeviceInfo or ())
    changes = [vim.vm.device.VirtualDeviceSpec(operation="remove", device=d) for d in replaced]
    for place in range(len(gpus)):
        template = getattr(getattr(templates[place], "device", None), "deviceGroupInfo", None)
        sequence = int(template.sequenceId) if template is not None else place  # the template's, else its place
        device = vim.vm.device.VirtualPCIPassthrough(
            key=-(place + 1), backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=vgpu_type),
            deviceGroupInfo=vim.vm.device.VirtualDevice.DeviceGroupInfo(groupInstanceKey=-1, sequenceId=sequence))
        changes.append(vim.vm.device.VirtualDeviceSpec(operation="add", device=device))
    groups = vim.vm.VirtualDeviceGroups(deviceGroup=[vim.vm.VirtualDeviceGroups.VendorDeviceGroup(
        groupInstanceKey=-1, deviceGroupName=vendor.deviceGroupName)])
    spec = vim.vm.ConfigSpec(deviceChange=changes, deviceGroups=groups)
    context.task("ReconfigVM_Task", vm, lambda: vm.ReconfigVM_Task(spec=spec),
                 f"add device group {name}: {_shown(vendor.deviceGroupName)}, {len(gpus)} × {vgpu_type}")
    return Done("executed", f"device group {name} ({_shown(vendor.deviceGroupName)}) added, {len(gpus)} vGPU(s) "
                            f"{vgpu_type}" + (f", replacing {len(replaced)} ungrouped" if replaced else ""))


def _offered_group(host: Any, node: str, size: int, vgpu_type: str) -> Any:
    """The vendor device group the host offers of `size` vGPU devices of `vgpu_type`."""
    vim, vmodl = _pyvmomi()
    manager = host.configManager.assignableHardwareManager if host.configManager is not None else None
    try:
        offered = list(manager.RetrieveVendorDeviceGroupInfo() or ()) if manager is not None else []
    except (vmodl.fault.MethodNotFound, vmodl.fault.NotSupported):
        offered = []
    for group in offered:
        devices: list[Any] = [getattr(c, "device", None) for c in group.componentDeviceInfo or ()]
        if len(devices) == size and all(
                isinstance(getattr(d, "backing", None), vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
                and str(d.backing.vgpu) == vgpu_type for d in devices):
            return group
    raise StepFailed(f"host {node} offers no device group of {size} vGPUs {vgpu_type} "
                     "(HostAssignableHardwareManager.RetrieveVendorDeviceGroupInfo): sync to see what it offers")


def detach_device_group(context: VsphereContext, change: ch.DetachVm, name: str) -> Done:
    """The VM's vendor device group removed with its devices; the vGPUs the plan leaves the VM added back
    ungrouped (gpuadmin's detach of a group keeps the VM's vGPUs)."""
    vim, _ = _pyvmomi()
    vm = context.find("VirtualMachine", change.vm)
    host = context.find("HostSystem", change.node)
    _on_host(vm, host, change)
    held = _held_groups(context, vm)
    if not held:
        return Done("already", "the VM holds no device group")
    if len(held) > 1:
        raise StepFailed(f"VM {change.vm} holds {len(held)} device groups on vCenter: sync to see them")
    group = held[0]
    members = _members(vm, group.groupInstanceKey)
    _powered_off(vm, change.vm, "removes a device group (PCI devices) from")
    changes = [vim.vm.device.VirtualDeviceSpec(operation="remove", device=d) for d in members]
    vgpus = [d for d in members if isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)]
    vgpu_type = str(vgpus[0].backing.vgpu or "") if vgpus else ""
    kept = 0
    if vgpu_type:
        profile = normalize_vgpu_type_name(vgpu_type)
        kept = max(0, min(len(vgpus), _wanted(context, change.node, change.vm, profile)
                          - len(_ungrouped_vgpus(vm, vgpu_type))))
    for place in range(kept):
        device = vim.vm.device.VirtualPCIPassthrough(
            key=-(place + 1), backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=vgpu_type))
        changes.append(vim.vm.device.VirtualDeviceSpec(operation="add", device=device))
    spec = vim.vm.ConfigSpec(deviceChange=changes, deviceGroups=vim.vm.VirtualDeviceGroups(deviceGroup=[]))
    context.task("ReconfigVM_Task", vm, lambda: vm.ReconfigVM_Task(spec=spec),
                 f"remove device group {name}: {_shown(group.deviceGroupName)}")
    return Done("executed", f"device group {name} removed ({len(members)} device(s))"
                + (f", {kept} vGPU(s) {vgpu_type} kept ungrouped" if kept else ""))


def _relocate(context: VsphereContext, move: VmMove) -> bool:
    """One VM's planned move, read first: False where vCenter already holds it (on the target host, and powered on
    again where a cold move powers it off), else its tasks run (True). A vMotion is one RelocateVM_Task whose
    spec names the target host and its cluster's root resource pool and no device change: the vGPU device goes
    along as it is. A cold move powers the VM off first and on again after, unless the synced state has it off."""
    vim, _ = _pyvmomi()
    vm = context.find("VirtualMachine", move.vm)
    target = context.find("HostSystem", str(move.target))
    placed = context.after.node(str(move.target))
    if placed is None:  # a checked plan names only nodes it has
        raise StepFailed(f"node {move.target} is not in the plan's state")
    stays_off = any(v.name == move.vm and v.power_state == "poweredOff" for v in placed.vms)
    there = vm.runtime.host is not None and vm.runtime.host._moId == target._moId
    if there and (move.how == "vmotion" or stays_off or str(vm.runtime.powerState) == "poweredOn"):
        return False
    where = f"{move.vm} → {move.target}"
    if not there:
        if move.how == "cold" and str(vm.runtime.powerState) == "poweredOn":
            context.task("PowerOffVM_Task", vm, lambda: vm.PowerOffVM_Task(), f"{move.vm}, to move it cold")
        spec = vim.vm.RelocateSpec(host=target, pool=target.parent.resourcePool)
        context.task("RelocateVM_Task", vm, lambda: vm.RelocateVM_Task(spec=spec), where)
    if move.how == "cold" and not stays_off and str(vm.runtime.powerState) != "poweredOn":
        context.task("PowerOnVM_Task", vm, lambda: vm.PowerOnVM_Task(), f"{move.vm} on {move.target}")
    return True


def evacuate_host(context: VsphereContext, change: ch.EvacuateHost | ch.Drain) -> Done:
    """The plan's moves off the host (`View.evacuations`), in plan order, then maintenance mode. A failure stops
    the sequence: the VMs moved before it are the step's `held` part (the state takes them moved; the host stays
    out of maintenance mode), and the message says which moved and which did not."""
    moves = context.after.evacuations.get(change.node, [])
    done: list[VmMove] = []
    executed = 0
    try:
        for move in moves:
            if move.target is None:  # a checked plan has none (rule vsphere.evacuation-room)
                raise StepFailed(f"the plan has no destination for VM {move.vm}")
            executed += _relocate(context, move)
            done.append(move)
        maintenance = enter_maintenance(context, ch.Cordon(op="cordon", node=change.node))
    except Exception as failed:  # any failure (a fault, a lost connection): vCenter holds the moves made before it
        if done:
            context.held.extend(moved_only(context.before.base, done))
        if not isinstance(failed, StepFailed):
            raise
        left = [m.vm for m in moves[len(done):]]
        raise StepFailed(f"{failed}; {len(done)} of {len(moves)} VM(s) on their destination"
                         + (f" ({_names([m.vm for m in done])})" if done else "")
                         + (f", not moved: {_names(left)}" if left else "")
                         + f"; {change.node} is not in maintenance mode (apply again to go on)") from failed
    moved = f"{executed} VM(s) moved, {len(moves) - executed} already on their destination"
    return Done("already" if not executed and maintenance.status == "already" else "executed",
                f"{moved}; {maintenance.message or 'the host entered maintenance mode'}")


def _names(vms: list[str]) -> str:
    return ", ".join(vms[:5]) + (f" and {len(vms) - 5} more" if len(vms) > 5 else "")


@dataclass(frozen=True)
class VsphereExecutes:
    """An op's vCenter executor and the calls it makes, in words (what a plan's review says apply will do)."""

    run: VsphereExecutor
    calls: str
    group_calls: str = ""  # what it calls for a device group's attach or detach, where that differs

    def describe(self, change: Any) -> str:
        group = getattr(change, "device_group", None)
        return self.group_calls.format(group=group) if group is not None and self.group_calls else self.calls


_EVACUATION_CALLS = ("per VM, in the plan's order: RelocateVM_Task to the target host and its cluster's resource "
                     "pool, the vGPU kept (vMotion); for a VM with passthrough GPUs or a device group PowerOffVM_Task, "
                     "RelocateVM_Task, PowerOnVM_Task; then EnterMaintenanceMode_Task on the host (nothing for a VM "
                     "already on its destination, or a host already in maintenance mode)")

VSPHERE_EXECUTORS: dict[str, VsphereExecutes] = {
    "cordon": VsphereExecutes(enter_maintenance, "EnterMaintenanceMode_Task on the host, its task waited for "
                                                 "(nothing where it is in maintenance mode already; refused, "
                                                 "before any task, while a VM on it is powered on)"),
    "drain": VsphereExecutes(evacuate_host, _EVACUATION_CALLS),
    "evacuate-host": VsphereExecutes(evacuate_host, _EVACUATION_CALLS),
    "uncordon": VsphereExecutes(exit_maintenance, "ExitMaintenanceMode_Task on the host, its task waited for "
                                                  "(nothing where it is out of maintenance mode)"),
    "assign-vgpu": VsphereExecutes(assign_vgpu, "ReconfigVM_Task on the powered-off VM, adding a "
                                                "VirtualPCIPassthrough device whose VmiopBackingInfo is the "
                                                "profile's vGPU type (nothing where the VM has it already)"),
    "remove-vgpu": VsphereExecutes(remove_vgpu, "ReconfigVM_Task on the powered-off VM, removing one vGPU device "
                                                "of the profile (nothing where it has none too many)"),
    "attach-vm": VsphereExecutes(attach_vm, "ReconfigVM_Task on the powered-off VM, adding a VirtualPCIPassthrough "
                                            "device per GPU whose DeviceBackingInfo names its PCI address and the "
                                            "systemId of EnvironmentBrowser.QueryConfigTarget (nothing for a GPU "
                                            "it has already; refused where the host has not enabled the GPU for "
                                            "passthrough)",
                               "ReconfigVM_Task on the powered-off VM adding device group {group}: a "
                               "VirtualPCIPassthrough with VmiopBackingInfo of the group's vGPU type per GPU, each "
                               "with deviceGroupInfo, and deviceGroups naming the vendor group the host offers "
                               "(RetrieveVendorDeviceGroupInfo); the VM's ungrouped vGPUs of the type removed "
                               "(nothing where the VM holds it)"),
    "detach-vm": VsphereExecutes(detach_vm, "ReconfigVM_Task on the powered-off VM, removing the "
                                            "VirtualPCIPassthrough device whose DeviceBackingInfo names each GPU "
                                            "released (nothing where it has none of them)",
                               "ReconfigVM_Task on the powered-off VM removing device group {group}: the devices "
                               "whose deviceGroupInfo names it and the group from deviceGroups, the vGPUs the plan "
                               "leaves the VM added back ungrouped (nothing where the VM holds no group)"),
}


def planned_vcenter_steps(changes: Sequence[Any]) -> list[PlannedStep]:
    """Each change as its vCenter executor will carry it out, in plan order (pure: nothing is read); a plan with
    an op no executor carries out is applied to the model only, and each step says so."""
    unexecuted = vsphere_unexecuted(changes)
    if unexecuted:
        why = f"nothing on vCenter: the plan holds {', '.join(unexecuted)}, which gpuadmin does not carry out there"
        return [PlannedStep(spec_of(c).op, target_of(c), False, why) for c in changes]
    return [PlannedStep(spec_of(c).op, target_of(c), True, VSPHERE_EXECUTORS[spec_of(c).op].describe(c))
            for c in changes]


def vsphere_unexecuted(changes: Sequence[Any]) -> list[str]:
    """The ops of `changes` gpuadmin does not carry out on a vCenter (sorted, once each): those without an
    executor (model only: docs/vsphere.md, "What each op does on vCenter")."""
    return sorted({spec_of(change).op for change in changes} - VSPHERE_EXECUTORS.keys())


def execute_vcenter(connection: VcenterConnection, changes: Sequence[Any], before: View, after: View, *,
                    timeout: float,
                    sleep: Callable[[float], None] = time.sleep) -> Execution:
    """Run `changes` (planned and checked on the synced state `before`; `after` is the plan's view) as vCenter
    tasks, every op one of `VSPHERE_EXECUTORS`'. `timeout` bounds each step's waiting, in seconds."""
    vim, vmodl = _pyvmomi()
    run = _Run()
    for change in changes:
        op, target = spec_of(change).op, target_of(change)
        if run.error is not None:
            run.steps.append(Step(op, target, "not-run"))
            continue
        context = VsphereContext(connection, before, after, time.monotonic() + timeout, sleep, [])
        try:
            done = VSPHERE_EXECUTORS[op].run(context, change)
        except vim.fault.NoPermission as refused:
            failed: ClusterError = ClusterForbidden(
                f"vCenter {connection.server}: {_short(refused.msg)} (docs/vsphere.md lists the privileges)")
        except ClusterError as error:
            failed = error
        except (OSError, http.client.HTTPException, vmodl.MethodFault) as lost:
            failed = ClusterUnreachable(f"vCenter {connection.server}: {type(lost).__name__}: {_short(str(lost))}")
        else:
            run.changed = True
            run.steps.append(Step(op, target, done.status, tuple(context.calls), done.message))
            continue
        run.error = failed
        run.changed = run.changed or context.wrote
        run.steps.append(Step(op, target, "failed", tuple(context.calls), str(failed), tuple(context.held)))
    if run.error is not None:
        run.error.steps = tuple(step.line() for step in run.steps)
    return Execution(tuple(run.steps), _outcome(run), run.error)


__all__ = ["VSPHERE_EXECUTORS", "VsphereExecutes", "execute_vcenter", "planned_vcenter_steps", "vsphere_unexecuted"]
