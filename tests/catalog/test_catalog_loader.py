"""The loader: caching, package data, and loud failures on broken data files (file name and entry named)."""

from __future__ import annotations

import re
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


# Each case: the edit, then where the error must be reported — the file, the text whose first line is the line
# (found in the edited file), and what follows `file:line:column: ` (the entry, the field, the message).
@pytest.mark.parametrize(
    ("file", "old", "new", "at_file", "at_text", "expected"),
    [
        # a bad confidence mark, named with the model entry and the field
        (
            "gpus.yaml", "confidence: verified", "confidence: verfied",
            "gpus.yaml", "confidence: verfied",
            r"models\[0:A100-SXM4-40GB\]\.confidence: must be .*'uncertain', got 'verfied'",
        ),
        # an unknown key (a typo must not silently drop a fact), at the key itself
        (
            "gpus.yaml", '    compute_capability: "8.0"', '    compute_capabilty: "8.0"',
            "gpus.yaml", "compute_capabilty",
            r"models\[0:A100-SXM4-40GB\]\.compute_capabilty: unknown key",
        ),
        # a missing source, at the entry that lacks it
        (
            "gpus.yaml", '    source: "MIG-UG Table 1; gpu-facts §1.4, §1.7"\n', "",
            "gpus.yaml", "name: A100-SXM4-40GB",
            r"models\[0:A100-SXM4-40GB\]\.source: missing key",
        ),
        # naming total that is not ceil(MiB / 1024)
        (
            "gpus.yaml", "mib: 40960, gb: 40", "mib: 40960, gb: 41",
            "gpus.yaml", "mib: 40960, gb: 41",
            r"models\[0:A100-SXM4-40GB\]\.memory\.gb: naming total 41 GB is not ceil\(40960 MiB / 1024\)",
        ),
        # a nominal board size below the naming total (issue 19 point 11)
        (
            "gpus.yaml", "mib: 46068, gb: 45, board_gb: 48", "mib: 46068, gb: 45, board_gb: 44",
            "gpus.yaml", "board_gb: 44",
            r"models\[\d+:L40S\]\.memory\.board_gb: board_gb 44 is below the naming total 45 GB",
        ),
        # without its nominal 48 GB, the L40S-48C type does not fit the 46068 MiB nvidia-smi total
        (
            "gpus.yaml", "mib: 46068, gb: 45, board_gb: 48", "mib: 46068, gb: 45",
            "gpus.yaml", 'vgpu: {prefix: "L40S-", menu: ada-48gb',
            r"models\[\d+:L40S\]\.vgpu\.menu: L40S-48C: 49152 MiB exceeds the 45 GB board",
        ),
        # a model naming a MIG table that does not exist
        (
            "gpus.yaml", "mig: a100-40gb", "mig: a100-41gb",
            "gpus.yaml", "mig: a100-41gb",
            r"models\[0:A100-SXM4-40GB\]\.mig: unknown MIG table 'a100-41gb'",
        ),
        # a placement that runs past the 8 memory slices
        (
            "mig.yaml",
            "{name: 3g.20gb,   id: 9,  g: 3, m: 4, inst: 2, starts: [0, 4]",
            "{name: 3g.20gb,   id: 9,  g: 3, m: 4, inst: 2, starts: [0, 6]",
            "mig.yaml", "starts: [0, 6]",
            r"tables\.a100-40gb\.profiles\[4:3g\.20gb\]\.starts: placement 6:4 runs past the 8 memory slices",
        ),
        # a profile name that disagrees with its compute slices
        (
            "mig.yaml", "{name: 2g.10gb,   id: 14, g: 2", "{name: 2g.10gb,   id: 14, g: 3",
            "mig.yaml", "{name: 2g.10gb,   id: 14, g: 3",
            r"tables\.a100-40gb\.profiles\[3:2g\.10gb\]\.name: name '2g\.10gb' does not match g: 3",
        ),
        # a wrong type
        (
            "mig.yaml",
            "inst: 7, starts: [0, 1, 2, 3, 4, 5, 6], gib: 4.75",
            "inst: seven, starts: [0, 1, 2, 3, 4, 5, 6], gib: 4.75",
            "mig.yaml", "inst: seven",
            r"tables\.a100-40gb\.profiles\[0:1g\.5gb\]\.inst: must be an integer, got 'seven'",
        ),
        # a boolean is not an integer
        (
            "platforms.yaml", "gpus: 8, rdma_nics: 8,", "gpus: true, rdma_nics: 8,",
            "platforms.yaml", "gpus: true, rdma_nics: 8,",
            r"shapes\[0:BM\.GPU4\.8\]\.gpus: must be an integer, got True",
        ),
        # two +me instances
        (
            "mig.yaml",
            "{name: 1g.5gb+me, id: 20, g: 1, m: 1, inst: 1",
            "{name: 1g.5gb+me, id: 20, g: 1, m: 1, inst: 2",
            "mig.yaml", "{name: 1g.5gb+me, id: 20, g: 1, m: 1, inst: 2",
            r"tables\.a100-40gb\.profiles\[1:1g\.5gb\+me\]\.inst: a profile with media extensions .* at most 1 "
            r"instance",
        ),
        # issue 19: engine counts, device SM counts and the media budget are checked like every other fact
        (
            "mig.yaml",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: 0, ce: 1}}",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: -1, ce: 1}}",
            "mig.yaml", "ofa: -1",
            r"tables\.a100-40gb\.profiles\[0:1g\.5gb\]\.engines\.ofa: must be ≥ 0, got -1",
        ),
        (
            "mig.yaml",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: 0, ce: 1}}",
            "sms: 14, engines: {dec: 0, enc: 0, jpg: 0, ofa: 0, ce: 1, nvenc: 1}}",
            "mig.yaml", "nvenc: 1",
            r"tables\.a100-40gb\.profiles\[0:1g\.5gb\]\.engines\.nvenc: unknown key",
        ),
        (
            "mig.yaml",
            "sms: 26, device_sms: 16, engines: {dec: 1, enc: 0, jpg: 1, ofa: 0, ce: 1},\n"
            '         sms_prov: {source: "real -lgip (H100 and H100 NVL)"',
            "sms: 26, device_sms: 26, engines: {dec: 1, enc: 0, jpg: 1, ofa: 0, ce: 1},\n"
            '         sms_prov: {source: "real -lgip (H100 and H100 NVL)"',
            "mig.yaml", "sms: 26, device_sms: 26",
            r"tables\.h100-80gb\.profiles\[2:1g\.20gb\]\.device_sms: 'device_sms' is only for",
        ),
        (
            "mig.yaml",
            "media_budget: {dec: 4, enc: 4, jpg: 4, ofa: 1,",
            "media_budget: {dec: 3, enc: 4, jpg: 4, ofa: 1,",
            "mig.yaml", "media_budget: {dec: 3",
            r"tables\.rtx-pro-6000-96gb\.media_budget\.dec: 1g\.24gb\+me\.all has 4 dec, more than the GPU's "
            r"budget of 3",
        ),
        (
            "mig.yaml",
            '    engines: {source: "MIG-UG getting-started real -lgip (DEC/ENC/JPEG/OFA, CE)", '
            "confidence: verified}\n",
            "",
            "mig.yaml", "{name: 1g.5gb,    id: 19",
            r"tables\.a100-40gb\.profiles\[0:1g\.5gb\]\.engines: engine counts need a source",
        ),
        # a MIG-backed vGPU type whose profile the model lacks: reported at the model's menu
        (
            "vgpu.yaml", "- {slices: 3, fb: 20, max: 2}", "- {slices: 3, fb: 21, max: 2}",
            "gpus.yaml", "menu: a100-40gb",
            r"models\[0:A100-SXM4-40GB\]\.vgpu\.menu: MIG-backed vGPU type A100X-3-21C maps to 3g\.21gb",
        ),
        # a mixed-size maximum above the equal-size one
        (
            "vgpu.yaml", "- {fb: 8, equal: 5, mixed: 4}", "- {fb: 8, equal: 5, mixed: 6}",
            "vgpu.yaml", "mixed: 6",
            r"menus\.a100-40gb\.time_sliced\[3\]\.mixed: mixed-size max 6 exceeds",
        ),
        # a fact a row takes from a YAML merge (`<<: *anchor`) is located where the anchor writes it
        (
            "vgpu.yaml", "           confidence: uncertain,\n           note: \"the Q/A/B sizes",
            "           confidence: unsure,\n           note: \"the Q/A/B sizes",
            "vgpu.yaml", "confidence: unsure",
            r"menus\.a40\.time_sliced\[7\]\.confidence: must be .*, got 'unsure' \(and 37 more entries that take "
            r"this value from the same YAML anchor\)$",
        ),
        # a model pointed at a menu for a far larger board (vGPU types are held to the board's nominal
        # memory, `board_gb`, which is above nvidia-smi's total: an L40's 48 GB types over its 46068 MiB)
        (
            "gpus.yaml", "menu: t4-16gb", "menu: ada-48gb",
            "gpus.yaml", "prefix: \"T4-\", menu: ada-48gb",
            r"models\[\d+:T4\]\.vgpu\.menu: T4-48C: 49152 MiB exceeds the 16 GB board",
        ),
        # a graphics type larger than the board's full C type
        (
            "vgpu.yaml", "- {fb: 2, equal: 8, mixed: 0, series: Q", "- {fb: 20, equal: 8, mixed: 0, series: Q",
            "gpus.yaml", "prefix: \"T4-\", menu: t4-16gb",
            r"models\[\d+:T4\]\.vgpu\.menu: T4-20Q: 20480 MiB exceeds the 16 GB board",
        ),
        # an unparseable ESXi version
        (
            "platforms.yaml",
            '{min_esxi: "8.0U1", min_hardware_version: 20, limit: 64',
            '{min_esxi: "8.x", min_hardware_version: 20, limit: 64',
            "platforms.yaml", '{min_esxi: "8.x"',
            r"vsphere\.passthrough_devices_per_vm\[2\]\.min_esxi: .*'8\.x'",
        ),
        # rows out of order
        (
            "platforms.yaml", '{min_esxi: "7.0U1", hardware_version: 18', '{min_esxi: "9.1", hardware_version: 18',
            "platforms.yaml", '{min_esxi: "7.0U2", hardware_version: 19',
            r"vsphere\.max_hardware_version\[3\]\.min_esxi: 'max_hardware_version' rows must be in increasing ESXi "
            r"order \(7\.0U2 after 9\.1\)",
        ),
        # a shape on an unknown GPU model
        (
            "platforms.yaml", "gpu_model: H100-SXM5-80GB", "gpu_model: H100-SXM5-80G",
            "platforms.yaml", "gpu_model: H100-SXM5-80G,",
            r"shapes\[2:BM\.GPU\.H100\.8\]\.gpu_model: unknown GPU model 'H100-SXM5-80G'",
        ),
        # an NVSwitch board without switches
        (
            "platforms.yaml", "nvlink: nvswitch, nvswitches: 6", "nvlink: nvswitch, nvswitches: 0",
            "platforms.yaml", "nvswitches: 0",
            r"boards\[0:HGX A100 8-GPU\]\.nvswitches: nvlink nvswitch with 0 NVSwitches",
        ),
        # a PCI id claimed by two models: at the second claim
        (
            "gpus.yaml", 'ids: ["0x20B1", "0x20F1"]', 'ids: ["0x20B1", "0x20B0"]',
            "gpus.yaml", 'ids: ["0x20B1", "0x20B0"]',
            r"models\[1:A100-PCIE-40GB\]\.pci_device_ids\.ids\[1\]: PCI device id '0x20B0' is claimed by both "
            r"A100-SXM4-40GB and A100-PCIE-40GB",
        ),
    ],
)
def test_broken_data_is_reported_at_its_file_line_and_field(
    data_dir: Path, file: str, old: str, new: str, at_file: str, at_text: str, expected: str
) -> None:
    _edit(data_dir / file, old, new)
    text = (data_dir / at_file).read_text(encoding="utf-8")
    assert at_text in text, at_text
    line = text[: text.index(at_text)].count("\n") + 1
    with pytest.raises(CatalogError) as raised:
        load_catalog(data_dir)
    assert re.search(rf"^{re.escape(at_file)}:{line}:\d+: {expected}", str(raised.value), re.MULTILINE), (
        f"expected {at_file}:{line}: {expected}\ngot: {raised.value}"
    )


