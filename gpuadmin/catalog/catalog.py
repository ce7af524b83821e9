"""The catalog object: all hardware facts, indexed for the lookups the importers and rules need."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuadmin.catalog.entities import (
    Board,
    Confidence,
    GpuModel,
    MigProfile,
    Provenance,
    Shape,
    VgpuSeries,
    VgpuType,
    normalize_vgpu_type_name,
)
from gpuadmin.catalog.naming import mig_name_from_slices, parse_esxi_version

EsxiVersion = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class PassthroughRow:
    """From ESXi `min_esxi` with VM hardware ≥ `min_hardware_version`: at most `limit` passthrough devices."""

    min_esxi: str
    min_hardware_version: int
    limit: int
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class HardwareVersionRow:
    """From ESXi `min_esxi` on, VMs up to hardware version `hardware_version`."""

    min_esxi: str
    hardware_version: int
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class VgpusPerVmRow:
    """From ESXi `min_esxi` on: at most `limit` vGPUs per VM; `full_framebuffer_only` for multi-vGPU VMs."""

    min_esxi: str
    limit: int
    full_framebuffer_only: bool
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class NvswitchVgpuRules:
    """What vSphere + NVIDIA vGPU allow on NVSwitch systems (gpu-facts §1.8)."""

    time_sliced_vgpu: bool
    mig_backed_vgpu: bool
    plain_passthrough: bool
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class StunEstimate:
    """A vMotion stun time estimate, seconds, and how sure it is: `verified` where it is a row of the table at
    the table's link speed, `derived` where interpolated or scaled to another speed, `uncertain` where the frame
    buffer lies beyond the table's last row (extrapolated)."""

    seconds: float
    confidence: Confidence


@dataclass(frozen=True, slots=True)
class StunTimeTable:
    """VMware's vGPU vMotion stun times, (frame buffer GiB, seconds) at `reference_gbps`."""

    reference_gbps: int
    rows: tuple[tuple[int, int], ...]
    provenance: Provenance

    def estimate(self, framebuffer_gib: float, gbps: float) -> StunEstimate:
        """The stun time of copying `framebuffer_gib` over a `gbps` link: linear between rows (from 0 s at
        0 GiB below the first), the last segment extended beyond the last, scaled by reference / link speed."""
        points = ((0, 0), *self.rows)
        sure: Confidence = "verified"
        if framebuffer_gib > points[-1][0]:
            (x0, y0), (x1, y1) = points[-2], points[-1]
            sure = "uncertain"
        else:
            index = next(i for i in range(1, len(points)) if framebuffer_gib <= points[i][0])
            (x0, y0), (x1, y1) = points[index - 1], points[index]
            if framebuffer_gib != x1:
                sure = "derived"
        seconds = (y0 + (y1 - y0) * (framebuffer_gib - x0) / (x1 - x0)) * self.reference_gbps / gbps
        if gbps != self.reference_gbps and sure == "verified":
            sure = "derived"
        return StunEstimate(seconds, sure)


def _version_key(text: str) -> EsxiVersion:
    return parse_esxi_version(text)


