"""A full evacuation of an HGX host on vCenter (issue 24 item 3), against VMware's simulator: `evacuate
esx-hgx-02` moves its VM with a device group cold (PowerOffVM_Task, RelocateVM_Task, PowerOnVM_Task) and its vGPU
VM by vMotion (RelocateVM_Task) to a spare HGX host, then puts the host in maintenance mode; the plan is confirmed
by typing the host's name; run again, it changes nothing.

The seed (tests/vsphere/seed.yaml, like the vSphere sample) has no HGX host with room for another's VMs, so this
test's simulator is seeded with a spare one more: esx-hgx-04, an empty HGX A100 80GB host of the training cluster
offering device groups of 2, 4 and 8 GPUs, as tests/engine/fixtures/vsphere-spare-hosts.yaml has it (ours, tests
only); and train-vm-03 is seeded without its device group, so that esx-hgx-02 holds one VM of each kind. The read
gives a host the device groups its VMs hold (docs/vsphere.md, "Device groups"): esx-hgx-02's train-vm-02 group is
read from vCenter, while esx-hgx-04's free group (vSphere names no GPUs for a group no VM holds) is carried by the
state, as an operator's state carries it: restored once into the bound state (`apply` of a `restore`, model only),
and kept by every sync."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import ROOT, gpuadmin
from tests.vsphere.estate import apply_changes, bind, find, session
from tests.vsphere.vcsim import SEED, Simulator, running, why_not

SPARE_HGX = {"name": "esx-hgx-04", "cluster": "hgx-train", "nvswitches": 6, "device_group_sizes": [2, 4, 8],
             "esxi": "8.0.1", "build": "21495797",
             "vmotion_mb": [100000, 100000], "cpus": 128, "memory_gib": 2048,
             "gpu": {"device_id": 0x20B2, "name": "GA100 [A100 SXM4 80GB]", "memory_mib": 81920, "count": 8},
             "vgpu_types": ["grid_a100dx-4c", "grid_a100dx-5c", "grid_a100dx-8c", "grid_a100dx-10c",
                            "grid_a100dx-16c", "grid_a100dx-20c", "grid_a100dx-40c", "grid_a100dx-80c"]}
DG_A = [{"name": "dg-a", "gpus": [0, 1, 2, 3]}]  # the sample's first device group of an HGX A100 80GB host


@pytest.fixture
def vcsim_spare_hgx(tmp_path: Path) -> Iterator[Simulator]:
    """The seeded simulator with the spare HGX host esx-hgx-04 added, and train-vm-03 holding no device group."""
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    seed = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    seed["hosts"].append(SPARE_HGX)
    for vm in seed["vms"]:
        if vm["name"] == "train-vm-03":
            vm.pop("device_group", None)
    path = tmp_path / "seed-spare-hgx.yaml"
    path.write_text(yaml.safe_dump(seed), encoding="utf-8")
    with running(seed=path) as simulator:
        yield simulator


def _bound_with_a_free_device_group(vcsim: Simulator, state: Path) -> dict[str, str]:
    """A state bound to the simulator, given the free device group dg-a on esx-hgx-04 (its GPUs 4-7 in no group:
    a VM without a group takes no GPU of one, rule group.vm-holds-whole-group)."""
    env = bind(vcsim, state)
    with Store.open(state) as store:
        node = store.load().nodes["esx-hgx-04"].model_dump(mode="json", exclude_none=True)
    node["device_groups"] = DG_A
    done = apply_changes(state, env, {"op": "restore", "kind": "node", "name": "esx-hgx-04", "node": node})
    assert done.code == ExitCode.OK, done.err
    return env


def _typed(state: Path, env: dict[str, str], answer: str) -> tuple[int, bytes]:
    """`gpuadmin evacuate esx-hgx-02` at a terminal, `answer` typed at its confirmation: (exit code, what it said)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "evacuate",
                             "esx-hgx-02"], stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    seen = b""
    try:
        seen = _read_until(master, seen, b"to apply: ")
        os.write(master, answer.encode() + b"\n")
        proc.wait(timeout=120)
        seen = _read_until(master, seen, b"\0")  # the rest, until the terminal closes
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, seen


