"""vGPU series, type names and per-board maxima against gpu-facts §4.1–§4.3 and NVIDIA's own type tables,
transcribed here as text."""

from __future__ import annotations

import re

import pytest

from gpuadmin.catalog import GpuModel, get_catalog

# gpu-facts §4.3, one row per GPU, verbatim: time-sliced "FB C:equal/mixed" and MIG-backed "slices-FB C(max)".
TABLE_4_3 = {
    "A100 40GB": (
        "40C(40960MB):1/1, 20C:2/2, 10C:4/4, 8C:5/4, 5C:8/8, 4C:10/8",
        "7-40C(1), 4-20C(1), 3-20C(2), 2-10C(3), 1-10C(4), 1-5C(7), 1-5CME(1)",
    ),
    "A100 80GB": (
        "80C:1/1, 40C:2/2, 20C:4/4, 16C:5/4, 10C:8/8, 8C:10/8, 4C:20/16",
        "7-80C(1), 4-40C(1), 3-40C(2), 2-20C(3), 1-20C(4), 1-10C(7), 1-10CME(1)",
    ),
    "A30": ("24C:1/1, 12C:2/2, 8C:3/2, 6C:4/4, 4C:6/4", "4-24C(1), 2-12C(2), 2-12CME(1), 1-6C(4), 1-6CME(1)"),
    "A40": ("48C:1/1, 24C:2/2, 16C:3/2, 12C:4/4, 8C:6/4, 6C:8/8, 4C:12/8", ""),
    "H100 80GB": (
        "80C(81GB):1/1, 40C:2/2, 20C:4/4, 16C:6/4, 10C:8/8, 8C:10/8, 5C:16/16, 4C:20/16",
        "7-80C(1), 4-40C(1), 3-40C(2), 2-20C(3), 1-20C(4), 1-10C(7), 1-10CME(1)",
    ),
    "H100 94GB": (
        "94C(96GB):1/1, 47C:2/2, 23C:4/4, 15C:6/4, 11C:8/8, 6C:15/8, 4C:23/16",
        "7-94C(1), 4-47C(1), 3-47C(2), 2-24C(3), 1-24C(4), 1-12C(7), 1-12CME(1)",
    ),
    "H200 141GB": (
        "141C(144GB):1/1, 70C:2/2, 35C:4/4, 28C:5/5, 17C:8/8, 14C:10/10, 8C:16/16, 7C:20/20, 4C:32/32",
        "7-141C(1), 4-71C(1), 3-71C(2), 2-35C(3), 1-35C(4), 1-18C(7), 1-18CME(1)",
    ),
}
# Issue 19 point 13: NVIDIA AI Enterprise release 6, docs.nvidia.com/ai-enterprise/release-6/latest/appendix/vgpu.html,
# verbatim in the same form: Tables 38 (L40), 39 (L40S), 42 (L4), 49 (A10), 103/104 (H20 SXM5 96GB; H20-96C is
# 98304 MB). AI Enterprise release 7 (vgpu/reference/hopper.html, Tables 186/187) prints the same H20 figures.
AIE_RELEASE_6 = {
    "L40": ("48C:1/1, 24C:2/2, 16C:3/2, 12C:4/4, 8C:6/4, 6C:8/8, 4C:12/8", ""),
    "L40S": ("48C:1/1, 24C:2/2, 16C:3/2, 12C:4/4, 8C:6/4, 6C:8/8, 4C:12/8", ""),
    "L4": ("24C:1/1, 12C:2/2, 8C:3/2, 6C:4/4, 4C:6/4", ""),
    "A10": ("24C:1/1, 12C:2/2, 8C:3/2, 6C:4/4, 4C:6/4", ""),
    "H20 96GB": (
        "96C(98304MB):1/1, 48C:2/2, 24C:4/2, 16C:6/4, 12C:8/4, 6C:16/8, 4C:24/8",
        "7-96C(1), 4-48C(1), 3-48C(2), 2-24C(3), 1-24C(4), 1-12C(7), 1-12CME(1)",
    ),
}
TABLES = {**TABLE_4_3, **AIE_RELEASE_6}
# Issue 19 point 10: where the catalog departs from §4.3, with the reason in its provenance ("point 10").
# NVIDIA's H100 tables print 6 too (release 6 Tables 96/98), its H800 80GB tables 5 (Tables 84/86)
CORRECTIONS = {("H100 80GB", "16C"): (16, 5, 4)}  # 6 × 16 GB cannot fit 80 GB; 80 // 16 = 5
# gpu-facts §4.2 board prefixes of the catalog models (NVIDIA's type names for the boards of AIE_RELEASE_6), and
# which table row each uses.
BOARDS = {
    "A100-PCIE-40GB": ("A100-", "A100 40GB"),
    "A100-SXM4-40GB": ("A100X-", "A100 40GB"),
    "A100-PCIE-80GB": ("A100D-", "A100 80GB"),
    "A100-SXM4-80GB": ("A100DX-", "A100 80GB"),
    "A30": ("A30-", "A30"),
    "A40": ("A40-", "A40"),
    "H100-PCIE-80GB": ("H100-", "H100 80GB"),
    "H100-SXM5-80GB": ("H100XM-", "H100 80GB"),
    "H100-NVL-94GB": ("H100L-", "H100 94GB"),
    "H200-NVL-141GB": ("H200-", "H200 141GB"),
    "H200-SXM5-141GB": ("H200X-", "H200 141GB"),
    "L40": ("L40-", "L40"),
    "L40S": ("L40S-", "L40S"),
    "L4": ("L4-", "L4"),
    "A10": ("A10-", "A10"),
    "H20": ("H20-", "H20 96GB"),
}

