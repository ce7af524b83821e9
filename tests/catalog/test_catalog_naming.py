"""MIG naming rule of gpu-facts §1.6 (NVLIB getMigMemorySizeGB), vGPU type naming of §4.2, ESXi versions."""

from __future__ import annotations

import pytest

from gpuadmin.catalog import (
    format_esxi_version,
    get_catalog,
    mig_memory_eighths,
    mig_memory_fraction_name,
    mig_profile_name,
    mig_profile_name_for,
    naming_total_gb,
    parse_esxi_version,
    vgpu_type_name,
)

# (compute slices, MIG memory MiB, device total MiB, attrs, expected name, expected eighths) — every case the
# reference works through or quotes a real memory figure for.
CASES = [
    # §1.6 checks: H100 (81559 MiB → 80): 9984 MiB → 1/8 → 10
    (1, 9984, 81559, "", "1g.10gb", 1),
    # GFD labels on a real H100 node (§1.4): 2g.20gb = 20096 MiB, 3g.40gb = 40320 MiB
    (2, 20096, 81559, "", "2g.20gb", 2),
    (3, 40320, 81559, "", "3g.40gb", 4),
    # H200 (143771 MiB → 141): 4/8 × 141 = 70.5 → 71, not Python's round() 70
    (3, 143771 // 2, 143771, "", "3g.71gb", 4),
    (4, 143771 // 2, 143771, "", "4g.71gb", 4),
    # H200 partial real -lgip: 1g.18gb 16.00 GiB, 2g.35gb 32.50 GiB, 7g.141gb 140.00 GiB
    (1, 16 * 1024, 143771, "", "1g.18gb", 1),
    (2, 33280, 143771, "", "2g.35gb", 2),
    (7, 140 * 1024, 143771, "", "7g.141gb", 8),
    # B200 (~180 GB): 1/8 × 180 = 22.5 → 23
    (1, 180 * 1024 // 8, 180 * 1024, "", "1g.23gb", 1),
    (7, 180 * 1024, 180 * 1024, "", "7g.180gb", 8),
    # A100-80GB real XML: a 1g MIG device of 19968 MiB is 2/8 → 1g.20gb
    (1, 19968, 81920, "", "1g.20gb", 2),
    # A100-40GB real XML / NVML MiB: 3g.20gb = 19968 MiB; 1g.5gb 4864; 2g.10gb / 1g.10gb 9856; 7g.40gb 40192
    (3, 19968, 40960, "", "3g.20gb", 4),
    (1, 4864, 40960, "", "1g.5gb", 1),
    (1, 4864, 40960, "+me", "1g.5gb+me", 1),
    (2, 9856, 40960, "", "2g.10gb", 2),
    (1, 9856, 40960, "", "1g.10gb", 2),
    (7, 40192, 40960, "", "7g.40gb", 8),
    # H100 NVL GFD labels: 1g.12gb = 11008 MiB, 1g.24gb = 22144 MiB (94 GB naming total)
    (1, 11008, 94 * 1024, "", "1g.12gb", 1),
    (1, 22144, 94 * 1024, "", "1g.24gb", 2),
    # attribute forms
    (1, 9984, 81559, "me", "1g.10gb+me", 1),
    (1, 9984, 81559, "-me", "1g.10gb-me", 1),
    (1, 9984, 81559, "+me.all", "1g.10gb+me.all", 1),
]


@pytest.mark.parametrize(("g", "mib", "total", "attrs", "name", "eighths"), CASES)
def test_naming_rule_cases(g: int, mib: int, total: int, attrs: str, name: str, eighths: int) -> None:
    assert mig_memory_eighths(mib, total) == eighths
    assert mig_profile_name(g, mib, total, attrs) == name


def test_python_round_is_the_pitfall() -> None:
    """The reason the rule is floor(x + 0.5): banker's rounding would name the H200 half 3g.70gb."""
    assert round(4 / 8 * 141) == 70
    assert mig_profile_name(3, 143771 // 2, 143771) == "3g.71gb"


def test_naming_totals() -> None:
    assert naming_total_gb(81559) == 80
    assert naming_total_gb(81920) == 80
    assert naming_total_gb(143771) == 141
    assert naming_total_gb(40960) == 40
    assert naming_total_gb(40961) == 41


def test_compute_instance_form() -> None:
    assert mig_profile_name(3, 40320, 81559, ci_slices=1) == "1c.3g.40gb"
    assert mig_profile_name(3, 40320, 81559, ci_slices=3) == "3g.40gb"
    with pytest.raises(ValueError):
        mig_profile_name(3, 40320, 81559, ci_slices=4)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError):
        mig_profile_name(0, 9984, 81559)
    with pytest.raises(ValueError):
        mig_profile_name(1, 0, 81559)
    with pytest.raises(ValueError):
        mig_profile_name(1, 9984, 0)


@pytest.mark.parametrize(
    ("model", "memory_slices", "expected"),
    [
        ("H100-SXM5-80GB", 1, "10gb"),
        ("H100-SXM5-80GB", 2, "20gb"),
        ("H200-SXM5-141GB", 1, "18gb"),
        ("H200-SXM5-141GB", 2, "35gb"),
        ("H200-SXM5-141GB", 4, "71gb"),
        ("B200", 1, "23gb"),
        ("B200", 2, "45gb"),
        ("H100-NVL-94GB", 1, "12gb"),
        ("H100-NVL-94GB", 2, "24gb"),
        ("H100-NVL-94GB", 4, "47gb"),
        ("A100-SXM4-40GB", 2, "10gb"),
        ("A100-SXM4-80GB", 2, "20gb"),
        ("A30", 1, "6gb"),
        ("A30", 2, "12gb"),
        ("A30", 4, "24gb"),
    ],
)
def test_memory_fraction_name(model: str, memory_slices: int, expected: str) -> None:
    assert mig_memory_fraction_name(model, memory_slices) == expected


def test_memory_fraction_name_refuses_non_mig_models() -> None:
    with pytest.raises(ValueError):
        mig_memory_fraction_name("A40", 1)
    with pytest.raises(KeyError):
        mig_memory_fraction_name("no-such-gpu", 1)


# Profiles whose catalog name does not follow the rule, with the reason. The reference shows none: MIG-UG
# Table 6's "Fraction of Memory 1/8" for A100-40GB 1g.10gb contradicts its own placement (2/8), and the name
# follows the placement.
NAMING_EXCEPTIONS: dict[tuple[str, str], str] = {}


def _catalog_profiles() -> list[tuple[str, str]]:
    return [(m.name, p.name) for m in get_catalog().mig_capable_models() for p in m.mig_profiles]


@pytest.mark.parametrize(("model_name", "profile_name"), _catalog_profiles())
def test_every_catalog_profile_name_follows_the_rule(model_name: str, profile_name: str) -> None:
    model = get_catalog().model(model_name)
    assert model is not None
    profile = model.mig_profile(profile_name)
    assert profile is not None
    base = profile.name.split("+", 1)[0].split("-", 1)[0]
    attrs = profile.name[len(base):]  # "+me", "+me.all", "+gfx", "-me" or ""
    if (model_name, profile_name) in NAMING_EXCEPTIONS:
        pytest.skip(NAMING_EXCEPTIONS[(model_name, profile_name)])
    # from the slice counts and the model's naming total
    assert mig_profile_name_for(model, profile.compute_slices, profile.memory_slices, attrs) == profile_name
    # from an actual byte count: memory_slices/grid of the device total
    mib = model.memory_mib * profile.memory_slices // model.memory_slices
    assert mig_profile_name(profile.compute_slices, mib, model.memory_mib, attrs) == profile_name
    # and from the real -lgip memory size, where the reference has one
    if profile.memory_gib is not None:
        real = round(profile.memory_gib * 1024)
        assert mig_profile_name(profile.compute_slices, real, model.memory_mib, attrs) == profile_name


def test_naming_total_agrees_with_device_total() -> None:
    for model in get_catalog().gpu_models.values():
        assert naming_total_gb(model.memory_mib) == model.memory_gb, model.name


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        (("A100-", 40), {}, "A100-40C"),
        (("A100X-", 10), {}, "A100X-10C"),
        (("A100-", 20), {"mig_slices": 3}, "A100-3-20C"),
        (("A100-", 5), {"mig_slices": 1, "media": True}, "A100-1-5CME"),
        (("A40-", 8, "Q"), {}, "A40-8Q"),
    ],
)
def test_vgpu_type_name(
    args: tuple[str, int] | tuple[str, int, str], kwargs: dict[str, object], expected: str
) -> None:
    assert vgpu_type_name(*args, **kwargs) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7.0", (7, 0, 0)),
        ("7.0U1", (7, 0, 1)),
        ("7.0U3", (7, 0, 3)),
        ("8.0", (8, 0, 0)),
        ("8.0U1", (8, 0, 1)),
        ("8.0U2", (8, 0, 2)),
        ("8.0U3", (8, 0, 3)),
        ("8.0 U3", (8, 0, 3)),
        ("8.0u2", (8, 0, 2)),
        ("8.0U3b", (8, 0, 3)),
        ("8.0.3.0", (8, 0, 3)),
        ("ESXi 8.0U1", (8, 0, 1)),
        ("9.0", (9, 0, 0)),
        ("8", (8, 0, 0)),
    ],
)
def test_parse_esxi_version(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_esxi_version(text) == expected


def test_esxi_versions_order() -> None:
    ordered = ["6.7U2", "7.0", "7.0U1", "7.0U2", "7.0U3", "8.0", "8.0U1", "8.0U2", "8.0U3", "9.0"]
    assert sorted(ordered, key=parse_esxi_version) == ordered
    assert parse_esxi_version("7.0U3") < parse_esxi_version("8.0")
    assert format_esxi_version((8, 0, 2)) == "8.0U2"
    assert format_esxi_version((7, 0, 0)) == "7.0"


@pytest.mark.parametrize("text", ["", "7.x", "eight", "8.0U", "U2", "8.0U2U3"])
def test_parse_esxi_version_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_esxi_version(text)
