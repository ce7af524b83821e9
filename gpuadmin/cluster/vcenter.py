"""A connection to a vCenter through pyVmomi (VMware's official Python SDK), and one read of its GPU estate.

What a state records of it is the user and the vCenter's address, and whether its TLS certificate goes
unverified (`ClusterBinding`), never the password: that is given each time (a prompt, $GPUADMIN_VCENTER_PASSWORD
or a file only its owner may read) and kept in memory only. TLS is verified unless `--insecure` is given; the
binding records it and every command that shows the binding says so.

The read asks the property collector for the properties gpuadmin needs of every HostSystem, VirtualMachine and
ClusterComputeResource (one container view each, in pages of `PAGE_SIZE`), and keeps them as plain values: what
vCenter returns is hostile input like anything else, checked where it is translated (`vcenter_inventory.py`).
pyVmomi is imported only inside the functions that talk to vCenter (tests/test_architecture_kube_client.py).
"""

from __future__ import annotations

import os
import ssl
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gpuadmin.adapters.kube_cluster import printable
from gpuadmin.cluster.errors import MESSAGE_LIMIT, ClusterError, ClusterForbidden, ClusterUnreachable, LoginRefused
from gpuadmin.errors import Diagnostic, InputError
from gpuadmin.store import ClusterBinding

PAGE_SIZE = 500  # objects the property collector returns at a time
CONNECT_TIMEOUT_S = 10
NVIDIA_VENDOR = 0x10DE
DISPLAY_CLASSES = {0x0300, 0x0302}  # VGA and 3D controllers: a data-centre GPU is the latter
BRIDGE_CLASS = 0x0680  # "other bridge": an NVSwitch chip on an HGX board
HOST_PATHS = ["name", "parent", "summary.config.product.version", "summary.hardware.numCpuThreads",
              "summary.hardware.memorySize", "runtime.inMaintenanceMode", "runtime.connectionState",
              "hardware.pciDevice", "config.graphicsInfo", "config.sharedPassthruGpuTypes", "config.pciPassthruInfo",
              "config.network", "config.virtualNicManagerInfo.netConfig"]
VM_PATHS = ["name", "config.version", "config.template", "config.changeVersion", "config.hardware.device",
            "runtime.powerState", "runtime.host"]
# vSphere 8 (API release 8.0.0.1): the vendor device groups a VM holds; an older vCenter knows no such property
DEVICE_GROUPS_PATH = "config.deviceGroups"
# the host's manager whose RetrieveVendorDeviceGroupInfo (8.0.0.1) lists the groups it offers (the manager: 7.0)
ASSIGNABLE_HARDWARE_PATH = "configManager.assignableHardwareManager"


@dataclass(frozen=True)
class VcenterAddress:
    """Where the vCenter is: host, port, and the SDK's path."""

    host: str
    port: int
    path: str = "/sdk"

    @property
    def server(self) -> str:
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{netloc}:{self.port}"


def parse_server(server: str) -> VcenterAddress:
    """`https://vc.example.com[:443][/sdk]` or a bare host name: the vCenter's address. An InputError (exit 2)
    for anything else: vCenter speaks HTTPS only, and a user:password in the URL would be journaled."""
    text = server.strip()
    if "://" not in text:
        text = f"https://{text}"
    try:
        parts = urlsplit(text)
        host, port = parts.hostname or "", parts.port or 443
    except ValueError:
        raise InputError([Diagnostic("--server: not a URL", hint="--server https://vcenter.example.com")]) from None
    if parts.scheme != "https" or not host:
        raise InputError([Diagnostic("--server: a vCenter is reached over https://", hint="--server "
                                     "https://vcenter.example.com")])
    if parts.username is not None or parts.password is not None:
        raise InputError([Diagnostic("--server: no user or password in the URL (give --user; the password "
                                     "from the prompt, $GPUADMIN_VCENTER_PASSWORD or --password-file)")])
    return VcenterAddress(host, port, parts.path.rstrip("/") or "/sdk")


