"""The planner: every change op applied to a view, its refusals, diff, effects and node commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import CHANGE_CHECKS, EntityDiff, inverse, plan, released_slots
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory
from gpuadmin.store import load_inventory

SAMPLES = Path(__file__).resolve().parents[2] / "sample-inventories"
OCI = load_inventory(SAMPLES / "oci-h100.yaml")
VSPHERE = load_inventory(SAMPLES / "vsphere-hgx.yaml")


def changes(*values: dict[str, Any]) -> list[ch.Change]:
    return ch.CHANGE_LIST.validate_python(list(values))


def oci() -> ClusterState:
    return ClusterState.from_inventory(OCI)


# Each planner check id: a change list that must be refused with it.
REFUSALS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "change.target-exists": ("oci", [{"op": "cordon", "node": "no-such-node"}]),
    "change.unique-name": ("oci", [{"op": "add-queue", "queue": {"name": "research"}}]),
    "change.fields": ("oci", [{"op": "set-mode", "node": "gpu-h100-12", "gpu": 0, "mode": "full", "replicas": 2}]),
    "change.job-status": ("oci", [{"op": "preempt-job", "name": "nb-pending-1"}]),
    "change.in-use": ("oci", [{"op": "remove-node", "name": "gpu-h100-01"}]),
    "mig.layout-fits": ("oci", [{"op": "set-mig", "node": "gpu-h100-12", "gpu": 0,
                                 "instances": [{"profile": "3g.40gb"}, {"profile": "3g.40gb"},
                                               {"profile": "1g.10gb"}]}]),
    "change.node-down": ("oci", [{"op": "repair-node", "node": "gpu-h100-01", "note": "not down"}]),
    "vgpu.mode": ("oci", [{"op": "assign-vgpu", "node": "gpu-h100-12", "gpu": 0, "vm": "x", "profile": "A40-4C"}]),
    "change.references": ("oci", [{"op": "add-node", "node": {"name": "n", "platform": "baremetal",
                                                              "shape": "NO-SUCH-SHAPE"}}]),
}


def test_every_planner_check_has_a_refusal_case() -> None:
    assert set(REFUSALS) == set(CHANGE_CHECKS)


@pytest.mark.parametrize("check_id", sorted(REFUSALS))
def test_planner_check_refuses(check_id: str) -> None:
    _, values = REFUSALS[check_id]
    state = oci()
    if check_id == "change.job-status":
        pending = next(j.name for j in state.jobs.values() if j.status == "pending")
        values = [{"op": "preempt-job", "name": pending}]
    if check_id == "vgpu.mode":
        state = ClusterState.from_inventory(VSPHERE)
        host, gpu = next((n, g) for n in state.nodes.values() for g in n.gpus if g.mode != "vgpu" and n.vms)
        values = [{"op": "assign-vgpu", "node": host.name, "gpu": gpu.index, "vm": host.vms[0].name,
                   "profile": "A40-4C"}]
    result = plan(state, changes(*values))
    assert not result.allowed
    assert check_id in {v.rule for v in result.violations}, result.violations


# Issue 19 point 16: a set-mig with starts omitted that breaks a MIG rule whatever the starts is refused under
# that rule's own id, every one of them, never as "no placement fits" (H100-SXM5-80GB profiles and caps as in
# gpuadmin/catalog/data/mig.yaml, MIG-UG Table 7).
STARTS_OMITTED = [
    (["2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb", "1g.10gb"], {"mig.compute-slices"}),
    (["1g.20gb"] * 5, {"mig.instance-cap"}),
    (["4g.40gb", "4g.40gb"], {"mig.compute-slices", "mig.instance-cap"}),
    (["1g.10gb+me", "1g.10gb+me"], {"mig.instance-cap", "mig.single-media-extension"}),
]


@pytest.mark.parametrize(("profiles", "rules"), STARTS_OMITTED)
def test_set_mig_without_starts_names_each_broken_rule(profiles: list[str], rules: set[str]) -> None:
    result = plan(oci(), changes({"op": "set-mig", "node": "gpu-h100-12", "gpu": 2,
                                  "instances": [{"profile": p} for p in profiles]}))
    assert {v.rule for v in result.violations} == rules, result.violations
    assert not any("start" in (v.hint or "") for v in result.violations), result.violations


def test_set_mig_without_starts_on_an_a30_names_the_second_media_extension() -> None:
    state = oci()
    node = state.nodes["gpu-h100-12"]
    a30 = node.gpus[2].model_copy(update={"model": "A30"})
    state.nodes[node.name] = node.model_copy(update={"gpus": [a30 if g.index == 2 else g for g in node.gpus]})
    result = plan(state, changes({"op": "set-mig", "node": "gpu-h100-12", "gpu": 2,
                                  "instances": [{"profile": "2g.12gb+me"}, {"profile": "1g.6gb+me"}]}))
    assert {v.rule for v in result.violations} == {"mig.single-media-extension"}, result.violations


def test_layout_fits_speaks_of_placements_and_its_remedy_works() -> None:
    wanted = ["3g.40gb", "3g.40gb", "1g.10gb"]
    refused = plan(oci(), changes({"op": "set-mig", "node": "gpu-h100-12", "gpu": 2,
                                   "instances": [{"profile": p} for p in wanted]}))
    [violation] = refused.violations
    assert violation.rule == "mig.layout-fits"
    assert "need 9 memory slices, a H100-SXM5-80GB has 8" in violation.message
    assert violation.hint is not None
    assert violation.hint.startswith("drop one 3g.40gb or one 1g.10gb and the rest fits")
    assert "gpuadmin describe gpu gpu-h100-12/2" in violation.hint
    for dropped in ("3g.40gb", "1g.10gb"):  # the remedy, taken: the plan is allowed
        rest = list(wanted)
        rest.remove(dropped)
        fixed = plan(oci(), changes({"op": "set-mig", "node": "gpu-h100-12", "gpu": 2,
                                     "instances": [{"profile": p} for p in rest]}))
        assert fixed.allowed, fixed.violations


# The sample's nodes are OKE workers: mig-manager carves them through their label. A host nothing schedules
# pods on gets the nvidia-smi lines instead.
SET_MIG_COMMANDS = {
    "kubernetes": [
        "gpuadmin export mig-parted | kubectl -n gpu-operator create configmap gpuadmin-mig-parted-config "
        "--from-file=config.yaml=/dev/stdin --dry-run=client -o yaml | kubectl apply -f -",
        "kubectl label --overwrite node -- gpu-h100-12 nvidia.com/mig.config=gpuadmin-gpu-h100-12",
        "gpuadmin export device-plugin | kubectl apply -f -  # no time-slicing",
        "kubectl label --overwrite node -- gpu-h100-12 nvidia.com/device-plugin.config=gpuadmin-gpu-h100-12",
    ],
    "none": ["nvidia-smi -i 2 -mig 1", "nvidia-smi mig -i 2 -cgi 5,9 -C  # 4g.40gb@0 3g.40gb@4"],
}


@pytest.mark.parametrize("orchestrator", sorted(SET_MIG_COMMANDS))
def test_set_mig_chooses_starts_and_emits_commands(orchestrator: str) -> None:
    state = oci()
    state.nodes["gpu-h100-12"] = state.nodes["gpu-h100-12"].model_copy(update={"orchestrator": orchestrator})
    result = plan(state, changes({"op": "set-mig", "node": "gpu-h100-12", "gpu": 2,
                                  "instances": [{"profile": "3g.40gb"}, {"profile": "4g.40gb"}]}))
    assert result.allowed, result.violations
    gpu = result.view.node("gpu-h100-12").gpu(2)  # type: ignore[union-attr]
    assert gpu is not None and [(i.profile, i.start) for i in gpu.mig or ()] == [("3g.40gb", 4), ("4g.40gb", 0)]
    assert result.commands["gpu-h100-12"] == SET_MIG_COMMANDS[orchestrator]
    assert [d.action for d in result.diff] == ["modify"]


def test_rtx_pro_6000_media_profiles_get_their_real_ids() -> None:
    """Issue 19 point 9: on a real RTX PRO 6000 (`nvidia-smi mig -lgip`, driver 610.43.02, quoted in the blog post
    "Slicing GPUs in Kubernetes with NVIDIA MIG") 1g.24gb+me.all is profile 65 and 1g.24gb-me 67."""
    node = {"name": "rtx1", "platform": "baremetal", "orchestrator": "none",
            "gpus": [{"index": 0, "model": "RTX-PRO-6000-BSE", "mode": "full"}]}
    state = ClusterState.from_inventory(Inventory.model_validate({"version": 1, "cluster": "rtx", "nodes": [node]}))
    result = plan(state, changes({"op": "set-mig", "node": "rtx1", "gpu": 0, "instances": [
        {"profile": "1g.24gb+me.all", "start": 0}, {"profile": "1g.24gb-me", "start": 3},
        {"profile": "2g.48gb-me", "start": 6}]}))
    assert result.allowed, result.violations
    assert result.commands["rtx1"][-1] == (
        "nvidia-smi mig -i 0 -cgi 66,65,67 -C  # 2g.48gb-me@6 1g.24gb+me.all@0 1g.24gb-me@3"
    )


def test_drain_evicts_preemptible_and_reports_effects() -> None:
    state = oci()
    node = "gpu-h100-04"
    running = sorted({n for g in state.nodes[node].gpus for n in state.holders.get((node, g.index), set())})
    assert running
    result = plan(state, changes({"op": "drain", "node": node}))
    if all(state.jobs[j].preemptible for j in running):
        assert result.allowed, result.violations
        assert sorted(result.effects.evicted) == running
        assert all(result.view.job(j).status == "preempted" for j in running)  # type: ignore[union-attr]
    else:
        assert "node.drain-blocked" in {v.rule for v in result.violations}


def test_drain_with_nonpreemptible_job_is_blocked() -> None:
    state = oci()
    job = next(j for j in state.jobs.values() if j.status == "running" and not j.preemptible)
    result = plan(state, changes({"op": "drain", "node": job.placement[0].node}))
    assert "node.drain-blocked" in {v.rule for v in result.violations}


def test_repartition_busy_gpu_needs_eviction_in_same_plan() -> None:
    state = oci()
    job = next(j for j in state.jobs.values() if j.status == "running" and j.request.mig is not None
               and j.preemptible)
    slot = job.placement[0]
    layout = [{"profile": "7g.80gb"}]
    refused = plan(state, changes({"op": "set-mig", "node": slot.node, "gpu": slot.gpu, "instances": layout}))
    assert "mig.repartition-evicts" in {v.rule for v in refused.violations}
    holders = sorted(state.holders[(slot.node, slot.gpu)])
    preempts = [{"op": "preempt-job", "name": h} for h in holders]
    allowed = plan(state, changes(*preempts, {"op": "set-mig", "node": slot.node, "gpu": slot.gpu,
                                              "instances": layout}))
    if all(state.jobs[h].preemptible for h in holders):
        assert allowed.allowed, allowed.violations
        assert sorted(allowed.effects.evicted) == holders


def test_bind_exclusive_job_to_time_sliced_replica_is_refused() -> None:
    state = oci()
    ts = next((n.name, g.index) for n in state.nodes.values() for g in n.gpus if g.mode == "time-sliced")
    pending = next(j for j in state.jobs.values() if j.status == "pending" and j.request.gpus == 1
                   and not j.shared)
    result = plan(state, changes({"op": "bind-job", "name": pending.name,
                                  "placement": [{"node": ts[0], "gpu": ts[1]}]}))
    assert not result.allowed
    assert {"placement.exclusive-not-shared", "placement.matches-request"} & {v.rule for v in result.violations}


def test_planning_never_writes_and_hash_is_stable() -> None:
    state = oci()
    before = state.to_inventory()
    values = {"op": "cordon", "node": "gpu-h100-12"}
    first, second = plan(state, changes(values)), plan(state, changes(values))
    assert state.to_inventory() == before
    assert first.hash == second.hash
    assert plan(state, changes({"op": "cordon", "node": "gpu-h100-06"})).hash != first.hash


def test_device_groups_and_vm_attach_on_vsphere() -> None:
    state = ClusterState.from_inventory(VSPHERE)
    host = next(n for n in state.nodes.values() if n.device_groups)
    held = next(vm for vm in host.vms if vm.device_group)
    refused = plan(state, changes({"op": "set-device-groups", "node": host.name, "groups": []}))
    assert "group.vm-holds-whole-group" in {v.rule for v in refused.violations}
    # the group's GPUs still carry the VM's vGPUs: detaching alone leaves them serving a VM without the group
    alone = plan(state, changes({"op": "detach-vm", "node": host.name, "vm": held.name}))
    assert "group.vm-holds-whole-group" in {v.rule for v in alone.violations}
    removals = [{"op": "remove-vgpu", "node": host.name, "gpu": g.index, "vm": v.vm, "profile": v.profile}
                for g in host.gpus for v in g.vgpus or () if v.vm == held.name]
    detached = plan(state, changes(*removals, {"op": "detach-vm", "node": host.name, "vm": held.name}))
    assert detached.allowed, detached.violations
    vm = next(v for v in detached.view.node(host.name).vms if v.name == held.name)  # type: ignore[union-attr]
    assert vm.device_group is None


def test_device_groups_on_a_bare_metal_node_are_refused_not_stored() -> None:
    """Found by the state machine: set-device-groups on a bare-metal node was allowed, and the state it left
    could no longer be turned into an inventory (`export inventory` crashed). A change may not leave a node that
    the inventory schema refuses."""
    state = oci()
    before = state.to_inventory()
    result = plan(state, changes({"op": "set-device-groups", "node": "gpu-h100-12",
                                  "groups": [{"name": "dg-a", "gpus": [0, 1]}]}))
    assert not result.allowed
    assert [(v.rule, v.target) for v in result.violations] == [("change.fields", "node/gpu-h100-12")]
    assert "need platform: vsphere" in result.violations[0].message
    assert state.to_inventory() == before
    # on a vSphere host the same change is judged by the device-group rules, not refused as invalid
    vsphere = ClusterState.from_inventory(VSPHERE)
    host = next(n for n in vsphere.nodes.values() if not n.device_groups and len(n.gpus) >= 2)
    fine = plan(vsphere, changes({"op": "set-device-groups", "node": host.name,
                                  "groups": [{"name": "dg-a", "gpus": [0, 1]}]}))
    assert "change.fields" not in {v.rule for v in fine.violations}


def test_kubernetes_nodes_get_operator_labels_not_nvidia_smi_lines() -> None:
    state = ClusterState.from_inventory(load_inventory(SAMPLES / "k8s-mixed.yaml"))
    result = plan(state, changes(
        {"op": "set-time-slicing", "node": "hgx-h200-01", "gpu": 7, "replicas": 4},
        {"op": "set-mig", "node": "hgx-h200-01", "gpu": 6, "instances": [{"profile": "3g.71gb"}] * 2}))
    assert result.allowed, result.violations
    lines = result.commands["hgx-h200-01"]
    assert not any(line.startswith("nvidia-smi") for line in lines), "mig-manager applies MIG on Kubernetes"
    assert "kubectl label --overwrite node -- hgx-h200-01 nvidia.com/mig.config=gpuadmin-hgx-h200-01" in lines
    assert any("nvidia.com/gpu x4 on GPU 7" in line for line in lines)
    assert lines[-1] == ("kubectl label --overwrite node -- hgx-h200-01 "
                         "nvidia.com/device-plugin.config=gpuadmin-hgx-h200-01")


def test_change_references_reports_only_what_the_plan_breaks() -> None:
    """A state written before the check may already hold a dangling name: later changes to that entity are not
    all refused for it, but one that adds a new dangling name is."""
    state = oci()
    state.nodes["gpu-h100-12"] = state.nodes["gpu-h100-12"].model_copy(update={"shape": "OLD-SHAPE"})
    cordoned = plan(state, changes({"op": "cordon", "node": "gpu-h100-12"}))
    assert "change.references" not in {v.rule for v in cordoned.violations}, cordoned.violations
    added = plan(state, changes({"op": "add-node", "node": {"name": "n", "platform": "baremetal",
                                                            "shape": "OLD-SHAPE"}}))
    assert [(v.rule, v.target, v.message) for v in added.violations] == [
        ("change.references", "node/n", "shape: unknown shape 'OLD-SHAPE'")]


def test_a_restore_that_only_moves_an_entity_is_in_the_diff_and_undoes() -> None:
    """Same data at another position is a change: it is in the diff (so journaled), and its inverse puts the
    entity back where it was (the long state-machine run found the move applied but missing from the diff)."""
    state = oci()
    order = list(state.nodes)
    first = order[0]
    same = state.nodes[first].model_dump(mode="json", exclude_none=True)
    moved = plan(state, changes({"op": "restore", "kind": "node", "name": first, "node": same, "seq": 99}))
    assert moved.allowed, moved.violations
    assert [(d.kind, d.name, d.seq, d.moved_to) for d in moved.diff] == [("node", first, 1, 99)]
    state.commit(moved.view)
    assert list(state.nodes) == [*order[1:], first]
    back = plan(state, inverse(moved.diff), released_slots(moved.diff))
    assert back.allowed, back.violations
    state.commit(back.view)
    assert list(state.nodes) == order
    # redo, as Service.redo builds it from the journal: the entry's `after`, where the entry left it
    raw = [d.to_json() for d in moved.diff]
    again = [EntityDiff(r["kind"], r["name"], r["after"], r["before"], r.get("moved_to", r["seq"])) for r in raw]
    forth = plan(state, inverse(again), released_slots(again))
    assert forth.allowed, forth.violations
    state.commit(forth.view)
    assert list(state.nodes) == [*order[1:], first]


@pytest.mark.parametrize("values", [
    [{"op": "remove-node", "name": "esx-hgx-01"}],
    [{"op": "cordon", "node": "esx-hgx-02"}],
    [{"op": "add-node", "node": {**VSPHERE.nodes[1].model_dump(mode="json", exclude_none=True), "name": "esx-copy"}}],
    [{"op": "detach-vm", "node": "esx-hgx-02", "vm": "train-vm-02"}],
], ids=["remove-host", "cordon", "copy-host", "detach-vm"])
def test_reference_checks_of_jobs_equal_the_full_scan(values: list[dict[str, Any]], monkeypatch: Any) -> None:
    """Jobs are re-checked only for the VMs a plan takes away or moves (`_vms_moved`); the verdict equals the
    reference, which re-checks every job that names a VM."""
    from gpuadmin.engine import planner

    state = ClusterState.from_inventory(VSPHERE)
    narrowed = plan(state, changes(*values)).violations
    every_vm = {job.vm for job in state.jobs.values() if job.vm is not None}
    monkeypatch.setattr(planner, "_vms_moved", lambda _view: every_vm)
    assert plan(state, changes(*values)).violations == narrowed


def test_a_refused_layout_without_starts_names_its_instances_without_a_none_start() -> None:
    """A set-mig whose instances cannot be placed keeps them unplaced (issue 19 point 16); the hints that list
    a GPU's instances then said `4g.40gb@None`, a place that cannot be typed back."""
    result = plan(oci(), changes({"op": "set-mig", "node": "gpu-h100-07", "gpu": 1, "instances": [
        {"profile": "4g.40gb"}, {"profile": "3g.40gb"}, {"profile": "2g.20gb"}]}))
    assert not result.allowed
    texts = [f"{v.message} {v.hint}" for v in result.violations]
    assert any("instances there: 4g.40gb, 3g.40gb, 2g.20gb" in t for t in texts), texts
    assert not any("@None" in t for t in texts)


