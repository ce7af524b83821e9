"""The telemetry views: `:top` (nvitop-like: every GPU and MIG instance, the most erroring, busiest or hottest
first) and `:idle` (slices held idle, and the GPU-hours they waste per queue).

`:top` shows the service's `top` on the last poll's readings (`refresh=False`: no query of its own; the poll,
gpuadmin.tui.metrics_poll, re-reads it after every refresh), with a bar of each device's utilisation; `o`
changes the order. A reading that is not there is `-` and its bar says `stale` or `no data`, never 0.

`:idle` reads the utilisation history (two range queries for the whole cluster) when it opens, on ctrl+r and
when the state moves, not on every poll: idleness is minutes long. Its thresholds are the documented defaults
(`gpuadmin.telemetry.idle`: under 5 % for 30 minutes). `R` plans the selected holder's remedy (preempt a
preemptible job, cancel another, detach a VM's GPUs) into the review: nothing is applied without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from gpuadmin.errors import GpuadminError
from gpuadmin.render.columns import Column, Kind, number, text
from gpuadmin.render.rows import Listing as RowsListing
from gpuadmin.render.telemetry import TOP, TopOrder
from gpuadmin.render.text import safe
from gpuadmin.service import Service, SourceStatus
from gpuadmin.tui.draw import level_bar
from gpuadmin.tui.screens.listing import TableScreen
from gpuadmin.tui.session import error_lines
from gpuadmin.tui.widgets.table import RowTable, natural_widths

ORDERS: tuple[TopOrder, ...] = ("errors", "util", "temp", "power", "mem")
BAR = 10
# the bar of UTIL, after it: a picture, not a value, so not a filter key (`/util>50` filters by the number)
BUSY = Column("BUSY", priority=2)


def top_columns(*, wide: bool) -> list[Column]:
    names = {*TOP.columns, *(TOP.wide if wide else ())}
    columns = [c for c in TOP.fields if c.name in names]
    columns.insert(next(i for i, c in enumerate(columns) if c.name == "UTIL") + 1, BUSY)
    return columns


def top_console_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the console adds to `top`'s rows: the utilisation bar, and the GPU a row is on (what `d` and Enter
    open: a MIG instance's GPU)."""
    for row in rows:
        note = str(row.get("NOTE") or "")
        row["BUSY"] = level_bar(row["UTIL"], BAR, "stale" if note.startswith("stale") else "no data")
        node, index = str(row["NAME"]).split("/")[:2]
        row["GPU_NAME"] = f"{node}/{index}"
    return rows


@dataclass(frozen=True)
class TopRead:
    rows: list[dict[str, Any]]
    widths: dict[str, int]  # the columns' natural widths, made with the rows on the service worker
    status: SourceStatus | None
    message: str  # why there are no rows (no Prometheus set, none reached yet), else ""


class TopScreen(TableScreen["TopRead"]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("o", "order", "Order", id="top.order")]

    def __init__(self) -> None:
        super().__init__("top")
        self.order: TopOrder = "errors"
        self._read: TopRead | None = None

    def columns(self) -> list[Column]:
        return top_columns(wide=self.show_wide)

    def filter_keys(self) -> list[str]:
        return [c.name for c in TOP.fields]

    def read(self, service: Service) -> TopRead:
        order = self.order
        try:
            result = service.top(order, refresh=False)  # the last poll's readings: no query here
        except GpuadminError as why:  # no Prometheus set, or down before any readings: said in the status line
            return TopRead([], {}, None, error_lines(why))
        rows = top_console_rows(result.rows)
        return TopRead(rows, natural_widths([c.name for c in self.columns()], rows), result.snapshot.status, "")

    def show(self, data: TopRead) -> None:
        self._read = data
        self.show_rows(data.rows, {}, data.widths)

    def status_note(self) -> str:
        text = f"  worst first by {self.order} (o: order)"
        read = self._read
        if read is None:
            return text
        if read.message:
            waiting = self.gpuadmin.metrics.status is None and "no Prometheus is set" in read.message
            return text + ("  waiting for the first telemetry refresh" if waiting else f"  {read.message}")
        if read.status is not None and read.status.state != "ok":
            text += f"  metrics {read.status.state}: the last readings"
        if not read.rows and read.status is not None and read.status.notes:  # why nothing shows (`top` prints all)
            text += f"  {safe(read.status.notes[0])}"
        return text

    def action_order(self) -> None:
        """The next order (errors, util, temp, power, mem), read again on the service worker."""
        self.order = ORDERS[(ORDERS.index(self.order) + 1) % len(ORDERS)]
        grid = self.query_one(RowTable)
        grid.sort_column, grid.sort_reverse = None, False  # the service's order now, not a column's
        self.load()

    def selected(self) -> tuple[str, str] | None:
        row = self.current_row()
        return ("gpu", str(row["GPU_NAME"])) if row is not None else None


