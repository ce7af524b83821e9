"""`evacuate-host` (and `drain` on a vSphere host) executed on a vCenter (issue 24 item 3), against VMware's
simulator: each planned move as vCenter tasks in plan order, then maintenance mode; a failed task stops the
sequence (partial: the state takes the VMs moved before it, the rest where they were); a re-run completes it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import bind, find, last_entry, session, wait
from tests.vsphere.vcsim import Simulator

VDI_01 = ["vdi-01", "vdi-02", "vdi-03", "vdi-04", "vdi-05", "vdi-06", "vdi-07", "vdi-08", "vdi-09", "vdi-10",
          "vdi-11", "vdi-12", "ws-cad-01"]


def _hosts(service: Any) -> dict[str, str]:
    """Each VM of esx-vdi-01's on vCenter: the host it runs on."""
    return {vm: find(service, "VirtualMachine", vm).runtime.host.name for vm in VDI_01}


def test_evacuate_moves_every_vm_by_vmotion_then_enters_maintenance_mode(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state)
    review = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--dry-run", env=env)
    assert review.code == ExitCode.OK, review.err
    assert "RelocateVM_Task" in review.out and "nothing on vCenter" not in review.out, review.out

    done = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--yes", env=env)
    assert done.code == ExitCode.OK, done.err
    entry = last_entry(state)
    assert entry.outcome == "executed" and [s["status"] for s in entry.execution] == ["executed"]
    calls = entry.execution[0]["calls"]
    assert [c.split()[0] for c in calls] == ["RelocateVM_Task"] * 13 + ["EnterMaintenanceMode_Task"]
    assert "13 VM(s) moved" in entry.execution[0]["message"]
    with session(vcsim) as service:  # vCenter itself holds the moves
        assert set(_hosts(service).values()) == {"esx-vdi-03"}
        assert find(service, "HostSystem", "esx-vdi-01").runtime.inMaintenanceMode is True
        assert all(str(find(service, "VirtualMachine", vm).runtime.powerState) == "poweredOn" for vm in VDI_01)
    with Store.open(state) as store:
        nodes = store.load().nodes
        assert nodes["esx-vdi-01"].vms == [] and nodes["esx-vdi-01"].state == "draining"
        assert {vm.name for vm in nodes["esx-vdi-03"].vms} >= set(VDI_01)
    # Nothing drifts (docs/vsphere.md): vCenter's maintenance mode keeps the state's `draining`, the state's order of
    # esx-vdi-03's VMs is kept, and which GPU holds each vGPU reads as the plan placed it (the simulator's
    # graphicsInfo, our seeding, follows each VM as it moves: tests/vsphere/vcsim/graphics.go)
    diff = gpuadmin("--state", state, "diff", "-o", "json", env=env)
    assert diff.code == ExitCode.OK and json.loads(diff.out)["drift"] == [], diff.out
    with session(vcsim) as service:
        read = {vm for vm in VDI_01 if find(service, "VirtualMachine", vm).runtime.host.name == "esx-vdi-03"}
    assert read == set(VDI_01)

    again = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--yes", env=env)
    assert again.code == ExitCode.OK, again.err


