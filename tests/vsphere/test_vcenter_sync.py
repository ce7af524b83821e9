"""`gpuadmin sync` and `diff` on a vCenter-bound state, against VMware's vCenter simulator (issue 24, item 1): the
same design as a Kubernetes binding — one journal entry with origin `cluster`, the rules the estate breaks as
warnings, a field-level diff that exits 1 on drift. The drift is made through the vSphere API, as an admin's client
makes it (the simulator carries the tasks out)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import create_vgpu_vm, find, session, wait
from tests.vsphere.vcsim import Simulator

SAMPLE = Path(__file__).resolve().parents[2] / "sample-inventories" / "vsphere-hgx.yaml"


def _bound(vcsim: Simulator, state: Path) -> dict[str, str]:
    env = {**os.environ, "GPUADMIN_VCENTER_PASSWORD": vcsim.password}
    done = gpuadmin("--state", state, "init", "--from-cluster", "vcenter", "--server", vcsim.server, "--user",
                    vcsim.user, "--insecure", env=env)
    assert done.code == ExitCode.OK, done.err
    return env


def test_a_drifted_vcenter_is_diffed_field_by_field_then_synced_in_one_entry(vcsim: Simulator,
                                                                             tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    assert gpuadmin("--state", state, "diff", env=env).code == ExitCode.OK
    with session(vcsim) as service:
        wait(find(service, "VirtualMachine", "vdi-01").PowerOffVM_Task())
        wait(find(service, "HostSystem", "esx-vdi-02").EnterMaintenanceMode_Task(timeout=0))
        gone = find(service, "VirtualMachine", "ds-legacy-03")
        wait(gone.PowerOffVM_Task())  # vSphere destroys no running VM
        wait(gone.Destroy_Task())
        create_vgpu_vm(service, "vdi-13", "esx-vdi-01", "grid_a40-12c")
    diff = gpuadmin("--state", state, "diff", "-o", "json", env=env)
    assert diff.code == ExitCode.REFUSED, diff.err
    rows = json.loads(diff.out)["drift"]
    assert {"kind": "node", "name": "esx-vdi-02", "field": "state", "state": "ready", "cluster": "cordoned"} in rows
    vdi = {row["field"]: row for row in rows if row["name"] == "esx-vdi-01"}
    assert set(vdi) == {"vms"}, "a VM more: the list as a whole (same length: item by item, field by field)"
    on_vcenter = {vm["name"]: vm for vm in vdi["vms"]["cluster"]}
    assert on_vcenter["vdi-01"]["power_state"] == "poweredOff" and "vdi-13" in on_vcenter
    legacy = {row["field"]: row for row in rows if row["name"] == "esx-legacy-01"}
    assert legacy["gpus[3].vgpus"]["cluster"] is None, "ds-legacy-03 is gone, and its vGPU"
    table = gpuadmin("--state", state, "diff", env=env)
    assert table.code == ExitCode.REFUSED and "esx-vdi-02" in table.out and "cordoned" in table.out

    synced = gpuadmin("--state", state, "sync", "-o", "json", env=env)
    assert synced.code == ExitCode.OK, synced.err
    result = json.loads(synced.out)
    assert result["entry"] is not None and result["kind"] == "vcenter" and result["insecure"] is True
    assert {(c["kind"], c["name"]) for c in result["changed"]} == \
        {("node", "esx-vdi-01"), ("node", "esx-vdi-02"), ("node", "esx-legacy-01")}
    with Store.open(state) as store:
        entries = [e for e in store.journal() if e.origin == "cluster"]
        assert len(entries) == 1 and entries[0].outcome == "applied"
        nodes = store.load().nodes
        assert nodes["esx-vdi-02"].state == "cordoned"
        assert "ds-legacy-03" not in {vm.name for vm in nodes["esx-legacy-01"].vms}
        vms = {vm.name: vm for vm in nodes["esx-vdi-01"].vms}
        assert vms["vdi-01"].power_state == "poweredOff" and "vdi-13" in vms
    again = gpuadmin("--state", state, "sync", "-o", "json", env=env)
    assert again.code == ExitCode.OK and json.loads(again.out)["entry"] is None, again.err
    assert gpuadmin("--state", state, "diff", env=env).code == ExitCode.OK


def test_what_vcenter_does_not_report_is_kept_from_the_state(vcsim: Simulator, tmp_path: Path) -> None:
    """A state bound to the simulator, then given the sample's device-group names, the group no VM holds (dg-c:
    vSphere names GPUs only for a held group) and labels (what vCenter does not report): a sync keeps them, and the
    queues and jobs, which are gpuadmin's own."""
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    with Store.open(state) as store:
        revision = store.revision()
    done = gpuadmin("--state", state, "apply", "-f", _groups_and_a_queue(tmp_path), "--yes", env=env)
    assert done.code == ExitCode.OK, done.err
    with session(vcsim) as service:
        wait(find(service, "VirtualMachine", "train-vm-03").PowerOffVM_Task())
    synced = gpuadmin("--state", state, "sync", env=env)
    assert synced.code == ExitCode.OK, synced.err
    with Store.open(state) as store:
        assert store.revision() == revision + 2
        loaded = store.load()
        node = loaded.nodes["esx-hgx-02"]
        assert [g.name for g in node.device_groups] == ["dg-a", "dg-b", "dg-c"]
        assert {vm.name: (vm.device_group, vm.power_state) for vm in node.vms}["train-vm-03"] == \
            ("dg-b", "poweredOff")
        assert node.labels == {"vsphere.cluster": "hgx-train", "hardware": "PowerEdge-XE8545"}
        assert "ml-training" in loaded.queues


