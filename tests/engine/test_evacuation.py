"""Host maintenance with evacuation (evacuate-host; drain on a vSphere host), planned on the vSphere sample.

The sample alone has no room for its hosts' VMs elsewhere (no second A40 host, no free device group of the
training VMs' board, no free passthrough GPU): there, every evacuation is refused VM by VM. With the spare hosts
of tests/engine/fixtures/vsphere-spare-hosts.yaml appended, the VDI, HGX and legacy hosts evacuate, and each
choice, stun estimate and refusal is checked against what the rules and VMware's table say.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuadmin.catalog import get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.evacuation import VmMove
from gpuadmin.engine.planner import Plan, plan
from gpuadmin.engine.rules import check
from gpuadmin.engine.rules.base import Touched
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory
from gpuadmin.store import load_inventory
from tests.engine.spare_hosts import add_spare_hosts

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample-inventories" / "vsphere-hgx.yaml"


def with_spares(tmp_path: Path, edit: Any = None) -> Inventory:
    """The vSphere sample with the spare hosts appended (and `edit` applied to the raw document), read by the
    real inventory loader."""
    raw = yaml.safe_load(SAMPLE.read_text(encoding="utf-8"))
    add_spare_hosts(raw)
    if edit is not None:
        edit(raw)
    path = tmp_path / "vsphere-spares.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return load_inventory(path)


def evacuate(inventory: Inventory, host: str) -> Plan:
    return plan(ClusterState.from_inventory(inventory), [ch.EvacuateHost(op="evacuate-host", node=host)])


def moves(result: Plan, host: str) -> dict[str, VmMove]:
    return {m.vm: m for m in result.view.evacuations[host]}


def where(move: VmMove) -> tuple[str | None, tuple[int, ...]]:
    return move.target, tuple(b for _, b in move.gpus)


def settled(result: Plan) -> None:
    """What the plan leaves passes every rule on every node it edits (the whole plan was judged, not each move)."""
    view = result.view
    nodes = {name for name, node in view.node_edits.items() if node is not None}
    touched = Touched(nodes=nodes, gpus={(n, g.index) for n in nodes for g in view.node(n).gpus},  # type: ignore[union-attr]
                      jobs=set(view.job_edits))
    assert check(view, touched) == []


# ------------------------------------------------------------------------------------------- the VDI host


def test_esx_vdi_01_evacuates_every_vgpu_vm_by_vmotion_keeping_the_most_room(tmp_path: Path) -> None:
    result = evacuate(with_spares(tmp_path), "esx-vdi-01")
    assert result.allowed, [v.message for v in result.violations]
    planned = moves(result, "esx-vdi-01")
    assert len(planned) == 13 and all(m.how == "vmotion" for m in planned.values())
    # the largest first; an empty GPU only where no carved one accepts the size (equal-size mode on 8.0U1):
    # the 12C pair fills esx-vdi-03's half-full GPU 0, the 8C six share one GPU of esx-vdi-04
    assert where(planned["ws-cad-01"]) == ("esx-vdi-03", (1,))
    assert {where(planned[vm]) for vm in ("vdi-11", "vdi-12")} == {("esx-vdi-03", (2,))}
    assert {where(planned[vm]) for vm in ("vdi-01", "vdi-02")} == {("esx-vdi-03", (0,))}
    assert {where(planned[vm]) for vm in ("vdi-03", "vdi-04")} == {("esx-vdi-03", (3,))}
    assert {where(planned[f"vdi-{i:02}"]) for i in range(5, 11)} == {("esx-vdi-04", (0,))}
    host = result.view.node("esx-vdi-01")
    assert host is not None and host.state == "draining" and host.vms == []
    assert not any(g.vgpus for g in host.gpus)
    assert result.vgpus_lost == 0  # every vGPU went along with its VM
    assert result.destructive and result.confirmation_token == "esx-vdi-01"
    settled(result)


def test_stun_estimates_follow_the_table_at_the_slower_link(tmp_path: Path) -> None:
    planned = moves(evacuate(with_spares(tmp_path), "esx-vdi-01"), "esx-vdi-01")
    eight = planned["vdi-05"]  # 8 GiB onto esx-vdi-04's 10 Gbit/s link: the table's own row
    assert (eight.link_gbps, eight.framebuffer_gib) == (10, 8)
    assert eight.stun is not None and (eight.stun.seconds, eight.stun.confidence) == (12, "verified")
    cad = planned["ws-cad-01"]  # 48 GiB at 25 Gbit/s: beyond the table's 32 GiB, extrapolated
    table = get_catalog().vsphere.vmotion_stun_times
    assert cad.stun == table.estimate(48, 25) and cad.stun is not None and cad.stun.confidence == "uncertain"
    assert cad.tolerated_stun_s == 45  # its own; the others get the vdi cluster's 30
    assert planned["vdi-01"].tolerated_stun_s == 30


def test_a_stun_above_the_tolerated_time_is_refused_naming_the_vm_and_the_rule(tmp_path: Path) -> None:
    def impatient(raw: dict[str, Any]) -> None:
        vdi = next(n for n in raw["nodes"] if n["name"] == "esx-vdi-01")
        next(v for v in vdi["vms"] if v["name"] == "ws-cad-01")["tolerated_stun_s"] = 10

    result = evacuate(with_spares(tmp_path, impatient), "esx-vdi-01")
    assert not result.allowed
    refused = [v for v in result.violations if v.rule == "vsphere.evacuation-room"]
    assert [v.target for v in refused] == ["node/esx-vdi-01"]
    message = refused[0].message
    assert message.startswith("VM ws-cad-01 on esx-vdi-01 has nowhere to go")
    # the reason is the stun rule's own message for each A40 host that had the room
    assert "esx-vdi-03: VM ws-cad-01's vMotion esx-vdi-01 → esx-vdi-03 would stun it about 22.4 s" in message
    assert "esx-vdi-04: VM ws-cad-01's vMotion esx-vdi-01 → esx-vdi-04 would stun it about 56.0 s" in message
    assert "(vsphere.stun-time)" in message
    assert moves(result, "esx-vdi-01")["ws-cad-01"].target is None


def without_the_spare(tmp_path: Path) -> Inventory:
    """The vSphere sample without its spare A40 host esx-vdi-03: no other host offers the A40's vGPU types."""
    raw = yaml.safe_load(SAMPLE.read_text(encoding="utf-8"))
    raw["nodes"] = [node for node in raw["nodes"] if node["name"] != "esx-vdi-03"]
    path = tmp_path / "no-spare.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return load_inventory(path)


