"""The loader: caching, package data, and loud failures on broken data files (file name and entry named)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadmin.catalog import CatalogError, default_data_dir, get_catalog, load_catalog


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    target.mkdir()
    for name in ("gpus.yaml", "mig.yaml", "vgpu.yaml", "platforms.yaml"):
        (target / name).write_text(
            default_data_dir().joinpath(name).read_text(encoding="utf-8"), encoding="utf-8"
        )
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_get_catalog_is_cached() -> None:
    assert get_catalog() is get_catalog()


def test_copy_loads_like_the_package(data_dir: Path) -> None:
    copy = load_catalog(data_dir)
    assert copy.gpu_models == get_catalog().gpu_models
    assert copy.vsphere == get_catalog().vsphere


def test_records_are_frozen() -> None:
    model = get_catalog().gpu_models["H100-SXM5-80GB"]
    with pytest.raises(AttributeError):
        model.memory_mib = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        get_catalog().gpu_models["X"] = model  # type: ignore[index]


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        # a bad confidence mark, named with the model entry
        (
            "gpus.yaml",
            "confidence: verified",
            "confidence: verfied",
            r"gpus\.yaml: models\[0:A100-SXM4-40GB\].*verfied",
        ),
        # an unknown key (a typo must not silently drop a fact)
        (
            "gpus.yaml",
            '    compute_capability: "8.0"',
            '    compute_capabilty: "8.0"',
            r"gpus\.yaml: models\[0:A100-SXM4-40GB\].*unknown key.*compute_capabilty",
        ),
        # a missing source
        (
            "gpus.yaml",
            '    source: "MIG-UG Table 1; gpu-facts §1.4, §1.7"\n',
            "",
            r"gpus\.yaml: models\[0:A100-SXM4-40GB\].*missing key 'source'",
        ),
        # naming total that is not ceil(MiB / 1024)
        (
            "gpus.yaml",
            "mib: 40960, gb: 40",
            "mib: 40960, gb: 41",
            r"gpus\.yaml: models\[0:A100-SXM4-40GB\]\.memory",
        ),
        # a nominal board size below the naming total (issue 19 point 11)
        (
            "gpus.yaml",
            "mib: 46068, gb: 45, board_gb: 48",
            "mib: 46068, gb: 45, board_gb: 44",
            r"gpus\.yaml: models\[\d+:L40S\]\.memory.*board_gb 44",
        ),
        # without its nominal 48 GB, the L40S-48C type does not fit the 46068 MiB nvidia-smi total
        (
            "gpus.yaml",
            "mib: 46068, gb: 45, board_gb: 48",
            "mib: 46068, gb: 45",
            r"gpus\.yaml: models\[\d+:L40S\]\.vgpu.*L40S-48C.*exceeds the 45 GB board",
        ),
        # a model naming a MIG table that does not exist
        (
            "gpus.yaml",
            "mig: a100-40gb",
            "mig: a100-41gb",
            r"gpus\.yaml: models\[0:A100-SXM4-40GB\].*a100-41gb",
        ),
        # a placement that runs past the 8 memory slices
        (
            "mig.yaml",
            "{name: 3g.20gb,   id: 9,  g: 3, m: 4, inst: 2, starts: [0, 4]",
            "{name: 3g.20gb,   id: 9,  g: 3, m: 4, inst: 2, starts: [0, 6]",
            r"mig\.yaml: tables\.a100-40gb\.profiles\[4:3g\.20gb\].*runs past",
        ),
        # a profile name that disagrees with its compute slices
        (
            "mig.yaml",
            "{name: 2g.10gb,   id: 14, g: 2",
            "{name: 2g.10gb,   id: 14, g: 3",
            r"mig\.yaml: tables\.a100-40gb\.profiles\[3:2g\.10gb\].*does not match",
        ),
        # a wrong type
        (
            "mig.yaml",
            "inst: 7, starts: [0, 1, 2, 3, 4, 5, 6], gib: 4.75",
            "inst: seven, starts: [0, 1, 2, 3, 4, 5, 6], gib: 4.75",
            r"mig\.yaml: tables\.a100-40gb\.profiles\[0:1g\.5gb\].*'inst' must be an integer",
        ),
        # two +me instances
        (
            "mig.yaml",
            "{name: 1g.5gb+me, id: 20, g: 1, m: 1, inst: 1",
            "{name: 1g.5gb+me, id: 20, g: 1, m: 1, inst: 2",
            r"mig\.yaml: .*1g\.5gb\+me.*at most 1 instance",
        ),
        # issue 19: engine counts, device SM counts and the media budget are checked like every other fact
        (
            "mig.yaml",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: 0, ce: 1}}",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: -1, ce: 1}}",
            r"mig\.yaml: tables\.a100-40gb\.profiles\[0:1g\.5gb\]\.engines.*'ofa' must be ≥ 0",
        ),
        (
            "mig.yaml",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: 0, ce: 1}}",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: 0, ce: 1, nvenc: 1}}",
            r"mig\.yaml: .*1g\.5gb.*unknown key.*'nvenc'",
        ),
        (
            "mig.yaml",
            "sms: 26, device_sms: 16, engines: {dec: 1, enc: 0, jpg: 1, ofa: 0, ce: 1},\n"
            '         sms_prov: {source: "real -lgip (H100 and H100 NVL)"',
            "sms: 26, device_sms: 26, engines: {dec: 1, enc: 0, jpg: 1, ofa: 0, ce: 1},\n"
            '         sms_prov: {source: "real -lgip (H100 and H100 NVL)"',
            r"mig\.yaml: tables\.h100-80gb\.profiles\[2:1g\.20gb\].*'device_sms' is only for",
        ),
        (
            "mig.yaml",
            "media_budget: {dec: 4, enc: 4, jpg: 4, ofa: 1,",
            "media_budget: {dec: 3, enc: 4, jpg: 4, ofa: 1,",
            r"mig\.yaml: tables\.rtx-pro-6000-96gb\.media_budget.*1g\.24gb\+me\.all has 4 dec, more than .* 3",
        ),
        (
            "mig.yaml",
            '    engines: {source: "MIG-UG getting-started real -lgip (DEC/ENC/JPEG/OFA, CE)", '
            "confidence: verified}\n",
            "",
            r"mig\.yaml: tables\.a100-40gb\.profiles\[0:1g\.5gb\].*engine counts need a source",
        ),
        # a MIG-backed vGPU type whose profile the model lacks
        (
            "vgpu.yaml",
            "- {slices: 3, fb: 20, max: 2}",
            "- {slices: 3, fb: 21, max: 2}",
            r"gpus\.yaml: models\[0:A100-SXM4-40GB\].*3g\.21gb",
        ),
        # a mixed-size maximum above the equal-size one
        (
            "vgpu.yaml",
            "- {fb: 8, equal: 5, mixed: 4}",
            "- {fb: 8, equal: 5, mixed: 6}",
            r"vgpu\.yaml: menus\.a100-40gb\.time_sliced\[3\].*exceeds",
        ),
        # a model pointed at a menu for a far larger board (vGPU types are held to the board's nominal
        # memory, `board_gb`, which is above nvidia-smi's total: an L40's 48 GB types over its 46068 MiB)
        (
            "gpus.yaml",
            "menu: t4-16gb",
            "menu: ada-48gb",
            r"gpus\.yaml: models\[\d+:T4\]\.vgpu.*49152 MiB exceeds the 16 GB board",
        ),
        # a graphics type larger than the board's full C type
        (
            "vgpu.yaml",
            "- {fb: 2, equal: 8, mixed: 0, series: Q",
            "- {fb: 20, equal: 8, mixed: 0, series: Q",
            r"gpus\.yaml: models\[\d+:T4\]\.vgpu.*T4-20Q.*exceeds the 16 GB board",
        ),
        # an unparseable ESXi version
        (
            "platforms.yaml",
            '{min_esxi: "8.0U1", min_hardware_version: 20, limit: 64',
            '{min_esxi: "8.x", min_hardware_version: 20, limit: 64',
            r"platforms\.yaml: vsphere\.passthrough_devices_per_vm\[2\].*8\.x",
        ),
        # rows out of order
        (
            "platforms.yaml",
            '{min_esxi: "7.0U1", hardware_version: 18',
            '{min_esxi: "9.1", hardware_version: 18',
            r"platforms\.yaml: vsphere.*increasing ESXi order",
        ),
        # a shape on an unknown GPU model
        (
            "platforms.yaml",
            "gpu_model: H100-SXM5-80GB",
            "gpu_model: H100-SXM5-80G",
            r"platforms\.yaml: shapes\[2:BM\.GPU\.H100\.8\].*H100-SXM5-80G",
        ),
        # an NVSwitch board without switches
        (
            "platforms.yaml",
            "nvlink: nvswitch, nvswitches: 6",
            "nvlink: nvswitch, nvswitches: 0",
            r"platforms\.yaml: boards\[0:HGX A100 8-GPU\]",
        ),
        # a PCI id claimed by two models
        (
            "gpus.yaml",
            'ids: ["0x20B1", "0x20F1"]',
            'ids: ["0x20B1", "0x20B0"]',
            r"gpus\.yaml: .*0x20B0.*claimed",
        ),
    ],
)
def test_broken_data_fails_loudly(data_dir: Path, file: str, old: str, new: str, expected: str) -> None:
    _edit(data_dir / file, old, new)
    with pytest.raises(CatalogError, match=expected):
        load_catalog(data_dir)


def test_invalid_yaml(data_dir: Path) -> None:
    (data_dir / "vgpu.yaml").write_text("version: 1\nseries: [\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"vgpu\.yaml: not valid YAML"):
        load_catalog(data_dir)


def test_missing_file(data_dir: Path) -> None:
    (data_dir / "platforms.yaml").unlink()
    with pytest.raises(CatalogError, match=r"platforms\.yaml: catalog data file missing"):
        load_catalog(data_dir)


def test_wrong_version(data_dir: Path) -> None:
    _edit(data_dir / "mig.yaml", "version: 1", "version: 2")
    with pytest.raises(CatalogError, match=r"mig\.yaml: unsupported version"):
        load_catalog(data_dir)


def test_package_ships_the_data_files() -> None:
    names = {p.name for p in default_data_dir().iterdir()}
    assert {"gpus.yaml", "mig.yaml", "vgpu.yaml", "platforms.yaml"} <= names