def _groups_and_a_queue(tmp_path: Path) -> Path:
    """A change file: esx-hgx-02 restored with the sample's device groups and hardware label, and a queue."""
    import yaml

    with Store.open(tmp_path / "state") as store:
        node = store.load().nodes["esx-hgx-02"].model_dump(mode="json", exclude_none=True)
    node["device_groups"] = [{"name": "dg-a", "gpus": [0, 1, 2, 3]}, {"name": "dg-b", "gpus": [4, 5]},
                             {"name": "dg-c", "gpus": [6, 7]}]
    node["labels"]["hardware"] = "PowerEdge-XE8545"
    for vm in node["vms"]:
        vm["device_group"] = {"train-vm-02": "dg-a", "train-vm-03": "dg-b"}[vm["name"]]
    changes = {"changes": [
        {"op": "restore", "kind": "node", "name": "esx-hgx-02", "node": node},
        {"op": "restore", "kind": "queue", "name": "ml-training",
         "queue": {"name": "ml-training", "quota": {"gpus": 24}}}]}
    path = tmp_path / "changes.yaml"
    path.write_text(yaml.safe_dump(changes), encoding="utf-8")
    return path


def test_a_model_only_change_on_a_vcenter_bound_state_says_so_and_touches_nothing(vcsim: Simulator,
                                                                                   tmp_path: Path) -> None:
    """`--model-only`: a cordon changes the state alone, its entry says "model only", vCenter's host stays out of
    maintenance mode, and no Kubernetes connection is tried with the vCenter's binding (which would fail on the
    kubeconfig). (Without it the cordon is a vCenter task: tests/vsphere/test_vcenter_execute.py.)"""
    state = tmp_path / "state"
    env = _bound(vcsim, state)
    done = gpuadmin("--state", state, "cordon", "esx-vdi-01", "--yes", "--model-only",
                    env={**env, "KUBECONFIG": "/nonexistent"})
    assert done.code == ExitCode.OK, done.err
    with Store.open(state) as store:
        entry = store.journal()[-1]
        assert entry.outcome == "applied" and "model only" in entry.message
        assert store.load().nodes["esx-vdi-01"].state == "cordoned"
    with session(vcsim) as service:
        assert find(service, "HostSystem", "esx-vdi-01").runtime.inMaintenanceMode is False