_SLICED = re.compile(r"^(\d+)C(?:\([^)]*\))?:(\d+)/(\d+)$")
_BACKED = re.compile(r"^(\d+)-(\d+)C(ME)?\((\d+)\)$")


def _parse_sliced(text: str) -> dict[str, tuple[int, int, int]]:
    out = {}
    for item in text.split(", "):
        m = _SLICED.match(item)
        assert m, item
        out[f"{m.group(1)}C"] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return out


def _parse_backed(text: str) -> dict[str, tuple[str, int]]:
    out = {}
    for item in filter(None, text.split(", ")):
        m = _BACKED.match(item)
        assert m, item
        slices, fb, me, count = m.groups()
        out[f"{slices}-{fb}C{me or ''}"] = (f"{slices}g.{fb}gb{'+me' if me else ''}", int(count))
    return out


def _model(name: str) -> GpuModel:
    model = get_catalog().model(name)
    assert model is not None
    return model


@pytest.mark.parametrize("model_name", sorted(BOARDS))
def test_time_sliced_c_types(model_name: str) -> None:
    prefix, row = BOARDS[model_name]
    model = _model(model_name)
    expected = _parse_sliced(TABLES[row][0])
    expected.update({suffix: fixed for (board, suffix), fixed in CORRECTIONS.items() if board == row})
    actual = {t.name: t for t in model.vgpu_types if t.series == "C" and t.mig_profile is None}
    assert set(actual) == {prefix + suffix for suffix in expected}
    for suffix, (fb_gb, equal, mixed) in expected.items():
        vgpu = actual[prefix + suffix]
        assert vgpu.framebuffer_mib == fb_gb * 1024
        assert (vgpu.max_equal_size, vgpu.max_mixed_size) == (equal, mixed), vgpu.name
        assert not vgpu.mig_backed


@pytest.mark.parametrize("model_name", sorted(BOARDS))
def test_mig_backed_types(model_name: str) -> None:
    prefix, row = BOARDS[model_name]
    model = _model(model_name)
    expected = _parse_backed(TABLES[row][1])
    actual = {t.name: t for t in model.vgpu_types if t.mig_profile is not None}
    assert set(actual) == {prefix + suffix for suffix in expected}
    for suffix, (profile_name, count) in expected.items():
        vgpu = actual[prefix + suffix]
        assert vgpu.mig_profile == profile_name
        assert vgpu.max_equal_size == count
        assert vgpu.max_mixed_size is None
        assert vgpu.media_extensions == profile_name.endswith("+me")
        profile = model.mig_profile(profile_name)
        assert profile is not None, profile_name
        # the per-GPU maximum of a MIG-backed type is its MIG profile's instance count
        assert count == profile.max_instances


