"""The NVML source: this host's GPUs read through NVIDIA's NVML (`nvidia-ml-py`, the `nvml` extra), for gpuadmin
run on a GPU node (`gpuadmin config set metrics.source nvml`): the readings the DCGM exporter's series give
(utilisation, frame buffer used/free, temperature, power, XID, double-bit ECC volatile/aggregate, pages retired
for them, rows remapped for them and a remap failure), and the processes on each GPU and MIG instance.

Joined to the state's GPUs of one node, the one this host is (`metrics.local-node`, default the host name as
`gpuadmin import local` names it), by index: NVML enumerates a host's GPUs from 0 as gpuadmin's indexes do, and
the state records no UUID to join by (each reading keeps the UUID NVML gives). A MIG instance is placed by its
GPU instance's placement start, which NVML gives (`nvmlGpuInstanceGetInfo`): exactly, never by profile or pod.

XID: NVML keeps no history of XIDs; it raises an event for each (`nvmlEventTypeXidCriticalError`). The source
registers for them on its first refresh and drains them (without waiting) on each: the XID reading is the last
one seen since then, or None saying since when it has watched — never 0, which would claim none happened before.

Never raises for NVML: without the package, without a driver (the library does not load, or `nvmlInit` fails),
the status is `down` and `unavailable` says why in one line ("no NVIDIA driver found (NVML: ...)"); an NVML
error on one reading is that reading's reason; one on a whole GPU is every reading's. `nvml` is a parameter so the
reading logic can be tested with a stand-in module (tests/telemetry/test_nvml.py); by default the real `pynvml`.
Read-only: it changes no setting of any GPU (no MIG mode, clocks, persistence or ECC mode).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import psutil

from gpuadmin.model.telemetry import READING_FIELDS, DeviceTelemetry, GpuProcess, Reading, SourceStatus
from gpuadmin.telemetry.snapshot import GpuKey, InstanceKey, Targets, TelemetrySnapshot

MIB = 1024 * 1024
FIRST_BACKOFF = 5.0
MAX_BACKOFF = 300.0
MAX_PROCESSES = 64  # per device, as listed (a GPU shared by more is a GPU whose list is cut, and says so)
_NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED
_NOT_FOUND = 6  # NVML_ERROR_NOT_FOUND
_TIMEOUT = 10  # NVML_ERROR_TIMEOUT: an event set with nothing pending
_WHOLE_GPU = ("temp_c", "power_w", "xid", "ecc_dbe_volatile", "ecc_dbe_aggregate", "retired_pages_dbe",
              "remapped_rows_uncorrectable", "row_remap_failure")
_SEE_THE_GPU = Reading(None, "a figure of the whole GPU: see the GPU")
_MIG_UTIL = Reading(None, "NVML reports no utilisation for a MIG instance (DCGM's profiling counters do)")


class NvmlMissing(Exception):
    """NVML cannot be used on this host: no package, no library, no driver. One line."""


def load_nvml() -> Any:
    """The real bindings, or NvmlMissing saying how to get them."""
    try:
        import pynvml
    except ImportError as exc:
        raise NvmlMissing(f"the nvidia-ml-py package is not installed ({exc}); pip install 'gpuadmin[nvml]'") from None
    return pynvml


def _error_types(nvml: Any) -> tuple[type[BaseException], ...]:
    error = getattr(nvml, "NVMLError", None)
    return (error,) if isinstance(error, type) and issubclass(error, BaseException) else (Exception,)


def _why(exc: BaseException) -> str:
    """An NVML error as one line ("Not Supported"); its class name where it has no text."""
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _number(value: Any, low: float, high: float, scale: float = 1.0) -> Reading:
    """A value NVML returned, checked as hostile: a number in [low, high] (after `scale`), else why not."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Reading(None, f"NVML returned {type(value).__name__}, not a number")
    scaled = value * scale
    if not low <= scaled <= high:  # also NaN
        return Reading(None, f"NVML returned {scaled:.6g}, out of range ({low:g} to {high:g})")
    return Reading(float(scaled))


@dataclass
class _Device:
    """One GPU's or MIG instance's handle and what has been read of it."""

    handle: Any
    readings: dict[str, Reading] = field(default_factory=dict)
    processes: tuple[GpuProcess, ...] | None = None
    uuid: str | None = None