def test_on_the_sample_esx_vdi_01_moves_every_vm_to_the_vdi_cluster_s_spare_host() -> None:
    result = evacuate(load_inventory(SAMPLE), "esx-vdi-01")
    assert result.allowed, [v.message for v in result.violations]
    planned = moves(result, "esx-vdi-01")
    assert len(planned) == 13 and {(m.how, m.target) for m in planned.values()} == {("vmotion", "esx-vdi-03")}


def test_without_the_spare_host_esx_vdi_01_has_no_room_and_each_vm_is_named(tmp_path: Path) -> None:
    result = evacuate(without_the_spare(tmp_path), "esx-vdi-01")
    assert not result.allowed
    refused = [v for v in result.violations if v.rule == "vsphere.evacuation-room"]
    assert len(refused) == 13
    vdi01 = next(v.message for v in refused if v.message.startswith("VM vdi-01 "))
    # the L40S host refuses the A40 type (the rule's words), the HGX hosts too
    assert "esx-vdi-02: vGPU type A40-12C for VM vdi-01 is not offered on L40S GPU 0 of esx-vdi-02" in vdi01
    assert "(vgpu.profile-exists" in vdi01 and "esx-hgx-01: " in vdi01
    assert result.view.node("esx-vdi-01") is not None  # nothing moved: the VMs stay listed where they are
    assert all(m.target is None for m in result.view.evacuations["esx-vdi-01"])


# ------------------------------------------------------------------------------------------- device groups


def test_an_hgx_host_powers_its_device_group_vms_off_and_on_in_whole_groups(tmp_path: Path) -> None:
    result = evacuate(with_spares(tmp_path), "esx-hgx-02")
    assert result.allowed, [v.message for v in result.violations]
    planned = moves(result, "esx-hgx-02")
    assert {vm: (m.how, m.target, m.group) for vm, m in planned.items()} == {
        "train-vm-02": ("cold", "esx-hgx-04", ("dg-a", "dg-a")),
        # dg-b and dg-c of esx-hgx-04 keep the same room: the tie goes to the lower GPU indexes
        "train-vm-03": ("cold", "esx-hgx-04", ("dg-b", "dg-b")),
    }
    assert all(m.stun is None for m in planned.values())  # powered off: no stun, no tolerance applies
    # the job inside the powered-off VM stops: preemptible, it is evicted and requeued
    assert result.effects.evicted == ["bert-ft-vm02"]
    target = result.view.node("esx-hgx-04")
    assert target is not None
    assert {v.name: v.device_group for v in target.vms} == {"train-vm-02": "dg-a", "train-vm-03": "dg-b"}
    settled(result)


def test_a_non_preemptible_job_in_a_powered_off_vm_blocks_the_maintenance(tmp_path: Path) -> None:
    def keep(raw: dict[str, Any]) -> None:
        next(j for j in raw["jobs"] if j["name"] == "bert-ft-vm02")["preemptible"] = False

    result = evacuate(with_spares(tmp_path, keep), "esx-hgx-02")
    # the VM is not powered off: it stays, and so does its job, which blocks the maintenance
    assert [(v.rule, v.message.split(":")[0]) for v in result.violations] == [
        ("node.drain-blocked", "draining esx-hgx-02 is blocked by 1 non-preemptible running job(s)"),
        ("vsphere.evacuation-room", "VM train-vm-02 on esx-hgx-02 has nowhere to go"),
    ]
    assert "it runs non-preemptible job(s) bert-ft-vm02" in result.violations[1].message
    assert moves(result, "esx-hgx-02")["train-vm-03"].target == "esx-hgx-04"  # the other VM still moves


