"""Telemetry as listing cells: pure functions from a device's readings (`gpuadmin.model.telemetry`) to row values.

`get gpus -o wide` and `get slices -o wide` add UTIL (percent busy), MEM (MiB of frame buffer in use), TEMP (°C)
and POWER (W); `gpuadmin top` lists every GPU and MIG instance with them, the worst first, and (from the NVML
source) the processes on each. A reading that is not
there is None (`-` in a table, `null` in JSON), never 0: its reason is in top's NOTE and in `-o json`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from gpuadmin.model.telemetry import DeviceTelemetry, GpuProcess, Reading
from gpuadmin.render.columns import Column, Kind, number, text
from gpuadmin.render.rows import NO_TELEMETRY, Listing, Row


def _rounded(reading: Reading, digits: int) -> float | None:
    return round(reading.value, digits) if reading.value is not None else None


def _whole(reading: Reading) -> int | None:
    return round(reading.value) if reading.value is not None else None


def telemetry_cells(device: DeviceTelemetry | None) -> Row:
    """UTIL, MEM, TEMP, POWER of a device (None each where it has no reading, or no device was read)."""
    if device is None:
        return dict(NO_TELEMETRY)
    return {"UTIL": _rounded(device.util, 1), "MEM": _whole(device.fb_used_mib), "TEMP": _whole(device.temp_c),
            "POWER": _rounded(device.power_w, 1)}


def alerts_cell(alerts: Iterable[str]) -> str | None:
    """ALERTS: the firing alerts on a GPU as the service gives them, worst first (`GpuXidError (critical),
    GpuHot (warning)`); None (`-`) where none fires."""
    return ", ".join(alerts) or None


def health_cell(fenced: bool, said: str | None, device: DeviceTelemetry | None) -> str | None:
    """HEALTH: `fenced` (set-gpu-health), what its readings say (`said`: what flags it, `XID 79: GPU has fallen
    off the bus`, a grown double-bit ECC count; or a last XID outside gpuadmin's table, `XID 8: not in gpuadmin's
    table: see NVIDIA's XID catalog`), `ok` where its XID and ECC readings say nothing, None where nothing is
    known."""
    if fenced:
        return "fenced"
    if said is not None:
        return said
    if device is not None and (device.xid.value is not None or device.ecc_dbe_volatile.value is not None):
        return "ok"
    return None


def _first_missing(device: DeviceTelemetry) -> str:
    """Why the first of the shown readings is missing (what a `-` in the row means), or "-"."""
    for reading in (device.util, device.fb_used_mib, device.temp_c, device.power_w):
        if reading.value is None and reading.reason:
            return reading.reason
    return "-"


def processes_cell(processes: tuple[GpuProcess, ...] | None) -> str:
    """`4242 python (2048 MiB), 4300 ?`: what `top -o wide` shows; `-` where the source lists none (DCGM's)."""
    if processes is None:
        return "-"
    if not processes:
        return "none"
    return ", ".join(f"{p.pid} {p.name}" + (f" ({p.used_mib:.0f} MiB)" if p.used_mib is not None else "")
                     for p in processes)


def top_row(name: str, model: str, holders: str, device: DeviceTelemetry, alerts: Iterable[str] = (),
            health: str | None = None) -> Row:
    """A row of `gpuadmin top`: the device, who holds it (gpuadmin's state), its readings and errors, the
    firing alerts on it and its health (a GPU's: None on a MIG instance's row)."""
    total = (device.fb_used_mib.value + device.fb_free_mib.value
             if device.fb_used_mib.value is not None and device.fb_free_mib.value is not None else None)
    return {
        "NAME": name, "MODEL": model, "HOLDERS": holders, **telemetry_cells(device),
        "MEM_PCT": round(100 * (device.fb_used_mib.value or 0) / total, 1) if total else None,
        "XID": _whole(device.xid), "DBE": _whole(device.ecc_dbe_volatile),
        "REMAPPED": _whole(device.remapped_rows_uncorrectable),
        "ALERTS": alerts_cell(alerts), "HEALTH": health,
        "PODS": ",".join(device.pods) or "-", "PROCS": processes_cell(device.processes),
        "PROCESSES": [p._asdict() for p in device.processes] if device.processes is not None else None,
        "NOTE": _first_missing(device),
        "ERRORS": device.errors,
    }


TopOrder = Literal["errors", "util", "temp", "power", "mem"]
_ORDER_COLUMNS: dict[str, tuple[str, ...]] = {
    "errors": ("ERRORS", "UTIL", "TEMP"),  # the default: most erroring, then busiest, then hottest
    "util": ("UTIL", "TEMP", "ERRORS"),
    "temp": ("TEMP", "UTIL", "ERRORS"),
    "power": ("POWER", "UTIL", "TEMP"),
    "mem": ("MEM", "UTIL", "TEMP"),
}


def top_order(rows: Iterable[Row], by: TopOrder = "errors") -> list[Row]:
    """Worst first: by `by`'s columns, highest first; an unknown reading after every known one; then by name."""
    keys = _ORDER_COLUMNS[by]

    def key(row: Row) -> tuple[object, ...]:
        values = [row.get(k) for k in keys]
        return (*((v is None, -(v or 0)) for v in values), TOP.column("NAME").sort_key(row["NAME"]))

    return sorted(rows, key=key)


TOP = Listing("device", (
    Column("NAME", Kind.PLACEMENT), text("MODEL", priority=-1), text("HOLDERS", priority=3),
    number("UTIL", float | None, priority=6), number("MEM", int | None, priority=5),
    number("MEM_PCT", float | None, priority=2), number("TEMP", int | None, priority=5),
    number("POWER", float | None, priority=4), number("XID", int | None, priority=4),
    number("DBE", int | None, priority=4), number("REMAPPED", int | None, priority=1),
    text("HEALTH", priority=3, json_type=str | None), text("ALERTS", priority=3, json_type=str | None),
    text("NOTE", priority=0),
    text("PODS", wide=True), text("PROCS", wide=True), number("ERRORS", float, hidden=True),
    text("PROCESSES", hidden=True),
), None)


# `gpuadmin idle`: one row per idle holder (`Idle.to_json`, upper-cased), then GPU-hours held idle per queue
IDLE = Listing("idle", (
    text("KIND", priority=3), Column("NAME", Kind.PLACEMENT), text("QUEUE", priority=4), text("NODE", priority=2),
    number("SLICES", priority=3), number("IDLE_MIN", float, priority=5), number("PEAK_UTIL", float, priority=4),
    number("GPU_HOURS", float, priority=5), text("REMEDY", priority=1),
), None)
WASTED = Listing("queue-idle", (text("QUEUE"), number("GPU_HOURS", float)), None)


def idle_row(item: dict[str, object]) -> Row:
    """A row of `gpuadmin idle` from an idle holder's JSON: REMEDY is its first change as `op name`."""
    remedy = item["remedy"]
    first = remedy[0] if isinstance(remedy, list) and remedy and isinstance(remedy[0], dict) else {}
    target = first.get("name") or first.get("vm") or ""
    slices = item["slices"]
    return {"KIND": item["kind"], "NAME": item["name"], "QUEUE": item["queue"] or "-", "NODE": item["node"],
            "SLICES": len(slices) if isinstance(slices, list) else 0, "IDLE_MIN": item["idle_minutes"],
            "PEAK_UTIL": item["peak_util"], "GPU_HOURS": item["gpu_hours"],
            "REMEDY": f"{first.get('op', '-')} {target}".strip()}
