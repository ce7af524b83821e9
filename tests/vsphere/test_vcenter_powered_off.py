"""A powered-off vGPU VM against VMware's vCenter simulator: ESXi names on a graphics device
(`config.graphicsInfo[].vm`) only the VMs using it, so a VM powered off is in no list (the seeding's graphics.go,
ours, releases its GPUs as ESXi does). The read keeps the state's placement for its vGPUs — no drift, no vGPU lost
on a sync, `remove-vgpu` (which vSphere runs on a powered-off VM only) still planned and run — and reports a VM the
state cannot place as unplaced, with a finding, on no GPU (docs/vsphere.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import bind, create_vgpu_vm, find, session, wait
from tests.vsphere.vcsim import Simulator


def _holders(state: Path, host: str) -> dict[int, list[str]]:
    with Store.open(state) as store:
        node = store.load().nodes[host]
    return {gpu.index: [v.vm for v in gpu.vgpus or ()] for gpu in node.gpus}


def _named_on_graphics(service: Any, host: str, vm: str) -> bool:
    ref = find(service, "VirtualMachine", vm)
    return any(ref in (g.vm or []) for g in find(service, "HostSystem", host).config.graphicsInfo)


def test_a_vm_powered_off_keeps_its_vgpus_and_remove_vgpu_runs_on_it(vcsim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state)
    assert "ds-vm-05" in _holders(state, "esx-vdi-02")[1]
    with session(vcsim) as service:
        wait(find(service, "VirtualMachine", "ds-vm-05").PowerOffVM_Task())
        assert not _named_on_graphics(service, "esx-vdi-02", "ds-vm-05"), "ESXi names only a running VM"

    diff = gpuadmin("--state", state, "diff", "-o", "json", env=env)
    assert diff.code == ExitCode.REFUSED, diff.err
    report = json.loads(diff.out)
    [row] = report["drift"]  # only its power state: no vGPU drift
    assert row["name"] == "esx-vdi-02" and re.fullmatch(r"vms\[[0-9]+\]\.power_state", row["field"]), row
    assert (row["state"], row["cluster"]) == ("poweredOn", "poweredOff")
    assert {"kind": "vm", "name": "ds-vm-05", "field": "config.graphicsInfo", "message": "placement kept from the "
            "state: vCenter names a GPU only for a running VM (GPU 1 of host esx-vdi-02)"} in report["findings"]

    synced = gpuadmin("--state", state, "sync", env=env)
    assert synced.code == ExitCode.OK, synced.err
    assert "placement kept from the state" in synced.err
    assert "ds-vm-05" in _holders(state, "esx-vdi-02")[1], "its vGPU stays where it was"
    assert gpuadmin("--state", state, "diff", env=env).code == ExitCode.OK

    changes = tmp_path / "changes.yaml"
    changes.write_text(yaml.safe_dump({"changes": [{"op": "remove-vgpu", "node": "esx-vdi-02", "gpu": 1,
                                                    "vm": "ds-vm-05", "profile": "L40S-12C"}]}), encoding="utf-8")
    done = gpuadmin("--state", state, "apply", "-f", changes, "--yes", env=env)
    assert done.code == ExitCode.OK, done.err
    with Store.open(state) as store:
        step = store.journal()[-1].execution[0]
    assert step["status"] == "executed" and step["calls"][0].startswith("ReconfigVM_Task vm-"), step
    with session(vcsim) as service:
        devices = find(service, "VirtualMachine", "ds-vm-05").config.hardware.device
        assert not [d for d in devices if hasattr(d.backing, "vgpu")]


def test_a_new_powered_off_vgpu_vm_reads_unplaced_then_placed_when_powered_on(vcsim: Simulator,
                                                                               tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = bind(vcsim, state)
    with session(vcsim) as service:
        create_vgpu_vm(service, "ds-vm-99", "esx-vdi-02", "grid_l40s-24c")  # created powered off

    diff = gpuadmin("--state", state, "diff", "-o", "json", env=env)
    report = json.loads(diff.out)
    assert {"kind": "vm", "name": "ds-vm-99", "field": "config.graphicsInfo", "message": "1 vGPU(s) L40S-24C on no "
            "GPU of host esx-vdi-02: placed when powered on (vCenter names a GPU only for a running VM)"} \
        in report["findings"]
    synced = gpuadmin("--state", state, "sync", env=env)
    assert synced.code == ExitCode.OK, synced.err
    assert "ds-vm-99" in synced.err and "placed when powered on" in synced.err
    with Store.open(state) as store:
        vms = {vm.name for vm in store.load().nodes["esx-vdi-02"].vms}
    assert "ds-vm-99" in vms, "the VM is read"
    assert not any("ds-vm-99" in held for held in _holders(state, "esx-vdi-02").values()), "on no GPU, none made up"

    with session(vcsim) as service:
        wait(find(service, "VirtualMachine", "ds-vm-99").PowerOnVM_Task())
    synced = gpuadmin("--state", state, "sync", env=env)
    assert synced.code == ExitCode.OK and "vm/ds-vm-99" not in synced.err, synced.err
    assert _holders(state, "esx-vdi-02")[3] == ["ai-dev-01", "ds-vm-99"], \
        "consolidation: beside the other L40S-24C vGPU (ai-dev-02, off, holds none)"
