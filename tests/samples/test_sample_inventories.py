"""The shipped sample inventories parse, are physically valid, and show what DESIGN §7 promises."""

from __future__ import annotations

import copy
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from samples_physical import MIG_PROFILES, check_all, esxi_max_hw

from gpuadmin.model import Inventory
from gpuadmin.model.references import check_references
from gpuadmin.store import load_inventory

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample-inventories"
NAMES = ("oci-h100.yaml", "vsphere-hgx.yaml", "k8s-mixed.yaml")


def _raw(name: str) -> dict[str, Any]:
    data = yaml.safe_load((SAMPLES / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _inv(name: str) -> Inventory:
    return Inventory.model_validate(_raw(name))


def _layout(gpu: Any) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((m.profile, m.start) for m in gpu.mig or []))


# ------------------------------------------------------------------------------------------------ all samples


@pytest.mark.parametrize("name", NAMES)
def test_sample_parses_and_is_physically_valid(name: str) -> None:
    inv = _inv(name)
    assert check_all(inv) == []
    assert check_references(inv) == []


@pytest.mark.parametrize("name", NAMES)
def test_sample_passes_the_product_loader(name: str) -> None:
    """The strict loader (YAML 1.1 surprises are errors, file:line:col diagnostics) accepts every sample."""
    inv = load_inventory(SAMPLES / name)
    assert inv == _inv(name)


@pytest.mark.parametrize("name", NAMES)
def test_every_mig_instance_has_an_explicit_start(name: str) -> None:
    for node in _inv(name).nodes:
        for gpu in node.gpus:
            for inst in gpu.mig or []:
                assert inst.start is not None, f"{node.name}/gpu{gpu.index} {inst.profile}"


def test_package_data_copy_is_identical() -> None:
    # by path in the source tree: an editable install made before gpuadmin/__init__.py existed maps
    # `gpuadmin` as a namespace package, where importlib.resources.files("gpuadmin") fails
    shipped = ROOT / "gpuadmin" / "samples" / "oci-h100.yaml"
    assert shipped.read_bytes() == (SAMPLES / "oci-h100.yaml").read_bytes(), (
        "gpuadmin/samples/oci-h100.yaml drifted from sample-inventories/oci-h100.yaml: copy it again"
    )
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "samples/*.yaml" in pyproject["tool"]["setuptools"]["package-data"]["gpuadmin"]


# ------------------------------------------------------------------------------------------------------- OCI


def test_oci_nodes_are_real_bm_gpu_h100_8() -> None:
    inv = _inv("oci-h100.yaml")
    assert len(inv.nodes) >= 8
    for node in inv.nodes:
        assert node.platform == "baremetal"
        assert node.shape == "BM.GPU.H100.8"
        assert (node.cpus, node.memory_gib, node.nvlink) == (112, 2048, "nvswitch")
        assert node.rdma is not None
        assert (node.rdma.nics, node.rdma.gbps, node.rdma.network) == (16, 200, "cluster-net-1")
        assert [g.index for g in node.gpus] == list(range(8))
        assert {g.model for g in node.gpus} == {"H100-SXM5-80GB"}
    pools = Counter(n.labels.get("pool") for n in inv.nodes)
    assert {"training", "mig", "shared"} <= set(pools)
    assert any(n.state == "cordoned" for n in inv.nodes)


def test_oci_pools_have_the_promised_layouts() -> None:
    inv = _inv("oci-h100.yaml")
    mig_nodes = [n for n in inv.nodes if n.labels.get("pool") == "mig"]
    assert len(mig_nodes) >= 2
    layouts = {_layout(g) for n in mig_nodes for g in n.gpus if g.mode == "mig"}
    balanced = (("1g.10gb", 2), ("1g.10gb", 3), ("2g.20gb", 0), ("3g.40gb", 4))
    assert balanced in layouts
    assert tuple(("1g.10gb", s) for s in range(7)) in layouts
    assert len(layouts) >= 5, "the MIG pool should show varied layouts"
    shared = [n for n in inv.nodes if n.labels.get("pool") == "shared"]
    dynamic = [n for n in shared if n.sharing is not None]
    sliced = [n for n in shared if n.sharing is None]
    # the shared pool: Run:ai-style dynamic sharing of full GPUs, and time-sliced GPUs for pools that want them
    assert dynamic and all(g.mode == "full" for n in dynamic for g in n.gpus)
    assert sliced and all(g.mode == "time-sliced" and g.replicas in (4, 8) for n in sliced for g in n.gpus)
    held = {s.gpu for j in inv.jobs if j.status == "running" and j.request.kind in ("fraction", "gpu_memory_gib")
            for s in j.placement if s.node == dynamic[0].name}
    assert 0 < len(held) < len(dynamic[0].gpus), "fractions share some of its GPUs, others are free"


def test_oci_queues_and_jobs() -> None:
    inv = _inv("oci-h100.yaml")
    queues = {q.name: q for q in inv.queues}
    assert {"research", "inference", "platform", "interns"} <= set(queues)
    assert all(q.quota.gpus for q in inv.queues) and all(q.limit for q in inv.queues)
    assert len({q.priority for q in inv.queues}) > 1 and len({q.over_quota_weight for q in inv.queues}) > 1

    jobs = inv.jobs
    assert len(jobs) >= 30
    status = Counter(j.status for j in jobs)
    assert status["running"] >= 10 and status["pending"] >= 5
    # an 8-GPU NVLink job on one node, and a 2-node RDMA gang
    assert any(j.request.gpus == 8 and j.request.nodes == 1 and j.request.nvlink for j in jobs)
    assert any(j.request.nodes == 2 and j.request.rdma for j in jobs)
    running = [j for j in jobs if j.status == "running"]
    assert any(j.request.mig for j in running)
    assert any(j.request.fraction or j.request.gpu_memory_gib for j in running)
    assert any(j.queue == "inference" and not j.preemptible for j in running)


def test_oci_has_pending_jobs_that_cannot_fit_as_is() -> None:
    inv = _inv("oci-h100.yaml")
    carved = {m.profile for n in inv.nodes for g in n.gpus for m in g.mig or []}
    pending = [j for j in inv.jobs if j.status == "pending"]
    uncarved = [j for j in pending if j.request.mig and j.request.mig not in carved]
    assert uncarved, "a pending MIG job whose profile is carved nowhere"
    assert uncarved[0].request.mig in MIG_PROFILES["H100-SXM5-80GB"], "...but a real H100 profile"

    held = {(s.node, s.gpu) for j in inv.jobs if j.status == "running" for s in j.placement}
    def free(n: Any) -> bool:
        return all(g.mode == "full" and (n.name, g.index) not in held for g in n.gpus)

    wholly_free = [n for n in inv.nodes if n.state == "ready" and n.rdma and free(n)]
    too_big = [j for j in pending if j.request.rdma and j.request.nodes > len(wholly_free)]
    assert too_big, "a pending RDMA gang bigger than the wholly free nodes"


# --------------------------------------------------------------------------------------------------- vSphere


def test_vsphere_hosts_device_groups_and_vgpus() -> None:
    inv = _inv("vsphere-hgx.yaml")
    assert all(n.platform == "vsphere" for n in inv.nodes)
    hgx = [n for n in inv.nodes if n.nvlink == "nvswitch"]
    assert len(hgx) >= 2
    for node in hgx:
        assert node.vsphere is not None and node.vsphere.version == "8.0U1"
        assert len(node.gpus) == 8 and {g.model for g in node.gpus} <= {"A100-SXM4-40GB", "A100-SXM4-80GB"}
        assert node.device_groups
    sizes = {len(g.gpus) for n in hgx for g in n.device_groups}
    assert sizes == {2, 4, 8}
    attached = [vm for n in hgx for vm in n.vms if vm.device_group]
    assert len(attached) >= 3

    vgpu_models = {g.model for n in inv.nodes for g in n.gpus if g.mode == "vgpu" and g.vgpus}
    assert {"A40", "L40S"} <= vgpu_models
    profiles = {v.profile for n in inv.nodes for g in n.gpus for v in g.vgpus or []}
    assert any(p.startswith("A40-") for p in profiles) and any(p.startswith("L40S-") for p in profiles)


def test_vsphere_versions_and_hardware_versions() -> None:
    inv = _inv("vsphere-hgx.yaml")
    versions = {n.vsphere.version for n in inv.nodes if n.vsphere}
    assert any(v.startswith("7.0") for v in versions)
    assert any(esxi_max_hw(v) >= 21 for v in versions), "an 8.0 U2+ host"
    hw = {vm.hardware_version for n in inv.nodes for vm in n.vms}
    assert {19, 20, 21} <= hw
    for node in inv.nodes:
        assert node.vsphere is not None
        for vm in node.vms:
            assert vm.hardware_version <= esxi_max_hw(node.vsphere.version)


# ------------------------------------------------------------------------------------------------ Kubernetes


def test_k8s_mixed_pool() -> None:
    inv = _inv("k8s-mixed.yaml")
    assert all((n.platform, n.orchestrator) == ("baremetal", "kubernetes") for n in inv.nodes)
    models = {g.model for n in inv.nodes for g in n.gpus}
    assert {"A100-SXM4-40GB", "A100-SXM4-80GB", "A30", "H200-SXM5-141GB"} <= models
    for node in inv.nodes:
        assert "nvidia.com/gpu.product" in node.labels and "nvidia.com/mig.strategy" in node.labels
        assert node.labels["nvidia.com/gpu.count"] == str(len(node.gpus))
    a30_layouts = {_layout(g) for n in inv.nodes for g in n.gpus if g.model == "A30" and g.mode == "mig"}
    assert len(a30_layouts) >= 3
    h200 = {m.profile for n in inv.nodes for g in n.gpus if g.model == "H200-SXM5-141GB" for m in g.mig or []}
    assert {"3g.71gb", "1g.18gb", "2g.35gb"} <= h200
    modes = {g.mode for n in inv.nodes for g in n.gpus}
    assert {"full", "mig", "time-sliced"} <= modes
    assert inv.queues and Counter(j.status for j in inv.jobs).keys() >= {"running", "pending"}


# ------------------------------------------------------------------------------- the checks catch violations


def _mutated(edit: Any, name: str = "oci-h100.yaml") -> list[str]:
    data = copy.deepcopy(_raw(name))
    edit(data)
    return check_all(Inventory.model_validate(data))


def _node(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in data["nodes"] if n["name"] == name)


def _job(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(j for j in data["jobs"] if j["name"] == name)


def test_checks_catch_overlapping_and_misplaced_mig() -> None:
    def overlap(d: dict[str, Any]) -> None:
        _node(d, "gpu-h100-07")["gpus"][2]["mig"].append({"profile": "1g.10gb", "start": 1})

    def misplaced(d: dict[str, Any]) -> None:
        _node(d, "gpu-h100-07")["gpus"][6]["mig"][0]["start"] = 1  # 1g.20gb starts only at 0/2/4/6

    assert any("overlaps" in p for p in _mutated(overlap))
    assert any("cannot start" in p for p in _mutated(misplaced))


def test_checks_catch_double_booking_and_oversubscription() -> None:
    def double(d: dict[str, Any]) -> None:
        _job(d, "intern-lora-ft")["placement"] = [{"node": "gpu-h100-03", "gpu": 0}]

    def oversubscribe(d: dict[str, Any]) -> None:
        _job(d, "nb-intern-5")["placement"] = [{"node": "gpu-h100-09", "gpu": 0}]

    def wrong_instance(d: dict[str, Any]) -> None:
        _job(d, "eval-harness-7b")["placement"] = [{"node": "gpu-h100-07", "gpu": 1, "mig_start": 3}]

    assert any("double-booked" in p for p in _mutated(double))
    assert any("fractions sum" in p for p in _mutated(oversubscribe))
    assert any("job wants 3g.40gb" in p for p in _mutated(wrong_instance))


def test_checks_catch_vsphere_violations() -> None:
    def hw21_on_u1(d: dict[str, Any]) -> None:
        _node(d, "esx-hgx-01")["vms"][0]["hardware_version"] = 21

    def overlapping_groups(d: dict[str, Any]) -> None:
        _node(d, "esx-hgx-02")["device_groups"][2]["gpus"] = [5, 6]

    def mixed_sizes(d: dict[str, Any]) -> None:
        _node(d, "esx-vdi-01")["gpus"][2]["vgpus"][0]["profile"] = "A40-12C"

    assert any("HW 21" in p for p in _mutated(hw21_on_u1, "vsphere-hgx.yaml"))
    assert any("overlaps" in p for p in _mutated(overlapping_groups, "vsphere-hgx.yaml"))
    assert any("mixed vGPU sizes" in p for p in _mutated(mixed_sizes, "vsphere-hgx.yaml"))