@dataclass(frozen=True, slots=True)
class VsphereLimits:
    """vSphere limits as data rows (gpu-facts §4.4–§4.6). The methods pick the row that applies."""

    passthrough_rows: tuple[PassthroughRow, ...]
    hardware_version_rows: tuple[HardwareVersionRow, ...]
    vgpus_per_vm_rows: tuple[VgpusPerVmRow, ...]
    mixed_vgpu_types_since: str
    mixed_vgpu_types_provenance: Provenance
    mixed_vgpu_sizes_since: str
    mixed_vgpu_sizes_min_vgpu_release: int
    mixed_vgpu_sizes_provenance: Provenance
    device_groups_since: str
    device_groups_provenance: Provenance
    nvswitch_device_groups_since: str
    nvswitch_device_groups_provenance: Provenance
    device_group_sizes: tuple[int, ...]
    device_group_sizes_provenance: Provenance
    nvswitch: NvswitchVgpuRules
    vmotion_stun_times: StunTimeTable

    # -- passthrough ---------------------------------------------------------------------------------------
    def passthrough_row(self, esxi_version: str, hardware_version: int) -> PassthroughRow:
        """The row that sets the passthrough limit; ValueError when no row covers the version pair."""
        version = parse_esxi_version(esxi_version)
        best: PassthroughRow | None = None
        for row in self.passthrough_rows:
            applies = version >= _version_key(row.min_esxi) and hardware_version >= row.min_hardware_version
            if applies and (best is None or row.limit > best.limit):
                best = row
        if best is None:
            raise ValueError(
                f"no passthrough limit known for ESXi {esxi_version} "
                f"with VM hardware version {hardware_version} "
                f"(the catalog covers ESXi ≥ {self.passthrough_rows[0].min_esxi}, "
                f"hardware ≥ {self.passthrough_rows[0].min_hardware_version})"
            )
        return best

    def passthrough_devices_per_vm(self, esxi_version: str, hardware_version: int) -> int:
        """Max PCI passthrough devices per VM.

        16 on 7.x, 32 on 8.0 (HW 20), 64 on 8.0U1, 128 on 8.0U2 (HW 21).
        """
        return self.passthrough_row(esxi_version, hardware_version).limit

    # -- hardware versions ---------------------------------------------------------------------------------
    def hardware_version_row(self, esxi_version: str) -> HardwareVersionRow:
        version = parse_esxi_version(esxi_version)
        applicable = [r for r in self.hardware_version_rows if version >= _version_key(r.min_esxi)]
        if not applicable:
            raise ValueError(
                f"no VM hardware version known for ESXi {esxi_version} "
                f"(the catalog covers ESXi ≥ {self.hardware_version_rows[0].min_esxi})"
            )
        return max(applicable, key=lambda r: _version_key(r.min_esxi))

    def max_hardware_version(self, esxi_version: str) -> int:
        """Highest VM hardware version an ESXi release runs.

        7.0→17, 7.0U1→18, 7.0U2+→19, 8.0/8.0U1→20, 8.0U2+→21.
        """
        return self.hardware_version_row(esxi_version).hardware_version

    # -- vGPUs per VM --------------------------------------------------------------------------------------
    def vgpus_per_vm_row(self, esxi_version: str) -> VgpusPerVmRow:
        version = parse_esxi_version(esxi_version)
        applicable = [r for r in self.vgpus_per_vm_rows if version >= _version_key(r.min_esxi)]
        if not applicable:
            raise ValueError(
                f"no vGPU-per-VM limit known for ESXi {esxi_version} "
                f"(the catalog covers ESXi ≥ {self.vgpus_per_vm_rows[0].min_esxi})"
            )
        return max(applicable, key=lambda r: _version_key(r.min_esxi))

    def vgpus_per_vm(self, esxi_version: str) -> int:
        """Most vGPUs one VM may hold (8 on vSphere 8; see the row's provenance for 7.x)."""
        return self.vgpus_per_vm_row(esxi_version).limit

    def multi_vgpu_full_framebuffer_only(self, esxi_version: str) -> bool:
        """True where a multi-vGPU VM may only combine full-frame-buffer C-series vGPUs (vSphere 7.x)."""
        return self.vgpus_per_vm_row(esxi_version).full_framebuffer_only

    # -- thresholds ----------------------------------------------------------------------------------------
    def allows_mixed_vgpu_types(self, esxi_version: str) -> bool:
        """Different vGPU types of the same frame-buffer size on one GPU (8.0U2+)."""
        return parse_esxi_version(esxi_version) >= parse_esxi_version(self.mixed_vgpu_types_since)

    def allows_mixed_vgpu_sizes(self, esxi_version: str, vgpu_release: int | None = None) -> bool:
        """Mixed-size mode (8.0U3+, and NVIDIA vGPU ≥ 17 where the release is known)."""
        if parse_esxi_version(esxi_version) < parse_esxi_version(self.mixed_vgpu_sizes_since):
            return False
        return vgpu_release is None or vgpu_release >= self.mixed_vgpu_sizes_min_vgpu_release

    def allows_device_groups(self, esxi_version: str, nvswitch: bool = False) -> bool:
        """Device groups exist from 8.0; on NVSwitch HGX boards from 8.0U1."""
        since = self.nvswitch_device_groups_since if nvswitch else self.device_groups_since
        return parse_esxi_version(esxi_version) >= parse_esxi_version(since)


