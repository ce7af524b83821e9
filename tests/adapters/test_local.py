"""`import local`: the no-driver path for real (this machine has no GPU), the NVML reading logic through an
injected stand-in `nvml` module (the one seam; the real pynvml is the default), psutil and /sys for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from gpuadmin.adapters import NoDriverError, import_local
from gpuadmin.model.diagnostics import InputError


def test_no_driver_real_pynvml_one_line() -> None:
    pytest.importorskip("pynvml")
    with pytest.raises(NoDriverError) as bad:
        import_local("here")
    text = str(bad.value)
    assert text.startswith("no NVIDIA driver found (NVML: ") and text.endswith(")") and "\n" not in text
    assert isinstance(bad.value, InputError)  # the CLI's exit code 2
    assert [str(d) for d in bad.value.diagnostics] == [text]


def test_no_library_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` now raises ImportError
    with pytest.raises(NoDriverError, match=r"^no NVIDIA driver found \(NVML: the nvidia-ml-py package"):
        import_local("here")


def test_no_driver_in_a_fresh_process_prints_no_traceback() -> None:
    code = (
        "from gpuadmin.adapters import import_local, NoDriverError\n"
        "try:\n    import_local('x')\nexcept NoDriverError as e:\n    print(e)\n    raise SystemExit(2)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith("no NVIDIA driver found (NVML: ") and proc.stderr == ""


# ------------------------------------------------------------------------------------- stand-in NVML


class FakeNVMLError(Exception):
    pass


def fake_nvml(gpus: list[dict[str, Any]], *, gi_info: bool = True, init_error: str | None = None) -> Any:
    """A module-like object with the pynvml functions import_local calls, over a described set of GPUs."""

    def init() -> None:
        if init_error:
            raise FakeNVMLError(init_error)

    def mig_handle(h: int, slot: int) -> tuple[int, int]:
        migs = gpus[h]["migs"]
        if slot >= len(migs):
            raise FakeNVMLError("Not Found")
        return (h, slot)

    def gi_by_id(h: int, gi: int) -> tuple[int, int]:
        if not gi_info:
            raise FakeNVMLError("Not Supported")
        return (h, gi)

    def gi_get_info(ref: tuple[int, int]) -> Any:
        h, gi = ref
        mig = next(m for m in gpus[h]["migs"] if m["gi"] == gi)
        return SimpleNamespace(
            id=gi, profileId=mig["profile_id"], placement=SimpleNamespace(start=mig["start"], size=0)
        )

    def memory(handle: Any) -> Any:
        if isinstance(handle, tuple):
            return SimpleNamespace(total=gpus[handle[0]]["migs"][handle[1]]["mib"] << 20)
        return SimpleNamespace(total=gpus[handle]["mib"] << 20)

    def nvlink_state(h: int, link: int) -> int:
        links = gpus[h].get("links", [])
        if link >= len(links):
            raise FakeNVMLError("Not Supported")
        return 1

    def remote(h: int, link: int) -> Any:
        return SimpleNamespace(busId=gpus[h]["links"][link].encode())

    return SimpleNamespace(
        NVMLError=FakeNVMLError,
        NVML_NVLINK_MAX_LINKS=18,
        nvmlInit=init,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: len(gpus),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: gpus[h]["name"].encode(),
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(
            pciDeviceId=gpus[h]["pci"], busId=gpus[h]["bus"].encode()
        ),
        nvmlDeviceGetMemoryInfo=memory,
        nvmlDeviceGetMigMode=lambda h: (1, 1) if gpus[h].get("migs") is not None else (0, 0),
        nvmlDeviceGetMaxMigDeviceCount=lambda _h: 7,
        nvmlDeviceGetMigDeviceHandleByIndex=mig_handle,
        nvmlDeviceGetGpuInstanceId=lambda ref: gpus[ref[0]]["migs"][ref[1]]["gi"],
        nvmlDeviceGetAttributes=lambda ref: SimpleNamespace(
            multiprocessorCount=gpus[ref[0]]["migs"][ref[1]]["sms"],
            sharedOfaCount=gpus[ref[0]]["migs"][ref[1]].get("ofa", 0),  # H100 GFD labels: ofa 0 but on +me
        ),
        nvmlDeviceGetGpuInstanceById=gi_by_id,
        nvmlGpuInstanceGetInfo=gi_get_info,
        nvmlDeviceGetNvLinkState=nvlink_state,
        nvmlDeviceGetNvLinkRemotePciInfo=remote,
    )


SWITCH = "00000000:c1:00.0"
H100_BALANCED = [  # a real H100 all-balanced layout: 3g@4, 2g@0, 1g@2, 1g@3 (profile ids 9, 14, 19, 19)
    {"gi": 1, "profile_id": 9, "start": 4, "sms": 60, "mib": 40320},
    {"gi": 5, "profile_id": 14, "start": 0, "sms": 32, "mib": 20096},
    {"gi": 9, "profile_id": 19, "start": 2, "sms": 16, "mib": 9984},
    {"gi": 10, "profile_id": 19, "start": 3, "sms": 16, "mib": 9984},
]


def _h100(i: int, migs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "name": "NVIDIA H100 80GB HBM3",
        "pci": 0x233010DE,
        "bus": f"00000000:{0x18 + i:02x}:00.0",
        "mib": 81559,
        "migs": migs,
        "links": [SWITCH] * 18,
    }


def test_nvml_gpus_mig_placements_and_nvswitch(tmp_path: Path) -> None:
    nvml = fake_nvml([_h100(0, H100_BALANCED), _h100(1)])
    result = import_local("gpu-h100-01", nvml=nvml, sys_root=tmp_path)
    node = result.node
    assert node.name == "gpu-h100-01" and node.nvlink == "nvswitch"
    assert [g.model for g in node.gpus] == ["H100-SXM5-80GB"] * 2
    assert node.gpus[0].mode == "mig" and node.gpus[1].mode == "full"
    assert [(i.profile, i.start) for i in node.gpus[0].mig or ()] == [
        ("2g.20gb", 0),
        ("1g.10gb", 2),
        ("1g.10gb", 3),
        ("3g.40gb", 4),
    ]
    assert result.gpu_memory_mib == {0: 81559, 1: 81559}
    # psutil, for real
    assert node.cpus == (psutil.cpu_count(logical=False) or psutil.cpu_count())
    assert node.memory_gib == max(1, round(psutil.virtual_memory().total / (1 << 30)))
    assert node.rdma is None  # no /sys/class/infiniband under tmp_path


def test_nvml_without_gi_info_derives_profiles_and_places(tmp_path: Path) -> None:
    nvml = fake_nvml([_h100(0, H100_BALANCED)], gi_info=False)
    result = import_local("n", nvml=nvml, sys_root=tmp_path)
    assert [(i.profile, i.start) for i in result.node.gpus[0].mig or ()] == [
        ("2g.20gb", 0),
        ("1g.10gb", 2),
        ("1g.10gb", 3),
        ("3g.40gb", 4),
    ]
    assert any("no GPU-instance info" in w for w in result.warnings)


def test_nvml_pairs_and_unknown_model(tmp_path: Path) -> None:
    a = {
        "name": "NVIDIA H100 NVL",
        "pci": 0x232110DE,
        "bus": "00000000:01:00.0",
        "mib": 95830,
        "migs": None,
        "links": ["00000000:02:00.0"] * 12,
    }
    b = {**a, "bus": "00000000:02:00.0", "links": ["00000000:01:00.0"] * 12}
    node = import_local("n", nvml=fake_nvml([a, b]), sys_root=tmp_path).node
    assert node.nvlink == "pairs" and [g.model for g in node.gpus] == ["H100-NVL-94GB"] * 2
    v100 = {"name": "Tesla V100-SXM2-16GB", "pci": 0x1DB110DE, "bus": "00000000:01:00.0", "mib": 16160,
            "migs": None}
    result = import_local("n", nvml=fake_nvml([v100]), sys_root=tmp_path)
    gpu = result.node.gpus[0]
    assert (gpu.model, gpu.mode) == ("Tesla V100-SXM2-16GB", "full")
    assert gpu.not_in_catalog is not None
    assert (gpu.not_in_catalog.memory_mib, gpu.not_in_catalog.pci_device_id) == (16160, "0x1DB1")
    assert any("not in the catalog" in w and "MIG and vGPU" in w for w in result.warnings)
    t4 = {**v100, "name": "Tesla T4", "pci": 0x1EB810DE, "mib": 15360}
    assert import_local("n", nvml=fake_nvml([t4]), sys_root=tmp_path).node.gpus[0].model == "T4"


def test_nvml_init_failure_is_no_driver(tmp_path: Path) -> None:
    nvml = fake_nvml([], init_error="Driver Not Loaded")
    with pytest.raises(NoDriverError, match=r"^no NVIDIA driver found \(NVML: Driver Not Loaded\)$"):
        import_local("n", nvml=nvml, sys_root=tmp_path)


def test_rdma_devices_from_sys(tmp_path: Path) -> None:
    for i in range(4):
        port = tmp_path / "class" / "infiniband" / f"mlx5_{i}" / "ports" / "1"
        port.mkdir(parents=True)
        (port / "rate").write_text("200 Gb/sec (4X HDR)\n")
    result = import_local("n", nvml=fake_nvml([_h100(0)]), sys_root=tmp_path, rdma_network="cluster-net-1")
    assert result.node.rdma is not None
    assert (result.node.rdma.nics, result.node.rdma.gbps, result.node.rdma.network) == (
        4,
        200,
        "cluster-net-1",
    )


def _a100(i: int, peers: list[int]) -> dict[str, Any]:
    """An A100-SXM4-80GB whose NVLinks end on the GPUs `peers` directly (4 links each, as on HGX A100 4-GPU)."""
    return {
        "name": "NVIDIA A100-SXM4-80GB",
        "pci": 0x20B210DE,
        "bus": f"00000000:{0x10 + i:02x}:00.0",
        "mib": 81920,
        "migs": None,
        "links": [f"00000000:{0x10 + p:02x}:00.0" for p in peers for _ in range(4)],
    }


def test_nvml_direct_all_to_all_links_are_a_mesh_not_a_switch(tmp_path: Path) -> None:
    """HGX A100 4-GPU: every GPU links to each other GPU directly (NV4, no NVSwitch). Read as `nvswitch`
    before, which turned on the NVSwitch-only device-group rules; a partial mesh is `unknown`, never a guess."""
    mesh = [_a100(i, [p for p in range(4) if p != i]) for i in range(4)]
    assert import_local("n", nvml=fake_nvml(mesh), sys_root=tmp_path).node.nvlink == "mesh"
    partial = [_a100(0, [1, 2]), _a100(1, [0, 2]), _a100(2, [0, 1]), _a100(3, [])]
    assert import_local("n", nvml=fake_nvml(partial), sys_root=tmp_path).node.nvlink == "unknown"


def test_nvml_module_ids_are_the_gpus_board_slots(tmp_path: Path) -> None:
    """nvmlDeviceGetModuleId: the slot Fabric Manager's partitions name. The values are those of the real
    HGX H100 in tests/adapters/fixtures/k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml (GPU 0 in module 7)."""
    nvml = fake_nvml([_h100(i) for i in range(3)])
    nvml.nvmlDeviceGetModuleId = lambda h: [7, 5, 6][h]
    assert [g.module_id for g in import_local("n", nvml=nvml, sys_root=tmp_path).node.gpus] == [7, 5, 6]
    nvml.nvmlDeviceGetModuleId = lambda h: [7, 7, 6][h]
    result = import_local("n", nvml=nvml, sys_root=tmp_path)
    assert [g.module_id for g in result.node.gpus] == [None] * 3
    assert any("module ids repeat" in w for w in result.warnings)


def test_nvml_pairs_bridged_out_of_index_order_are_unknown(tmp_path: Path) -> None:
    """The model's pairs are (0,1), (2,3): GPUs 0-2 and 1-3 bridged are no such pairs, and `topo -m` already
    read them as unknown; NVML called them pairs (and the rules then took 0 and 1 as one NVLink domain)."""
    crossed = [_a100(0, [2]), _a100(1, [3]), _a100(2, [0]), _a100(3, [1])]
    assert import_local("n", nvml=fake_nvml(crossed), sys_root=tmp_path).node.nvlink == "unknown"
    aligned = [_a100(0, [1]), _a100(1, [0]), _a100(2, [3]), _a100(3, [2])]
    assert import_local("n", nvml=fake_nvml(aligned), sys_root=tmp_path).node.nvlink == "pairs"
