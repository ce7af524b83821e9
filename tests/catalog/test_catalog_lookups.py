"""Model facts and lookups by PCI id, product name (real nvidia-smi XML, GFD labels) and catalog name."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gpuadmin.catalog import get_catalog, mig_profile_name, normalize_pci_device_id

FIXTURES = Path(__file__).parent / "fixtures"

# gpu-facts §1.7 (device id → catalog model), transcribed.
PCI_IDS = {
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
    "0x2235": "A40",
    "0x2236": "A10",
    "0x26B9": "L40S",
    "0x2339": "H100-SXM5-94GB",
    "0x2342": "H100-96GB-GH200",
    "0x2348": "GH200-144GB",
    "0x2329": "H20",
    "0x2941": "GB200",
    "0x2BB5": "RTX-PRO-6000-BSE",
    "0x2237": "A10G",
    # not in gpu-facts §1.7: pci.ids values, catalogued with confidence uncertain
    "0x1EB8": "T4",
    "0x27B8": "L4",
    "0x26B5": "L40",
}
# ids in §1.7 of products that are not catalog models (A800/H800, H100-96GB, PG506, B300/GB300, the NVSwitches):
# they must not resolve to a look-alike.
NOT_IN_CATALOG = [
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
    "0x1AF1",
    "0x22A3",
]

# (model, architecture, memory MiB, naming GB, SMs, MIG capable, NVLink (gen, links, GB/s) or None,
#  vGPU prefix)
MODELS = [
    ("A100-SXM4-40GB", "Ampere", 40960, 40, 108, True, (3, 12, 600), "A100X-"),
    ("A100-PCIE-40GB", "Ampere", 40960, 40, 108, True, None, "A100-"),
    ("A100-SXM4-80GB", "Ampere", 81920, 80, 108, True, (3, 12, 600), "A100DX-"),
    ("A100-PCIE-80GB", "Ampere", 81920, 80, 108, True, None, "A100D-"),
    ("A30", "Ampere", 24576, 24, 56, True, None, "A30-"),
    ("A40", "Ampere", 49152, 48, None, False, None, "A40-"),
    ("A10", "Ampere", 24576, 24, None, False, None, "A10-"),
    ("L40S", "Ada Lovelace", 46068, 45, None, False, None, "L40S-"),
    ("H100-SXM5-80GB", "Hopper", 81559, 80, 132, True, (4, 18, 900), "H100XM-"),
    ("H100-PCIE-80GB", "Hopper", 81920, 80, 114, True, (4, 12, 600), "H100-"),
    ("H100-NVL-94GB", "Hopper", 96256, 94, 132, True, (4, 12, 600), "H100L-"),
    ("H200-SXM5-141GB", "Hopper", 143771, 141, 132, True, (4, 18, 900), "H200X-"),
    ("H200-NVL-141GB", "Hopper", 143771, 141, 132, True, None, "H200-"),
    ("B200", "Blackwell", 183359, 180, 148, True, (5, 18, 1800), None),
    ("H100-SXM5-94GB", "Hopper", 96256, 94, 132, True, (4, 18, 900), "H100XL-"),
    ("H100-96GB-GH200", "Hopper", 98304, 96, 132, True, None, None),
    ("GH200-144GB", "Hopper", 147456, 144, None, True, None, None),
    ("H20", "Hopper", 98304, 96, None, True, None, "H20-"),
    ("GB200", "Blackwell", 189471, 186, None, True, None, None),
    ("RTX-PRO-6000-BSE", "Blackwell", 97887, 96, 188, True, None, None),
    ("T4", "Turing", 15360, 15, 40, False, None, "T4-"),
    ("A10G", "Ampere", 23028, 23, 80, False, None, None),
    ("L4", "Ada Lovelace", 23034, 23, 58, False, None, "L4-"),
    ("L40", "Ada Lovelace", 46068, 45, 142, False, None, "L40-"),
]


@pytest.mark.parametrize(("name", "arch", "mib", "gb", "sms", "mig", "nvlink", "prefix"), MODELS)
def test_model_facts(
    name: str,
    arch: str,
    mib: int,
    gb: int,
    sms: int | None,
    mig: bool,
    nvlink: tuple[int, int, int] | None,
    prefix: str | None,
) -> None:
    model = get_catalog().model(name)
    assert model is not None
    assert model.name == name
    assert model.architecture == arch
    assert (model.memory_mib, model.memory_gb, model.sms, model.mig_capable) == (mib, gb, sms, mig)
    if nvlink is None:
        assert model.nvlink is None
    else:
        assert model.nvlink is not None
        assert (model.nvlink.generation, model.nvlink.links, model.nvlink.bandwidth_gbs) == nvlink
    assert model.vgpu_prefix == prefix
    assert model.product_names, name


def test_catalog_holds_exactly_these_models() -> None:
    assert set(get_catalog().gpu_models) == {row[0] for row in MODELS}


def test_model_by_catalog_name() -> None:
    catalog = get_catalog()
    assert catalog.model("H100-SXM5-80GB") is catalog.gpu_models["H100-SXM5-80GB"]
    assert catalog.model("h100-sxm5-80gb") is catalog.gpu_models["H100-SXM5-80GB"]
    assert catalog.model("H100") is None
    assert catalog.model("T4") is catalog.gpu_models["T4"]
    assert catalog.model("V100") is None


@pytest.mark.parametrize(("device_id", "model"), sorted(PCI_IDS.items()))
def test_pci_ids(device_id: str, model: str) -> None:
    catalog = get_catalog()
    bare = device_id[2:]
    forms = [
        device_id,
        bare,
        bare.lower(),
        f"0x{bare}10DE",
        f"0x{bare.lower()}10de",
        f"{bare}10DE",
        f"0X{bare}",
        f"10de:{bare.lower()}",
        f" {device_id} ",
    ]
    for form in forms:
        found = catalog.model_by_pci_id(form)
        assert found is not None and found.name == model, form
    assert device_id in catalog.gpu_models[model].pci_device_ids


@pytest.mark.parametrize("device_id", NOT_IN_CATALOG)
def test_pci_ids_of_other_products_do_not_resolve(device_id: str) -> None:
    assert get_catalog().model_by_pci_id(device_id) is None
    assert get_catalog().model_by_pci_id(device_id + "10DE") is None


@pytest.mark.parametrize("junk", ["", "0x", "23", "0x23301", "0x233010DF", "zzzz", "0x2330 10DE"])
def test_pci_id_junk(junk: str) -> None:
    assert normalize_pci_device_id(junk) is None
    assert get_catalog().model_by_pci_id(junk) is None


def _xml_gpus() -> list[tuple[str, ET.Element]]:
    out: list[tuple[str, ET.Element]] = []
    for path in sorted(FIXTURES.glob("*.xml")):
        root = ET.parse(path).getroot()
        out.extend((path.name, gpu) for gpu in root.iter("gpu"))
    return out


def test_fixtures_hold_real_gpus() -> None:
    names = {gpu.findtext("product_name") for _, gpu in _xml_gpus()}
    assert names == {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"}


@pytest.mark.parametrize(("file", "gpu"), _xml_gpus(), ids=lambda v: v if isinstance(v, str) else v.get("id"))
def test_real_nvidia_smi_xml(file: str, gpu: ET.Element) -> None:
    """Product name, PCI id and memory total of each real `nvidia-smi -q -x` GPU agree with the catalog."""
    catalog = get_catalog()
    product = gpu.findtext("product_name")
    device_id = gpu.findtext("pci/pci_device_id")
    total = gpu.findtext("fb_memory_usage/total")
    assert product and device_id and total
    by_name = catalog.model_by_product_name(product)
    by_id = catalog.model_by_pci_id(device_id)
    assert by_name is not None, (file, product)
    assert by_id is by_name, (file, device_id, product)
    assert product in by_name.product_names
    assert by_name.provenance_of("memory").confidence == "verified"
    assert int(total.split()[0]) == by_name.memory_mib
    expected = {"NVIDIA H100 80GB HBM3": "H100-SXM5-80GB", "NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB"}[product]
    assert by_name.name == expected
    assert gpu.findtext("product_architecture") == by_name.architecture


def test_product_name_forms() -> None:
    catalog = get_catalog()
    h100 = catalog.gpu_models["H100-SXM5-80GB"]
    for form in [
        "NVIDIA H100 80GB HBM3",
        "nvidia h100 80gb hbm3",
        "NVIDIA-H100-80GB-HBM3",
        "H100 80GB HBM3",
        "  NVIDIA  H100 80GB HBM3 ",
    ]:
        assert catalog.model_by_product_name(form) is h100, form
    # older drivers print A100 names without "NVIDIA "; GFD labels use '-' for spaces
    assert catalog.model_by_product_name("A100-SXM4-40GB") is catalog.gpu_models["A100-SXM4-40GB"]
    assert catalog.model_by_product_name("NVIDIA-H100-NVL") is catalog.gpu_models["H100-NVL-94GB"]
    assert catalog.model_by_product_name("NVIDIA H200 NVL") is catalog.gpu_models["H200-NVL-141GB"]
    assert catalog.model_by_product_name("NVIDIA H200") is catalog.gpu_models["H200-SXM5-141GB"]
    assert catalog.model_by_product_name("NVIDIA A10") is catalog.gpu_models["A10"]
    assert catalog.model_by_product_name("NVIDIA A100") is None
    assert catalog.model_by_product_name("Tesla T4") is catalog.gpu_models["T4"]
    assert catalog.model_by_product_name("NVIDIA-A10G") is catalog.gpu_models["A10G"]
    assert catalog.model_by_product_name("NVIDIA L4") is catalog.gpu_models["L4"]
    assert catalog.model_by_product_name("NVIDIA L40") is catalog.gpu_models["L40"]
    assert catalog.model_by_product_name("Tesla V100-SXM2-16GB") is None


def test_gfd_labels_of_a_real_h100_node() -> None:
    """CND mig-mixed-node-labels.json: product, memory and each MIG resource agree with the catalog."""
    labels = json.loads((FIXTURES / "h100-mig-mixed-all-balanced_node-labels.json").read_text())
    catalog = get_catalog()
    model = catalog.model_by_product_name(labels["nvidia.com/gpu.product"])
    assert model is not None and model.name == "H100-SXM5-80GB"
    total = int(labels["nvidia.com/gpu.memory"])
    assert total == model.memory_mib
    profiles = sorted(
        k.removeprefix("nvidia.com/mig-").removesuffix(".count")
        for k in labels
        if k.startswith("nvidia.com/mig-") and k.endswith(".count")
    )
    assert profiles == ["1g.10gb", "2g.20gb", "3g.40gb"]
    for name in profiles:
        key = f"nvidia.com/mig-{name}"
        profile = model.mig_profile(name)
        assert profile is not None
        assert int(labels[f"{key}.slices.gi"]) == profile.compute_slices
        assert int(labels[f"{key}.multiprocessors"]) == profile.sms
        assert mig_profile_name(profile.compute_slices, int(labels[f"{key}.memory"]), total) == name
