"""`apply` on a vCenter-bound state passes GPUs through to a VM and takes them back (attach-vm / detach-vm, issue 24
item 2) as ReconfigVM_Task, against VMware's simulator: each a task and a step of the journal entry, read first (a
re-run is `already`), refused before any task on a powered-on VM or a GPU the host has not enabled for
passthrough; a task's fault is a failed step; a host's device groups (set-device-groups) stay model only, named.

The seed's passthrough VM is hpc-vm-01 on esx-legacy-01, GPUs 0 and 1 (0000:17:00.0, 0000:27:00.0), the host's
two passthrough-enabled GPUs; the simulator's config target lists them through our wrapper (vcsim/passthrough.go)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import apply_changes, bind, find, last_entry, session, wait
from tests.vsphere.vcsim import Simulator, running, why_not

HPC = {"node": "esx-legacy-01", "vm": "hpc-vm-01"}
DETACH = {"op": "detach-vm", **HPC}  # neither gpus nor device_group: everything the VM holds
ATTACH = {"op": "attach-vm", **HPC, "gpus": [0, 1]}
SEEDED = [("0000:17:00.0", "seed-esx-legacy-01"), ("0000:27:00.0", "seed-esx-legacy-01")]


def _passthrough(service: Any, vm: str) -> list[tuple[str, str]]:
    """The VM's passthrough devices as vCenter shows them: (PCI address, system id)."""
    from pyVmomi import vim

    return sorted((d.backing.id, d.backing.systemId) for d in find(service, "VirtualMachine", vm).config.hardware.device
                  if isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.DeviceBackingInfo))


def _steps(state: Path) -> list[tuple[str, list[str]]]:
    return [(s["status"], [call.split()[0] for call in s["calls"]]) for s in last_entry(state).execution]


def test_gpus_detached_and_passed_through_again_are_reconfig_tasks_seen_in_vcenter(vcsim: Simulator,
                                                                                  tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state, "hpc-vm-01")
    detached = apply_changes(state, env, DETACH)
    assert detached.code == ExitCode.OK, detached.err
    entry = last_entry(state)
    assert entry.outcome == "executed" and _steps(state) == [("executed", ["ReconfigVM_Task"])]
    assert "GPU(s) 0, 1 released" in entry.execution[0]["message"]
    with session(vcsim) as service:
        assert _passthrough(service, "hpc-vm-01") == []
    with Store.open(state) as store:
        assert [g.mode for g in store.load().nodes["esx-legacy-01"].gpus[:2]] == ["full", "full"]

    attached = apply_changes(state, env, ATTACH)
    assert attached.code == ExitCode.OK, attached.err
    assert last_entry(state).outcome == "executed" and _steps(state) == [("executed", ["ReconfigVM_Task"])]
    with session(vcsim) as service:
        assert _passthrough(service, "hpc-vm-01") == SEEDED, "the host's devices, with the system id vCenter offers"
    with Store.open(state) as store:
        assert [(g.mode, g.vm) for g in store.load().nodes["esx-legacy-01"].gpus[:2]] == \
            [("passthrough", "hpc-vm-01")] * 2


def test_a_passthrough_vcenter_already_holds_as_planned_starts_no_task(vcsim: Simulator, tmp_path: Path) -> None:
    """A detach (or attach) an admin, or a run that failed half-way, already made on vCenter is `already`."""
    state = tmp_path / "state"
    env = bind(vcsim, state, "hpc-vm-01")
    with session(vcsim) as service:
        vm = find(service, "VirtualMachine", "hpc-vm-01")
        wait(vm.ReconfigVM_Task(spec=_removal(vm)))
    done = apply_changes(state, env, DETACH)
    assert done.code == ExitCode.OK, done.err
    assert last_entry(state).outcome == "executed" and _steps(state) == [("already", [])]

    with session(vcsim) as service:
        vm = find(service, "VirtualMachine", "hpc-vm-01")
        wait(vm.ReconfigVM_Task(spec=_addition(service, vm)))
    again = apply_changes(state, env, ATTACH)
    assert again.code == ExitCode.OK, again.err
    assert _steps(state) == [("already", [])]
    with session(vcsim) as service:
        assert _passthrough(service, "hpc-vm-01") == SEEDED, "nothing added twice"