@dataclass
class NvmlSource:
    """Refreshes like `PrometheusSource` (the same snapshot, status and back-off), from this host's NVML."""

    node: str  # the state's node this host is
    nvml: Any = None  # the bindings module; None: the real pynvml, loaded on the first refresh
    clock: Callable[[], float] = time.time
    process_name: Callable[[int], str | None] | None = None  # pid -> name; None: psutil, else NVML's
    first_backoff: float = FIRST_BACKOFF
    max_backoff: float = MAX_BACKOFF
    status: SourceStatus = field(init=False)
    last: TelemetrySnapshot | None = field(init=False, default=None)
    unavailable: str | None = field(init=False, default=None)  # no package/library/driver: the one line why
    _module: Any = field(init=False, default=None)
    _events: dict[int, Any] = field(init=False, default_factory=dict)  # GPU index -> its XID event set
    _no_events: dict[int, str] = field(init=False, default_factory=dict)  # GPU index -> why it has none
    _xids: dict[int, int] = field(init=False, default_factory=dict)  # GPU index -> the last XID seen
    _watching_since: float | None = field(init=False, default=None)
    _failures: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.status = SourceStatus("ok", source="nvml")

    # the refresh ----------------------------------------------------------------------------------
    def refresh(self, targets: Targets) -> TelemetrySnapshot:
        """A snapshot now, or (while backing off after a failure) the last one with the status; never raises."""
        now = self.clock()
        if self.status.retry_at is not None and now < self.status.retry_at:
            return self._held(now)
        started = time.perf_counter()
        try:
            nvml = self._init()
            gpus, instances, notes = self._read(nvml, targets)
        except NvmlMissing as missing:
            self.unavailable = str(missing)
            return self._failed(now, str(missing))
        except _error_types(self._module) as exc:  # the device count or a handle failed: nothing is known
            return self._failed(now, f"NVML: {_why(exc)}")
        self.unavailable = None
        self._failures = 0
        self.status = SourceStatus("ok", since=now, seconds=time.perf_counter() - started, notes=notes,
                                   source="nvml")
        self.last = TelemetrySnapshot.judged(self.status, now, gpus, instances, ())
        return self.last

    def _init(self) -> Any:
        if self._module is not None:
            return self._module
        nvml = self.nvml if self.nvml is not None else load_nvml()
        try:
            nvml.nvmlInit()
        except _error_types(nvml) as exc:
            raise NvmlMissing(f"no NVIDIA driver found (NVML: {_why(exc)})") from None
        except OSError as exc:  # the shared library is there but does not load
            raise NvmlMissing(f"no NVIDIA driver found (NVML: {_why(exc)})") from None
        self._module = nvml
        self._watching_since = self.clock()
        return nvml

    def close(self) -> None:
        """Free the event sets and shut NVML down (a source replaced by a new setting)."""
        nvml = self._module
        if nvml is None:
            return
        errors = _error_types(nvml)
        for events in self._events.values():
            with contextlib.suppress(*errors):  # freed with the process anyway
                nvml.nvmlEventSetFree(events)
        self._events.clear()
        with contextlib.suppress(*errors):
            nvml.nvmlShutdown()
        self._module = None

    def _read(self, nvml: Any, targets: Targets) -> tuple[dict[GpuKey, DeviceTelemetry],
                                                             dict[InstanceKey, DeviceTelemetry],
                                                             tuple[str, ...]]:
        count = int(nvml.nvmlDeviceGetCount())
        notes: list[str] = []
        found: dict[int, _Device] = {}
        migs: dict[tuple[int, int], _Device] = {}
        for index in range(count):
            device = _Device(nvml.nvmlDeviceGetHandleByIndex(index))
            found[index] = device
            if (self.node, str(index)) not in targets.gpus:
                notes.append(f"NVML GPU {index}: the state has no GPU {self.node}/{index}")
                continue
            self._gpu(nvml, index, device)
            migs.update(self._migs(nvml, index, device, targets, notes))
        gpus: dict[GpuKey, DeviceTelemetry] = {}
        instances: dict[InstanceKey, DeviceTelemetry] = {}
        for (node, text_index), key in targets.gpus.items():
            if node != self.node:
                continue
            index = int(text_index)
            gpus[key] = _telemetry(node, index, None, found.get(index), count)
            for target in targets.instances.get(key, ()):
                instances[(node, index, target.start)] = _telemetry(
                    node, index, target.start, migs.get((index, target.start)), count, target.profile)
        if not gpus:
            notes.insert(0, f"the state has no node {self.node!r} with GPUs: set metrics.local-node to the state's "
                            "name for this host")
        return gpus, instances, tuple(notes)

    # one GPU --------------------------------------------------------------------------------------
    def _gpu(self, nvml: Any, index: int, device: _Device) -> None:
        h = device.handle
        device.uuid = _text(_call(nvml, lambda: nvml.nvmlDeviceGetUUID(h)))
        r = device.readings
        r["util"] = _reading(nvml, lambda: _number(nvml.nvmlDeviceGetUtilizationRates(h).gpu, 0, 100))
        _memory(nvml, h, r)
        r["temp_c"] = _reading(nvml, lambda: _number(
            nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU), -60, 200))
        r["power_w"] = _reading(nvml, lambda: _number(nvml.nvmlDeviceGetPowerUsage(h), 0, 10_000, 1 / 1000))
        r["xid"] = self._xid(nvml, index, h)
        uncorrected = nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
        r["ecc_dbe_volatile"] = _reading(nvml, lambda: _number(
            nvml.nvmlDeviceGetTotalEccErrors(h, uncorrected, nvml.NVML_VOLATILE_ECC), 0, 1e9))
        r["ecc_dbe_aggregate"] = _reading(nvml, lambda: _number(
            nvml.nvmlDeviceGetTotalEccErrors(h, uncorrected, nvml.NVML_AGGREGATE_ECC), 0, 1e9))
        r["retired_pages_dbe"] = _reading(nvml, lambda: _number(len(nvml.nvmlDeviceGetRetiredPages(
            h, nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)), 0, 1e9))
        _remapped(nvml, h, r)
        device.processes = self._processes(nvml, h)

    def _xid(self, nvml: Any, index: int, handle: Any) -> Reading:
        """The last XID NVML raised an event for since the source began watching (events drained, no wait)."""
        errors = _error_types(nvml)
        if index not in self._events and index not in self._no_events:
            try:
                events = nvml.nvmlEventSetCreate()
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, events)
                self._events[index] = events
            except errors as exc:
                self._no_events[index] = f"NVML gives no XID events here: {_why(exc)}"
        if index in self._no_events:
            return Reading(None, self._no_events[index])
        for _ in range(1024):  # a bound: a GPU raising events faster than this is read again next refresh
            try:
                event = nvml.nvmlEventSetWait_v2(self._events[index], 0)
            except errors as exc:
                if _code(exc) != _TIMEOUT:
                    return Reading(None, f"NVML: {_why(exc)}")
                break
            data = getattr(event, "eventData", None)
            if isinstance(data, int) and not isinstance(data, bool) and 0 <= data <= 100_000:
                self._xids[index] = data
        last = self._xids.get(index)
        if last is not None:
            return Reading(float(last))
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._watching_since or self.clock()))
        return Reading(None, f"no XID since gpuadmin began watching at {since} (NVML keeps no XID history; "
                             "the kernel log does)")

    def _processes(self, nvml: Any, handle: Any) -> tuple[GpuProcess, ...] | None:
        """The processes NVML lists on a device; None where neither list could be read (unknown, not "none")."""
        errors = _error_types(nvml)
        listed: dict[int, float | None] = {}
        answered = False
        for call in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            try:
                procs = getattr(nvml, call)(handle)
            except errors:
                continue  # not supported (a MIG instance has no graphics), or no permission: the other list
            answered = True
            for p in procs:
                pid, used = getattr(p, "pid", None), getattr(p, "usedGpuMemory", None)
                if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
                    continue
                mib = _number(used, 0, 1e15, 1 / MIB).value if used is not None else None
                listed[pid] = max(listed.get(pid) or 0.0, mib) if mib is not None else listed.get(pid)
        if not answered:
            return None
        return tuple(GpuProcess(pid, self._name(nvml, pid), used)
                     for pid, used in sorted(listed.items())[:MAX_PROCESSES])

    def _name(self, nvml: Any, pid: int) -> str:
        if self.process_name is not None:
            name = self.process_name(pid)
        else:
            try:
                name = psutil.Process(pid).name()
            except (psutil.Error, OSError):  # another PID namespace (a container's), or gone since
                name = _text(_call(nvml, lambda: nvml.nvmlSystemGetProcessName(pid)))
        return (name or "?")[:64]

    # MIG instances --------------------------------------------------------------------------------
    def _migs(self, nvml: Any, index: int, gpu: _Device, targets: Targets,
              notes: list[str]) -> dict[tuple[int, int], _Device]:
        """The GPU's MIG devices by placement start, with memory and processes (none where MIG is off)."""
        errors = _error_types(nvml)
        h = gpu.handle
        try:
            current, _pending = nvml.nvmlDeviceGetMigMode(h)
        except errors:
            current = 0  # not MIG-capable
        held = (self.node, index) in targets.instances
        if int(current) != 1:
            if held:
                notes.append(f"GPU {index}: the state has it in MIG mode; NVML says MIG is off")
            return {}
        out: dict[tuple[int, int], _Device] = {}
        for slot in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(h))):
            try:
                mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(h, slot)
            except errors as exc:
                if _code(exc) != _NOT_FOUND:
                    notes.append(f"GPU {index}: MIG device {slot}: NVML: {_why(exc)}")
                continue
            start = self._start(nvml, h, mig, index, notes)
            if start is None:
                continue
            device = _Device(mig, uuid=_text(_call(nvml, partial(nvml.nvmlDeviceGetUUID, mig))))
            device.readings["util"] = _MIG_UTIL
            _memory(nvml, mig, device.readings)
            device.processes = self._processes(nvml, mig)
            if not any(t.start == start for t in targets.instances.get((self.node, index), ())):
                notes.append(f"GPU {index}: NVML's MIG instance at start {start} is not in the state")
            out[(index, start)] = device
        return out

    @staticmethod
    def _start(nvml: Any, handle: Any, mig: Any, index: int, notes: list[str]) -> int | None:
        errors = _error_types(nvml)
        try:
            gi_id = int(nvml.nvmlDeviceGetGpuInstanceId(mig))
            info = nvml.nvmlGpuInstanceGetInfo(nvml.nvmlDeviceGetGpuInstanceById(handle, gi_id))
            start = info.placement.start
        except errors as exc:
            notes.append(f"GPU {index}: a MIG instance not placed: NVML gives no placement ({_why(exc)})")
            return None
        if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start < 64:
            notes.append(f"GPU {index}: a MIG instance not placed: NVML gave start {start!r}")
            return None
        return start

    # status ---------------------------------------------------------------------------------------
    def _failed(self, now: float, message: str) -> TelemetrySnapshot:
        self._failures += 1
        wait = min(self.max_backoff, self.first_backoff * 2.0 ** (self._failures - 1))
        since = self.status.since if self.status.state == "down" else now
        self.status = SourceStatus("down", since=since, retry_at=now + wait, message=message, source="nvml")
        return self._held(now)

    def _held(self, now: float) -> TelemetrySnapshot:
        if self.last is None:
            return TelemetrySnapshot(self.status, now)
        return replace(self.last, status=self.status)