# Issue 20 item 9: remove-queue and remove-node left `touched` empty, so no rule ever judged a removal; only the
# handler's own change.in-use did. Now the removal is applied to the view and touched: the rules that check what
# references the entity (placement.slot-exists for the jobs on a node, quota.queue-exists for the jobs in a
# queue) run, and their violations follow from the one change.in-use summary, whose hint is a remedy that works.
def _follow_ons(result: Any, rule: str) -> set[str]:
    [summary] = [i for i, v in enumerate(result.violations) if v.rule == "change.in-use"]
    return {v.target for i, v in enumerate(result.violations) if v.rule == rule and result.caused_by.get(i) == summary}


def test_removing_a_node_with_running_jobs_runs_the_placement_rules_under_one_summary() -> None:
    state = oci()
    runners = {f"job/{j.name}" for j in state.jobs.values() if any(s.node == "gpu-h100-04" for s in j.placement)}
    result = plan(state, changes({"op": "remove-node", "name": "gpu-h100-04"}))
    summary = next(v for v in result.violations if v.rule == "change.in-use")
    assert summary.target == "node/gpu-h100-04" and "drain" in (summary.hint or "")
    assert len(runners) == 3 and _follow_ons(result, "placement.slot-exists") == runners
    assert all("this plan removes node gpu-h100-04" in v.message and "preempt" in (v.hint or "")
               for v in result.violations if v.rule == "placement.slot-exists")
    # the remedy the hint gives works, in the same plan
    assert plan(state, changes({"op": "drain", "node": "gpu-h100-04"},
                               {"op": "remove-node", "name": "gpu-h100-04"})).allowed