def test_a100_40c_framebuffer_is_the_tables_40960_mb() -> None:
    vgpu = _model("A100-PCIE-40GB").vgpu_type("A100-40C")
    assert vgpu is not None and vgpu.framebuffer_mib == 40960


def test_type_lookup_forms() -> None:
    catalog = get_catalog()
    for text, model_name, type_name in [
        ("A100X-10C", "A100-SXM4-40GB", "A100X-10C"),
        ("A100-3-20C", "A100-PCIE-40GB", "A100-3-20C"),
        ("A100-1-5CME", "A100-PCIE-40GB", "A100-1-5CME"),
        ("grid_a100-40c", "A100-PCIE-40GB", "A100-40C"),
        ("grid_a100d-8c", "A100-PCIE-80GB", "A100D-8C"),
        ("grid_a100-4c", "A100-PCIE-40GB", "A100-4C"),
        ("a100dx-1-10cme", "A100-SXM4-80GB", "A100DX-1-10CME"),
        ("H100XM-1-10C", "H100-SXM5-80GB", "H100XM-1-10C"),
        ("H100-80C", "H100-PCIE-80GB", "H100-80C"),
        ("H100L-94C", "H100-NVL-94GB", "H100L-94C"),
        ("H200X-4-71C", "H200-SXM5-141GB", "H200X-4-71C"),
        ("H200-141C", "H200-NVL-141GB", "H200-141C"),
        ("A30-2-12CME", "A30", "A30-2-12CME"),
        ("A40-48C", "A40", "A40-48C"),
        ("A40-2B", "A40", "A40-2B"),  # issue 19 point 13: B, A series and the L4, L40, A10, T4 boards
        ("grid_a40-6a", "A40", "A40-6A"),
        ("L4-24Q", "L4", "L4-24Q"),
        ("L40-1Q", "L40", "L40-1Q"),
        ("A10-4C", "A10", "A10-4C"),
        ("T4-16C", "T4", "T4-16C"),
    ]:
        model = catalog.model_for_vgpu_type(text)
        assert model is not None and model.name == model_name, text
        found = catalog.vgpu_type(text)
        assert found is not None and found[0] is model and found[1].name == type_name, text
    assert catalog.model_for_vgpu_type("V100-16C") is None
    assert catalog.model_for_vgpu_type("A100") is None
    assert catalog.vgpu_type("A100-3C") is None  # known board, no such type
    assert catalog.vgpu_type("A40-1-6C") is None  # A40 has no MIG


def test_series() -> None:
    series = get_catalog().vgpu_series
    assert set(series) == {"Q", "B", "A", "C"}
    assert series["Q"].license == "RTX vWS"
    assert series["B"].license == "vPC (or vWS)"
    assert series["A"].license == "vApps"
    assert series["C"].license == "NVIDIA AI Enterprise / vCS"
    assert "compute" in series["C"].purpose
    assert "workstation" in series["Q"].purpose


# NVIDIA's driver: at most 32 vGPUs on one physical GPU (open-gpu-kernel-modules,
# src/common/sdk/nvidia/inc/ctrl/ctrla081.h: NVA081_MAX_VGPU_PER_PGPU 32).
MAX_VGPUS_PER_GPU = 32


def test_time_sliced_maxima_fit_the_framebuffer() -> None:
    """MIG-backed types are bounded by MIG instances instead (GB is rounded: 4 × H100L-1-24C > 94 GB).

    Issue 19 point 10: H100-16C × 6 no longer needs an exception, and no type exceeds the driver's 32.
    """
    for model in get_catalog().gpu_models.values():
        total = model.vgpu_framebuffer_mib
        for vgpu in model.vgpu_types:
            assert total is not None
            if vgpu.mig_backed:
                continue
            assert vgpu.max_mixed_size is None or vgpu.max_mixed_size <= vgpu.max_equal_size
            assert vgpu.max_equal_size * vgpu.framebuffer_mib <= total, vgpu.name
            assert vgpu.max_equal_size <= MAX_VGPUS_PER_GPU, vgpu.name


