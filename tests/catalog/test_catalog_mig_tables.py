"""MIG geometry in the catalog against gpu-facts.md §1.3–§1.5, transcribed here independently of the YAML."""

from __future__ import annotations

import re
from itertools import combinations

import pytest

from gpuadmin.catalog import GpuModel, MigProfile, get_catalog

Row = tuple[str, int, int, int, int, tuple[int, ...], float | None, int | None]

R7 = (0, 1, 2, 3, 4, 5, 6)
R4 = (0, 2, 4, 6)
R3 = (0, 2, 4)

# (name, nvidia-smi profile id, G, M, max instances, placement starts, GiB, SMs) — gpu-facts §1.4 tables.
A100_40GB: list[Row] = [
    ("1g.5gb", 19, 1, 1, 7, R7, 4.75, 14),
    ("1g.5gb+me", 20, 1, 1, 1, R7, 4.75, 14),
    ("1g.10gb", 15, 1, 2, 4, R4, 9.62, 14),
    ("2g.10gb", 14, 2, 2, 3, R3, 9.62, 28),
    ("3g.20gb", 9, 3, 4, 2, (0, 4), 19.50, 42),
    ("4g.20gb", 5, 4, 4, 1, (0,), 19.50, 56),
    ("7g.40gb", 0, 7, 8, 1, (0,), 39.25, 98),
]
# A100-80GB: no GiB column; 1g.20gb is 19968 MiB in the real telegraf XML.
A100_80GB: list[Row] = [
    ("1g.10gb", 19, 1, 1, 7, R7, None, 14),
    ("1g.10gb+me", 20, 1, 1, 1, R7, None, 14),
    ("1g.20gb", 15, 1, 2, 4, R4, 19968 / 1024, 14),
    ("2g.20gb", 14, 2, 2, 3, R3, None, 28),
    ("3g.40gb", 9, 3, 4, 2, (0, 4), None, 42),
    ("4g.40gb", 5, 4, 4, 1, (0,), None, 56),
    ("7g.80gb", 0, 7, 8, 1, (0,), None, 98),
]
A30: list[Row] = [
    ("1g.6gb", 14, 1, 1, 4, (0, 1, 2, 3), 5.81, 14),
    ("1g.6gb+me", 21, 1, 1, 1, (0, 1, 2, 3), 5.81, 14),
    ("2g.12gb", 5, 2, 2, 2, (0, 2), 11.69, 28),
    ("2g.12gb+me", 6, 2, 2, 1, (0, 2), 11.69, 28),
    ("4g.24gb", 0, 4, 4, 1, (0,), 23.44, 56),
]
H100_80GB: list[Row] = [
    ("1g.10gb", 19, 1, 1, 7, R7, 9.75, 16),
    ("1g.10gb+me", 20, 1, 1, 1, R7, 9.75, 16),
    ("1g.20gb", 15, 1, 2, 4, R4, 19.62, 26),
    ("2g.20gb", 14, 2, 2, 3, R3, 19.62, 32),
    ("3g.40gb", 9, 3, 4, 2, (0, 4), 39.50, 60),
    ("4g.40gb", 5, 4, 4, 1, (0,), 39.50, 64),
    ("7g.80gb", 0, 7, 8, 1, (0,), 79.25, 132),
]
# H100 PCIe: same profiles; SM counts "[uncertain] (no source)", the lgip GiB figures are from SXM5.
H100_PCIE: list[Row] = [(n, i, g, m, k, s, None, None) for (n, i, g, m, k, s, _gib, _sm) in H100_80GB]
H100_94GB: list[Row] = [
    ("1g.12gb", 19, 1, 1, 7, R7, 10.75, 16),
    ("1g.12gb+me", 20, 1, 1, 1, R7, 10.75, 16),
    ("1g.24gb", 15, 1, 2, 4, R4, 21.62, 26),
    ("2g.24gb", 14, 2, 2, 3, R3, 21.62, 32),
    ("3g.47gb", 9, 3, 4, 2, (0, 4), 46.38, 60),
    ("4g.47gb", 5, 4, 4, 1, (0,), 46.38, 64),
    ("7g.94gb", 0, 7, 8, 1, (0,), 93.12, 132),
]
H200: list[Row] = [
    ("1g.18gb", 19, 1, 1, 7, R7, 16.00, 16),
    ("1g.18gb+me", 20, 1, 1, 1, R7, 16.00, 16),
    # issue 19 point 5: the double-memory 1g profile, derived from the Hopper ID-15 -lgip rows (26 SMs) and
    # 2g.35gb's 32.50 GiB (the same two memory slices)
    ("1g.35gb", 15, 1, 2, 4, R4, 32.50, 26),
    ("2g.35gb", 14, 2, 2, 3, R3, 32.50, 32),
    ("3g.71gb", 9, 3, 4, 2, (0, 4), None, 60),
    ("4g.71gb", 5, 4, 4, 1, (0,), None, 64),
    ("7g.141gb", 0, 7, 8, 1, (0,), 140.00, 132),
]
# B200: the table has no ID column; IDs are the 8-memory-slice IDs of §1.3. SMs unknown.
B200: list[Row] = [
    ("1g.23gb", 19, 1, 1, 7, R7, None, None),
    ("1g.23gb+me", 20, 1, 1, 1, R7, None, None),
    ("1g.45gb", 15, 1, 2, 4, R4, None, None),
    ("2g.45gb", 14, 2, 2, 3, R3, None, None),
    ("3g.90gb", 9, 3, 4, 2, (0, 4), None, None),
    ("4g.90gb", 5, 4, 4, 1, (0,), None, None),
    ("7g.180gb", 0, 7, 8, 1, (0,), None, None),
]