_PCI_RE = re.compile(r"^(?:0x)?([0-9a-f]{4})(?:10de)?$")
_PCI_COLON_RE = re.compile(r"^(?:0x)?10de:(?:0x)?([0-9a-f]{4})$")
_SEPARATORS = re.compile(r"[\s_\-]+")


def normalize_pci_device_id(device_id: str) -> str | None:
    """Canonical "0x2330" form of a PCI device id, or None.

    Accepts "0x2330", "2330", "0x233010DE" (mig-parted), "233010DE" (nvidia-smi XML), "10de:2330" (lspci).
    """
    text = device_id.strip().lower()
    match = _PCI_RE.match(text) or _PCI_COLON_RE.match(text)
    if match is None:
        return None
    return "0x" + match.group(1).upper()


def normalize_product_name(product: str) -> str:
    """Lookup key of a product name: lower case, one space for runs of spaces/'-'/'_', no "nvidia " prefix.

    "NVIDIA-H100-NVL" → "h100 nvl".
    """
    key = _SEPARATORS.sub(" ", product.strip().lower()).strip()
    if key.startswith("nvidia "):
        key = key[len("nvidia ") :]
    return key


@dataclass(frozen=True, slots=True)
class Catalog:
    gpu_models: Mapping[str, GpuModel]
    shapes: Mapping[str, Shape]
    boards: Mapping[str, Board]
    vgpu_series: Mapping[str, VgpuSeries]
    vsphere: VsphereLimits
    _by_pci: Mapping[str, GpuModel] = field(repr=False, compare=False)
    _by_product: Mapping[str, GpuModel] = field(repr=False, compare=False)
    _by_vgpu_prefix: Mapping[str, GpuModel] = field(repr=False, compare=False)
    _by_lower_name: Mapping[str, GpuModel] = field(repr=False, compare=False)

    @classmethod
    def build(
        cls,
        gpu_models: Mapping[str, GpuModel],
        shapes: Mapping[str, Shape],
        boards: Mapping[str, Board],
        vgpu_series: Mapping[str, VgpuSeries],
        vsphere: VsphereLimits,
    ) -> Catalog:
        """Index the records; ValueError on an id, product name or prefix claimed by two models."""
        by_pci: dict[str, GpuModel] = {}
        by_product: dict[str, GpuModel] = {}
        by_prefix: dict[str, GpuModel] = {}
        by_lower: dict[str, GpuModel] = {}
        for model in gpu_models.values():
            _claim(by_lower, model.name.lower(), model, "catalog name")
            for pci in model.pci_device_ids:
                key = normalize_pci_device_id(pci)
                if key is None:
                    raise ValueError(f"model {model.name}: bad PCI device id {pci!r}")
                _claim(by_pci, key, model, "PCI device id")
            for product in model.product_names:
                _claim(by_product, normalize_product_name(product), model, "product name")
            if model.vgpu_prefix is not None:
                _claim(by_prefix, model.vgpu_prefix.upper(), model, "vGPU board prefix")
        return cls(
            gpu_models=MappingProxyType(dict(gpu_models)),
            shapes=MappingProxyType(dict(shapes)),
            boards=MappingProxyType(dict(boards)),
            vgpu_series=MappingProxyType(dict(vgpu_series)),
            vsphere=vsphere,
            _by_pci=MappingProxyType(by_pci),
            _by_product=MappingProxyType(by_product),
            _by_vgpu_prefix=MappingProxyType(by_prefix),
            _by_lower_name=MappingProxyType(by_lower),
        )

    def model(self, name: str) -> GpuModel | None:
        """A GPU model by catalog name ("H100-SXM5-80GB"); exact spelling first, then case-insensitive."""
        found = self.gpu_models.get(name)
        return found if found is not None else self._by_lower_name.get(name.strip().lower())

    def model_by_pci_id(self, device_id: str) -> GpuModel | None:
        """By PCI device id: "0x2330", "2330", "0x233010DE" (mig-parted), "233010DE" (XML); any case."""
        key = normalize_pci_device_id(device_id)
        return self._by_pci.get(key) if key is not None else None

    def model_by_product_name(self, product: str) -> GpuModel | None:
        """By nvidia-smi product name ("NVIDIA H100 80GB HBM3"); GFD label form ("NVIDIA-H100-80GB-HBM3")."""
        return self._by_product.get(normalize_product_name(product))

    def model_for_vgpu_type(self, vgpu_type: str) -> GpuModel | None:
        """The model whose board prefix starts the type name ("A100X-3-20C", "grid_a100dx-10c")."""
        key = normalize_vgpu_type_name(vgpu_type)
        dash = key.find("-")
        if dash < 0:
            return None
        return self._by_vgpu_prefix.get(key[: dash + 1])

    def vgpu_type(self, vgpu_type: str) -> tuple[GpuModel, VgpuType] | None:
        """The model and type of a vGPU type name, or None when either is unknown."""
        model = self.model_for_vgpu_type(vgpu_type)
        if model is None:
            return None
        found = model.vgpu_type(vgpu_type)
        return (model, found) if found is not None else None

    def mig_capable_models(self) -> tuple[GpuModel, ...]:
        return tuple(m for m in self.gpu_models.values() if m.mig_capable)


