"""Hardware facts as data: GPU models, MIG profiles and placements, vGPU types, platform limits.

The facts live in YAML files under `gpuadmin/catalog/data/`, each with its source and confidence mark taken
from shared/reference/gpu-facts.md; `get_catalog()` parses them once per process. See docs/catalog.md.
"""

from gpuadmin.catalog.catalog import (
    Catalog,
    HardwareVersionRow,
    NvswitchVgpuRules,
    PassthroughRow,
    VgpusPerVmRow,
    VsphereLimits,
    mig_memory_fraction_name,
    mig_profile_for,
    mig_profile_name_for,
    normalize_pci_device_id,
    normalize_product_name,
)
from gpuadmin.catalog.entities import (
    CONFIDENCES,
    Board,
    BoardNvlink,
    Confidence,
    GpuModel,
    MigProfile,
    NvlinkKind,
    NvlinkSpec,
    Provenance,
    Shape,
    VgpuSeries,
    VgpuType,
    normalize_vgpu_type_name,
)
from gpuadmin.catalog.loader import CatalogError, default_data_dir, get_catalog, load_catalog
from gpuadmin.catalog.naming import (
    format_esxi_version,
    mig_memory_eighths,
    mig_memory_gb,
    mig_name_from_slices,
    mig_profile_name,
    naming_total_gb,
    parse_esxi_version,
    vgpu_type_name,
)

__all__ = [
    "CONFIDENCES",
    "Board",
    "BoardNvlink",
    "Catalog",
    "CatalogError",
    "Confidence",
    "GpuModel",
    "HardwareVersionRow",
    "MigProfile",
    "NvlinkKind",
    "NvlinkSpec",
    "NvswitchVgpuRules",
    "PassthroughRow",
    "Provenance",
    "Shape",
    "VgpuSeries",
    "VgpuType",
    "VgpusPerVmRow",
    "VsphereLimits",
    "default_data_dir",
    "format_esxi_version",
    "get_catalog",
    "load_catalog",
    "mig_memory_eighths",
    "mig_memory_fraction_name",
    "mig_memory_gb",
    "mig_name_from_slices",
    "mig_profile_for",
    "mig_profile_name",
    "mig_profile_name_for",
    "naming_total_gb",
    "normalize_pci_device_id",
    "normalize_product_name",
    "normalize_vgpu_type_name",
    "parse_esxi_version",
    "vgpu_type_name",
]
