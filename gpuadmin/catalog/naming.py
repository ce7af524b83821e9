"""Naming rules: MIG profile names from memory sizes (gpu-facts §1.6), vGPU type names (§4.2), ESXi versions.

All arithmetic is on integers, so there is no floating-point edge at the `ceil` and no banker's rounding at
the `round` (NVLIB uses Go's math.Round, half away from zero: 70.5 → 71, where Python's round(70.5) is 70).
"""

from __future__ import annotations

import re

MIB = 1 << 20
GIB = 1 << 30


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_half_up_eighths(eighths: int, total_gb: int) -> int:
    """floor(eighths/8 * total_gb + 0.5), exactly: floor((2·eighths·total_gb + 8) / 16)."""
    return (2 * eighths * total_gb + 8) // 16


def _attr_suffix(attrs: str) -> str:
    attrs = attrs.strip()
    if not attrs:
        return ""
    if attrs[0] in "+-":
        return attrs
    return "+" + attrs


def naming_total_gb(total_memory_mib: int) -> int:
    """totalGB = ceil(total bytes / 2^30) — 81559 MiB → 80, 143771 MiB → 141."""
    if total_memory_mib <= 0:
        raise ValueError(f"total memory must be positive, got {total_memory_mib} MiB")
    return _ceil_div(total_memory_mib * MIB, GIB)


def mig_memory_eighths(memory_mib: int, total_memory_mib: int) -> int:
    """ceil(mig bytes / total bytes × 8): the memory fraction of a MIG device, in eighths."""
    if memory_mib <= 0:
        raise ValueError(f"MIG memory must be positive, got {memory_mib} MiB")
    if total_memory_mib <= 0:
        raise ValueError(f"total memory must be positive, got {total_memory_mib} MiB")
    return _ceil_div(memory_mib * 8, total_memory_mib)


def mig_memory_gb(memory_mib: int, total_memory_mib: int) -> int:
    """The `<GB>` of a MIG profile name: floor(fraction × totalGB + 0.5) with fraction in eighths (§1.6)."""
    return _round_half_up_eighths(
        mig_memory_eighths(memory_mib, total_memory_mib), naming_total_gb(total_memory_mib)
    )


def mig_profile_name(
    compute_slices: int,
    memory_mib: int,
    total_memory_mib: int,
    attrs: str = "",
    *,
    ci_slices: int | None = None,
) -> str:
    """The MIG profile name NVIDIA's tools give a MIG device (NVLIB `getMigMemorySizeGB`, gpu-facts §1.6).

    fraction = ceil(mig_bytes / total_bytes × 8) / 8; totalGB = ceil(total_bytes / 2^30);
    GB = floor(fraction × totalGB + 0.5). `attrs` is "me", "+me", "-me", "+me.all", "+gfx" … (a bare attribute
    gets a "+"). With `ci_slices` different from `compute_slices` the compute-instance form `<C>c.<G>g.<GB>gb`
    is returned.
    """
    if compute_slices <= 0:
        raise ValueError(f"compute slices must be positive, got {compute_slices}")
    gb = mig_memory_gb(memory_mib, total_memory_mib)
    name = f"{compute_slices}g.{gb}gb{_attr_suffix(attrs)}"
    if ci_slices is not None and ci_slices != compute_slices:
        if not 0 < ci_slices < compute_slices:
            raise ValueError(f"a compute instance of {ci_slices} slices does not fit a {compute_slices}g GI")
        name = f"{ci_slices}c.{name}"
    return name


def mig_name_from_slices(
    compute_slices: int, memory_slices: int, grid_slices: int, total_gb: int, attrs: str = ""
) -> str:
    """A profile name from its slice counts: memory fraction memory_slices/grid_slices of a `total_gb` GPU."""
    if not 0 < memory_slices <= grid_slices:
        raise ValueError(f"{memory_slices} memory slices do not fit a grid of {grid_slices}")
    eighths = _ceil_div(memory_slices * 8, grid_slices)
    gb = _round_half_up_eighths(eighths, total_gb)
    return f"{compute_slices}g.{gb}gb{_attr_suffix(attrs)}"


#: The start of the extended resource under which NVIDIA's k8s-device-plugin advertises a MIG device under its
#: `mixed` strategy, and of the GPU Feature Discovery labels of that device (`<resource>.count`, `.replicas` …).
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


def mig_device_resource_name(device: str) -> str:
    """The Kubernetes resource name of a MIG device: `1g.10gb+me` → `nvidia.com/mig-1g.10gb.me`.

    `device` is a GI profile (`3g.40gb`, `1g.10gb+me`, `1g.24gb+me.all`, `1g.24gb-me`, `2g.48gb+gfx`) or a
    compute-instance device (`1c.3g.71gb`). A resource name may not hold `+` (apimachinery's qualified-name
    rule), so the plugin names the resource `"mig-" + profile` with every `+` replaced by `.`
    (NVIDIA/k8s-device-plugin internal/rm/rm.go `AddDefaultResourcesToConfig`, and
    internal/resource/nvml-mig-device.go `GetName`, which GFD's label keys are built from); `-` is kept.
    """
    return MIG_RESOURCE_PREFIX + device.replace("+", ".")


def vgpu_type_name(
    prefix: str, framebuffer_gb: int, series: str = "C", *, mig_slices: int | None = None, media: bool = False
) -> str:
    """`<PREFIX><FB>C` for time-sliced types, `<PREFIX><slices>-<FB>C` for MIG-backed, `ME` for +me (§4.2)."""
    slices = f"{mig_slices}-" if mig_slices is not None else ""
    return f"{prefix}{slices}{framebuffer_gb}{series}{'ME' if media else ''}"


_ESXI_RE = re.compile(
    r"""^\s*(?:v?(?:esxi?|vsphere)\s*)?
        (?P<major>\d+)(?:\.(?P<minor>\d+))?
        (?:\s*u(?P<update>\d+)[a-z]?|\.(?P<dotupdate>\d+)(?:\.\d+)*)?
        \s*$""",
    re.IGNORECASE | re.VERBOSE,
)


def parse_esxi_version(version: str) -> tuple[int, int, int]:
    """ "7.0" → (7, 0, 0), "8.0U2" → (8, 0, 2), "8.0 U3b" → (8, 0, 3), "8.0.3.0" (API release) → (8, 0, 3).

    Raises ValueError for anything else ("7.x", "", "eight").
    """
    match = _ESXI_RE.match(version)
    if match is None:
        raise ValueError(f"not an ESXi version: {version!r} (expected e.g. '7.0U3', '8.0', '8.0U2')")
    update = match.group("update") or match.group("dotupdate") or "0"
    return int(match.group("major")), int(match.group("minor") or 0), int(update)


def format_esxi_version(version: tuple[int, int, int]) -> str:
    """(8, 0, 2) → "8.0U2", (7, 0, 0) → "7.0"."""
    major, minor, update = version
    return f"{major}.{minor}U{update}" if update else f"{major}.{minor}"