@dataclass(frozen=True)
class VcenterConnection:
    """A logged-in session with one vCenter, and how the state names it."""

    service: Any  # pyVmomi's vim.ServiceInstance (typed Any: pyVmomi is imported lazily, inside `connect_vcenter`)
    user: str
    server: str
    insecure: bool

    def binding(self) -> ClusterBinding:
        return ClusterBinding(kind="vcenter", context=self.user, server=self.server, insecure=self.insecure)

    def close(self) -> None:
        try:
            _pyvim().Disconnect(self.service)
        except Exception:
            return


def _pyvmomi() -> tuple[Any, Any]:
    """pyVmomi's `vim` and `vmodl` namespaces, loaded on first use (typed Any: their types are made at run time)."""
    from pyVmomi import vim, vmodl

    return vim, vmodl


def _pyvim() -> Any:
    """pyVmomi's connection helpers (SmartConnect, Disconnect), loaded on first use."""
    from pyVim import connect

    return connect


def connect_vcenter(server: str, user: str, password: str, *, insecure: bool = False) -> VcenterConnection:
    """Log in to the vCenter at `server`. Refused login: LoginRefused (a ClusterForbidden, exit 4); no answer, or
    a certificate that does not verify: ClusterUnreachable (exit 3), saying so. The password appears in no
    message."""
    import http.client

    vim, vmodl = _pyvmomi()
    address = parse_server(server)
    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        service = _pyvim().SmartConnect(host=address.host, port=address.port, path=address.path, user=user,
                                        pwd=password, sslContext=context, httpConnectionTimeout=CONNECT_TIMEOUT_S,
                                        connectionPoolTimeout=-1)
    except vim.fault.InvalidLogin:
        raise LoginRefused(f"vCenter {address.server} refused the login of {user!r}: wrong user or password")\
            from None
    except ssl.SSLCertVerificationError as bad:
        raise ClusterUnreachable(
            f"vCenter {address.server}: its TLS certificate does not verify ({_short(bad.verify_message)}): add "
            "its CA to the system's trust store, or give --insecure to skip the check (recorded in the "
            "binding and shown)") from None
    except (OSError, http.client.HTTPException, vmodl.MethodFault) as failed:
        raise ClusterUnreachable(f"vCenter {address.server}: {type(failed).__name__}: {_short(str(failed))}")\
            from None
    return VcenterConnection(service, user, address.server, insecure)


def connect_vcenter_bound(binding: ClusterBinding, password: str) -> VcenterConnection:
    """The bound state's vCenter, with the user and TLS setting it was bound with."""
    if binding.kind != "vcenter":
        raise ClusterError(f"this state is bound to a {binding.kind} cluster, not a vCenter")
    return connect_vcenter(binding.server, binding.context, password, insecure=binding.insecure)


def _short(text: str | None) -> str:
    text = text or "no answer"
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + "…"


@dataclass(frozen=True)
class PciGpu:
    """An NVIDIA display or 3D controller of a host (`hardware.pciDevice[]`)."""

    pci_id: str  # 0000:17:00.0
    device_id: int  # 0x20B2
    name: str


@dataclass(frozen=True)
class GraphicsDevice:
    """A host's graphics device (`config.graphicsInfo[]`): its type and the VMs (by moId) that use it."""

    pci_id: str
    kind: str  # shared / sharedDirect (NVIDIA vGPU) / direct (passthrough) / basic
    memory_kib: int
    vms: tuple[str, ...]


@dataclass(frozen=True)
class OfferedDeviceGroup:
    """A vendor device group a host offers (`RetrieveVendorDeviceGroupInfo`): its name, and how many devices."""

    name: str
    size: int


@dataclass(frozen=True)
class HostRead:
    moid: str
    name: str
    cluster: str | None  # the ClusterComputeResource's name; None for a standalone host
    version: str | None  # summary.config.product.version: "8.0.1"
    cpus: int | None
    memory_bytes: int | None
    maintenance: bool
    connection: str  # connected / disconnected / notResponding
    gpus: tuple[PciGpu, ...]
    nvswitches: int
    graphics: tuple[GraphicsDevice, ...]
    passthrough: frozenset[str]  # the PCI ids enabled for DirectPath I/O
    vgpu_types: tuple[str, ...]  # config.sharedPassthruGpuTypes
    vmotion: VmotionLink  # the speed of its vMotion link, or why it is unknown
    # the vendor device groups the host offers; None where vCenter does not report them (before vSphere 8)
    device_groups: tuple[OfferedDeviceGroup, ...] | None = None