def test_removing_a_queue_with_jobs_runs_the_queue_rule_under_one_summary() -> None:
    state = oci()
    members = sorted(j.name for j in state.jobs.values() if j.queue == "interns")
    result = plan(state, changes({"op": "remove-queue", "name": "interns"}))
    summary = next(v for v in result.violations if v.rule == "change.in-use")
    assert summary.target == "queue/interns" and "cancel" in (summary.hint or "")
    assert "move its jobs" not in (summary.hint or "")  # main said "cancel or move": no op moves a job
    assert _follow_ons(result, "quota.queue-exists") == {f"job/{name}" for name in members}
    assert plan(state, changes(*({"op": "cancel-job", "name": name} for name in members),
                               {"op": "remove-queue", "name": "interns"})).allowed


def test_a_down_node_is_emptied_by_preempting_not_draining() -> None:
    """drain does not apply to a down node (change.node-down): the hint says to preempt its jobs instead."""
    down = OCI.model_copy(update={"nodes": [n.model_copy(update={"state": "down"}) if n.name == "gpu-h100-04" else n
                                            for n in OCI.nodes]})
    state = ClusterState.from_inventory(down)
    summary = next(v for v in plan(state, changes({"op": "remove-node", "name": "gpu-h100-04"})).violations
                   if v.rule == "change.in-use")
    assert "preempt its jobs" in (summary.hint or "") and "drain does not apply" in (summary.hint or "")
    assert not plan(state, changes({"op": "drain", "node": "gpu-h100-04"})).allowed
    runners = sorted({j.name for j in state.jobs.values() if any(s.node == "gpu-h100-04" for s in j.placement)})
    assert plan(state, changes(*({"op": "preempt-job", "name": name} for name in runners),
                               {"op": "remove-node", "name": "gpu-h100-04"})).allowed


def test_a_node_with_non_preemptible_jobs_needs_them_stopped_first() -> None:
    state = oci()
    result = plan(state, changes({"op": "remove-node", "name": "gpu-h100-05"}))
    summary = next(v for v in result.violations if v.rule == "change.in-use")
    assert "non-preemptible" in (summary.hint or "") and "override: true" in (summary.hint or "")
    assert not plan(state, changes({"op": "drain", "node": "gpu-h100-05"})).allowed  # drain alone does not do it
    runners = sorted({j.name for j in state.jobs.values() if any(s.node == "gpu-h100-05" for s in j.placement)})
    assert plan(state, changes(*({"op": "preempt-job", "name": n, "override": True, "reason": "decommission"}
                                 for n in runners), {"op": "remove-node", "name": "gpu-h100-05"})).allowed


def test_removing_what_nothing_references_is_allowed() -> None:
    state = oci()
    result = plan(state, changes({"op": "add-queue", "queue": {"name": "spare"}},
                                 {"op": "remove-queue", "name": "spare"}, {"op": "remove-node", "name": "gpu-h100-12"}))
    assert result.allowed, result.violations
