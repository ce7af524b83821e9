"""vSphere limits (gpu-facts §4.4–§4.6), HGX boards (§5) and OCI shapes (§5.1)."""

from __future__ import annotations

import pytest

from gpuadmin.catalog import get_catalog


# §4.5: (ESXi, VM hardware version) → max passthrough devices per VM
@pytest.mark.parametrize(
    ("esxi", "hw", "limit"),
    [
        ("7.0", 13, 16),
        ("7.0", 17, 16),
        ("7.0U2", 19, 16),
        ("7.0U3", 19, 16),
        ("8.0", 19, 16),  # an 8.0 host running a 7.x-compatible VM
        ("8.0", 20, 32),
        ("8.0U1", 20, 64),
        ("8.0U1", 19, 16),
        ("8.0U2", 20, 64),
        ("8.0U2", 21, 128),
        ("8.0U3", 21, 128),
        ("9.0", 22, 128),
    ],
)
def test_passthrough_devices_per_vm(esxi: str, hw: int, limit: int) -> None:
    vsphere = get_catalog().vsphere
    assert vsphere.passthrough_devices_per_vm(esxi, hw) == limit
    assert vsphere.passthrough_row(esxi, hw).provenance.confidence == "verified"


def test_passthrough_rows_are_the_table() -> None:
    rows = [(r.min_esxi, r.min_hardware_version, r.limit) for r in get_catalog().vsphere.passthrough_rows]
    assert rows == [("7.0", 13, 16), ("8.0", 20, 32), ("8.0U1", 20, 64), ("8.0U2", 21, 128)]


@pytest.mark.parametrize(("esxi", "hw"), [("6.7U3", 15), ("7.0", 12)])
def test_passthrough_outside_the_table(esxi: str, hw: int) -> None:
    with pytest.raises(ValueError, match="no passthrough limit"):
        get_catalog().vsphere.passthrough_devices_per_vm(esxi, hw)


@pytest.mark.parametrize(
    ("esxi", "hw"),
    [
        ("6.7U2", 15),
        ("7.0", 17),
        ("7.0U1", 18),
        ("7.0U2", 19),
        ("7.0U3", 19),
        ("8.0", 20),
        ("8.0U1", 20),
        ("8.0U2", 21),
        ("8.0U3", 21),
        ("9.0", 22),
    ],
)
def test_max_hardware_version(esxi: str, hw: int) -> None:
    assert get_catalog().vsphere.max_hardware_version(esxi) == hw


def test_max_hardware_version_before_the_table() -> None:
    with pytest.raises(ValueError):
        get_catalog().vsphere.max_hardware_version("6.5")


def test_vgpus_per_vm() -> None:
    vsphere = get_catalog().vsphere
    assert vsphere.vgpus_per_vm("8.0") == 8
    assert vsphere.vgpus_per_vm("8.0U3") == 8
    assert vsphere.vgpus_per_vm_row("8.0").provenance.confidence == "verified"
    assert not vsphere.multi_vgpu_full_framebuffer_only("8.0")
    # §4.4: on 7.x only full-framebuffer C vGPUs combine; the 7.x count is not in the reference
    assert vsphere.multi_vgpu_full_framebuffer_only("7.0U3")
    assert vsphere.vgpus_per_vm_row("7.0U3").provenance.confidence == "uncertain"
    with pytest.raises(ValueError):
        vsphere.vgpus_per_vm("6.7")


def test_mixed_vgpu_thresholds() -> None:
    vsphere = get_catalog().vsphere
    assert vsphere.mixed_vgpu_types_since == "8.0U1"  # issue 19 point 14: the vSphere 8 U1 article
    assert vsphere.mixed_vgpu_sizes_since == "8.0U3"
    assert vsphere.mixed_vgpu_sizes_min_vgpu_release == 17
    assert not vsphere.allows_mixed_vgpu_types("8.0")
    assert vsphere.allows_mixed_vgpu_types("8.0U1")
    assert not vsphere.allows_mixed_vgpu_sizes("8.0U2")
    assert vsphere.allows_mixed_vgpu_sizes("8.0U3")
    assert vsphere.allows_mixed_vgpu_sizes("8.0U3", vgpu_release=17)
    assert not vsphere.allows_mixed_vgpu_sizes("8.0U3", vgpu_release=16)
    assert vsphere.mixed_vgpu_types_provenance.confidence == "secondary"
    assert "shared/seeds/003_d3a2a3cdf68c732d.txt" in vsphere.mixed_vgpu_types_provenance.source
    # the later VMware blog that dates it 8.0 U2 stays cited, as conflicting
    assert "Conflicting: blogs.vmware.com 2024-07-03" in vsphere.mixed_vgpu_types_provenance.note
    assert vsphere.mixed_vgpu_sizes_provenance.confidence == "verified"