@dataclass(frozen=True)
class VmotionLink:
    """A host's vMotion link: `mbps` (Mbit/s, vSphere's `linkSpeed.speedMb`), or None and `unknown`, why not."""

    mbps: int | None
    unknown: str = ""


@dataclass(frozen=True)
class HeldDeviceGroup:
    """A vendor device group a VM holds (`config.deviceGroups`), with its member devices (those whose
    `deviceGroupInfo.groupInstanceKey` is the group's): their vGPU types and passthrough PCI ids."""

    name: str
    vgpus: int = 0
    passthrough: tuple[str, ...] = ()
    other: int = 0  # members that are neither (a NIC of a GPU-NIC group)


@dataclass(frozen=True)
class VmRead:
    moid: str
    name: str
    host: str | None  # the host's moId
    version: str | None  # config.version: "vmx-20"
    power: str | None
    vgpus: tuple[str, ...]  # the vGPU type of each VirtualPCIPassthrough with a vmiop backing
    passthrough: tuple[str, ...]  # the PCI id of each VirtualPCIPassthrough with a device backing
    # the vendor device groups it holds; None where vCenter does not report them (before vSphere 8)
    device_groups: tuple[HeldDeviceGroup, ...] | None = None
    vgpus_outside_groups: int = 0  # its vGPU devices in no device group


@dataclass
class VcenterSnapshot:
    hosts: list[HostRead] = field(default_factory=list)
    vms: list[VmRead] = field(default_factory=list)
    versions: dict[tuple[str, str], str] = field(default_factory=dict)  # ("vm", moId) → config.changeVersion


def read_vcenter(connection: VcenterConnection) -> VcenterSnapshot:
    """Every host and VM of the vCenter, with the properties gpuadmin reads. Failures: ClusterUnreachable."""
    import http.client

    vim, vmodl = _pyvmomi()
    service = connection.service
    try:
        content = service.RetrieveContent()
        clusters = {moid: str(props.get("name", "")) for moid, props, _ in
                    _collect(content, vim.ClusterComputeResource, ["name"])}
        hosts = [_host(moid, props, clusters, _offered_device_groups(props))
                 for moid, props, _ in _collect_newer(content, vim.HostSystem, HOST_PATHS, ASSIGNABLE_HARDWARE_PATH)]
        vm_props = _collect_newer(content, vim.VirtualMachine, VM_PATHS, DEVICE_GROUPS_PATH)
    except vim.fault.NoPermission as refused:
        raise ClusterForbidden(f"vCenter {connection.server}: {_short(refused.msg)} (docs/vsphere.md lists the "
                               "privileges gpuadmin needs)") from None
    except (OSError, http.client.HTTPException, vmodl.MethodFault) as failed:
        raise ClusterUnreachable(f"vCenter {connection.server}: {type(failed).__name__}: {_short(str(failed))}")\
            from None
    snapshot = VcenterSnapshot(hosts=hosts)
    for moid, props, missing in vm_props:
        if props.get("config.template") is True:
            continue  # a template runs nowhere and holds no GPU
        snapshot.vms.append(_vm(moid, props, DEVICE_GROUPS_PATH not in missing))
        change = props.get("config.changeVersion")
        if isinstance(change, str):
            snapshot.versions[("vm", moid)] = change
    return snapshot


def _collect_newer(content: Any, kind: Any, paths: list[str],
                   newer: str) -> list[tuple[str, dict[str, Any], frozenset[str]]]:
    """As `_collect`, with the property `newer` as well where vCenter knows it: one that does not refuses the whole
    request (InvalidProperty), so the objects are read again without it, `newer` missing from each."""
    _, vmodl = _pyvmomi()
    try:
        return _collect(content, kind, [*paths, newer])
    except vmodl.query.InvalidProperty:
        return [(moid, props, frozenset({newer})) for moid, props, _ in _collect(content, kind, paths)]


