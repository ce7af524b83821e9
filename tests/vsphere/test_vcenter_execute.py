"""`apply` on a vCenter-bound state runs the plan as vCenter tasks (issue 24 item 2), against VMware's simulator:
host maintenance mode (cordon, drain, uncordon) and a VM's vGPU (assign-vgpu, remove-vgpu: ReconfigVM_Task), each
task's outcome a step of the journal entry (a VM's passthrough GPUs: test_vcenter_passthrough.py); a failure stops
the sequence (partial); a re-run finds what is already done and starts no task; an op gpuadmin does not carry out
on vCenter leaves the plan model-only, saying so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import apply_changes, bind, find, last_entry, session, wait
from tests.vsphere.vcsim import Simulator

REMOVE = {"op": "remove-vgpu", "node": "esx-vdi-02", "gpu": 1, "vm": "ds-vm-04", "profile": "L40S-12C"}
ASSIGN = {**REMOVE, "op": "assign-vgpu"}
# an op gpuadmin does not carry out on a vCenter (device groups: docs/vsphere.md): a free group on GPUs 6-7, beside the
# two the read names after the GPUs its VMs' groups sit on
GROUPS = {"op": "set-device-groups", "node": "esx-hgx-02",
          "groups": [{"name": "dg-0-1-2-3", "gpus": [0, 1, 2, 3]}, {"name": "dg-4-5", "gpus": [4, 5]},
                     {"name": "dg-c", "gpus": [6, 7]}]}


def _bound(vcsim: Simulator, state: Path) -> dict[str, str]:
    """Bound, with ds-vm-04 powered off (as vSphere wants for its vGPU) and synced."""
    return bind(vcsim, state, "ds-vm-04")


def _vgpus(service: Any, vm: str) -> list[str]:
    from pyVmomi import vim

    return [d.backing.vgpu for d in find(service, "VirtualMachine", vm).config.hardware.device
            if isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)]


def test_maintenance_mode_and_a_vgpu_are_vcenter_tasks_each_a_step_of_the_entry(vcsim: Simulator,
                                                                                  tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    done = apply_changes(state, env, REMOVE, {"op": "cordon", "node": "esx-vdi-03"})
    assert done.code == ExitCode.OK, done.err
    entry = last_entry(state)
    assert entry.outcome == "executed" and [s["status"] for s in entry.execution] == ["executed", "executed"]
    assert entry.execution[0]["calls"][0].startswith("ReconfigVM_Task vm-")
    assert entry.execution[1]["calls"][0].startswith("EnterMaintenanceMode_Task host-")
    with session(vcsim) as service:
        assert _vgpus(service, "ds-vm-04") == []
        assert find(service, "HostSystem", "esx-vdi-03").runtime.inMaintenanceMode is True

    back = apply_changes(state, env, ASSIGN, {"op": "uncordon", "node": "esx-vdi-03"})
    assert back.code == ExitCode.OK, back.err
    assert [(s["status"], s["calls"][0].split()[0]) for s in last_entry(state).execution] == \
        [("executed", "ReconfigVM_Task"), ("executed", "ExitMaintenanceMode_Task")]
    with session(vcsim) as service:
        assert _vgpus(service, "ds-vm-04") == ["grid_l40s-12c"], "the type the host offers for the profile"
        assert find(service, "HostSystem", "esx-vdi-03").runtime.inMaintenanceMode is False


def test_a_plan_already_carried_out_on_vcenter_starts_no_task(vcsim: Simulator, tmp_path: Path) -> None:
    """What an admin (or a run that failed half-way) already did on vCenter is `already`: no task twice."""
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    with session(vcsim) as service:
        vm = find(service, "VirtualMachine", "ds-vm-04")
        wait(vm.ReconfigVM_Task(spec=_removal(vm)))
        wait(find(service, "HostSystem", "esx-vdi-01").EnterMaintenanceMode_Task(timeout=0))
    done = apply_changes(state, env, REMOVE, {"op": "cordon", "node": "esx-vdi-01"})
    assert done.code == ExitCode.OK, done.err
    entry = last_entry(state)
    assert entry.outcome == "executed"
    assert [(s["status"], s["calls"]) for s in entry.execution] == [("already", []), ("already", [])]
    with Store.open(state) as store:
        assert store.load().nodes["esx-vdi-01"].state == "cordoned"


def _removal(vm: Any) -> Any:
    from pyVmomi import vim

    device = next(d for d in vm.config.hardware.device
                  if isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo))
    return vim.vm.ConfigSpec(deviceChange=[vim.vm.device.VirtualDeviceSpec(operation="remove", device=device)])


def test_a_powered_on_vm_stops_the_plan_partial_with_what_vcenter_holds(vcsim: Simulator, tmp_path: Path) -> None:
    """vSphere changes a powered-off VM's PCI devices only: the step fails before any task, what ran stays
    (partial, journaled and committed), what follows is not run."""
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    done = apply_changes(state, env, {"op": "cordon", "node": "esx-vdi-03"},
                  {"op": "remove-vgpu", "node": "esx-vdi-01", "gpu": 0, "vm": "vdi-01", "profile": "A40-12C"},
                  {"op": "cordon", "node": "esx-hgx-02"})
    assert done.code == ExitCode.CONFLICT, done.err
    assert "vdi-01 is poweredOn" in done.err and "Traceback" not in done.err
    entry = last_entry(state)
    assert entry.outcome == "partial"
    assert [s["status"] for s in entry.execution] == ["executed", "failed", "not-run"]
    assert entry.execution[1]["calls"] == [] and "power it off first" in entry.execution[1]["message"]
    with Store.open(state) as store:
        nodes = store.load().nodes
        assert nodes["esx-vdi-03"].state == "cordoned" and nodes["esx-hgx-02"].state == "ready"
        assert any(v.vm == "vdi-01" for v in nodes["esx-vdi-01"].gpus[0].vgpus or ())
    with session(vcsim) as service:
        assert find(service, "HostSystem", "esx-hgx-02").runtime.inMaintenanceMode is False
        assert _vgpus(service, "vdi-01") == ["grid_a40-12c"]


def test_a_failed_task_is_a_failed_step_with_vcenter_s_fault(vcsim: Simulator, tmp_path: Path) -> None:
    """A VM made a template behind gpuadmin's back: vCenter fails the ReconfigVM task (NotSupported); nothing ran
    before it, so the outcome is `failed`, journaled, and the state is unchanged."""
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    with Store.open(state) as store:
        revision = store.revision()
    with session(vcsim) as service:
        find(service, "VirtualMachine", "ds-vm-04").MarkAsTemplate()
    done = apply_changes(state, env, REMOVE, {"op": "cordon", "node": "esx-vdi-03"})
    assert done.code == ExitCode.CONFLICT, done.err
    entry = last_entry(state)
    assert entry.outcome == "failed" and [s["status"] for s in entry.execution] == ["failed", "not-run"]
    assert entry.execution[0]["calls"][0].startswith("ReconfigVM_Task ")
    assert "ReconfigVM_Task failed: " in entry.execution[0]["message"] and "NotSupported" in entry.execution[0][
        "message"]
    with Store.open(state) as store:
        assert store.revision() == revision


def test_an_op_not_carried_out_on_vcenter_leaves_the_plan_model_only_and_names_it(vcsim: Simulator,
                                                                                    tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    done = apply_changes(state, env, {"op": "cordon", "node": "esx-hgx-03"}, GROUPS)
    assert done.code == ExitCode.OK, done.err
    entry = last_entry(state)
    assert entry.outcome == "applied" and "model only" in entry.message and "set-device-groups" in entry.message
    with session(vcsim) as service:
        assert find(service, "HostSystem", "esx-vdi-03").runtime.inMaintenanceMode is False
    with Store.open(state) as store:
        assert store.load().nodes["esx-hgx-03"].state == "cordoned"


def test_a_plan_on_a_vcenter_says_which_tasks_apply_will_run_or_that_it_runs_none(vcsim: Simulator,
                                                                                  tmp_path: Path) -> None:
    """The review on a vCenter-bound state names the vCenter tasks (never the Kubernetes calls, never node commands
    for someone to run); a plan holding an op gpuadmin does not carry out there says nothing runs on vCenter."""
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    cordon = gpuadmin("--state", state, "cordon", "esx-hgx-03", "--dry-run", env=env)
    assert cordon.code == ExitCode.OK, cordon.err
    assert "On the cluster" in cordon.out and "EnterMaintenanceMode_Task" in cordon.out
    assert "PATCH" not in cordon.out and "kubectl" not in cordon.out
    path = tmp_path / "groups.yaml"
    path.write_text(yaml.safe_dump({"changes": [GROUPS]}), encoding="utf-8")
    groups = gpuadmin("--state", state, "plan", "-f", path, env=env)
    assert "nothing on vCenter" in groups.out and "set-device-groups" in groups.out, groups.out + groups.err


def test_maintenance_mode_is_refused_before_any_task_while_a_vm_on_the_host_is_powered_on(vcsim: Simulator,
                                                                                         tmp_path: Path) -> None:
    """vCenter's task would wait for the host's VMs to leave (DRS moves no vGPU VM by itself): the step fails
    first, naming them and the evacuation to plan, and the host stays out of maintenance mode."""
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    done = apply_changes(state, env, {"op": "cordon", "node": "esx-hgx-03"})
    assert done.code == ExitCode.CONFLICT, done.err
    entry = last_entry(state)
    assert entry.outcome == "failed" and entry.execution[0]["calls"] == []
    assert "powered on on esx-hgx-03" in entry.execution[0]["message"] and "dev-vm-01" in entry.execution[0]["message"]
    assert "gpuadmin evacuate esx-hgx-03" in done.err
    with session(vcsim) as service:
        assert find(service, "HostSystem", "esx-hgx-03").runtime.inMaintenanceMode is False