def _removal(vm: Any) -> Any:
    from pyVmomi import vim

    return vim.vm.ConfigSpec(deviceChange=[
        vim.vm.device.VirtualDeviceSpec(operation="remove", device=d) for d in vm.config.hardware.device
        if isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.DeviceBackingInfo)])


def _addition(service: Any, vm: Any) -> Any:
    from pyVmomi import vim

    host = find(service, "HostSystem", "esx-legacy-01")
    offered = vm.environmentBrowser.QueryConfigTarget(host=host).pciPassthrough
    return vim.vm.ConfigSpec(deviceChange=[vim.vm.device.VirtualDeviceSpec(
        operation="add", device=vim.vm.device.VirtualPCIPassthrough(
            key=-n, backing=vim.vm.device.VirtualPCIPassthrough.DeviceBackingInfo(
                id=p.pciDevice.id, deviceId=f"{p.pciDevice.deviceId:x}", systemId=p.systemId,
                vendorId=p.pciDevice.vendorId, deviceName=p.pciDevice.deviceName)))
        for n, p in enumerate(offered, start=1)])


def test_a_powered_on_vm_is_refused_before_any_task_and_stops_the_plan(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state)
    done = apply_changes(state, env, {"op": "cordon", "node": "esx-vdi-03"}, DETACH,
                         {"op": "cordon", "node": "esx-hgx-02"})
    assert done.code == ExitCode.CONFLICT, done.err
    assert "hpc-vm-01 is poweredOn" in done.err and "Traceback" not in done.err
    entry = last_entry(state)
    assert entry.outcome == "partial" and _steps(state) == [("executed", ["EnterMaintenanceMode_Task"]),
                                                            ("failed", []), ("not-run", [])]
    assert "power it off first" in entry.execution[1]["message"]
    with session(vcsim) as service:
        assert _passthrough(service, "hpc-vm-01") == SEEDED
    with Store.open(state) as store:
        nodes = store.load().nodes
        assert nodes["esx-vdi-03"].state == "cordoned"
        assert [g.vm for g in nodes["esx-legacy-01"].gpus[:2]] == ["hpc-vm-01"] * 2


def test_a_gpu_the_host_has_not_enabled_for_passthrough_fails_naming_the_setting(vcsim: Simulator,
                                                                                tmp_path: Path) -> None:
    """esx-legacy-01's GPU 3 is a vGPU (sharedDirect) device with passthrough off (the seed): its vGPU removed
    first (a task, the plan's first step), its attach fails before any task, naming the host setting (partial)."""
    state = tmp_path / "state"
    env = bind(vcsim, state, "hpc-vm-01", "ds-legacy-03")
    done = apply_changes(state, env,
                  {"op": "remove-vgpu", "node": "esx-legacy-01", "gpu": 3, "vm": "ds-legacy-03", "profile": "A100-40C"},
                  {"op": "attach-vm", **HPC, "gpus": [3]})
    assert done.code == ExitCode.CONFLICT, done.err
    entry = last_entry(state)
    assert entry.outcome == "partial" and _steps(state) == [("executed", ["ReconfigVM_Task"]), ("failed", [])]
    message = entry.execution[1]["message"]
    assert "GPU 3 (0000:47:00.0) of host esx-legacy-01 is not enabled for passthrough" in message
    assert "Configure > Hardware > PCI Devices" in message and "passthruEnabled" in message
    with session(vcsim) as service:
        assert _passthrough(service, "hpc-vm-01") == SEEDED
    with Store.open(state) as store:
        gpu = store.load().nodes["esx-legacy-01"].gpus[3]
        assert gpu.mode == "vgpu" and not gpu.vgpus, "the state holds the removal, not the attach"