def _offered_device_groups(props: dict[str, Any]) -> tuple[OfferedDeviceGroup, ...] | None:
    """The vendor device groups the host's assignable-hardware manager offers (vSphere 8's
    `RetrieveVendorDeviceGroupInfo`); None where the host has no such manager or vCenter no such method."""
    _, vmodl = _pyvmomi()
    manager = props.get(ASSIGNABLE_HARDWARE_PATH)
    if manager is None:
        return None
    try:
        offered = manager.RetrieveVendorDeviceGroupInfo() or ()
    except (vmodl.fault.MethodNotFound, vmodl.fault.NotSupported):
        return None
    return tuple(OfferedDeviceGroup(str(getattr(group, "deviceGroupName", "") or ""),
                                    len(getattr(group, "componentDeviceInfo", None) or ()))
                 for group in offered)


def _collect(content: Any, kind: Any, paths: list[str]) -> list[tuple[str, dict[str, Any], frozenset[str]]]:
    """(moId, {path: value}, the paths vCenter did not give) of every object of `kind`, through one container view,
    page by page."""
    vim, vmodl = _pyvmomi()
    collector = vmodl.query.PropertyCollector
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        spec = collector.FilterSpec(
            objectSet=[collector.ObjectSpec(obj=view, skip=True, selectSet=[
                collector.TraversalSpec(name="view", path="view", skip=False, type=vim.view.ContainerView)])],
            propSet=[collector.PropertySpec(type=kind, pathSet=paths)])
        pc = content.propertyCollector
        result = pc.RetrievePropertiesEx([spec], collector.RetrieveOptions(maxObjects=PAGE_SIZE))
        found: list[tuple[str, dict[str, Any], frozenset[str]]] = []
        while result is not None:
            for obj in result.objects or ():
                found.append((str(obj.obj._moId), {p.name: p.val for p in obj.propSet or ()},
                              frozenset(str(m.path) for m in obj.missingSet or ())))
            result = pc.ContinueRetrievePropertiesEx(result.token) if result.token else None
        return found
    finally:
        view.Destroy()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _nvidia_class(device: Any) -> int | None:
    """The PCI class of an NVIDIA device of `hardware.pciDevice[]` (a GPU's, an NVSwitch's), else None."""
    vendor, device_id, klass = (_int(getattr(device, a, None)) for a in ("vendorId", "deviceId", "classId"))
    if vendor is None or device_id is None or klass is None or vendor & 0xFFFF != NVIDIA_VENDOR:
        return None
    return klass & 0xFFFF


def nvidia_gpus(devices: Any) -> tuple[PciGpu, ...]:
    """A host's GPUs among its `hardware.pciDevice[]`, in PCI address order: gpuadmin's GPU index is the position
    here (the driver's and nvidia-smi's order), for the read and for the executors that name a GPU by index."""
    gpus = [PciGpu(str(getattr(device, "id", "")), int(device.deviceId) & 0xFFFF,
                   str(getattr(device, "deviceName", "") or ""))
            for device in devices or () if _nvidia_class(device) in DISPLAY_CLASSES]
    return tuple(sorted(gpus, key=lambda g: g.pci_id))


def _host(moid: str, props: dict[str, Any], clusters: dict[str, str],
          device_groups: tuple[OfferedDeviceGroup, ...] | None) -> HostRead:
    parent = props.get("parent")
    parent_id = str(getattr(parent, "_moId", "")) if parent is not None else ""
    devices = props.get("hardware.pciDevice") or ()
    gpus = nvidia_gpus(devices)
    nvswitches = sum(1 for device in devices if _nvidia_class(device) == BRIDGE_CLASS)
    graphics = tuple(
        GraphicsDevice(str(getattr(g, "pciId", "")), str(getattr(g, "graphicsType", "")),
                       _int(getattr(g, "memorySizeInKB", None)) or 0,
                       tuple(str(getattr(vm, "_moId", "")) for vm in getattr(g, "vm", None) or ()))
        for g in props.get("config.graphicsInfo") or ())
    passthrough = frozenset(str(getattr(p, "id", "")) for p in props.get("config.pciPassthruInfo") or ()
                            if getattr(p, "passthruEnabled", False) is True)
    host = props.get("runtime.connectionState")
    return HostRead(
        moid=moid, name=str(props.get("name", "")), cluster=clusters.get(parent_id),
        version=_text(props.get("summary.config.product.version")),
        cpus=_int(props.get("summary.hardware.numCpuThreads")),
        memory_bytes=_int(props.get("summary.hardware.memorySize")),
        maintenance=props.get("runtime.inMaintenanceMode") is True,
        connection=str(host) if host is not None else "unknown",
        gpus=gpus, nvswitches=nvswitches, graphics=graphics,
        passthrough=passthrough,
        vgpu_types=tuple(t for t in props.get("config.sharedPassthruGpuTypes") or () if isinstance(t, str)),
        vmotion=vmotion_link(props.get("config.network"), props.get("config.virtualNicManagerInfo.netConfig")),
        device_groups=device_groups)


