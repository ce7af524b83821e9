"""What live telemetry says about one GPU or one MIG instance: plain readings, each a value or why there is none.

These are the types every layer above reads (the Prometheus source in `gpuadmin.telemetry` makes them, the
render layer shows them, health and idle findings take them as input), so they live with the model. A reading
that is not there is `value=None` with its `reason` ("no series ...", "stale: last sample 12m ago", "NaN"),
never a zero: an idle GPU (0 %) and a GPU nobody measures are different answers.

`Reading` and `DeviceTelemetry` are named tuples (immutable, built without a per-field `__setattr__`): a refresh
of 8,192 GPUs makes ~100,000 readings and ~10,000 devices (bench/bench_telemetry.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple


class Reading(NamedTuple):
    """One figure: `value`, or None and `reason` (why it is not known)."""

    value: float | None
    reason: str | None = None

    @staticmethod
    def missing(reason: str) -> Reading:
        return Reading(None, reason)


class GpuProcess(NamedTuple):
    """A process using a GPU or MIG instance, as NVML lists it (the NVML source only; DCGM's series name pods):
    its pid on this host, its name (the process's own: hostile, shown escaped) and the frame buffer it uses
    (None where the driver does not say, e.g. without the permission to see another user's)."""

    pid: int
    name: str
    used_mib: float | None


# the figures of a device, by field name; `DeviceTelemetry.reading(name)` reads them
READING_FIELDS = ("util", "fb_used_mib", "fb_free_mib", "temp_c", "power_w", "xid", "ecc_dbe_volatile",
                  "ecc_dbe_aggregate", "retired_pages_dbe", "remapped_rows_uncorrectable", "row_remap_failure")


class DeviceTelemetry(NamedTuple):
    """A GPU (`mig_start` None) or one of its MIG instances, as the DCGM exporter's series (or NVML, on the GPU's
    own host: `gpuadmin.telemetry.nvml`) describe it.

    `util` is percent busy: DCGM_FI_DEV_GPU_UTIL for a GPU, DCGM_FI_PROF_GR_ENGINE_ACTIVE x 100 for a MIG
    instance (NVML reports no utilisation for one). Temperature, power, XID and ECC are the GPU's: on a MIG
    instance they are None with the reason. `pods` are "namespace/pod" of the exporter's pod labels (the
    pods the kubelet says use the device). `uuid`, `gi_id` and `profile` are the exporter's labels as read."""

    node: str
    gpu: int
    mig_start: int | None = None
    profile: str | None = None
    uuid: str | None = None
    gi_id: str | None = None
    pods: tuple[str, ...] = ()
    util: Reading = Reading(None, "not read")
    fb_used_mib: Reading = Reading(None, "not read")
    fb_free_mib: Reading = Reading(None, "not read")
    temp_c: Reading = Reading(None, "not read")
    power_w: Reading = Reading(None, "not read")
    xid: Reading = Reading(None, "not read")  # the last XID error the GPU reported (0: none since the driver loaded)
    ecc_dbe_volatile: Reading = Reading(None, "not read")  # double-bit ECC errors since the last driver load
    ecc_dbe_aggregate: Reading = Reading(None, "not read")  # ... over the GPU's life
    retired_pages_dbe: Reading = Reading(None, "not read")  # pages retired for double-bit errors (before Ampere)
    remapped_rows_uncorrectable: Reading = Reading(None, "not read")  # rows remapped for them (Ampere and later)
    row_remap_failure: Reading = Reading(None, "not read")  # 1: a remap failed (the GPU needs service)
    processes: tuple[GpuProcess, ...] | None = None  # NVML's list; None: not known (DCGM's source, no permission)

    @property
    def name(self) -> str:
        """`node/0`, or `node/0/mig@4` for a MIG instance."""
        return f"{self.node}/{self.gpu}" + (f"/mig@{self.mig_start}" if self.mig_start is not None else "")

    def reading(self, name: str) -> Reading:
        if name not in READING_FIELDS:
            raise KeyError(name)
        value: Reading = getattr(self, name)
        return value

    @property
    def errors(self) -> float:
        """How much is wrong, for ordering (`top`): double-bit ECC errors, retired pages, remapped rows and a
        remap failure count; a non-zero last XID counts one. Unknown readings count nothing."""
        total = sum(r.value for r in (self.ecc_dbe_volatile, self.retired_pages_dbe, self.remapped_rows_uncorrectable,
                                      self.row_remap_failure) if r.value is not None)
        return total + (1 if self.xid.value else 0)


SourceState = Literal["ok", "slow", "down", "unset"]


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """How the telemetry source answered: `ok`; `slow` (it answered, past the slow threshold: polling backs
    off); `down` (no answer, an error or a timeout, `since` the first failure: polling backs off); `unset` (no
    Prometheus is configured). `since` and `retry_at` are Unix times; `message` says what happened."""

    state: SourceState
    url: str | None = None
    since: float | None = None
    retry_at: float | None = None
    message: str = ""
    seconds: float | None = None  # how long the last refresh's queries took
    queries: int = 0  # queries the last refresh sent (one per metric, never one per GPU)
    notes: tuple[str, ...] = field(default=())  # what the join could not place (counts; labels shown safely)
    source: Literal["prometheus", "nvml"] = "prometheus"  # which source answered (`metrics.source`)
