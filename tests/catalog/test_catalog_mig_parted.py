"""NVIDIA mig-parted's default config (real file) against the catalog: device filters and profile counts."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpuadmin.catalog import get_catalog, normalize_pci_device_id

FIXTURE = Path(__file__).parent / "fixtures" / "mig-parted_config-default.yaml"

# gpu-facts §1.7, the device ids of catalog models (transcribed independently of the catalog data).
CATALOG_IDS = {
    "0x20B0": "A100-SXM4-40GB",
    "0x20B1": "A100-PCIE-40GB",
    "0x20F1": "A100-PCIE-40GB",
    "0x20B2": "A100-SXM4-80GB",
    "0x20B5": "A100-PCIE-80GB",
    "0x20B7": "A30",
    "0x2330": "H100-SXM5-80GB",
    "0x2331": "H100-PCIE-80GB",
    "0x2321": "H100-NVL-94GB",
    "0x2335": "H200-SXM5-141GB",
    "0x233B": "H200-NVL-141GB",
    "0x2901": "B200",
    "0x2342": "H100-96GB-GH200",
    "0x2348": "GH200-144GB",
    "0x2329": "H20",
    "0x2941": "GB200",
    "0x2BB5": "RTX-PRO-6000-BSE",
}
# §1.7 ids in the file whose products are not catalog models (A800/H800, H100-96GB, PG506, B300/GB300).
OTHER_IDS = {
    "0x20F6",
    "0x20F3",
    "0x20F5",
    "0x2322",
    "0x2324",
    "0x233A",
    "0x233D",
    "0x20B6",
    "0x3182",
    "0x31C2",
}


def _filtered_entries() -> list[tuple[str, list[str], dict[str, int]]]:
    config = yaml.load(FIXTURE.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    assert config["version"] == "v1"
    out = []
    for name, entries in config["mig-configs"].items():
        for entry in entries:
            if "device-filter" not in entry:
                continue
            raw = entry["device-filter"]
            ids = [raw] if isinstance(raw, str) else list(raw)
            out.append((name, ids, dict(entry.get("mig-devices") or {})))
    return out


def test_every_device_filter_id_is_known() -> None:
    for name, ids, _ in _filtered_entries():
        for device_id in ids:
            assert device_id.upper().endswith("10DE"), (name, device_id)
            key = normalize_pci_device_id(device_id)
            assert key is not None, (name, device_id)
            assert key in CATALOG_IDS or key in OTHER_IDS, (name, device_id)


def test_catalog_ids_map_and_profiles_fit() -> None:
    catalog = get_catalog()
    checked_ids: set[str] = set()
    checked_profiles = 0
    for name, ids, devices in _filtered_entries():
        for device_id in ids:
            key = normalize_pci_device_id(device_id)
            assert key is not None
            model = catalog.model_by_pci_id(device_id)
            if key not in CATALOG_IDS:
                assert model is None, (name, device_id)
                continue
            assert model is not None and model.name == CATALOG_IDS[key], (name, device_id)
            checked_ids.add(key)
            used = 0
            for profile_name, count in devices.items():
                profile = model.mig_profile(profile_name)
                assert profile is not None, (name, model.name, profile_name)
                assert 0 <= count <= profile.max_instances, (name, model.name, profile_name, count)
                used += profile.compute_slices * count
                checked_profiles += 1
            # a layout mig-parted applies must also fit the model's compute slices
            assert used <= model.compute_slices, (name, model.name)
    # every MIG-capable catalog model has a filtered entry in the file
    assert checked_ids == set(CATALOG_IDS)
    assert checked_profiles >= 40


def test_all_1g_10gb_means_different_profiles() -> None:
    """§2: `all-1g.10gb` gives 7 to the 80GB group but 4 to A100-40GB (there 1g.10gb is double-memory)."""
    catalog = get_catalog()
    a100_40 = catalog.model_by_pci_id("0x20B010DE")
    h100 = catalog.model_by_pci_id("0x233010DE")
    assert a100_40 is not None and h100 is not None
    small, big = a100_40.mig_profile("1g.10gb"), h100.mig_profile("1g.10gb")
    assert small is not None and big is not None
    assert (small.memory_slices, small.max_instances, small.profile_id) == (2, 4, 15)
    assert (big.memory_slices, big.max_instances, big.profile_id) == (1, 7, 19)
    counts = {tuple(ids): devices for name, ids, devices in _filtered_entries() if name == "all-1g.10gb"}
    assert {d["1g.10gb"] for d in counts.values()} == {7, 4}
