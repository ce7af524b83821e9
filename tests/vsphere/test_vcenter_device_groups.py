"""vSphere 8 device groups read from a vCenter (issue 24, item 1): the groups the seeded HGX hosts' VMs hold read as
the vSphere sample writes them, a group that moved is drift that a sync brings in under the state's names, a
vCenter before 8.0 (no such properties) keeps the state's groups, a hostile group name is a finding.

The vCenter is VMware's simulator (govmomi 0.24, which has no vSphere 8 types): the device groups it serves — each
VM's `config.deviceGroups`, its devices' `deviceGroupInfo`, each HGX host's `RetrieveVendorDeviceGroupInfo` — are
OUR seeding (tests/vsphere/vcsim/devicegroups.go, from tests/vsphere/seed.yaml); everything else it answers is the
simulator's. The one test that is not against it builds pyVmomi's own fault in-process and says so."""

from __future__ import annotations

import json
import secrets
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuadmin.cluster.vcenter import DEVICE_GROUPS_PATH, VM_PATHS, connect_vcenter, read_vcenter
from gpuadmin.errors import ExitCode
from gpuadmin.service import init_from_vcenter
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import AI_DEV_02_OFF, bind, vcenter_env
from tests.vsphere.vcsim import SEED, Simulator, running, why_not

SAMPLE = Path(__file__).resolve().parents[2] / "sample-inventories" / "vsphere-hgx.yaml"
HGX = ("esx-hgx-01", "esx-hgx-02", "esx-hgx-03")


def _held(node: dict[str, Any]) -> dict[tuple[int, ...], str | None]:
    """A host's device groups as GPU sets, each with the VM that holds it (None: no VM)."""
    holders = {vm["device_group"]: vm["name"] for vm in node.get("vms", []) if vm.get("device_group")}
    return {tuple(sorted(g["gpus"])): holders.get(g["name"]) for g in node.get("device_groups", [])}


def _sample_names(state: Path, simulator: Simulator, tmp_path: Path) -> None:
    """esx-hgx-02 given the sample's device-group names (dg-a, dg-b, and dg-c, which no VM holds) by a restore."""
    with Store.open(state) as store:
        node = store.load().nodes["esx-hgx-02"].model_dump(mode="json", exclude_none=True)
    node["device_groups"] = [{"name": "dg-a", "gpus": [0, 1, 2, 3]}, {"name": "dg-b", "gpus": [4, 5]},
                             {"name": "dg-c", "gpus": [6, 7]}]
    for vm in node["vms"]:
        vm["device_group"] = {"train-vm-02": "dg-a", "train-vm-03": "dg-b"}[vm["name"]]
    changes = tmp_path / "names.yaml"
    changes.write_text(yaml.safe_dump({"changes": [{"op": "restore", "kind": "node", "name": "esx-hgx-02",
                                                    "node": node}]}), encoding="utf-8")
    done = gpuadmin("--state", state, "apply", "-f", changes, "--yes", env=vcenter_env(simulator))
    assert done.code == ExitCode.OK, done.err


