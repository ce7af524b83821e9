"""`apply` on a vCenter-bound state adds and removes a VM's vSphere 8 device group (attach-vm / detach-vm with
`device_group`, issue 24 item 2) as one ReconfigVM_Task, against VMware's simulator: the group's vGPU devices with
`deviceGroupInfo` and the group in `deviceGroups`; read first (a re-run is `already`); refused before any task on
a powered-on VM; the review names the call with the group.

train-vm-03 on esx-hgx-02 holds a group of two grid_a100dx-80c vGPUs on GPUs 4-5 (read: dg-4-5). The simulator has
no vSphere 8 types: the groups it serves, and how it applies a ReconfigVM_Task's group (it sees the devices'
`deviceGroupInfo`, not the request's `deviceGroups`, and names a new group after the host's offered group of the
members' size and type), are OURS (tests/vsphere/vcsim/devicegroups.go)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuadmin.cluster.vcenter import connect_vcenter, read_vcenter
from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import apply_changes, bind, find, last_entry, session
from tests.vsphere.test_vcenter_passthrough import _steps
from tests.vsphere.vcsim import Simulator

VM = {"node": "esx-hgx-02", "vm": "train-vm-03"}
GROUP = "Nvidia:2@grid_a100dx-80c%NVLink"  # the host's offered group of two grid_a100dx-80c (the seed's naming)
VGPUS = [{"node": "esx-hgx-02", "gpu": gpu, "vm": "train-vm-03", "profile": "A100DX-80C"} for gpu in (4, 5)]
DETACH = [{"op": "detach-vm", **VM, "device_group": "dg-4-5"}, *({"op": "remove-vgpu", **v} for v in VGPUS)]
ATTACH = [*({"op": "assign-vgpu", **v} for v in VGPUS), {"op": "attach-vm", **VM, "device_group": "dg-4-5"}]


def _held(vcsim: Simulator) -> list[tuple[str, int]]:
    """train-vm-03's device groups as gpuadmin's read gets them from vCenter: (vendor name, vGPU members)."""
    snapshot = read_vcenter(connect_vcenter(vcsim.server, vcsim.user, vcsim.password, insecure=True))
    vm = next(v for v in snapshot.vms if v.name == "train-vm-03")
    return [(g.name, g.vgpus) for g in vm.device_groups or ()]


def _devices(service: Any) -> list[tuple[str, Any]]:
    """train-vm-03's vGPU devices on vCenter: (type, sequenceId of its group, or None ungrouped)."""
    from pyVmomi import vim

    vm = find(service, "VirtualMachine", "train-vm-03")
    return sorted(((d.backing.vgpu, getattr(d.deviceGroupInfo, "sequenceId", None))
                   for d in vm.config.hardware.device
                   if isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)),
                  key=str)


def test_a_device_group_detached_and_attached_again_is_one_reconfig_task_each(vcsim: Simulator,
                                                                               tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state, "train-vm-03")
    assert _held(vcsim) == [(GROUP, 2)]

    detached = apply_changes(state, env, *DETACH)
    assert detached.code == ExitCode.OK, detached.err
    assert last_entry(state).outcome == "executed"
    assert _steps(state) == [("executed", ["ReconfigVM_Task"]), ("already", []), ("already", [])]
    assert _held(vcsim) == []
    with session(vcsim) as service:
        assert _devices(service) == [], "the group's devices went with it, and the plan keeps no vGPU"

    attached = apply_changes(state, env, *ATTACH)
    assert attached.code == ExitCode.OK, attached.err
    assert _steps(state) == [("executed", ["ReconfigVM_Task"])] * 3, "two vGPUs, then the group replacing them"
    assert "device group dg-4-5" in last_entry(state).execution[2]["message"]
    assert _held(vcsim) == [(GROUP, 2)], "the read gives the VM the group again"
    with session(vcsim) as service:
        assert _devices(service) == [("grid_a100dx-80c", 0), ("grid_a100dx-80c", 1)], "grouped, none left over"

    # the state without the group (a model-only detach) while vCenter holds it: applied again, nothing twice
    path = tmp_path / "detach.yaml"
    path.write_text(json.dumps({"changes": DETACH}), encoding="utf-8")
    model = gpuadmin("--state", state, "apply", "-f", path, "--yes", "--model-only", env=env)
    assert model.code == ExitCode.OK, model.err
    again = apply_changes(state, env, *ATTACH)
    assert again.code == ExitCode.OK, again.err
    assert _steps(state) == [("already", [])] * 3
    assert _held(vcsim) == [(GROUP, 2)]
    with session(vcsim) as service:
        assert len(_devices(service)) == 2


def test_a_device_group_of_a_powered_on_vm_is_refused_before_any_task(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state)  # train-vm-03 stays powered on
    done = apply_changes(state, env, *DETACH)
    assert done.code == ExitCode.CONFLICT, done.err
    entry = last_entry(state)
    assert entry.outcome == "failed" and _steps(state) == [("failed", []), ("not-run", []), ("not-run", [])]
    assert "powered-off VM only" in entry.execution[0]["message"] and "poweredOn" in entry.execution[0]["message"]
    assert _held(vcsim) == [(GROUP, 2)]


def test_the_review_names_the_reconfig_call_with_the_group(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state, "train-vm-03")
    path = tmp_path / "detach.yaml"
    path.write_text(json.dumps({"changes": DETACH}), encoding="utf-8")
    planned = gpuadmin("--state", state, "plan", "-f", path, "-o", "json", env=env)
    assert planned.code == ExitCode.OK, planned.err
    step = json.loads(planned.out)["cluster_steps"][0]
    assert step["op"] == "detach-vm" and step["executes"] is True
    assert "ReconfigVM_Task" in step["calls"] and "device group dg-4-5" in step["calls"], step
    review = gpuadmin("--state", state, "plan", "-f", path, env=env)
    assert "ReconfigVM_Task on the powered-off VM removing device group dg-4-5" in review.out, review.out
    assert "nothing on vCenter" not in review.out


def test_a_task_vcenter_fails_is_a_failed_step_with_its_fault(vcsim: Simulator, tmp_path: Path) -> None:
    """The VM made a template after the sync: the simulator refuses its ReconfigVM_Task (NotSupported), the step
    fails with the fault, the rest is not run and the state is unchanged."""
    state = tmp_path / "state"
    env = bind(vcsim, state, "train-vm-03")
    with Store.open(state) as store:
        revision = store.revision()
    with session(vcsim) as service:
        find(service, "VirtualMachine", "train-vm-03").MarkAsTemplate()
    done = apply_changes(state, env, *DETACH)
    assert done.code == ExitCode.CONFLICT, done.err
    entry = last_entry(state)
    assert entry.outcome == "failed" and _steps(state) == [("failed", ["ReconfigVM_Task"]), ("not-run", []),
                                                           ("not-run", [])]
    assert "ReconfigVM_Task failed: " in entry.execution[0]["message"] and "NotSupported" in entry.execution[0][
        "message"]
    with Store.open(state) as store:
        assert store.revision() == revision
    with session(vcsim) as service:  # (the read passes a template over: its devices seen directly)
        assert _devices(service) == [("grid_a100dx-80c", 0), ("grid_a100dx-80c", 1)]