def _key(link: Any) -> str:
    """A linked object's key: pyVmomi gives a link (`selectedVnic`, a port group's `vswitch`) as the key itself."""
    return link if isinstance(link, str) else str(getattr(link, "key", "") or "")


def vmotion_link(network: Any, net_configs: Any) -> VmotionLink:
    """The speed of a host's vMotion link, from its network config (`config.network`) and the VMkernel NICs
    selected for vMotion (`config.virtualNicManagerInfo.netConfig`, nicType `vmotion`; what
    `HostVirtualNicManager.QueryNetConfig("vmotion")` answers). Each selected NIC's port group leads to its
    uplinks: on a standard switch the port group's active NICs (`computedPolicy.nicTeaming.nicOrder.activeNic`),
    else its switch's physical NICs; on a distributed switch (`spec.distributedVirtualPort`) the host's uplinks of
    that switch (`proxySwitch[].pnic`: which of them the port group makes active is the distributed port group's,
    not read). A VMkernel NIC sends on one uplink of its team at a time, so its speed is its slowest active
    uplink's that has a link; of several vMotion NICs, the slowest is taken (multi-NIC vMotion spreads one
    migration over them: the speed is then a lower bound, and the stun estimate made with it an upper bound)."""
    selected = [_key(v) for c in net_configs or () if getattr(c, "nicType", None) == "vmotion"
                for v in getattr(c, "selectedVnic", None) or ()]
    if not selected:
        return VmotionLink(None, "no VMkernel NIC is enabled for vMotion")
    candidates = {_key(v): v for c in net_configs or () for v in getattr(c, "candidateVnic", None) or ()}
    vnics = {str(getattr(v, "device", "")): v for v in getattr(network, "vnic", None) or ()}
    pnics = list(getattr(network, "pnic", None) or ())
    speeds: list[int] = []
    why = ""
    for key in selected:
        candidate = candidates.get(key)
        device = str(getattr(candidate, "device", "") or "")
        vnic = vnics.get(device, candidate)
        if vnic is None:
            why = f"vMotion NIC {printable(key, 40)} is none of the host's VMkernel NICs"
            continue
        uplinks = _uplinks(network, vnic)
        up = [_int(getattr(getattr(p, "linkSpeed", None), "speedMb", None)) for p in pnics
              if _key(p) in uplinks or str(getattr(p, "device", "")) in uplinks]
        known = [speed for speed in up if speed is not None and speed > 0]  # no linkSpeed: the link is down
        if known:
            speeds.append(min(known))
        else:
            why = f"vMotion NIC {printable(device or key, 40)}: no uplink with a link"
    return VmotionLink(min(speeds)) if speeds else VmotionLink(None, why)


def _uplinks(network: Any, vnic: Any) -> set[str]:
    """The keys or device names of the physical NICs a VMkernel NIC may send on (`vmotion_link`)."""
    spec = getattr(vnic, "spec", None)
    port = getattr(spec, "distributedVirtualPort", None)
    if port is not None:
        uuid = getattr(port, "switchUuid", None)
        return {_key(p) for s in getattr(network, "proxySwitch", None) or () if getattr(s, "dvsUuid", None) == uuid
                for p in getattr(s, "pnic", None) or ()}
    name = getattr(vnic, "portgroup", None) or getattr(spec, "portgroup", None)
    group = next((g for g in getattr(network, "portgroup", None) or ()
                  if getattr(getattr(g, "spec", None), "name", None) == name), None)
    if group is None:
        return set()
    teaming = getattr(getattr(group, "computedPolicy", None), "nicTeaming", None)
    active = getattr(getattr(teaming, "nicOrder", None), "activeNic", None)
    if active:
        return {str(a) for a in active}
    switch = _key(getattr(group, "vswitch", None))
    return {_key(p) for s in getattr(network, "vswitch", None) or () if _key(s) == switch
            for p in getattr(s, "pnic", None) or ()}


