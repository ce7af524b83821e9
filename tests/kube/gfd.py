"""GPU Feature Discovery's MIG labels, as GFD writes them, for the seeded cluster (tests/kube/seed.py) and for the
API server double's simulated mig-manager (tests/kube/apiserver_double.py), which relabels a node after applying a
mig-parted config the way the GPU Operator's GFD does on a real node once the mig-manager restarts it.

The per-profile keys are those of the real H100 node in tests/adapters/fixtures/h100-mig-mixed-all-balanced_node-
labels.json (mixed strategy): `nvidia.com/mig-<dev>.count` (instances on the NODE), `.replicas`, `.sharing-strategy`,
`.product`, `.slices.gi`, `.slices.ci`, `.memory` (MiB). The GPUs' facts (which profiles a model has, their slices
and memory; the PCI ids of a config's `device-filter`) are gpuadmin's catalog's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from gpuadmin.adapters._common import pci_filter_id
from gpuadmin.catalog import MIG_RESOURCE_PREFIX, GpuModel, get_catalog, mig_device_resource_name

GPU_COUNT = "nvidia.com/gpu.count"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_REPLICAS = "nvidia.com/gpu.replicas"
WHOLE_GPU = "nvidia.com/gpu"


def mig_labels(model: GpuModel | None, product: str, counts: Mapping[str, int],
               replicas: Mapping[str, int]) -> dict[str, str]:
    """GFD's labels of the MIG devices on a node: per device name, its count on the node and facts."""
    labels: dict[str, str] = {}
    for name, count in sorted(counts.items()):
        profile = model.mig_profile(name) if model is not None else None
        key = mig_device_resource_name(name)
        device = key.removeprefix(MIG_RESOURCE_PREFIX)
        shared = replicas.get(name, 1)
        labels[f"{key}.count"] = str(count)
        labels[f"{key}.replicas"] = str(shared)
        labels[f"{key}.sharing-strategy"] = "time-slicing" if shared > 1 else "none"
        labels[f"{key}.product"] = f"{product}-MIG-{device}"
        if profile is not None:
            labels[f"{key}.slices.gi"] = str(profile.compute_slices)
            labels[f"{key}.slices.ci"] = str(profile.compute_slices)
            if profile.memory_gib is not None:
                labels[f"{key}.memory"] = str(round(profile.memory_gib * 1024))
    return labels


def _devices(entry: Mapping[str, Any], gpus: int) -> list[int]:
    devices = entry.get("devices")
    if devices == "all":
        return list(range(gpus))
    return [d for d in devices if isinstance(d, int) and 0 <= d < gpus] if isinstance(devices, list) else []


def _applies(entry: Mapping[str, Any], model: GpuModel | None) -> bool:
    """mig-parted's `device-filter`: the entry is for these PCI ids only (none: for every GPU)."""
    wanted = entry.get("device-filter")
    if wanted is None:
        return True
    ids = {pci_filter_id(p).upper() for p in (model.pci_device_ids if model is not None else ())}
    return any(str(w).upper() in ids for w in (wanted if isinstance(wanted, list) else [wanted]))


def relabelled(node: Mapping[str, Any], config: list[Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The node's labels and device-plugin resources once `config` (a mig-parted config's entries) is applied:
    the MIG devices per GPU as the config's entries for the node's GPU model say (a later entry for a GPU wins,
    as mig-parted applies them in order; a GPU no entry names keeps no MIG devices), GFD's per-profile labels
    rewritten (those of profiles gone removed), `nvidia.com/gpu.replicas` 0 when every GPU is carved, and the
    resources the device plugin advertises under the mixed strategy."""
    labels: dict[str, str] = dict(node["metadata"].get("labels") or {})
    gpus = int(labels.get(GPU_COUNT, "0") or 0)
    product = labels.get(GPU_PRODUCT, "").removesuffix("-SHARED")
    model = get_catalog().model_by_product_name(product)
    per_gpu: dict[int, Counter[str]] = {}
    for entry in config:
        if not isinstance(entry, dict) or not _applies(entry, model):
            continue
        devices = entry.get("mig-devices") if entry.get("mig-enabled") else None
        carved = Counter({str(k): v for k, v in (devices or {}).items() if isinstance(v, int)})
        for index in _devices(entry, gpus):
            if entry.get("mig-enabled"):
                per_gpu[index] = carved
            else:
                per_gpu.pop(index, None)
    counts: Counter[str] = Counter()
    for devices in per_gpu.values():
        counts.update(devices)
    old_replicas = {key.removeprefix(MIG_RESOURCE_PREFIX).removesuffix(".replicas"): int(value)
                    for key, value in labels.items() if key.startswith(MIG_RESOURCE_PREFIX)
                    and key.endswith(".replicas") and value.isdigit()}
    replicas = {name: old_replicas.get(mig_device_resource_name(name).removeprefix(MIG_RESOURCE_PREFIX), 1)
                for name in counts}
    kept = {k: v for k, v in labels.items() if not k.startswith(MIG_RESOURCE_PREFIX)}
    whole = gpus - len(per_gpu)
    if whole == 0 and per_gpu:
        kept[GPU_REPLICAS] = "0"  # mixed strategy, every GPU carved: no nvidia.com/gpu left to replicate
    elif kept.get(GPU_REPLICAS, "0") == "0":
        kept[GPU_REPLICAS] = "1"
    new_labels = {**kept, **mig_labels(model, product, counts, replicas)}
    shared = int(new_labels[GPU_REPLICAS]) if new_labels.get(GPU_REPLICAS, "").isdigit() else 1
    resources = {WHOLE_GPU: str(whole * max(shared, 1))}
    resources.update({mig_device_resource_name(name): str(count * replicas[name])
                      for name, count in sorted(counts.items())})
    return new_labels, resources