def _call(nvml: Any, read: Callable[[], Any]) -> Any:
    """`read()`, or None where NVML fails it."""
    try:
        return read()
    except _error_types(nvml):
        return None


def _reading(nvml: Any, read: Callable[[], Reading]) -> Reading:
    """`read()`'s reading, or None with NVML's reason ("not supported on this GPU", ...)."""
    try:
        return read()
    except _error_types(nvml) as exc:
        if _code(exc) == _NOT_SUPPORTED:
            return Reading(None, "NVML: not supported on this GPU")
        return Reading(None, f"NVML: {_why(exc)}")


def _memory(nvml: Any, handle: Any, readings: dict[str, Reading]) -> None:
    try:
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
    except _error_types(nvml) as exc:
        readings["fb_used_mib"] = readings["fb_free_mib"] = Reading(None, f"NVML: {_why(exc)}")
        return
    readings["fb_used_mib"] = _number(getattr(info, "used", None), 0, 4 * MIB, 1 / MIB)
    readings["fb_free_mib"] = _number(getattr(info, "free", None), 0, 4 * MIB, 1 / MIB)


def _remapped(nvml: Any, handle: Any, readings: dict[str, Reading]) -> None:
    """Rows remapped for uncorrectable errors and whether a remap failed (Ampere and later)."""
    try:
        _corrected, uncorrected, _pending, failure = nvml.nvmlDeviceGetRemappedRows(handle)
    except _error_types(nvml) as exc:
        why = "NVML: not supported on this GPU (no row remapping before Ampere)" if _code(exc) == _NOT_SUPPORTED \
            else f"NVML: {_why(exc)}"
        readings["remapped_rows_uncorrectable"] = readings["row_remap_failure"] = Reading(None, why)
        return
    readings["remapped_rows_uncorrectable"] = _number(uncorrected, 0, 1e9)
    readings["row_remap_failure"] = _number(failure, 0, 1)


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value[:128] if isinstance(value, str) and value else None


def _telemetry(node: str, index: int, start: int | None, device: _Device | None, count: int,
               profile: str | None = None) -> DeviceTelemetry:
    """The readings of one device of the state: NVML's, or None each with why it has none."""
    if device is None:
        why = (f"NVML lists {count} GPU{'s' if count != 1 else ''} on this host: no GPU {index}" if start is None
               else f"NVML lists no MIG instance at start {start} on GPU {index}")
        got: dict[str, Reading] = {}
    else:
        why, got = "not read", device.readings
    readings: dict[str, Any] = {}  # the DeviceTelemetry fields by name (mypy: ** of one value type)
    for name in READING_FIELDS:
        reading = got.get(name)
        if reading is None:
            reading = _SEE_THE_GPU if start is not None and name in _WHOLE_GPU else Reading(None, why)
        readings[name] = reading
    return DeviceTelemetry(node, index, start, profile, device.uuid if device is not None else None, None, (),
                           processes=device.processes if device is not None else None, **readings)
