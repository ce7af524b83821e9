"""The pure parts of the vCenter binding, which need no simulator: vCenter's ESXi version as the inventory writes
it, the server URL's checks, and when a VM's device group can be told from what was read (the rest is tested
against the simulator: test_vcenter_read.py, test_vcenter_device_groups.py)."""

from __future__ import annotations

import pytest

from gpuadmin.cluster.vcenter import (
    GraphicsDevice,
    HeldDeviceGroup,
    HostRead,
    OfferedDeviceGroup,
    PciGpu,
    VcenterAddress,
    VcenterSnapshot,
    VmotionLink,
    VmRead,
    parse_server,
)
from gpuadmin.cluster.vcenter_inventory import esxi_version, vcenter_inventory
from gpuadmin.errors import InputError


@pytest.mark.parametrize(("reported", "written"), [
    ("8.0.1", "8.0U1"), ("8.0.3", "8.0U3"), ("7.0.3", "7.0U3"), ("8.0.0", "8.0"), ("9.0.0", "9.0"),
    ("8.0", None), ("8.0.1a", None), ("", None), (None, None), ("8.0.1\u202e", None)])
def test_the_esxi_version_is_written_as_the_inventory_writes_it(reported: str | None, written: str | None) -> None:
    assert esxi_version(reported) == written


@pytest.mark.parametrize(("given", "address"), [
    ("vc.example.com", VcenterAddress("vc.example.com", 443, "/sdk")),
    ("https://vc.example.com:8443", VcenterAddress("vc.example.com", 8443, "/sdk")),
    ("https://127.0.0.1:18443/sdk/", VcenterAddress("127.0.0.1", 18443, "/sdk")),
    ("https://[::1]:443", VcenterAddress("::1", 443, "/sdk"))])
def test_a_server_is_an_https_address(given: str, address: VcenterAddress) -> None:
    assert parse_server(given) == address
    assert address.server.startswith("https://") and address.server.endswith(f":{address.port}")


@pytest.mark.parametrize("given", ["http://vc.example.com", "https://admin:secret@vc.example.com", "https://",
                                   "https://vc.example.com:99999"])
def test_anything_else_is_bad_input_that_never_repeats_a_password(given: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_server(given)
    assert "secret" not in str(refused.value)


def _hgx(vms: list[VmRead], named: dict[int, tuple[str, ...]]) -> VcenterSnapshot:
    """An HGX host of 8 A100s (as read: gpuadmin's own dataclasses, no pyVmomi) whose GPU i names the VMs
    `named[i]`, offering NVLink groups of 2 and 4, with `vms` on it."""
    pci = [PciGpu(f"0000:{0x17 + 0x10 * i:02x}:00.0", 0x20B2, "A100") for i in range(8)]
    host = HostRead(moid="host-1", name="esx-hgx", cluster=None, version="8.0.1", cpus=128, memory_bytes=2**40,
                    maintenance=False, connection="connected", gpus=tuple(pci), nvswitches=6,
                    graphics=tuple(GraphicsDevice(p.pci_id, "sharedDirect", 80 << 20, named.get(i, ()))
                                   for i, p in enumerate(pci)),
                    passthrough=frozenset(), vgpu_types=("grid_a100dx-80c",), vmotion=VmotionLink(100000),
                    device_groups=(OfferedDeviceGroup("Nvidia:2@grid_a100dx-80c%NVLink", 2),
                                   OfferedDeviceGroup("Nvidia:4@grid_a100dx-80c%NVLink", 4)))
    return VcenterSnapshot(hosts=[host], vms=vms)


def _vm(moid: str, vgpus: int, groups: tuple[HeldDeviceGroup, ...] | None, outside: int = 0,
        power: str = "poweredOn") -> VmRead:
    return VmRead(moid=moid, name=moid, host="host-1", version="vmx-20", power=power,
                  vgpus=("grid_a100dx-80c",) * vgpus, passthrough=(), device_groups=groups,
                  vgpus_outside_groups=outside)


PAIR = HeldDeviceGroup("Nvidia:2@grid_a100dx-80c%NVLink", vgpus=2)


def test_a_vms_device_group_is_known_only_where_its_gpus_can_be_told() -> None:
    snapshot = _hgx([
        _vm("held", 2, (PAIR,)),
        _vm("off", 2, (PAIR,), power="poweredOff"),  # ESXi names no GPU for it
        _vm("two", 4, (PAIR, PAIR)),
        _vm("mixed", 3, (PAIR,), outside=1),
        _vm("short", 2, (HeldDeviceGroup("Nvidia:4@grid_a100dx-80c%NVLink", vgpus=4),)),
        _vm("none", 1, ()),
        _vm("older", 1, None)],
        {0: ("held",), 1: ("held",), 2: ("two",), 3: ("two",), 4: ("mixed",), 5: ("mixed",), 6: ("short", "none"),
         7: ("short", "older")})
    made = vcenter_inventory(snapshot, "c")
    node = made.inventory.nodes[0]
    assert [(g.name, g.gpus) for g in node.device_groups] == [("dg-0-1", [0, 1])]
    assert {vm.name: vm.device_group for vm in node.vms if vm.device_group} == {"held": "dg-0-1"}
    assert made.groups_known == {"esx-hgx": frozenset({"held", "none"})}, "the others keep the state's"
    assert {(f.name, f.message) for f in made.findings} >= {
        ("two", "device groups not read: it holds 2, and gpuadmin gives a VM one"),
        ("mixed", "device group not read: the VM has vGPUs outside its device group, so which GPUs the group "
                  "holds cannot be told"),
        ("short", "device group not read: its 4 GPU device(s) sit on 2 GPU(s) of the host")}


def test_a_hostile_or_overlong_group_name_is_a_finding_shown_without_its_controls() -> None:
    hostile = HeldDeviceGroup("Nvidia:2@grid\u2028a100dx-80c%NVLink", vgpus=2)
    made = vcenter_inventory(_hgx([_vm("a", 2, (hostile,)), _vm("b", 2, (HeldDeviceGroup("N" * 254, vgpus=2),))],
                                  {0: ("a",), 1: ("a",), 2: ("b",), 3: ("b",)}), "c")
    assert made.inventory.nodes[0].device_groups == []
    assert {(f.name, f.message) for f in made.findings} == {
        ("a", "device group not read: a name with control characters"),
        ("b", "device group not read: a name of 254 characters (more than 253)")}