def _read_until(fd: int, seen: bytes, needle: bytes, timeout: float = 120) -> bytes:
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def _where(service: Any) -> dict[str, tuple[str, str]]:
    return {vm: (find(service, "VirtualMachine", vm).runtime.host.name,
                 str(find(service, "VirtualMachine", vm).runtime.powerState)) for vm in ("train-vm-02", "train-vm-03")}


def test_an_hgx_host_is_evacuated_cold_and_by_vmotion_then_enters_maintenance_mode_once_its_name_is_typed(
        vcsim_spare_hgx: Simulator, tmp_path: Path) -> None:
    vcsim, state = vcsim_spare_hgx, tmp_path / "state"
    env = _bound_with_a_free_device_group(vcsim, state)
    review = gpuadmin("--state", state, "evacuate", "esx-hgx-02", "--dry-run", "-o", "json", env=env)
    assert review.code == ExitCode.OK, review.err + review.out
    moves = {m["vm"]: m for m in json.loads(review.out)["evacuations"]["esx-hgx-02"]}
    assert {vm: (m["how"], m["to"]) for vm, m in moves.items()} == \
        {"train-vm-02": ("cold", "esx-hgx-04"), "train-vm-03": ("vmotion", "esx-hgx-04")}
    read_group = moves["train-vm-02"]["device_group"]["from"]  # read from vCenter, named by its GPUs
    assert read_group and moves["train-vm-02"]["device_group"]["to"] == "dg-a", moves
    assert moves["train-vm-03"]["link_gbps"] == 100 and moves["train-vm-03"]["stun_s"] is not None, moves

    code, said = _typed(state, env, "yes")  # a destructive plan: "yes" is not the host's name
    assert code != ExitCode.OK and b"Type 'esx-hgx-02' to apply: " in said, said
    assert b"power off, relocate, power on to esx-hgx-04" in said, said
    with session(vcsim) as service:  # nothing ran
        assert _where(service) == {"train-vm-02": ("esx-hgx-02", "poweredOn"),
                                   "train-vm-03": ("esx-hgx-02", "poweredOn")}

    code, said = _typed(state, env, "esx-hgx-02")
    assert code == ExitCode.OK, said
    with Store.open(state) as store:
        entry = store.journal()[-1]
        nodes = store.load().nodes
    assert entry.outcome == "executed", entry
    calls = [c.split()[:2] for c in entry.execution[0]["calls"]]
    vm_02, vm_03 = (find_moid(vcsim, vm) for vm in ("train-vm-02", "train-vm-03"))
    assert calls == [["PowerOffVM_Task", vm_02], ["RelocateVM_Task", vm_02], ["PowerOnVM_Task", vm_02],
                     ["RelocateVM_Task", vm_03], ["EnterMaintenanceMode_Task", calls[-1][1]]], calls
    with session(vcsim) as service:  # vCenter holds the moves
        assert _where(service) == {"train-vm-02": ("esx-hgx-04", "poweredOn"),
                                   "train-vm-03": ("esx-hgx-04", "poweredOn")}
        assert find(service, "HostSystem", "esx-hgx-02").runtime.inMaintenanceMode is True
    assert nodes["esx-hgx-02"].vms == [] and nodes["esx-hgx-02"].state == "draining"
    held = {vm.name: vm.device_group for vm in nodes["esx-hgx-04"].vms}
    assert held == {"train-vm-02": "dg-a", "train-vm-03": None}
    # vCenter reads as the plan left the state: the simulator's graphicsInfo (graphics.go) placed each vGPU on the
    # GPUs the plan chose (train-vm-02 on dg-a's 0-3, train-vm-03 on 4-5)
    diff = gpuadmin("--state", state, "diff", "-o", "json", env=env)
    assert diff.code == ExitCode.OK and json.loads(diff.out)["drift"] == [], diff.out

    revision = _revision(state)
    again = gpuadmin("--state", state, "evacuate", "esx-hgx-02", "--yes", env=env)
    assert again.code == ExitCode.OK, again.err
    assert _revision(state) == revision, "nothing left to move: no change, no task"


def find_moid(vcsim: Simulator, vm: str) -> str:
    with session(vcsim) as service:
        return str(find(service, "VirtualMachine", vm)._moId)


def _revision(state: Path) -> int:
    with Store.open(state) as store:
        return store.revision()