IDLE = RowsListing("idle holder", (
    text("NAME"), text("KIND", priority=1), text("QUEUE", priority=5), text("NODE", priority=2),
    number("SLICES", priority=3), Column("IDLE", Kind.DURATION, priority=6), number("PEAK", float, priority=3),
    number("GPU_HOURS", float, priority=6), text("REMEDY", priority=4),
), None)


def _minutes(minutes: float) -> str:
    whole = int(minutes)
    return f"{whole // 60}h{whole % 60}m" if whole >= 60 else f"{whole}m"


@dataclass(frozen=True)
class IdleRead:
    rows: list[dict[str, Any]]
    wasted: dict[str, float]
    below: float
    for_minutes: float
    message: str  # why there are no rows (no Prometheus set, Prometheus down), else ""


class IdleScreen(TableScreen["IdleRead"]):
    def __init__(self) -> None:
        super().__init__("idle")
        self._read: IdleRead | None = None

    def compose_body(self) -> ComposeResult:
        yield from super().compose_body()
        yield Static("", id="wasted")

    def columns(self) -> list[Column]:
        return [c for c in IDLE.fields if not c.hidden]

    def filter_keys(self) -> list[str]:
        return [c.name for c in IDLE.fields]

    def read(self, service: Service) -> IdleRead:
        try:
            report = service.idle()
        except GpuadminError as why:
            return IdleRead([], {}, 0, 0, error_lines(why))
        rows = [{"NAME": i.holding.name, "KIND": i.holding.kind, "QUEUE": i.holding.queue or "-",
                 "NODE": i.holding.node, "SLICES": len(i.holding.slices), "IDLE": _minutes(i.minutes),
                 "PEAK": round(i.peak, 1), "GPU_HOURS": round(i.gpu_hours, 2),
                 "REMEDY": ", ".join(str(op["op"]) for op in i.remedy), "REMEDY_OPS": list(i.remedy)}
                for i in report.idle]
        return IdleRead(rows, report.wasted, report.below, report.for_minutes, "")

    def show(self, data: IdleRead) -> None:
        self._read = data
        self.show_rows(data.rows, {})
        wasted = ", ".join(f"{safe(q)} {h:.1f}" for q, h in data.wasted.items()) or "none"
        self.query_one("#wasted", Static).update(Text(data.message or f" GPU-hours held idle per queue: {wasted}"))

    def status_note(self) -> str:
        read = self._read
        if read is None or read.message:
            return ""
        return f"  under {read.below:g}% for {read.for_minutes:g}m (R: plan the remedy)"

    def selected(self) -> tuple[str, str] | None:
        row = self.current_row()
        if row is None:
            return None
        return ("job", str(row["NAME"])) if row["KIND"] == "job" else ("node", str(row["NODE"]))

    def remedy(self) -> tuple[str, list[dict[str, Any]]] | None:
        """The selected holder's remedy: a title for the review and its change ops."""
        row = self.current_row()
        if row is None:
            return None
        return (f"reclaim idle {row['KIND']} {row['NAME']} (under {self._below():g}% for {row['IDLE']})",
                [dict(op) for op in row["REMEDY_OPS"]])

    def _below(self) -> float:
        return self._read.below if self._read is not None else 0.0
