"""The DCGM exporter's series gpuadmin reads: which metric fills which reading, its unit and plausible range.

Names and meanings are NVIDIA dcgm-exporter's (`etc/default-counters.csv`; DCGM_FI_PROF_GR_ENGINE_ACTIVE is in
`etc/dcp-metrics-included.csv`); the labels are those its `internal/pkg/rendermetrics` template writes: `gpu`
(the index), `UUID`, `pci_bus_id`, `device`, `modelName`, `GPU_I_PROFILE` and `GPU_I_ID` on a MIG instance,
`Hostname`, and the pod's `container`, `namespace`, `pod` where the kubelet's pod-resources say one uses it.
A value outside its range is no reading: DCGM writes a "blank" sentinel (e.g. 9223372036854775794, as in the
exporter's own README) where it has none, which must never show as a temperature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# DCGM's blank values (dcgm_structs.h: DCGM_INT32_BLANK, DCGM_FP64_BLANK, DCGM_INT64_BLANK and the ones just
# above each): "no data", written as a number
_INT32_BLANK = 0x7FFFFFF0
_FP64_BLANK = 140737488355328.0
_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)
_LARGE_COUNT = 1e9  # a counter past this is no real count of errors, retired pages or rows (and every
# DCGM blank is above it: a value in range needs no blank check)

Level = Literal["gpu", "instance"]


@dataclass(frozen=True, slots=True)
class Metric:
    """`field`: the `DeviceTelemetry` reading it fills; `levels`: whether a GPU's series (no `GPU_I_ID`) and
    a MIG instance's series fill it; `whole_gpu`: a figure of the whole board (temperature, power, XID, ECC),
    so a MIG instance's series of it fills its GPU's reading; `scale` turns the exporter's unit into the
    reading's; `default`: on in dcgm-exporter's default counters."""

    field: str
    name: str
    low: float
    high: float
    levels: tuple[Level, ...] = ("gpu",)
    scale: float = 1.0
    default: bool = True
    whole_gpu: bool = False

    def check(self, value: float) -> tuple[float | None, str | None]:
        """The reading of an exporter value: scaled, or None with why (DCGM's blank, out of range)."""
        if value in (_INT32_BLANK, _FP64_BLANK) or _INT64_BLANK <= value <= 2.0**63:
            return None, f"DCGM's blank value ({value:.17g}): the exporter has no data"
        if not self.low <= value <= self.high:
            return None, f"{value:.6g} is out of range for {self.name} ({self.low:g} to {self.high:g})"
        return value * self.scale, None


# One query per metric per refresh, for the whole cluster. The order is the readings' (util twice: a GPU's
# from GPU_UTIL, a MIG instance's from the profiling engine-active ratio).
METRICS: tuple[Metric, ...] = (
    Metric("util", "DCGM_FI_DEV_GPU_UTIL", 0, 100),
    Metric("util", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, 1, levels=("instance",), scale=100, default=False),
    Metric("fb_used_mib", "DCGM_FI_DEV_FB_USED", 0, 4 * 1024 * 1024, levels=("gpu", "instance")),
    Metric("fb_free_mib", "DCGM_FI_DEV_FB_FREE", 0, 4 * 1024 * 1024, levels=("gpu", "instance")),
    Metric("temp_c", "DCGM_FI_DEV_GPU_TEMP", -60, 200, whole_gpu=True),
    Metric("power_w", "DCGM_FI_DEV_POWER_USAGE", 0, 10_000, whole_gpu=True),
    Metric("xid", "DCGM_FI_DEV_XID_ERRORS", 0, 100_000, whole_gpu=True),
    Metric("ecc_dbe_volatile", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0, _LARGE_COUNT, default=False, whole_gpu=True),
    Metric("ecc_dbe_aggregate", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 0, _LARGE_COUNT, default=False, whole_gpu=True),
    Metric("retired_pages_dbe", "DCGM_FI_DEV_RETIRED_DBE", 0, _LARGE_COUNT, default=False, whole_gpu=True),
    Metric("remapped_rows_uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 0, _LARGE_COUNT, whole_gpu=True),
    Metric("row_remap_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", 0, 1, whole_gpu=True),
)
# The series that says "the exporter reports this device": every GPU and MIG instance has frame buffer
ANCHOR = "DCGM_FI_DEV_FB_USED"

DEFAULT_NODE_LABEL = "Hostname"
# The labels each query keeps (`max by (...)`): the join's, and nothing else, so an answer for 8,192 GPUs stays
# small and a series scraped twice (two Prometheus jobs, two `instance`s) counts once
JOIN_LABELS = ("gpu", "UUID", "GPU_I_ID", "GPU_I_PROFILE", "namespace", "pod")


def metric_query(metric: Metric, node_label: str = DEFAULT_NODE_LABEL) -> str:
    return f"max by ({', '.join((node_label, *JOIN_LABELS))}) ({metric.name})"


def last_seen_query(node_label: str = DEFAULT_NODE_LABEL, window: str = "1h") -> str:
    """When each device's anchor series last had a sample, over `window` (a subquery at one-minute steps):
    asked only when a device gpuadmin knows has no fresh sample, to tell "stale since" from "never"."""
    return (f"max by ({node_label}, gpu, GPU_I_ID) "
            f"(max_over_time(timestamp({ANCHOR})[{window}:1m]))")
