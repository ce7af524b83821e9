"""The catalog's record types: plain frozen dataclasses, built once by the loader and never mutated.

Every record carries a `Provenance`: the source tag from shared/reference/gpu-facts.md and the confidence mark
it gives there. Where one record mixes facts of different standing (a GPU's product names are verified but its
SM count is secondary), the record also keeps per-field provenance (`provenance_of(field)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

Confidence = Literal["verified", "derived", "secondary", "uncertain"]
CONFIDENCES: tuple[Confidence, ...] = get_args(Confidence)

NvlinkKind = Literal["nvswitch", "pairs", "none"]
BoardNvlink = Literal["nvswitch", "direct"]


def _no_provenance() -> Mapping[str, Provenance]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a fact comes from (`source`, a gpu-facts.md tag such as "MIG-UG Table 7") and how sure it is.

    `note` says why a fact is derived or uncertain, or what the reference's own wording was
    (e.g. "verified-vendor"); it is empty where there is nothing to add.
    """

    source: str
    confidence: Confidence
    note: str = ""

    def __str__(self) -> str:
        text = f"{self.source} [{self.confidence}]"
        return f"{text} — {self.note}" if self.note else text


ENGINE_KINDS: tuple[str, ...] = ("dec", "enc", "jpg", "ofa", "ce")
MEDIA_ENGINE_KINDS: tuple[str, ...] = ("dec", "enc", "jpg", "ofa")


