"""`gpuadmin import local`: this host, live.

GPUs, MIG instances and NVLink come from NVML through nvidia-ml-py (`pynvml`, the `nvml` extra); CPUs,
memory and network interfaces from psutil; RDMA devices from `/sys/class/infiniband`. Without the library,
or without a driver NVML can load, `import_local` raises `NoDriverError` — one line,
"no NVIDIA driver found (NVML: …)", exit code 2.

MIG: each MIG device's GPU instance is looked up (`nvmlDeviceGetGpuInstanceById` → `nvmlGpuInstanceGetInfo`)
for its profile id (nvidia-smi's Profile ID, mapped through the catalog) and its placement start, so the
layout is read as the driver made it. Where NVML cannot say (older drivers), the profile is derived from the
MIG device's SM count and memory as for the XML importer and the start chosen with `engine.mig.place`.

`nvml` is a parameter so the reading logic can be tested with a stand-in module; by default it is the real
`pynvml`.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from pathlib import Path
from typing import Any

import psutil

from gpuadmin.adapters._common import (
    ImportResult,
    MigDeviceFacts,
    NoDriverError,
    check_given_node_name,
    identify_mig_profile,
    input_error,
    place_instances,
    with_module_ids,
)
from gpuadmin.catalog import GpuModel, MigEngines, get_catalog
from gpuadmin.model import Gpu, MigInstance, Node, NotInCatalog, Rdma
from gpuadmin.model.inventory import MAX_GPU_INDEX, NvlinkKind, Orchestrator, Platform

_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*Gb/sec")


def _load_nvml() -> Any:
    try:
        import pynvml
    except ImportError as exc:
        raise NoDriverError(
            f"the nvidia-ml-py package is not installed ({exc}); pip install 'gpuadmin[nvml]'"
        ) from None
    return pynvml


def _str(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _errors(nvml: Any) -> tuple[type[BaseException], ...]:
    error = getattr(nvml, "NVMLError", None)
    return (error,) if isinstance(error, type) and issubclass(error, BaseException) else (Exception,)


def _model(nvml: Any, handle: Any) -> tuple[GpuModel | None, str, str | None]:
    """(catalog model or None, the product name NVML gives, its PCI device id `0xDDDD`)."""
    catalog = get_catalog()
    name = _str(nvml.nvmlDeviceGetName(handle))
    found = catalog.model_by_product_name(name)
    pci_hex = None
    if found is None:
        pci = nvml.nvmlDeviceGetPciInfo(handle)
        pci_hex = f"0x{int(pci.pciDeviceId) >> 16:04X}"
        found = catalog.model_by_pci_id(pci_hex)
    return found, name, pci_hex


_NVML_ENGINES = {
    "dec": "sharedDecoderCount",
    "enc": "sharedEncoderCount",
    "jpg": "sharedJpegCount",
    "ofa": "sharedOfaCount",
    "ce": "sharedCopyEngineCount",
}


def _engines(attributes: Any) -> MigEngines:
    """The engine counts of `nvmlDeviceGetAttributes` (a field an older NVML lacks is unknown)."""
    counts = {kind: getattr(attributes, field, None) for kind, field in _NVML_ENGINES.items()}
    return MigEngines(**{k: int(v) if isinstance(v, int) else None for k, v in counts.items()})


def _mig_layout(
    nvml: Any, handle: Any, model: GpuModel, total_mib: int, index: int, warnings: list[str]
) -> list[MigInstance]:
    errors = _errors(nvml)
    seen: dict[int, tuple[str | None, int | None, int | None, int]] = {}  # GI id → profile, start, sms, MiB
    split: dict[int, bool] = {}  # GI id → several compute instances (MIG devices) share it
    engines: dict[int, MigEngines] = {}  # GI id → the engine counts its MIG devices share
    for slot in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except errors:
            continue  # an empty slot
        gi_id = int(nvml.nvmlDeviceGetGpuInstanceId(mig))
        memory = int(nvml.nvmlDeviceGetMemoryInfo(mig).total) >> 20
        try:
            attributes = nvml.nvmlDeviceGetAttributes(mig)
            sms: int | None = int(attributes.multiprocessorCount)
            engines[gi_id] = _engines(attributes)
        except errors:
            sms = None
        split[gi_id] = gi_id in seen
        if gi_id in seen:
            profile, start, old_sms, mem = seen[gi_id]
            seen[gi_id] = (profile, start, (old_sms or 0) + (sms or 0), mem)
            continue
        profile = start = None
        try:
            info = nvml.nvmlGpuInstanceGetInfo(nvml.nvmlDeviceGetGpuInstanceById(handle, gi_id))
            found = model.mig_profile_by_id(int(info.profileId))
            if found is None:
                warnings.append(
                    f"GPU {index}: GPU instance {gi_id} has profile id {info.profileId}, "
                    f"unknown for {model.name}; identifying it by SMs, memory and engines"
                )
            else:
                profile, start = found.name, int(info.placement.start)
        except errors as exc:
            warnings.append(
                f"GPU {index}: NVML gives no GPU-instance info ({exc}); identifying profiles by SMs, memory and engines"
            )
        seen[gi_id] = (profile, start, sms, memory)
    profiles: list[str] = []
    starts: list[int | None] = []
    for gi_id, (profile, start, sms, memory) in sorted(seen.items()):
        if profile is None:
            # NVML gave no GI profile id: identify it by what its MIG devices report, never a nearest guess
            facts = MigDeviceFacts(memory, sms, split[gi_id], engines.get(gi_id, MigEngines()))
            identified = identify_mig_profile(model, facts, total_mib)
            if identified.profile is None:
                raise input_error(
                    f"GPU {index}: GPU instance {gi_id} cannot be identified: {identified.problem}", "<nvml>"
                )
            if identified.warning is not None:
                warnings.append(f"GPU {index}: GPU instance {gi_id}: {identified.warning}")
            profile = identified.profile
        profiles.append(profile)
        starts.append(start)
    if None in starts:
        warnings.append(f"GPU {index}: some MIG placements unknown to NVML; chosen by the engine")
    instances = place_instances(model, profiles, starts)
    if instances is None:
        raise input_error(
            f"GPU {index}: MIG instances {', '.join(profiles)} at starts {starts} are not a "
            f"valid {model.name} layout",
            "<nvml>",
        )
    return instances


def _nvlink(nvml: Any, handles: list[Any]) -> NvlinkKind | None:
    """What NVML's link ends say: `nvswitch` when links reach a device that is not one of our GPUs (the
    switch), `pairs` when each linked GPU reaches exactly one other, bridged as (0,1), (2,3), …, `mesh`
    when every GPU links directly to every other (HGX A100 4-GPU, no switch), `unknown` for any other direct
    wiring (a partial mesh is neither, and guessing a switch would turn on the NVSwitch-only rules), else
    none."""
    errors = _errors(nvml)
    bus_ids = []
    for handle in handles:
        bus_ids.append(_str(nvml.nvmlDeviceGetPciInfo(handle).busId).lower())
    peers: dict[int, set[str]] = {}
    switch = False
    supported = False
    for i, handle in enumerate(handles):
        for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
            try:
                if int(nvml.nvmlDeviceGetNvLinkState(handle, link)) != 1:
                    continue
                remote = _str(nvml.nvmlDeviceGetNvLinkRemotePciInfo(handle, link).busId).lower()
            except errors:
                break
            supported = True
            if remote in bus_ids:
                peers.setdefault(i, set()).add(remote)
            else:
                switch = True
    if switch:
        return "nvswitch"
    if peers:
        if all(len(p) == 1 for p in peers.values()):
            # the model's pairs are (0,1), (2,3), … (as nvidia_topo reads them): a board bridged otherwise is not
            aligned = all(i ^ 1 < len(bus_ids) and p == {bus_ids[i ^ 1]} for i, p in peers.items())
            return "pairs" if aligned else "unknown"
        everyone = set(bus_ids)
        if len(peers) == len(handles) and all(p == everyone - {bus_ids[i]} for i, p in peers.items()):
            return "mesh"
        return "unknown"
    return "none" if supported or handles else None


def _module_ids(nvml: Any, handles: list[Any]) -> list[int | None]:
    """Each GPU's board slot (`nvmlDeviceGetModuleId`, as nvidia-smi's "Module ID"), where NVML has it; PCIe
    cards and older drivers have none, and a value out of range is left out."""
    get = getattr(nvml, "nvmlDeviceGetModuleId", None)
    if get is None:
        return [None] * len(handles)
    errors = _errors(nvml)
    ids: list[int | None] = []
    for handle in handles:
        try:
            value = int(get(handle))
        except errors:
            value = -1
        ids.append(value if 1 <= value <= MAX_GPU_INDEX + 1 else None)
    return ids


def _rdma(sys_root: Path, network: str | None, warnings: list[str]) -> Rdma | None:
    base = sys_root / "class" / "infiniband"
    try:
        devices = sorted(p for p in base.iterdir())
    except OSError:
        return None
    if not devices:
        return None
    rates: list[float] = []
    for device in devices:
        for rate_file in sorted((device / "ports").glob("*/rate")):
            try:
                match = _RATE.match(rate_file.read_text())
            except OSError:
                continue
            if match:
                rates.append(float(match.group(1)))
    gbps = int(max(rates)) if rates else 0
    if gbps < 1:
        warnings.append(f"{len(devices)} RDMA devices but no port rate could be read; recording 1 Gb/s")
        gbps = 1
    if network is None:
        warnings.append("the RDMA network's name is not on the host; recorded as 'local' (set rdma.network)")
    return Rdma(nics=len(devices), gbps=gbps, network=network or "local")


def import_local(
    node_name: str | None = None,
    *,
    nvml: Any = None,
    platform: Platform = "baremetal",
    orchestrator: Orchestrator = "none",
    sys_root: str | Path = "/sys",
    rdma_network: str | None = None,
) -> ImportResult:
    """This host as a Node (named `node_name`, default the host name)."""
    module = nvml if nvml is not None else _load_nvml()
    errors = _errors(module)
    try:
        module.nvmlInit()
    except errors as exc:
        raise NoDriverError(str(exc) or type(exc).__name__) from None
    except OSError as exc:  # the shared library exists but cannot be loaded
        raise NoDriverError(str(exc)) from None
    warnings: list[str] = []
    memory: dict[int, int] = {}
    try:
        count = int(module.nvmlDeviceGetCount())
        handles = [module.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        gpus: list[Gpu] = []
        for index, handle in enumerate(handles):
            model, product, pci_hex = _model(module, handle)
            total = int(module.nvmlDeviceGetMemoryInfo(handle).total) >> 20
            memory[index] = total
            if model is None:
                # a product the catalog does not know: whole, with what NVML reports (as nvidia_smi does)
                warnings.append(
                    f"GPU {index}: {product!r} (PCI device id {pci_hex}) is not in the catalog: imported whole "
                    f"with {total} MiB, marked not_in_catalog; its MIG and vGPU support cannot be checked, so "
                    "MIG and vGPU changes on it are refused"
                )
                gpus.append(Gpu(index=index, model=product or f"PCI device {pci_hex}", mode="full",
                                not_in_catalog=NotInCatalog(memory_mib=total or None,
                                                            pci_device_id=pci_hex if pci_hex != "0x0000" else None)))
                continue
            try:
                current, pending = module.nvmlDeviceGetMigMode(handle)
            except errors:
                current = pending = 0
            if int(current) != int(pending):
                warnings.append(
                    f"GPU {index}: MIG mode change pending (takes effect after a GPU reset); "
                    "importing the current mode"
                )
            if int(current) == 1 and model.mig_capable:
                gpus.append(
                    Gpu(
                        index=index,
                        model=model.name,
                        mode="mig",
                        mig=_mig_layout(module, handle, model, total, index, warnings),
                    )
                )
            else:
                gpus.append(Gpu(index=index, model=model.name, mode="full"))
        nvlink = _nvlink(module, handles)
        gpus = with_module_ids(gpus, _module_ids(module, handles), "NVML's", warnings)
    except errors as exc:
        raise input_error(f"NVML failed while reading the GPUs: {exc}", "<nvml>") from None
    finally:
        with contextlib.suppress(*errors):
            module.nvmlShutdown()
    cpus = psutil.cpu_count(logical=False) or psutil.cpu_count() or os.cpu_count() or 1
    memory_gib = max(1, round(psutil.virtual_memory().total / (1 << 30)))
    rdma = _rdma(Path(sys_root), rdma_network, warnings)
    name = node_name or socket.gethostname().split(".")[0]
    check_given_node_name(name, orchestrator, bool(gpus), "--node" if node_name else
                          f"the host name {name!r} (give the node's name with --node)")
    node = Node(
        name=name,
        platform=platform,
        orchestrator=orchestrator,
        cpus=cpus,
        memory_gib=memory_gib,
        rdma=rdma,
        nvlink=nvlink,
        gpus=gpus,
    )
    return ImportResult(node, warnings, memory)