def test_a_failed_relocation_stops_the_evacuation_partial_and_a_rerun_completes_it(vcsim: Simulator,
                                                                                    tmp_path: Path) -> None:
    """The fourth VM to move renamed in vCenter behind gpuadmin's back: its move fails before any task (the
    simulator's RelocateVM_Task never fails, whatever the VM: govmomi simulator/virtual_machine.go; a task's
    fault takes the same path, test_vcenter_execute's template). The VMs moved before it are moved in the state
    too, the rest where they were, the host out of maintenance mode; once the name is back, the same command
    moves the rest (the moved ones are no longer on the host to plan) and finishes."""
    state = tmp_path / "state"
    env = bind(vcsim, state)
    plan = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--dry-run", "-o", "json", env=env)
    order = [m["vm"] for m in json.loads(plan.out)["evacuations"]["esx-vdi-01"]]
    broken = order[3]
    with session(vcsim) as service:
        wait(find(service, "VirtualMachine", broken).Rename_Task(newName=f"{broken}-renamed"))
    done = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--yes", env=env)
    assert done.code == ExitCode.CONFLICT, done.err
    assert "Traceback" not in done.err and f"no VM named {broken!r}" in done.err
    entry = last_entry(state)
    assert entry.outcome == "partial"
    step = entry.execution[0]
    assert step["status"] == "failed" and [c.split()[0] for c in step["calls"]] == ["RelocateVM_Task"] * 3
    assert "3 of 13 VM(s) on their destination" in step["message"] and "not in maintenance mode" in step["message"]
    described = gpuadmin("--state", state, "describe", "entry", str(entry.id), env=env)
    assert described.code == ExitCode.OK, described.err
    assert f"({order[0]} → esx-vdi-03)" in described.out and "partial" in described.out, described.out
    with session(vcsim) as service:
        moved = {vm for vm in VDI_01 if vm != broken
                 and find(service, "VirtualMachine", vm).runtime.host.name == "esx-vdi-03"}
        assert moved == set(order[:3])
        assert find(service, "HostSystem", "esx-vdi-01").runtime.inMaintenanceMode is False
    with Store.open(state) as store:
        nodes = store.load().nodes
        assert {vm.name for vm in nodes["esx-vdi-01"].vms} == set(order[3:]) and nodes["esx-vdi-01"].state == "ready"
        assert set(order[:3]) <= {vm.name for vm in nodes["esx-vdi-03"].vms}

    with session(vcsim) as service:
        wait(find(service, "VirtualMachine", f"{broken}-renamed").Rename_Task(newName=broken))
    again = gpuadmin("--state", state, "evacuate", "esx-vdi-01", "--yes", env=env)
    assert again.code == ExitCode.OK, again.err
    calls = last_entry(state).execution[0]["calls"]
    assert [c.split()[0] for c in calls] == ["RelocateVM_Task"] * 10 + ["EnterMaintenanceMode_Task"]
    with session(vcsim) as service:
        assert set(_hosts(service).values()) == {"esx-vdi-03"}
        assert find(service, "HostSystem", "esx-vdi-01").runtime.inMaintenanceMode is True


def test_a_drain_of_a_vsphere_host_runs_the_same_evacuation(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state)
    done = gpuadmin("--state", state, "drain", "esx-vdi-01", "--yes", env=env)
    assert done.code == ExitCode.OK, done.err
    entry = last_entry(state)
    assert entry.outcome == "executed" and entry.execution[0]["op"] == "drain"
    with session(vcsim) as service:
        assert set(_hosts(service).values()) == {"esx-vdi-03"}
        assert find(service, "HostSystem", "esx-vdi-01").runtime.inMaintenanceMode is True


def test_a_cold_move_powers_the_vm_off_relocates_it_and_powers_it_on_and_a_rerun_passes_over_it(
        vcsim: Simulator, tmp_path: Path) -> None:
    """The seed has no room for its one passthrough VM (an HGX host's cold move, with a spare HGX host added to the
    seed: test_vcenter_evacuate_hgx.py), so the plan of esx-vdi-01's evacuation is taken with its first move made
    cold, and the executor run on it: the simulator carries out the power operations and the relocation as vCenter
    would (it checks no passthrough)."""
    from gpuadmin.cluster.vcenter import connect_vcenter_bound
    from gpuadmin.cluster.vcenter_execute import execute_vcenter
    from gpuadmin.engine.changes import EvacuateHost
    from gpuadmin.engine.planner import plan
    from gpuadmin.engine.state import View

    state = tmp_path / "state"
    bind(vcsim, state)
    with Store.open(state) as store:
        synced, binding = store.load(), store.binding()
    assert binding is not None
    the_plan = plan(synced, [EvacuateHost(op="evacuate-host", node="esx-vdi-01")])
    first = the_plan.view.evacuations["esx-vdi-01"][0]
    the_plan.view.evacuations["esx-vdi-01"] = [replace(first, how="cold")]
    connection = connect_vcenter_bound(binding, vcsim.password)
    try:
        run = execute_vcenter(connection, the_plan.changes, View(synced), the_plan.view, timeout=30)
        assert run.outcome == "partial", "the other 12 VMs, not moved, keep the host out of maintenance mode"
        assert [c.split()[0] for c in run.steps[0].calls] == ["PowerOffVM_Task", "RelocateVM_Task", "PowerOnVM_Task"]
        assert "1 of 1 VM(s) on their destination" in run.steps[0].message
        assert {(r.kind, r.name) for r in run.steps[0].held} == {("node", "esx-vdi-01"), ("node", "esx-vdi-03")}
        with session(vcsim) as service:
            vm = find(service, "VirtualMachine", first.vm)
            assert vm.runtime.host.name == "esx-vdi-03" and str(vm.runtime.powerState) == "poweredOn"
        again = execute_vcenter(connection, the_plan.changes, View(synced), the_plan.view, timeout=30)
        assert [c.split()[0] for c in again.steps[0].calls] == [], "on its target and powered on: passed over"
    finally:
        connection.close()