@dataclass(frozen=True, slots=True)
class MigEngines:
    """Engine counts of a GPU instance as `nvidia-smi mig -lgip` prints them (DEC/ENC/JPEG/OFA, and CE), or of
    a GPU's media-engine budget. A count is None where no source gives it."""

    dec: int | None = None
    enc: int | None = None
    jpg: int | None = None
    ofa: int | None = None
    ce: int | None = None

    def count(self, kind: str) -> int | None:
        value: int | None = getattr(self, kind)
        return value

    def known(self) -> dict[str, int]:
        """The counts a source gives, by kind ("dec", "enc", "jpg", "ofa", "ce")."""
        return {k: v for k in ENGINE_KINDS if (v := self.count(k)) is not None}


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One GPU-instance profile of a MIG-capable model (gpu-facts §1.4).

    `memory_slices` is also the placement size; `starts` are the memory slices a GI of this profile may
    start at.
    `memory_gib` and `sms` are None where the reference has no value ("?"). `sms` is `-lgip`'s figure;
    `device_sms` is what a MIG device of the profile (one full-width compute instance) reports in
    `nvidia-smi -q` / GFD labels where that differs (Hopper's double-memory 1g: -lgip 26, device 16).
    `engines` are the `-lgip` engine counts (empty where no output gives them).
    """

    name: str
    profile_id: int
    compute_slices: int
    memory_slices: int
    max_instances: int
    starts: tuple[int, ...]
    media_extensions: bool
    memory_gib: float | None
    sms: int | None
    provenance: Provenance
    placement_provenance: Provenance
    sms_provenance: Provenance
    memory_provenance: Provenance
    # other names NVIDIA's tools have given this profile (GB200's 1g.24gb for 1g.23gb): accepted on input,
    # never written — `name` is the one gpuadmin writes
    aliases: tuple[str, ...] = ()
    alias_provenance: Provenance | None = None
    device_sms: int | None = None
    engines: MigEngines = field(default_factory=MigEngines)
    engines_provenance: Provenance | None = None

    @property
    def size(self) -> int:
        """Placement size in memory slices (the `:size` of `nvidia-smi mig -lgipp`)."""
        return self.memory_slices

    def occupies(self, start: int) -> range:
        """The memory slices a GI of this profile started at `start` occupies."""
        return range(start, start + self.memory_slices)


@dataclass(frozen=True, slots=True)
class NvlinkSpec:
    generation: int
    links: int
    bandwidth_gbs: int
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class VgpuType:
    """One vGPU type of a board (gpu-facts §4.3).

    `max_equal_size` / `max_mixed_size`: most vGPUs of this type per physical GPU in equal-size mode and in
    mixed-size mode. For MIG-backed types `max_mixed_size` is None (mixed-size mode is a time-sliced
    notion) and `mig_profile` names the MIG profile the type maps to. For time-sliced types
    `max_mixed_size` is None where the reference gives no figure, and 0 where the GPU has no mixed-size mode
    (NVIDIA: T4).
    """

    name: str
    series: str
    framebuffer_mib: int
    max_equal_size: int
    max_mixed_size: int | None
    mig_profile: str | None
    provenance: Provenance

    @property
    def mig_backed(self) -> bool:
        return self.mig_profile is not None

    @property
    def media_extensions(self) -> bool:
        return self.name.endswith("ME")


@dataclass(frozen=True, slots=True)
class VgpuSeries:
    name: str
    purpose: str
    license: str
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class GpuModel:
    """A GPU model as the inventory names it (`model: H100-SXM5-80GB`).

    `memory_mib` is the device total (real nvidia-smi figure where the reference has one); `memory_gb` is the
    naming total of gpu-facts §1.6 (ceil of the total in GiB) that MIG profile names are computed from.
    `memory_slices` / `compute_slices` / `max_mig_instances` are 0 for models that are not MIG-capable.
    """

    name: str
    product_names: tuple[str, ...]
    pci_device_ids: tuple[str, ...]
    architecture: str
    memory_mib: int
    memory_gb: int
    sms: int | None
    mig_capable: bool
    memory_slices: int
    compute_slices: int
    max_mig_instances: int
    nvlink: NvlinkSpec | None
    vgpu_prefix: str | None
    mig_profiles: tuple[MigProfile, ...]
    vgpu_types: tuple[VgpuType, ...]
    provenance: Provenance
    compute_capability: str | None = None
    mig_min_driver: str | None = None
    # media engines (DEC/ENC/JPEG/OFA) the GPU's MIG instances share out, where the catalog models them
    mig_media_budget: MigEngines | None = None
    field_provenance: Mapping[str, Provenance] = field(
        default_factory=_no_provenance, compare=False, repr=False
    )
    product_name_provenance: Mapping[str, Provenance] = field(
        default_factory=_no_provenance, compare=False, repr=False
    )

    def mig_profile(self, name: str) -> MigProfile | None:
        """The MIG profile called `name` (e.g. "3g.40gb", "1g.10gb+me") or one of its aliases; a leading "MIG "
        is accepted. The profile's `name` is the canonical spelling."""
        key = name.strip()
        if key[:4].upper() == "MIG ":
            key = key[4:].strip()
        key = key.lower()
        for profile in self.mig_profiles:
            if profile.name == key or key in profile.aliases:
                return profile
        return None

    def mig_profile_by_id(self, profile_id: int) -> MigProfile | None:
        """The MIG profile with this nvidia-smi Profile ID (not the NVML profile index, gpu-facts §1.3)."""
        for profile in self.mig_profiles:
            if profile.profile_id == profile_id:
                return profile
        return None

    def vgpu_type(self, name: str) -> VgpuType | None:
        """The vGPU type called `name`: "A100X-10C", or vSphere's "grid_a100x-10c" form, case-insensitive."""
        key = normalize_vgpu_type_name(name)
        for vgpu in self.vgpu_types:
            if vgpu.name.upper() == key:
                return vgpu
        return None

    def provenance_of(self, field_name: str) -> Provenance:
        """Provenance of one fact of this model ("memory", "sms", "pci_device_ids", "architecture", ...)."""
        return self.field_provenance.get(field_name, self.provenance)

    @property
    def vgpu_framebuffer_mib(self) -> int | None:
        """Frame buffer a vGPU host offers (that of the largest time-sliced type), or None without vGPU types.

        This is what vGPU frame buffers add up against: it can exceed `memory_mib` (H200-141C is
        141 × 1024 MiB on a GPU nvidia-smi reports as 143771 MiB).
        """
        sizes = [t.framebuffer_mib for t in self.vgpu_types if t.mig_profile is None and t.series == "C"]
        return max(sizes) if sizes else None


@dataclass(frozen=True, slots=True)
class Shape:
    """A cloud bare-metal shape (gpu-facts §5.1). `cpus` are cores (OCI OCPU on bare metal = core)."""

    name: str
    gpu_model: str
    gpus: int
    rdma_nics: int
    rdma_gbps: int
    cpus: int
    memory_gib: int
    nvlink: NvlinkKind
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class FmPartition:
    """A Fabric Manager GPU partition of an NVSwitch board: its id and its GPUs by physical / module id (1…)."""

    id: int
    gpus: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Board:
    """A multi-GPU baseboard (gpu-facts §5): NVSwitch all-to-all or direct NVLink between the GPUs."""

    name: str
    gpu_models: tuple[str, ...]
    gpus: int
    nvlink: BoardNvlink
    nvswitches: int
    provenance: Provenance
    nvlink_links_per_gpu: int = 0
    nvlink_bandwidth_gbs: int = 0
    nvswitch_pci_id: str | None = None
    topo_matrix: str | None = None
    # the multi-GPU partitions Fabric Manager offers (shared NVSwitch / vGPU models); () where none documented
    fm_partitions: tuple[FmPartition, ...] = ()
    fm_partitions_provenance: Provenance | None = None


def normalize_vgpu_type_name(name: str) -> str:
    """Upper case, without vSphere's "grid_"/"nvidia_" prefix: "grid_a100-40c" → "A100-40C"."""
    key = name.strip()
    lowered = key.lower()
    for prefix in ("grid_", "nvidia_"):
        if lowered.startswith(prefix):
            key = key[len(prefix) :]
            break
    return key.upper()