def _claim(index: dict[str, GpuModel], key: str, model: GpuModel, what: str) -> None:
    other = index.get(key)
    if other is not None and other is not model:
        raise ValueError(f"{what} {key!r} is claimed by both {other.name} and {model.name}")
    index[key] = model


def _resolve(gpu_model: GpuModel | str) -> GpuModel:
    if isinstance(gpu_model, GpuModel):
        return gpu_model
    from gpuadmin.catalog.loader import get_catalog

    found = get_catalog().model(gpu_model)
    if found is None:
        raise KeyError(f"unknown GPU model {gpu_model!r}")
    return found


def mig_memory_fraction_name(gpu_model: GpuModel | str, memory_slices: int) -> str:
    """The `<GB>gb` part of a MIG profile name for `memory_slices` of a model's memory grid ("71gb" on H200).

    The fraction is memory_slices / grid (8, or 4 on A30) in eighths, applied to the model's naming total
    (`memory_gb`) with the half-away-from-zero rounding of gpu-facts §1.6.
    """
    model = _resolve(gpu_model)
    if not model.mig_capable:
        raise ValueError(f"{model.name} is not MIG-capable")
    name = mig_name_from_slices(1, memory_slices, model.memory_slices, model.memory_gb)
    return name.split(".", 1)[1]


def mig_profile_name_for(
    gpu_model: GpuModel | str, compute_slices: int, memory_slices: int, attrs: str = ""
) -> str:
    """A full profile name for a GI of `compute_slices` and `memory_slices` on a model ("3g.71gb" on H200)."""
    model = _resolve(gpu_model)
    if not model.mig_capable:
        raise ValueError(f"{model.name} is not MIG-capable")
    return mig_name_from_slices(compute_slices, memory_slices, model.memory_slices, model.memory_gb, attrs)


def mig_profile_for(gpu_model: GpuModel | str, name: str) -> MigProfile | None:
    """Convenience: `get_catalog().model(name).mig_profile(profile)` for a model given by name."""
    return _resolve(gpu_model).mig_profile(name)