def test_every_problem_of_a_file_is_reported(data_dir: Path) -> None:
    """pydantic validates the whole file: two unrelated mistakes come back together, each on its own line."""
    _edit(data_dir / "mig.yaml", "inst: 7, starts: [0, 1, 2, 3, 4, 5, 6], gib: 4.75",
          "inst: 7, starts: [0, 1, 2, 3, 4, 6, 5], gib: 4.75")
    _edit(data_dir / "mig.yaml", "{name: 4g.20gb,   id: 5,  g: 4", "{name: 4g.20gb,   id: 5,  g: 4, q: 1")
    with pytest.raises(CatalogError) as raised:
        load_catalog(data_dir)
    lines = str(raised.value).splitlines()
    assert len(lines) == 2, lines
    assert re.match(r"mig\.yaml:\d+:\d+: tables\.a100-40gb\.profiles\[0:1g\.5gb\]\.starts: 'starts' must be "
                    r"increasing", lines[0])
    assert re.match(r"mig\.yaml:\d+:\d+: tables\.a100-40gb\.profiles\[5:4g\.20gb\]\.q: unknown key", lines[1])


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
    with pytest.raises(CatalogError, match=r"^mig\.yaml:10:10: version: unsupported version 2 \(expected 1\)$"):
        load_catalog(data_dir)


def test_package_ships_the_data_files() -> None:
    names = {p.name for p in default_data_dir().iterdir()}
    assert {"gpus.yaml", "mig.yaml", "vgpu.yaml", "platforms.yaml"} <= names