def test_a_failed_reconfig_task_is_a_failed_step_with_vcenter_s_fault(vcsim: Simulator, tmp_path: Path) -> None:
    """hpc-vm-01 made a template behind gpuadmin's back: vCenter fails ReconfigVM_Task (NotSupported)."""
    state = tmp_path / "state"
    env = bind(vcsim, state, "hpc-vm-01")
    with session(vcsim) as service:
        find(service, "VirtualMachine", "hpc-vm-01").MarkAsTemplate()
    done = apply_changes(state, env, DETACH)
    assert done.code == ExitCode.CONFLICT, done.err
    entry = last_entry(state)
    assert entry.outcome == "failed" and _steps(state) == [("failed", ["ReconfigVM_Task"])]
    assert "ReconfigVM_Task failed: " in entry.execution[0]["message"]
    assert "NotSupported" in entry.execution[0]["message"]


def test_the_plan_names_the_reconfig_calls_and_a_device_group_stays_model_only(tmp_path: Path) -> None:
    """The review (text and -o json) names ReconfigVM_Task for GPUs; a plan setting a host's device groups is
    model only, said in the review and the journal (docs/vsphere.md: vSphere has no call setting them). The
    simulator plays a vCenter before 8.0, which reports no groups, so train-vm-03 starts without one to attach."""
    if (reason := why_not()) is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    with running(device_groups=False) as vcsim:
        _plan_names_the_reconfig_calls_and_a_device_group_stays_model_only(vcsim, tmp_path)


def _plan_names_the_reconfig_calls_and_a_device_group_stays_model_only(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state, "hpc-vm-01")
    detach = gpuadmin("--state", state, "detach", "hpc-vm-01", "--node", "esx-legacy-01", "--dry-run", env=env)
    assert detach.code == ExitCode.OK, detach.err
    assert "On the cluster" in detach.out and "ReconfigVM_Task" in detach.out
    assert "nothing on vCenter" not in detach.out
    path = tmp_path / "attach.yaml"
    path.write_text(yaml.safe_dump({"changes": [DETACH, ATTACH]}), encoding="utf-8")
    planned = gpuadmin("--state", state, "plan", "-f", path, "-o", "json", env=env)
    assert planned.code == ExitCode.OK, planned.err
    steps = json.loads(planned.out)["cluster_steps"]
    assert [(s["op"], s["executes"]) for s in steps] == [("detach-vm", True), ("attach-vm", True)]
    assert all("ReconfigVM_Task" in s["calls"] and "VirtualPCIPassthrough" in s["calls"] for s in steps)

    group = [{"op": "set-device-groups", "node": "esx-hgx-02", "groups": [{"name": "dg-b", "gpus": [4, 5]}]},
             {"op": "attach-vm", "node": "esx-hgx-02", "vm": "train-vm-03", "device_group": "dg-b"}]
    path.write_text(yaml.safe_dump({"changes": group}), encoding="utf-8")
    review = gpuadmin("--state", state, "plan", "-f", path, env=env)
    assert "nothing on vCenter" in review.out and "holds set-device-groups" in review.out, review.out + review.err
    applied = apply_changes(state, env, *group)
    assert applied.code == ExitCode.OK, applied.err
    entry = last_entry(state)
    assert entry.outcome == "applied" and "model only" in entry.message
    assert "set-device-groups" in entry.message and not entry.execution


def test_a_detach_of_everything_from_a_vm_holding_a_device_group_is_refused_before_any_task(
        vcsim: Simulator, tmp_path: Path) -> None:
    """A detach of everything names no group: the VM's group is detached by name (--device-group)."""
    state = tmp_path / "state"
    env = bind(vcsim, state, "train-vm-03")  # its group over GPUs 4-5 read from vCenter: dg-4-5
    vgpus = [{"op": "remove-vgpu", "node": "esx-hgx-02", "gpu": gpu, "vm": "train-vm-03", "profile": "A100DX-80C"}
             for gpu in (4, 5)]  # the rules free a group's GPUs of the VM's vGPUs with the group
    done = apply_changes(state, env, {"op": "detach-vm", "node": "esx-hgx-02", "vm": "train-vm-03"}, *vgpus)
    assert done.code == ExitCode.CONFLICT, done.err
    entry = last_entry(state)
    assert entry.outcome == "failed" and _steps(state) == [("failed", []), ("not-run", []), ("not-run", [])]
    assert "holds device group dg-4-5" in entry.execution[0]["message"]
    with Store.open(state) as store:
        assert next(v for v in store.load().nodes["esx-hgx-02"].vms if v.name == "train-vm-03").device_group == "dg-4-5"