def test_an_hgx_host_without_a_free_group_of_its_size_is_refused() -> None:
    result = evacuate(load_inventory(SAMPLE), "esx-hgx-02")
    refused = {v.message.split(" ")[1]: v.message for v in result.violations if v.rule == "vsphere.evacuation-room"}
    assert set(refused) == {"train-vm-02", "train-vm-03"}
    assert "esx-hgx-01: no device group of the same size" in refused["train-vm-02"]
    # esx-hgx-03 has groups of 4 and 2, but of the 40GB board: the 80GB type is not offered there
    assert "esx-hgx-03: vGPU type A100DX-80C for VM train-vm-02 is not offered" in refused["train-vm-02"]


# ------------------------------------------------------------------------------------------- passthrough


def test_a_passthrough_vm_is_powered_off_and_on_on_free_passthrough_gpus(tmp_path: Path) -> None:
    result = evacuate(with_spares(tmp_path), "esx-legacy-01")
    assert result.allowed, [v.message for v in result.violations]
    planned = moves(result, "esx-legacy-01")
    hpc = planned["hpc-vm-01"]
    assert (hpc.how, hpc.target, hpc.gpus, hpc.stun) == ("cold", "esx-legacy-02", ((0, 0), (1, 1)), None)
    assert next(iter(planned)) == "hpc-vm-01"  # whole GPUs first: the hardest to place chooses first
    target = result.view.node("esx-legacy-02")
    assert target is not None
    assert [(g.index, g.vm) for g in target.gpus if g.mode == "passthrough"] == [(0, "hpc-vm-01"), (1, "hpc-vm-01")]
    source = result.view.node("esx-legacy-01")
    assert source is not None and all(g.vm is None for g in source.gpus)
    # esx-legacy-01's own 25 Gbit/s link is not the one used: esx-legacy-02 has the cluster's 10
    assert {m.link_gbps for m in planned.values() if m.how == "vmotion"} == {10}
    assert result.destructive
    settled(result)


# ------------------------------------------------------------------------------------------- the op itself


def test_drain_on_a_vsphere_host_plans_the_same_evacuation(tmp_path: Path) -> None:
    inventory = with_spares(tmp_path)
    evacuated = evacuate(inventory, "esx-vdi-01")
    drained = plan(ClusterState.from_inventory(inventory), [ch.Drain(op="drain", node="esx-vdi-01")])
    assert [d.to_json() for d in drained.diff] == [d.to_json() for d in evacuated.diff]
    assert drained.view.evacuations == evacuated.view.evacuations


def test_evacuating_again_after_the_apply_changes_nothing(tmp_path: Path) -> None:
    state = ClusterState.from_inventory(with_spares(tmp_path))
    first = plan(state, [ch.EvacuateHost(op="evacuate-host", node="esx-vdi-01")])
    state.commit(first.view)
    again = plan(state, [ch.EvacuateHost(op="evacuate-host", node="esx-vdi-01")])
    assert again.allowed and again.diff == [] and again.view.evacuations == {}


def test_evacuate_host_is_refused_on_a_node_that_is_not_an_esxi_host() -> None:
    oci = load_inventory(ROOT / "sample-inventories" / "oci-h100.yaml")
    name = oci.nodes[0].name
    result = plan(ClusterState.from_inventory(oci), [ch.EvacuateHost(op="evacuate-host", node=name)])
    assert [v.rule for v in result.violations] == ["change.fields"]
    assert "vSphere host" in result.violations[0].message


def test_a_refused_candidate_leaves_nothing_behind_in_the_plan(tmp_path: Path) -> None:
    """The trials undo themselves: a plan whose every VM was refused (the sample without its spare A40 host, so
    no host offers the A40's types) holds no edit but the host's state."""
    result = evacuate(without_the_spare(tmp_path), "esx-vdi-01")
    assert not result.allowed
    assert [d.name for d in result.diff] == ["esx-vdi-01"]
    changed = result.diff[0]
    assert {k for k in changed.after or {} if (changed.before or {}).get(k) != (changed.after or {}).get(k)} \
        == {"state"}
    assert result.view.vgpus_removed == {}


# ------------------------------------------------------------------------------------------- the table


@pytest.mark.parametrize(("gib", "gbps", "seconds", "confidence"), [
    (8, 10, 12, "verified"),      # a row, at the table's link speed
    (12, 10, 17, "derived"),      # between the 8 and 16 GiB rows
    (8, 25, 4.8, "derived"),      # a row scaled to a 25 Gbit/s link
    (48, 10, 56, "uncertain"),    # beyond 32 GiB: the last segment extended
])
def test_the_stun_table_estimate_and_its_mark(gib: float, gbps: float, seconds: float, confidence: str) -> None:
    estimate = get_catalog().vsphere.vmotion_stun_times.estimate(gib, gbps)
    assert estimate.seconds == pytest.approx(seconds) and estimate.confidence == confidence
