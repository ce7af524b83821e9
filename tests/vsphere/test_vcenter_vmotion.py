"""The vMotion link speed read from vCenter (issue 24 item 3: "the inventory gains the vMotion link speed"), and
the evacuation's stun estimate made with it on a vCenter-bound state, against VMware's simulator: each seeded
host's vMotion VMkernel NIC, port group, switch and uplinks are ours (tests/vsphere/vcsim/network.go, the seed's
`vmotion_mb`); the property collector that serves them is the simulator's."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace as Obj
from typing import Any

import yaml

from gpuadmin.cluster.vcenter import VmotionLink, vmotion_link
from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import AI_DEV_02_OFF, add_host, find, session
from tests.vsphere.vcsim import Simulator

SAMPLE = Path(__file__).resolve().parents[2] / "sample-inventories" / "vsphere-hgx.yaml"


def _bound(vcsim: Simulator, state: Path) -> tuple[dict[str, str], Any]:
    env = {**os.environ, "GPUADMIN_VCENTER_PASSWORD": vcsim.password, "KUBECONFIG": "/nonexistent"}
    done = gpuadmin("--state", state, "init", "--from-cluster", "vcenter", "--server", vcsim.server, "--user",
                    vcsim.user, "--insecure", "-o", "json", env=env)
    assert done.code == ExitCode.OK, done.err
    return env, json.loads(done.out)


def _restore(state: Path, env: dict[str, str], host: str, vsphere: dict[str, Any],
             vms: dict[str, dict[str, Any]] | None = None) -> None:
    """The state's host given `vsphere` facts and its VMs `vms` facts (a restore, model only: none is vCenter's)."""
    with Store.open(state) as store:
        node = store.load().nodes[host].model_dump(mode="json", exclude_none=True)
    node["vsphere"].update(vsphere)
    for vm in node.get("vms", []):
        vm.update((vms or {}).get(vm["name"], {}))
    changes = state.parent / "changes.yaml"
    changes.write_text(yaml.safe_dump({"changes": [{"op": "restore", "kind": "node", "name": host, "node": node}]}),
                       encoding="utf-8")
    done = gpuadmin("--state", state, "apply", "-f", changes, "--yes", env=env)
    assert done.code == ExitCode.OK, done.err


def test_each_hosts_vmotion_link_speed_is_read_and_a_host_without_a_vmotion_nic_is_unknown_with_a_finding(
        vcsim: Simulator, tmp_path: Path) -> None:
    with session(vcsim) as service:
        add_host(service, "vdi", "esx-vdi-09")  # the simulator's ESXi as added: its vmk0 is not enabled for vMotion
    state = tmp_path / "state"
    _, made = _bound(vcsim, state)
    sample = yaml.safe_load(SAMPLE.read_text(encoding="utf-8"))
    cluster_speed = {c["name"]: c.get("vmotion_gbps") for c in sample["vsphere_clusters"]}
    expected = {n["name"]: n["vsphere"].get("vmotion_gbps", cluster_speed[n["labels"]["vsphere.cluster"]])
                for n in sample["nodes"]}
    with Store.open(state) as store:
        nodes = store.load().nodes
    read = {name: node.vsphere.vmotion_gbps for name, node in nodes.items() if node.vsphere is not None}
    assert read == {**expected, "esx-vdi-09": None}, "the seed's uplinks, as the sample writes the speeds"
    assert read["esx-hgx-01"] == 100 and read["esx-legacy-01"] == 25
    findings = [(f["kind"], f["name"], f["message"]) for f in made["findings"]]
    assert findings == [("host", "esx-vdi-09", "vMotion link speed unknown: no VMkernel NIC is enabled for vMotion; "
                                               "a vMotion's stun time cannot be estimated"),
                        (AI_DEV_02_OFF.kind, AI_DEV_02_OFF.name, AI_DEV_02_OFF.message)]


def test_a_vmotion_speed_the_state_holds_otherwise_drifts_and_a_sync_brings_vcenters_in_keeping_the_tolerances(
        vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env, _ = _bound(vcsim, state)
    _restore(state, env, "esx-vdi-01", {"vmotion_gbps": 10, "tolerated_stun_s": 30},
             {"ws-cad-01": {"tolerated_stun_s": 45}})
    diff = gpuadmin("--state", state, "diff", "-o", "json", env=env)
    assert diff.code == ExitCode.REFUSED, diff.err
    rows = json.loads(diff.out)["drift"]
    assert [(r["name"], r["field"]) for r in rows] == [("esx-vdi-01", "vsphere.vmotion_gbps")], rows
    assert (rows[0]["state"], rows[0]["cluster"]) == (10, 25)
    synced = gpuadmin("--state", state, "sync", env=env)
    assert synced.code == ExitCode.OK, synced.err
    with Store.open(state) as store:
        node = store.load().nodes["esx-vdi-01"]
    assert node.vsphere is not None and (node.vsphere.vmotion_gbps, node.vsphere.tolerated_stun_s) == (25, 30)
    assert {vm.name: vm.tolerated_stun_s for vm in node.vms}["ws-cad-01"] == 45, "gpuadmin's own: vCenter has none"
    assert gpuadmin("--state", state, "diff", env=env).code == ExitCode.OK


def test_the_evacuation_estimates_each_vmotions_stun_from_the_link_read(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env, _ = _bound(vcsim, state)
    plan = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--dry-run", "-o", "json", env=env)
    assert plan.code == ExitCode.OK, plan.err
    moves = {m["vm"]: m for m in json.loads(plan.out)["evacuations"]["esx-vdi-01"]}
    assert len(moves) == 13 and all(m["link_gbps"] == 25 and m["stun_s"] is not None for m in moves.values())
    cad = moves["ws-cad-01"]  # 48 GiB: beyond VMware's table (32 GB), extrapolated, then scaled to 25 Gbit/s
    assert (cad["framebuffer_gib"], cad["stun_s"], cad["stun_confidence"]) == (48, 22.4, "uncertain")
    text = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--dry-run", env=env)
    assert "ws-cad-01: vMotion to esx-vdi-03" in text.out and "48 GiB at 25 Gbit/s" in text.out, text.out


def test_a_vmotion_stunning_a_vm_longer_than_it_tolerates_is_refused_and_one_within_it_passes(
        vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env, _ = _bound(vcsim, state)
    _restore(state, env, "esx-vdi-01", {}, {"ws-cad-01": {"tolerated_stun_s": 45}})
    within = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--dry-run", env=env)
    assert within.code == ExitCode.OK, within.err
    assert "stun ~22.4 s (48 GiB at 25 Gbit/s, uncertain), tolerates 45 s" in within.out, within.out

    _restore(state, env, "esx-vdi-01", {}, {"ws-cad-01": {"tolerated_stun_s": 10}})
    refused = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--yes", env=env)
    assert refused.code == ExitCode.REFUSED, refused.err
    assert "vsphere.stun-time" in refused.err + refused.out and "ws-cad-01" in refused.err + refused.out
    with session(vcsim) as service:  # nothing ran on vCenter
        assert find(service, "VirtualMachine", "ws-cad-01").runtime.host.name == "esx-vdi-01"
        assert find(service, "HostSystem", "esx-vdi-01").runtime.inMaintenanceMode is False


def _nic(device: str, mbps: int | None) -> Obj:
    return Obj(key=f"key-vim.host.PhysicalNic-{device}", device=device,
               linkSpeed=Obj(speedMb=mbps, duplex=True) if mbps is not None else None)


def _network(active: list[str], pnics: list[Obj], **vnic: Any) -> Obj:
    team = Obj(nicOrder=Obj(activeNic=active))
    return Obj(vnic=[Obj(device="vmk1", portgroup="vMotion", spec=Obj(portgroup="vMotion", **vnic))],
               portgroup=[Obj(spec=Obj(name="vMotion"), vswitch="key-vim.host.VirtualSwitch-vSwitch1",
                              computedPolicy=Obj(nicTeaming=team))],
               vswitch=[Obj(key="key-vim.host.VirtualSwitch-vSwitch1", pnic=[p.key for p in pnics])],
               pnic=pnics, proxySwitch=[Obj(dvsUuid="dvs-1", pnic=["key-vim.host.PhysicalNic-vmnic7"])])


SELECTED = [Obj(nicType="management", selectedVnic=["management.vmk0"], candidateVnic=[]),
            Obj(nicType="vmotion", selectedVnic=["vmotion.vmk1"], candidateVnic=[Obj(key="vmotion.vmk1",
                                                                                      device="vmk1")])]


def test_the_vmotion_nics_speed_is_its_slowest_active_uplink_with_a_link() -> None:
    """What the simulator's seed does not vary: a team of unequal uplinks, a standby one, one without a link, a
    distributed switch, no NIC selected for vMotion (pyVmomi objects, as their attribute names are)."""
    nics = [_nic("vmnic2", 25000), _nic("vmnic3", 10000), _nic("vmnic4", 1000), _nic("vmnic5", None),
            _nic("vmnic7", 100000)]
    assert vmotion_link(_network(["vmnic2", "vmnic3"], nics), SELECTED) == VmotionLink(10000)
    assert vmotion_link(_network(["vmnic2"], nics), SELECTED) == VmotionLink(25000), "vmnic3, vmnic4: standby"
    assert vmotion_link(_network(["vmnic2", "vmnic5"], nics), SELECTED) == VmotionLink(25000), "vmnic5: no link"
    assert vmotion_link(_network(["vmnic5"], nics), SELECTED) == VmotionLink(None, "vMotion NIC vmk1: no uplink "
                                                                                   "with a link")
    assert vmotion_link(_network([], nics), SELECTED) == VmotionLink(1000), "no order: the switch's uplinks"
    on_dvs = _network(["vmnic2"], nics, distributedVirtualPort=Obj(switchUuid="dvs-1"))
    assert vmotion_link(on_dvs, SELECTED) == VmotionLink(100000), "the host's uplinks of that distributed switch"
    assert vmotion_link(_network(["vmnic2"], nics), SELECTED[:1]) == \
        VmotionLink(None, "no VMkernel NIC is enabled for vMotion")
    assert vmotion_link(None, None) == VmotionLink(None, "no VMkernel NIC is enabled for vMotion")
    unknown = [Obj(nicType="vmotion", selectedVnic=["vmotion.vmk9"], candidateVnic=[])]
    assert vmotion_link(_network(["vmnic2"], nics), unknown) == \
        VmotionLink(None, "vMotion NIC vmotion.vmk9 is none of the host's VMkernel NICs")