def _eight_slice(names: tuple[str, str, str, str, str, str, str]) -> list[Row]:
    """An 8-memory-slice table of gpu-facts §1.4 whose reference gives names and counts only (96GB group,
    GH200 144G, GB200): IDs of §1.3, the H100 placements (derived there), no GiB or SM figures."""
    small, small_me, double, two, three, four, seven = names
    return [
        (small, 19, 1, 1, 7, R7, None, None),
        (small_me, 20, 1, 1, 1, R7, None, None),
        (double, 15, 1, 2, 4, R4, None, None),
        (two, 14, 2, 2, 3, R3, None, None),
        (three, 9, 3, 4, 2, (0, 4), None, None),
        (four, 5, 4, 4, 1, (0,), None, None),
        (seven, 0, 7, 8, 1, (0,), None, None),
    ]


# §1.4 "H100 96GB on GH200" and the MP 96GB group (GH200 0x2342, H20 0x2329)
H100_96GB = _eight_slice(("1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"))
GH200_144GB = _eight_slice(("1g.18gb", "1g.18gb+me", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"))
GB200 = _eight_slice(("1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"))
# §1.4 RTX PRO 6000: a 12-unit grid; real -lgipp {0,3,6,9}:3, {0,6}:6, {0}:12; SMs 46/94/188 [secondary]. IDs and GiB
# transcribed from a real `nvidia-smi mig -lgip` (RTX PRO 6000 Blackwell Server Edition, driver 610.43.02, quoted in the
# blog post "Slicing GPUs in Kubernetes with NVIDIA MIG"): +me.all is 65 / 64 and -me 67 / 66 (issue 19 point 9)
Q4 = (0, 3, 6, 9)
RTX_PRO_6000: list[Row] = [
    ("1g.24gb", 14, 1, 3, 4, Q4, 23.62, 46),
    ("1g.24gb+me", 21, 1, 3, 1, Q4, 23.62, 46),
    ("1g.24gb+gfx", 47, 1, 3, 4, Q4, 23.62, 46),
    ("1g.24gb-me", 67, 1, 3, 4, Q4, 23.62, 46),
    ("1g.24gb+me.all", 65, 1, 3, 1, Q4, 23.62, 46),
    ("2g.48gb", 5, 2, 6, 2, (0, 6), 47.38, 94),
    ("2g.48gb+gfx", 35, 2, 6, 2, (0, 6), 47.38, 94),
    ("2g.48gb-me", 66, 2, 6, 2, (0, 6), 47.38, 94),
    ("2g.48gb+me.all", 64, 2, 6, 1, (0, 6), 47.38, 94),
    ("4g.96gb", 0, 4, 12, 1, (0,), 95.12, 188),
    ("4g.96gb+gfx", 32, 4, 12, 1, (0,), 95.12, 188),
]

EXPECTED: dict[str, list[Row]] = {
    "A100-SXM4-40GB": A100_40GB,
    "A100-PCIE-40GB": A100_40GB,
    "A100-SXM4-80GB": A100_80GB,
    "A100-PCIE-80GB": A100_80GB,
    "A30": A30,
    "H100-SXM5-80GB": H100_80GB,
    "H100-PCIE-80GB": H100_PCIE,
    "H100-NVL-94GB": H100_94GB,
    "H200-SXM5-141GB": H200,
    "H200-NVL-141GB": H200,
    "B200": B200,
    "GB200": GB200,
    "H100-SXM5-94GB": H100_94GB,
    "H100-96GB-GH200": H100_96GB,
    "H20": H100_96GB,
    "GH200-144GB": GH200_144GB,
    "RTX-PRO-6000-BSE": RTX_PRO_6000,
}
NOT_MIG_CAPABLE = ["A40", "A10", "A10G", "L40S", "L40", "L4", "T4"]


def _model(name: str) -> GpuModel:
    model = get_catalog().model(name)
    assert model is not None, name
    return model


def test_mig_capable_models_are_exactly_the_expected_ones() -> None:
    assert {m.name for m in get_catalog().mig_capable_models()} == set(EXPECTED)
    for name in NOT_MIG_CAPABLE:
        model = _model(name)
        assert not model.mig_capable
        assert model.mig_profiles == ()
        assert (model.memory_slices, model.compute_slices, model.max_mig_instances) == (0, 0, 0)


@pytest.mark.parametrize("model_name", sorted(EXPECTED))
def test_profile_table(model_name: str) -> None:
    model = _model(model_name)
    expected = EXPECTED[model_name]
    assert [p.name for p in model.mig_profiles] == [row[0] for row in expected]
    for name, pid, g, m, inst, starts, gib, sms in expected:
        profile = model.mig_profile(name)
        assert profile is not None
        assert profile.profile_id == pid, name
        assert profile.compute_slices == g, name
        assert profile.memory_slices == m == profile.size, name
        assert profile.max_instances == inst, name
        assert profile.starts == starts, name
        assert profile.media_extensions == (name.endswith("+me") or name.endswith("+me.all")), name
        assert profile.sms == sms, name
        if gib is None:
            assert profile.memory_gib is None, name
        else:
            assert profile.memory_gib == pytest.approx(gib, abs=0.005), name


@pytest.mark.parametrize("model_name", sorted(EXPECTED))
def test_grid(model_name: str) -> None:
    model = _model(model_name)
    if model_name == "A30":
        assert (model.memory_slices, model.compute_slices, model.max_mig_instances) == (4, 4, 4)
    elif model_name == "RTX-PRO-6000-BSE":  # a 12-unit placement grid (real -lgipp), 4 compute slices
        assert (model.memory_slices, model.compute_slices, model.max_mig_instances) == (12, 4, 4)
    else:
        assert (model.memory_slices, model.compute_slices, model.max_mig_instances) == (8, 7, 7)
    for profile in model.mig_profiles:
        assert profile.compute_slices <= model.compute_slices
        assert profile.max_instances <= model.max_mig_instances
        for start in profile.starts:
            assert max(profile.occupies(start)) < model.memory_slices


LGIPP_8_SLICE = """\
GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
GPU  0 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1
GPU  0 Profile ID 15 Placements: {0,2,4,6}:2
GPU  0 Profile ID 14 Placements: {0,2,4}:2
GPU  0 Profile ID  9 Placements: {0,4}:4
GPU  0 Profile ID  5 Placement : {0}:4
GPU  0 Profile ID  0 Placement : {0}:8
"""
LGIPP_A30 = """\
GPU  0 Profile ID 14 Placements: {0,1,2,3}:1
GPU  0 Profile ID 21 Placements: {0,1,2,3}:1
GPU  0 Profile ID  5 Placements: {0,2}:2
GPU  0 Profile ID  6 Placements: {0,2}:2
GPU  0 Profile ID  0 Placement : {0}:4
"""
_LGIPP_LINE = re.compile(r"^GPU\s+\d+\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,]+)\}:(\d+)$")


def _parse_lgipp(text: str) -> dict[int, tuple[tuple[int, ...], int]]:
    out = {}
    for line in text.splitlines():
        match = _LGIPP_LINE.match(line)
        assert match is not None, line
        out[int(match.group(1))] = (tuple(int(s) for s in match.group(2).split(",")), int(match.group(3)))
    return out


@pytest.mark.parametrize(
    ("model_name", "text"),
    [
        ("A100-SXM4-40GB", LGIPP_8_SLICE),
        ("H100-SXM5-80GB", LGIPP_8_SLICE),
        ("H100-NVL-94GB", LGIPP_8_SLICE),
        ("A30", LGIPP_A30),
    ],
)
def test_placements_match_verbatim_lgipp(model_name: str, text: str) -> None:
    """gpu-facts §1.5: real `nvidia-smi mig -lgipp` on A100-40GB (R525+), H100 80GB, H100 NVL and A30."""
    model = _model(model_name)
    lgipp = _parse_lgipp(text)
    assert {p.profile_id for p in model.mig_profiles} == set(lgipp)
    for profile_id, (starts, size) in lgipp.items():
        profile = model.mig_profile_by_id(profile_id)
        assert profile is not None
        assert (profile.starts, profile.size) == (starts, size), profile.name


def _fits(layout: list[tuple[MigProfile, int]], model: GpuModel) -> bool:
    used: set[int] = set()
    for profile, start in layout:
        if start not in profile.starts:
            return False
        slices = set(profile.occupies(start))
        if used & slices:
            return False
        used |= slices
    return sum(p.compute_slices for p, _ in layout) <= model.compute_slices


def test_derived_consequences_of_section_1_5() -> None:
    model = _model("H100-SXM5-80GB")

    def p(name: str) -> MigProfile:
        found = model.mig_profile(name)
        assert found is not None
        return found

    one, double, two, three, four = p("1g.10gb"), p("1g.20gb"), p("2g.20gb"), p("3g.40gb"), p("4g.40gb")
    # 7 × 1g leaves memory slice 7 unused
    assert _fits([(one, s) for s in range(7)], model)
    assert 7 not in {s for start in one.starts for s in one.occupies(start)}
    # 4 × double-memory 1g uses all 8 memory slices but only 4 compute slices
    assert _fits([(double, s) for s in (0, 2, 4, 6)], model)
    # a 4g can only start at 0, so two never fit; 4g + 3g = {0}:4 + {4}:4
    assert four.starts == (0,)
    assert not any(_fits([(four, a), (four, b)], model) for a, b in combinations(range(8), 2))
    assert _fits([(four, 0), (three, 4)], model)
    # all-balanced: one valid packing is 3g@4:4, 2g@0:2, 1g@2:1, 1g@3:1 (7/7 compute, 8/8 memory)
    balanced = [(three, 4), (two, 0), (one, 2), (one, 3)]
    assert _fits(balanced, model)
    assert sum(pr.compute_slices for pr, _ in balanced) == 7
    assert sum(pr.memory_slices for pr, _ in balanced) == 8


def test_lookup_by_name_and_id() -> None:
    model = _model("A100-SXM4-40GB")
    assert model.mig_profile("MIG 3g.20gb") is model.mig_profile("3g.20gb")
    assert model.mig_profile("3G.20GB") is model.mig_profile("3g.20gb")
    assert model.mig_profile("3g.40gb") is None
    profile = model.mig_profile_by_id(15)
    assert profile is not None and profile.name == "1g.10gb"
    assert model.mig_profile_by_id(7) is None  # an NVML profile *index*, not a Profile ID


def test_min_drivers() -> None:
    """MIG-UG Deployment Considerations minimum drivers (gpu-facts §1.1)."""
    expected = {
        "A100-SXM4-40GB": "450.80.02",
        "A100-SXM4-80GB": "450.80.02",
        "A30": "460.73.01",
        "H100-SXM5-80GB": "525.85.12",
        "H200-SXM5-141GB": "550.90.07",
        "B200": "570.133.20",
    }
    for name, driver in expected.items():
        assert _model(name).mig_min_driver == driver
    assert _model("A40").mig_min_driver is None