def test_1q_on_48gb_boards_is_32() -> None:
    """Issue 19 point 10: NVIDIA's driver source (kernel_vgpu_mgr.c: "On 1GB profiles on 48GB board … maxInstance
    is only 32", naming A40-1Q) — not 48 GB // 1 GB; the mixed-size maximum is withheld (placements denied)."""
    for model_name, type_name in [("A40", "A40-1Q"), ("L40S", "L40S-1Q"), ("L40", "L40-1Q"), ("A40", "A40-1B")]:
        vgpu = _model(model_name).vgpu_type(type_name)
        assert vgpu is not None, type_name
        assert (vgpu.max_equal_size, vgpu.max_mixed_size) == (32, None), type_name


def test_graphics_series_menus() -> None:
    """Issue 19 point 13: Q, B and A types beside C; mixed-size maxima are the previous power of two of the
    equal-size maximum (the driver's mixed-size placement), which every verified C row of §4.3 also obeys."""
    a40 = {t.name: t for t in _model("A40").vgpu_types}
    assert {n for n in a40 if n.endswith("B")} == {"A40-1B", "A40-2B"}
    assert {n for n in a40 if n.endswith("A")} == {f"A40-{gb}A" for gb in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)}
    for vgpu in a40.values():
        if vgpu.max_mixed_size:
            assert vgpu.max_mixed_size == 1 << (vgpu.max_equal_size.bit_length() - 1), vgpu.name
    for model_name in ("L4", "L40", "A10", "T4"):
        assert {t.series for t in _model(model_name).vgpu_types} == {"C", "Q", "B", "A"}, model_name
    # NVIDIA (AIE release 8, Turing types): T4-16C 1, T4-8C 2, T4-4C 4; "This GPU does not support mixed-size mode"
    t4 = {t.name: (t.max_equal_size, t.max_mixed_size) for t in _model("T4").vgpu_types if t.series == "C"}
    assert t4 == {"T4-16C": (1, 0), "T4-8C": (2, 0), "T4-4C": (4, 0)}


def test_vgpu_framebuffer_is_the_full_type() -> None:
    assert _model("H200-SXM5-141GB").vgpu_framebuffer_mib == 141 * 1024
    assert _model("H100-SXM5-80GB").vgpu_framebuffer_mib == 80 * 1024
    assert _model("B200").vgpu_framebuffer_mib is None
    assert _model("GB200").vgpu_types == ()  # not in the index of NVIDIA's vGPU type reference
    assert _model("L40").vgpu_framebuffer_mib == 48 * 1024  # the board's 48 GB, above nvidia-smi's 46068 MiB


def test_types_outside_the_reference_are_uncertain() -> None:
    """C types read from NVIDIA's tables are verified; Q/B/A sizes are not read from NVIDIA's graphics tables and
    carry the uncertain mark, except the 1 GB types on 48 GB boards, whose 32 is NVIDIA's (driver source)."""
    for model_name in ("L40S", "L40", "L4", "A10", "H20"):
        model = _model(model_name)
        assert model.provenance_of("vgpu_prefix").confidence == "verified", model_name
        c_types = [t for t in model.vgpu_types if t.series == "C"]
        assert c_types and all(t.provenance.confidence == "verified" for t in c_types), model_name
        graphics = [t for t in model.vgpu_types if t.series != "C" and t.framebuffer_mib > 1024]
        assert all(t.provenance.confidence == "uncertain" for t in graphics), model_name
    a40_q = [t for t in _model("A40").vgpu_types if t.series == "Q"]
    assert a40_q and all(t.provenance.confidence == "uncertain" for t in a40_q if t.name != "A40-1Q")
    assert {t.name for t in a40_q} == {f"A40-{gb}Q" for gb in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)}
    a40_c = [t for t in _model("A40").vgpu_types if t.series == "C"]
    assert all(t.provenance.confidence == "verified" for t in a40_c)
