"""Every catalog fact has a source and one of the four confidence marks, and gpu-facts.md's marks are kept."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from gpuadmin.catalog import CONFIDENCES, GpuModel, Provenance, default_data_dir, get_catalog


def _all_provenances() -> Iterator[tuple[str, Provenance]]:
    catalog = get_catalog()
    for model in catalog.gpu_models.values():
        yield model.name, model.provenance
        for field, prov in model.field_provenance.items():
            yield f"{model.name}.{field}", prov
        for product, prov in model.product_name_provenance.items():
            yield f"{model.name}.product_names[{product}]", prov
        if model.nvlink is not None:
            yield f"{model.name}.nvlink", model.nvlink.provenance
        for p in model.mig_profiles:
            for kind in ("provenance", "placement_provenance", "sms_provenance", "memory_provenance"):
                yield f"{model.name}/{p.name}.{kind}", getattr(p, kind)
        for t in model.vgpu_types:
            yield f"{model.name}/{t.name}", t.provenance
    for shape in catalog.shapes.values():
        yield shape.name, shape.provenance
    for board in catalog.boards.values():
        yield board.name, board.provenance
    for series in catalog.vgpu_series.values():
        yield f"series {series.name}", series.provenance
    v = catalog.vsphere
    for row in v.passthrough_rows:
        yield f"passthrough {row.min_esxi}", row.provenance
    for hw in v.hardware_version_rows:
        yield f"hardware {hw.min_esxi}", hw.provenance
    for vr in v.vgpus_per_vm_rows:
        yield f"vgpus_per_vm {vr.min_esxi}", vr.provenance
    for name in (
        "mixed_vgpu_types",
        "mixed_vgpu_sizes",
        "device_groups",
        "nvswitch_device_groups",
        "device_group_sizes",
    ):
        yield name, getattr(v, f"{name}_provenance")
    yield "nvswitch", v.nvswitch.provenance


def test_every_fact_has_a_source_and_a_valid_confidence() -> None:
    seen = 0
    for where, prov in _all_provenances():
        assert isinstance(prov, Provenance), where
        assert prov.source.strip(), where
        assert prov.confidence in CONFIDENCES, where
        if prov.confidence in ("derived", "uncertain"):
            # a derived or uncertain fact says why, unless its source says the reference lacks it
            assert prov.note or prov.source == "not in gpu-facts.md", where
        seen += 1
    assert seen > 400


def _walk(node: object, path: str) -> Iterator[tuple[str, dict[str, object]]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]")


@pytest.mark.parametrize("file", ["gpus.yaml", "mig.yaml", "vgpu.yaml", "platforms.yaml"])
def test_data_files_pair_source_with_confidence(file: str) -> None:
    """In the raw YAML: `source` and `confidence` always come together, and the mark is one of the four."""
    data = yaml.safe_load(default_data_dir().joinpath(file).read_text(encoding="utf-8"))
    pairs = 0
    for path, mapping in _walk(data, file):
        if "source" in mapping or "confidence" in mapping:
            assert "source" in mapping and "confidence" in mapping, path
            assert isinstance(mapping["source"], str) and mapping["source"].strip(), path
            assert mapping["confidence"] in CONFIDENCES, path
            pairs += 1
        if "note" in mapping:
            assert "confidence" in mapping, path
    assert pairs > 0


def _model(name: str) -> GpuModel:
    model = get_catalog().model(name)
    assert model is not None
    return model


def _profile_prov(model: str, profile: str, kind: str) -> str:
    p = _model(model).mig_profile(profile)
    assert p is not None
    prov = getattr(p, kind)
    assert isinstance(prov, Provenance)
    return prov.confidence


@pytest.mark.parametrize("model", ["H200-SXM5-141GB", "H200-NVL-141GB", "B200"])
def test_derived_placements_stay_derived(model: str) -> None:
    """§1.4 / §7.1: no real -lgipp for H200 or B200; their placements are [derived]."""
    for p in _model(model).mig_profiles:
        assert p.placement_provenance.confidence == "derived", p.name
        assert p.provenance.confidence == "verified", p.name  # the profile list itself is MIG-UG Table 8/9


def test_verified_placements_stay_verified() -> None:
    for model in ("A100-SXM4-40GB", "H100-SXM5-80GB", "H100-NVL-94GB", "A30"):
        for p in _model(model).mig_profiles:
            assert p.placement_provenance.confidence == "verified", (model, p.name)


def test_a100_80gb_geometry_is_derived_from_the_same_die() -> None:
    for p in _model("A100-SXM4-80GB").mig_profiles:
        assert p.placement_provenance.confidence == "derived"
        assert p.provenance.confidence == "verified"
    assert _profile_prov("A100-SXM4-80GB", "1g.20gb", "sms_provenance") == "verified"  # real XML


def test_uncertain_sm_counts() -> None:
    # the "26" SMs of the Hopper double-memory 1g profile
    assert _profile_prov("H100-SXM5-80GB", "1g.20gb", "sms_provenance") == "uncertain"
    assert _profile_prov("H100-NVL-94GB", "1g.24gb", "sms_provenance") == "uncertain"
    # GFD labels confirm these on a real H100
    assert _profile_prov("H100-SXM5-80GB", "1g.10gb", "sms_provenance") == "verified"
    assert _profile_prov("H100-SXM5-80GB", "3g.40gb", "sms_provenance") == "verified"
    # H100 PCIe per-profile SMs: no source; B200 SMs uncertain; H200 1g.35gb "?"
    for p in _model("H100-PCIE-80GB").mig_profiles:
        assert p.sms is None and p.sms_provenance.confidence == "uncertain"
    for p in _model("B200").mig_profiles:
        assert p.sms is None and p.sms_provenance.confidence == "uncertain"
    assert _model("B200").provenance_of("sms").confidence == "uncertain"
    # issue 19 point 5: derived from the ID-15 rows of real Hopper -lgip outputs and 2g.35gb's memory
    assert _profile_prov("H200-SXM5-141GB", "1g.35gb", "sms_provenance") == "derived"
    assert _profile_prov("H200-SXM5-141GB", "1g.35gb", "memory_provenance") == "derived"
    assert _profile_prov("H200-SXM5-141GB", "2g.35gb", "sms_provenance") == "secondary"


def test_model_level_marks() -> None:
    assert _model("H100-SXM5-80GB").provenance_of("memory").confidence == "verified"  # real XML 81559
    assert _model("A100-SXM4-80GB").provenance_of("memory").confidence == "verified"  # real XML 81920
    assert _model("B200").provenance_of("memory").confidence == "secondary"  # published nvidia-smi 183359
    assert _model("H100-PCIE-80GB").provenance_of("sms").confidence == "secondary"
    assert _model("A100-SXM4-40GB").provenance_of("sms").confidence == "secondary"
    assert _model("A10").provenance_of("memory").confidence == "uncertain"
    assert _model("L40S").provenance_of("memory").confidence == "secondary"  # published nvidia-smi 46068
    assert _model("L40S").provenance_of("architecture").confidence == "uncertain"
    h100_pcie = _model("H100-PCIE-80GB").nvlink
    b200 = _model("B200").nvlink
    assert h100_pcie is not None and h100_pcie.provenance.confidence == "uncertain"
    assert b200 is not None and b200.provenance.confidence == "uncertain"
    sxm = _model("H100-SXM5-80GB").nvlink
    assert sxm is not None and sxm.provenance.confidence == "verified"
    h100 = _model("H100-SXM5-80GB")
    assert h100.product_name_provenance["NVIDIA H100 80GB HBM3"].confidence == "verified"
    assert _model("H100-NVL-94GB").product_name_provenance["NVIDIA H100 NVL"].confidence == "secondary"


def test_h100_16c_maximum_is_five() -> None:
    """Issue 19 point 10: the reference's 6 × 16 GB cannot fit 80 GB; the catalog says 5 and marks it derived."""
    for model_name, type_name in [("H100-SXM5-80GB", "H100XM-16C"), ("H100-PCIE-80GB", "H100-16C")]:
        vgpu = _model(model_name).vgpu_type(type_name)
        assert vgpu is not None
        assert (vgpu.max_equal_size, vgpu.max_mixed_size) == (5, 4)
        assert vgpu.provenance.confidence == "derived"
        assert "point 10" in vgpu.provenance.note


def test_provenance_text() -> None:
    p = Provenance("MIG-UG Table 7", "verified")
    assert str(p) == "MIG-UG Table 7 [verified]"
    assert str(Provenance("x", "derived", "why")) == "x [derived] — why"
