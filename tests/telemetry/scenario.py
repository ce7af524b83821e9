"""DCGM exporter series for a gpuadmin state: every GPU's utilisation, frame buffer, temperature and power over a
window, each MIG instance's engine-active ratio and frame buffer (labelled with the pod of the job holding it),
and, where asked, one idle holder and one GPU with XID 79 and double-bit ECC errors. Deterministic: a value is a
function of the device and the time. `make demo-metrics`, the tests and the bench read the same series.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Inventory
from tests.telemetry.promserver import Device

H100_FB_MIB = 81559  # DCGM_FI_DEV_FB_FREE + USED of an idle H100 80GB HBM3, as nvidia-smi reports it
GR_ENGINE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


@dataclass(frozen=True)
class Faults:
    idle_job: str | None = None  # a holder whose GPUs stay under 2 % busy
    xid_gpu: tuple[str, int] | None = None  # a GPU that reports XID 79 and double-bit ECC errors
    stale_gpu: tuple[str, int] | None = None  # a GPU whose exporter stopped `stale_for` seconds before the end
    stale_for: float = 1200.0


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _wave(seed: int, low: float, high: float) -> Callable[[float], float]:
    """A slow, deterministic wave between `low` and `high` (a busy job's utilisation over an hour)."""
    phase = (seed % 1000) / 1000 * 2 * math.pi
    return lambda t: round(low + (high - low) * (0.5 + 0.5 * math.sin(t / 600 + phase)), 1)


def _until(end: float | None, value: Callable[[float], float | str | None]) -> Callable[[float], float | str | None]:
    if end is None:
        return value
    return lambda t: value(t) if t <= end else None


def gpu_uuid(node: str, index: int) -> str:
    h = f"{_seed(node, index):08x}{_seed(index, node):08x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[4:8]}-{h[:12]}"


def devices(state: ClusterState, faults: Faults = Faults(), *, end: float) -> list[Device]:
    view = View(state)
    held: dict[tuple[str, int, int | None], str] = {}
    for job in view.jobs():
        for slot in job.placement:
            held[(slot.node, slot.gpu, slot.mig_start)] = job.name
    idle = {(s.node, s.gpu) for j in view.jobs() if j.name == faults.idle_job for s in j.placement}
    out: list[Device] = []
    for node in view.nodes():
        for gpu in node.gpus:
            stale_end = end - faults.stale_for if faults.stale_gpu == (node.name, gpu.index) else None
            out.append(_gpu(node.name, gpu.index, held, idle, faults, stale_end))
            for i, inst in enumerate(gpu.mig or ()):
                if inst.start is None:
                    continue
                job = held.get((node.name, gpu.index, inst.start))
                seed = _seed(node.name, gpu.index, inst.start)
                util = _wave(seed, 30, 95) if job else (lambda _t: 0.0)
                used = 4000 + seed % 6000 if job else 0
                out.append(Device(
                    node.name, gpu.index, gpu_uuid(node.name, gpu.index), gi_profile=inst.profile, gi_id=str(i + 1),
                    pod=job or "", namespace="research" if job else "", container="main" if job else "",
                    values={GR_ENGINE: _until(stale_end, lambda t, u=util: round(u(t) / 100, 3)),  # type: ignore[misc]
                            "DCGM_FI_DEV_FB_USED": _until(stale_end, lambda _t, u=used: u),  # type: ignore[misc]
                            "DCGM_FI_DEV_FB_FREE": _until(stale_end, lambda _t, u=used: 10240 - u)}))  # type: ignore[misc]
    return out


def _gpu(node: str, index: int, held: dict[tuple[str, int, int | None], str], idle: set[tuple[str, int]],
         faults: Faults, stale_end: float | None) -> Device:
    job = held.get((node, index, None))
    seed = _seed(node, index)
    if (node, index) in idle:
        # 0-1.9 %: holding, not working; floored, as rounding would reach 2.0 at some phases of the clock
        util: Callable[[float], float] = lambda t: math.floor((t / 60) % 2 * 10) / 10  # noqa: E731
        used = 1200.0
    elif job is not None:
        util, used = _wave(seed, 55, 99), 40000.0 + seed % 30000
    else:
        util, used = (lambda _t: 0.0), 0.0
    xid = faults.xid_gpu == (node, index)
    values: dict[str, Callable[[float], float | str | None]] = {
        "DCGM_FI_DEV_GPU_UTIL": util,
        "DCGM_FI_DEV_FB_USED": lambda _t: used,
        "DCGM_FI_DEV_FB_FREE": lambda _t: H100_FB_MIB - used,
        "DCGM_FI_DEV_GPU_TEMP": lambda t: round(32 + util(t) * 0.45),
        "DCGM_FI_DEV_POWER_USAGE": lambda t: round(70 + util(t) * 6.2, 3),
        "DCGM_FI_DEV_XID_ERRORS": lambda _t: 79 if xid else 0,
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": lambda _t: 3 if xid else 0,
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": lambda _t: 5 if xid else 0,
        "DCGM_FI_DEV_RETIRED_DBE": lambda _t: 0,
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": lambda _t: 2 if xid else 0,
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": lambda _t: 0,
    }
    return Device(node, index, gpu_uuid(node, index), pod=job or "", namespace="research" if job else "",
                  container="main" if job else "",
                  values={k: _until(stale_end, v) for k, v in values.items()})


def state_of(inventory: Inventory) -> ClusterState:
    return ClusterState.from_inventory(inventory)