def _vm(moid: str, props: dict[str, Any], groups_reported: bool) -> VmRead:
    vim, _ = _pyvmomi()
    vgpus: list[str] = []
    passthrough: list[str] = []
    members: dict[int, list[str | None]] = {}  # groupInstanceKey → each member's PCI id ("" for a vGPU, None other)
    for device in props.get("config.hardware.device") or ():
        member: str | None = None
        backing = getattr(device, "backing", None)
        if isinstance(device, vim.vm.device.VirtualPCIPassthrough):
            if isinstance(backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo):
                vgpus.append(str(backing.vgpu or ""))
                member = ""
            elif isinstance(backing, vim.vm.device.VirtualPCIPassthrough.DeviceBackingInfo):
                passthrough.append(str(backing.id or ""))
                member = str(backing.id or "")
        key = _int(getattr(getattr(device, "deviceGroupInfo", None), "groupInstanceKey", None))
        if key is not None:
            members.setdefault(key, []).append(member)
    host = props.get("runtime.host")
    power = props.get("runtime.powerState")
    groups = _held_device_groups(props.get(DEVICE_GROUPS_PATH), members) if groups_reported else None
    grouped_vgpus = sum(m == "" for key, listed in members.items() for m in listed)
    return VmRead(moid=moid, name=str(props.get("name", "")),
                  host=str(getattr(host, "_moId", "")) if host is not None else None,
                  version=_text(props.get("config.version")), power=str(power) if power is not None else None,
                  vgpus=tuple(vgpus), passthrough=tuple(passthrough), device_groups=groups,
                  vgpus_outside_groups=len(vgpus) - grouped_vgpus)


def _held_device_groups(value: Any, members: dict[int, list[str | None]]) -> tuple[HeldDeviceGroup, ...]:
    """The vendor device groups of a VM's `config.deviceGroups` (unset: none), each with its member devices."""
    held: list[HeldDeviceGroup] = []
    for group in getattr(value, "deviceGroup", None) or ():
        key = _int(getattr(group, "groupInstanceKey", None))
        listed = members.get(key, []) if key is not None else []
        held.append(HeldDeviceGroup(name=str(getattr(group, "deviceGroupName", "") or ""),
                                    vgpus=sum(m == "" for m in listed),
                                    passthrough=tuple(m for m in listed if m),
                                    other=sum(m is None for m in listed)))
    return tuple(held)


PASSWORD_VARIABLE = "GPUADMIN_VCENTER_PASSWORD"


def vcenter_password(user: str, server: str, password_file: Path | None = None,
                     prompt: Callable[[str], str] | None = None) -> str:
    """The vCenter password: from `password_file` (which only its owner may read: mode 0600 or 0400), else
    $GPUADMIN_VCENTER_PASSWORD, else `prompt` (the CLI's getpass on a terminal). It is never stored, journaled
    nor shown; an InputError (exit 2) when there is none."""
    if password_file is not None:
        try:
            status = password_file.stat()
            if not stat.S_ISREG(status.st_mode):
                raise InputError([Diagnostic("the password file is not a regular file", file=str(password_file))])
            if status.st_mode & 0o077:
                raise InputError([Diagnostic(
                    f"the password file may be read by others (mode {stat.S_IMODE(status.st_mode):04o})",
                    file=str(password_file), hint=f"chmod 600 {password_file}")])
            lines = password_file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as unreadable:
            raise InputError([Diagnostic(f"the password file cannot be read ({type(unreadable).__name__})",
                                         file=str(password_file))]) from None
        if not lines or not lines[0]:
            raise InputError([Diagnostic("the password file is empty: its first line is the password",
                                         file=str(password_file))])
        return lines[0]
    given = os.environ.get(PASSWORD_VARIABLE, "")
    if given:
        return given
    if prompt is not None:
        typed = prompt(f"vCenter password for {user} at {server}: ")
        if typed:
            return typed
    raise InputError([Diagnostic(f"no password for {user} at {server}",
                                 hint=f"type it at the prompt, or set {PASSWORD_VARIABLE}, or give "
                                      "--password-file FILE (mode 0600)")])