def test_device_groups() -> None:
    vsphere = get_catalog().vsphere
    assert vsphere.device_group_sizes == (2, 4, 8)
    assert vsphere.device_group_sizes_provenance.confidence == "derived"
    assert not vsphere.allows_device_groups("7.0U3")
    assert vsphere.allows_device_groups("8.0")
    assert not vsphere.allows_device_groups("8.0", nvswitch=True)
    assert vsphere.allows_device_groups("8.0U1", nvswitch=True)


def test_nvswitch_vgpu_rules() -> None:
    nvswitch = get_catalog().vsphere.nvswitch
    assert nvswitch.time_sliced_vgpu
    assert not nvswitch.mig_backed_vgpu
    assert not nvswitch.plain_passthrough
    assert nvswitch.provenance.confidence == "verified"


# §5.1: shape → (GPU model, GPUs, RDMA NICs, Gbps per NIC, cores, memory, NVLink)
SHAPES = {
    "BM.GPU4.8": ("A100-SXM4-40GB", 8, 8, 200, 64, 2048, "nvswitch"),
    "BM.GPU.A100-v2.8": ("A100-SXM4-80GB", 8, 16, 100, 128, 2048, "nvswitch"),
    "BM.GPU.H100.8": ("H100-SXM5-80GB", 8, 16, 200, 112, 2048, "nvswitch"),
    "BM.GPU.H200.8": ("H200-SXM5-141GB", 8, 8, 400, 112, 3072, "nvswitch"),
    "BM.GPU.B200.8": ("B200", 8, 8, 400, 128, 4096, "nvswitch"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes(name: str) -> None:
    catalog = get_catalog()
    shape = catalog.shapes[name]
    assert (
        shape.gpu_model,
        shape.gpus,
        shape.rdma_nics,
        shape.rdma_gbps,
        shape.cpus,
        shape.memory_gib,
        shape.nvlink,
    ) == SHAPES[name]
    assert catalog.model(shape.gpu_model) is not None
    assert shape.provenance.confidence == "secondary"


def test_shape_totals() -> None:
    """Totals quoted in §5.1: 1.6 Tb/s for the A100 shapes, 3.2 Tb/s for H100; GPU memory per shape."""
    catalog = get_catalog()
    gbps = {n: s.rdma_nics * s.rdma_gbps for n, s in catalog.shapes.items()}
    assert gbps["BM.GPU4.8"] == gbps["BM.GPU.A100-v2.8"] == 1600
    assert gbps["BM.GPU.H100.8"] == 3200
    gpu_gb = {n: s.gpus * catalog.gpu_models[s.gpu_model].memory_gb for n, s in catalog.shapes.items()}
    assert gpu_gb == {
        "BM.GPU4.8": 320,
        "BM.GPU.A100-v2.8": 640,
        "BM.GPU.H100.8": 640,
        "BM.GPU.H200.8": 1128,
        "BM.GPU.B200.8": 1440,
    }


# §5: board → (GPU models, GPUs, NVLink kind, NVSwitches, links per GPU, GB/s per GPU)
BOARDS = {
    "HGX A100 8-GPU": (("A100-SXM4-40GB", "A100-SXM4-80GB"), 8, "nvswitch", 6, 12, 600),
    "HGX A100 4-GPU": (("A100-SXM4-40GB", "A100-SXM4-80GB"), 4, "direct", 0, 12, 600),
    "HGX H100 8-GPU": (("H100-SXM5-80GB",), 8, "nvswitch", 4, 18, 900),
    "HGX H200 8-GPU": (("H200-SXM5-141GB",), 8, "nvswitch", 4, 18, 900),
    "HGX B200 8-GPU": (("B200",), 8, "nvswitch", 2, 18, 1800),
}


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_boards(name: str) -> None:
    board = get_catalog().boards[name]
    assert (
        board.gpu_models,
        board.gpus,
        board.nvlink,
        board.nvswitches,
        board.nvlink_links_per_gpu,
        board.nvlink_bandwidth_gbs,
    ) == BOARDS[name]
    for model_name in board.gpu_models:
        model = get_catalog().model(model_name)
        assert model is not None and model.nvlink is not None
        assert model.nvlink.links == board.nvlink_links_per_gpu


def test_board_switch_ids_and_topology() -> None:
    boards = get_catalog().boards
    assert boards["HGX A100 8-GPU"].nvswitch_pci_id == "0x1AF1"
    assert boards["HGX H100 8-GPU"].nvswitch_pci_id == "0x22A3"
    assert boards["HGX A100 8-GPU"].topo_matrix == "NV12"
    assert boards["HGX A100 4-GPU"].topo_matrix == "NV4"
    assert boards["HGX H100 8-GPU"].topo_matrix == "NV18"
    assert set(boards) == set(BOARDS)