def _seed(tmp_path: Path, edit: dict[str, dict[str, Any]]) -> Path:
    """The seed with some VMs' entries changed (`edit`: VM name → fields)."""
    seed = yaml.safe_load(SEED.read_text(encoding="utf-8"))
    for vm in seed["vms"]:
        vm.update(edit.get(vm["name"], {}))
    path = tmp_path / "seed.yaml"
    path.write_text(yaml.safe_dump(seed, allow_unicode=True), encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_hgx_hosts_device_groups_read_as_the_sample_writes_them(vcsim: Simulator, tmp_path: Path) -> None:
    made = init_from_vcenter(tmp_path / "state", server=vcsim.server, user=vcsim.user, password=vcsim.password,
                             insecure=True)
    assert made.findings == [AI_DEV_02_OFF]
    with Store.open(tmp_path / "state") as store:
        read = {n.name: n.model_dump(mode="json", exclude_none=True) for n in store.load().nodes.values()}
    sample = {n["name"]: n for n in yaml.safe_load(SAMPLE.read_text(encoding="utf-8"))["nodes"]}
    for name in HGX:
        # vSphere names GPUs only for a group a VM holds: the sample's free dg-c (esx-hgx-02) is not read
        held = {gpus: vm for gpus, vm in _held(sample[name]).items() if vm is not None}
        assert _held(read[name]) == held, name
    assert [(g["name"], g["gpus"]) for g in read["esx-hgx-02"]["device_groups"]] == \
        [("dg-0-1-2-3", [0, 1, 2, 3]), ("dg-4-5", [4, 5])], "named by their GPUs where no state names them"
    assert all(not n.get("device_groups") for name, n in read.items() if name not in HGX)

    with running(password=vcsim.password) as again:
        snapshot = read_vcenter(connect_vcenter(again.server, again.user, again.password, insecure=True))
    offered = {h.name: h.device_groups for h in snapshot.hosts}
    assert offered["esx-vdi-01"] is None, "a host without an assignable-hardware manager reports none"
    hgx = offered["esx-hgx-02"]
    assert hgx is not None and {g.size for g in hgx} == {2, 4, 8}
    assert "Nvidia:4@grid_a100dx-80c%NVLink" in {g.name for g in hgx}


def test_a_group_that_moved_is_drift_and_a_sync_brings_it_in_under_the_states_names(tmp_path: Path) -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    state = tmp_path / "state"
    port, password = _free_port(), secrets.token_urlsafe(12)
    with running(port, password) as vcenter:
        bind(vcenter, state)
        _sample_names(state, vcenter, tmp_path)
        same = gpuadmin("--state", state, "diff", env=vcenter_env(vcenter))
        assert same.code == ExitCode.OK, f"the state's names are kept, and dg-c, which no VM holds: {same.out}"
    # the same vCenter later: train-vm-03's group now on GPUs 6 and 7 (its VM re-created there, say)
    moved = _seed(tmp_path, {"train-vm-03": {"vgpus": {"type": "grid_a100dx-80c", "gpus": [6, 7]}}})
    with running(port, password, seed=moved) as vcenter:
        diff = gpuadmin("--state", state, "diff", "-o", "json", env=vcenter_env(vcenter))
        assert diff.code == ExitCode.REFUSED, diff.err
        rows = {row["field"]: (row["state"], row["cluster"]) for row in json.loads(diff.out)["drift"]
                if row["name"] == "esx-hgx-02"}
        assert rows["vms[1].device_group"] == ("dg-b", "dg-c"), rows  # train-vm-03, second in the state's order
        synced = gpuadmin("--state", state, "sync", env=vcenter_env(vcenter))
        assert synced.code == ExitCode.OK, synced.err
        with Store.open(state) as store:
            node = store.load().nodes["esx-hgx-02"]
        assert [(g.name, g.gpus) for g in node.device_groups] == \
            [("dg-a", [0, 1, 2, 3]), ("dg-b", [4, 5]), ("dg-c", [6, 7])]
        assert {vm.name: vm.device_group for vm in node.vms} == {"train-vm-02": "dg-a", "train-vm-03": "dg-c"}
        assert gpuadmin("--state", state, "diff", env=vcenter_env(vcenter)).code == ExitCode.OK


def test_a_vcenter_before_8_reports_no_groups_and_a_sync_keeps_the_states(tmp_path: Path) -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    state = tmp_path / "state"
    with running(device_groups=False) as vcenter:
        snapshot = read_vcenter(connect_vcenter(vcenter.server, vcenter.user, vcenter.password, insecure=True))
        assert {vm.device_groups for vm in snapshot.vms} == {None}, "not reported, which is not 'none held'"
        assert {h.device_groups for h in snapshot.hosts} == {None}
        bind(vcenter, state)
        _sample_names(state, vcenter, tmp_path)
        synced = gpuadmin("--state", state, "sync", "-o", "json", env=vcenter_env(vcenter))
        assert synced.code == ExitCode.OK and json.loads(synced.out)["entry"] is None, synced.err
        with Store.open(state) as store:
            node = store.load().nodes["esx-hgx-02"]
        assert [g.name for g in node.device_groups] == ["dg-a", "dg-b", "dg-c"]
        assert {vm.name: vm.device_group for vm in node.vms} == {"train-vm-02": "dg-a", "train-vm-03": "dg-b"}


def test_a_hostile_or_unoffered_group_name_is_a_finding(tmp_path: Path) -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    seed = _seed(tmp_path, {
        "ft-vm-05": {"device_group_name": "Nvidia:2@grid_a100x-40c\u202e%NVLink"},  # a right-to-left override
        "train-vm-03": {"device_group_name": "Nvidia:2@grid_h100-80c%NVLink"}})  # not one esx-hgx-02 offers
    with running(seed=seed) as vcenter:
        done = gpuadmin("--state", tmp_path / "state", "init", "--from-cluster", "vcenter", "--server",
                        vcenter.server, "--user", vcenter.user, "--insecure", "-o", "json", env=vcenter_env(vcenter))
    assert done.code == ExitCode.OK, done.err
    assert "\u202e" not in done.out + done.err
    findings = {(f["name"], f["field"], f["message"]) for f in json.loads(done.out)["findings"]}
    assert ("ft-vm-05", "config.deviceGroups", "device group not read: a name with control characters") in findings
    assert ("train-vm-03", "config.deviceGroups",
            "device group 'Nvidia:2@grid_h100-80c%NVLink' is not one host esx-hgx-02 offers") in findings
    with Store.open(tmp_path / "state") as store:
        nodes = store.load().nodes
    assert {vm.name: vm.device_group for vm in nodes["esx-hgx-03"].vms if vm.name.startswith("ft-")} == \
        {"ft-vm-04": "dg-0-1-2-3", "ft-vm-05": None}, "the hostile group is not read; the others are"
    assert {vm.name: vm.device_group for vm in nodes["esx-hgx-02"].vms}["train-vm-03"] == "dg-4-5"


def test_a_vcenter_refusing_the_property_is_read_again_without_it() -> None:
    """A vCenter before 8.0 refuses the whole request for `config.deviceGroups` (InvalidProperty), where the
    simulator lists it as missing: pyVmomi's own fault type, raised in-process by a stand-in property collector
    (not the simulator), and the read goes on without the property."""
    from pyVmomi import vim, vmodl

    from gpuadmin.cluster import vcenter

    asked: list[list[str]] = []

    class Stub:
        """Answers each pyVmomi method call in-process: the property collector refuses the newer property."""

        def InvokeMethod(self, _: Any, info: Any, args: Any) -> Any:  # pyVmomi calls it so
            if info.wsdlName == "CreateContainerView":
                return vim.view.ContainerView("view-1", self)
            if info.wsdlName != "RetrievePropertiesEx":
                return None  # the view's Destroy
            paths = list(args[0][0].propSet[0].pathSet)
            asked.append(paths)
            if DEVICE_GROUPS_PATH in paths:
                raise vmodl.query.InvalidProperty(name=DEVICE_GROUPS_PATH)
            found = vmodl.query.PropertyCollector.ObjectContent(obj=vim.VirtualMachine("vm-1", self), propSet=[
                vmodl.DynamicProperty(name="name", val="vm-a")])
            return vmodl.query.PropertyCollector.RetrieveResult(objects=[found])

    stub = Stub()
    content = vim.ServiceInstanceContent(rootFolder=vim.Folder("group-d1", stub),
                                         viewManager=vim.view.ViewManager("ViewManager", stub),
                                         propertyCollector=vmodl.query.PropertyCollector("propertyCollector", stub))
    read = vcenter._collect_newer(content, vim.VirtualMachine, VM_PATHS, DEVICE_GROUPS_PATH)
    assert asked == [[*VM_PATHS, DEVICE_GROUPS_PATH], VM_PATHS]
    assert read == [("vm-1", {"name": "vm-a"}, frozenset({DEVICE_GROUPS_PATH}))]


def test_a_host_of_a_vcenter_before_8_offers_no_groups() -> None:
    """pyVmomi itself refuses a method newer than the API version it agreed with the vCenter (MethodNotFound, in
    its SoapAdapter, before anything is sent): a vCenter 7.0 U3's host, whose assignable-hardware manager exists
    (7.0) without RetrieveVendorDeviceGroupInfo (8.0.0.1), offers groups that read as not reported. In-process:
    pyVmomi's own stub at version 7.0.3.0, pointed at no server (not the simulator)."""
    from pyVmomi import SoapStubAdapter, vim

    from gpuadmin.cluster import vcenter

    stub = SoapStubAdapter(host="127.0.0.1", port=9, version="vim.version.v7_0_3_0")
    manager = vim.host.AssignableHardwareManager("assignableHardwareManager-1", stub)
    assert vcenter._offered_device_groups({vcenter.ASSIGNABLE_HARDWARE_PATH: manager}) is None
    assert vcenter._offered_device_groups({}) is None
