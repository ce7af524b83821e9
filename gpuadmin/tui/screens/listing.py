"""The table views: nodes, gpus, slices, jobs, queues and the journal, each the service's listing.

Rows are read on the service worker, so a large state never blocks a keystroke; the jobs view shows its
rows at once and fills why a pending job waits (REASON, its code; MESSAGE, in words) when the service has it
(a scheduling cycle, run once per revision). ctrl+w shows the listing's wide columns too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Static

from gpuadmin.errors import InputError
from gpuadmin.render.columns import Column
from gpuadmin.render.rows import JOURNAL, LISTINGS
from gpuadmin.render.selector import compile_filter
from gpuadmin.render.text import safe
from gpuadmin.service import Moved, Service
from gpuadmin.tui.draw import quota_bar
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.session import error_lines
from gpuadmin.tui.widgets.table import RowTable, natural_widths

ReadT = TypeVar("ReadT")
# describe kind for the row under the cursor, and the column that names it
DESCRIBE: dict[str, tuple[str, str]] = {
    "nodes": ("node", "NAME"), "gpus": ("gpu", "NAME"), "slices": ("gpu", "GPU_NAME"),
    "jobs": ("job", "NAME"), "queues": ("queue", "NAME"), "journal": ("entry", "ID"),
    "top": ("gpu", "GPU_NAME"), "idle": ("job", "NAME"),
}
# the column that tells rows apart where it is not the one describe opens (a slice's, a top row's GPU has several)
ROW_KEY = {"slices": "NAME", "top": "NAME"}
# The console shows a listing's own columns (`Listing.columns`, and `Listing.wide` under the wide toggle), in its
# order and by its priorities, so both front ends say the same thing by the same names (docs/columns.md). The one
# column it adds is the queue's quota bar, drawn after the name: a picture of USED_GPUS against QUOTA_GPUS and
# LIMIT_GPUS, not a value of its own, so not a filter key either (`/borrowed_gpus!=0` filters by the numbers).
QUOTA_BAR = Column("USE", priority=5)
# The GPUs view's marker, after the node: `!` on a GPU with a firing alert or flagged by its XID/ECC readings,
# `x` on one fenced (set-gpu-health); from the last telemetry refresh (ALERTS, HEALTH: the wide columns say which)
GPU_MARK = Column("!", priority=7)


def console_columns(kind: str, *, wide: bool = False) -> list[Column]:
    """The columns the console shows for `kind`: the listing's table (and its `-o wide` set when `wide`)."""
    listing = JOURNAL if kind == "journal" else LISTINGS[kind]
    names = {*listing.columns, *(listing.wide if wide else ())}
    columns = [c for c in listing.fields if c.name in names]
    if kind == "queues":
        columns.insert(1, QUOTA_BAR)
    elif kind == "gpus":
        columns.insert(1, GPU_MARK)
    return columns


def gpu_mark(row: dict[str, Any]) -> str:
    health = row.get("HEALTH")
    if health == "fenced":
        return "x"
    return "!" if row.get("ALERTS") or health not in (None, "ok") else ""


NODE_THINGS = {"nodes", "gpus", "slices"}
TELEMETRY_THINGS = {"gpus", "slices"}  # listings with UTIL, MEM, TEMP, POWER (wide columns)
BAR = 16


def console_rows(kind: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the console adds to a listing's rows: the queue's quota bar, the GPU's marker (`GPU_MARK`), and
    the slice's GPU name (what describe opens; a key of the row, not a column)."""
    if kind == "queues":
        for row in rows:
            row["USE"] = quota_bar(float(row["USED_GPUS"]), row["QUOTA_GPUS"], row["LIMIT_GPUS"], BAR)
    elif kind == "slices":
        for row in rows:
            row["GPU_NAME"] = f"{row['NODE']}/{row['GPU']}"
    elif kind == "gpus":
        for row in rows:
            row["!"] = gpu_mark(row)
    return rows


@dataclass(frozen=True)
class Listing:
    """One read of a listing, handed from the service worker to the screen."""

    rows: list[dict[str, Any]]
    labels: dict[str, dict[str, str]]
    reasons: bool  # whether why pending jobs wait (REASON, MESSAGE) is filled in
    widths: dict[str, int]  # the columns' natural widths, made with the rows on the service worker


class TableScreen(ViewScreen, Generic[ReadT]):
    """A view of rows in a `RowTable`: filter, sort, wide columns, marks, drill-down. Subclasses say how to read
    (`read`, returning `ReadT`, on the service worker) and hand the rows to `show_rows`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "reload", "Reload", show=False, id="view.reload"),
        Binding("ctrl+w", "wide", "Wide", show=False, id="view.wide"),
    ]

    def __init__(self, kind: str) -> None:
        super().__init__(name=kind)
        self.kind = kind
        self.view_name = kind
        self._labels: dict[str, dict[str, str]] = {}
        self._rows_read = False  # the first read has been shown (a filter given before it waits for it)
        self._reasons_shown = True
        self.show_wide = False  # the listing's `-o wide` columns shown too (ctrl+w)
        self._unmark_timer: Timer | None = None

    def read(self, service: Service) -> ReadT:
        raise NotImplementedError

    def show(self, data: ReadT) -> None:
        raise NotImplementedError

    def compose_body(self) -> ComposeResult:
        yield Static("", id="status")
        yield RowTable(key=ROW_KEY.get(self.kind, DESCRIBE[self.kind][1]), id="rows")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(RowTable).focus()

    def crumb(self) -> str:
        return self.kind + (f" /{self.filter_text}" if self.filter_text else "")

    def columns(self) -> list[Column]:
        """The columns shown now (the wide toggle's too)."""
        return console_columns(self.kind, wide=self.show_wide)

    def filter_keys(self) -> list[str]:
        """The keys `/` filters by: those `get -l` takes (the console's rows add none)."""
        listing = JOURNAL if self.kind == "journal" else LISTINGS[self.kind]
        return [c.name for c in listing.fields]

    def show_rows(self, rows: list[dict[str, Any]], labels: dict[str, dict[str, str]],
                  widths: dict[str, int] | None = None) -> None:
        """Draw rows read on the service worker (with their columns' widths, made there too), the filter applied
        to them and the status line said."""
        self._rows_read = True
        self._labels = labels
        self.query_one(RowTable).set_rows(self.columns(), rows, widths)
        if self.filter_text:
            try:
                self.apply_filter(self.filter_text)
            except InputError as bad:  # a filter given before the rows came, checked now that they have
                self.apply_filter("")
                self.notify(error_lines(bad), title="filter", severity="error", markup=False)
        self._status()

    def _status(self) -> None:
        grid = self.query_one(RowTable)
        text = f" {self.kind}: {len(grid.shown)} of {len(grid.rows)}"
        if self.filter_text:
            text += f"  filter /{safe(self.filter_text)}"
        if grid.busy:
            text += "  (filtering...)"
        if grid.sort_column:
            text += f"  sorted by {grid.sort_column}{' (reverse)' if grid.sort_reverse else ''}"
        if self.show_wide:
            text += "  wide"
        if self.kind == "jobs" and not self._reasons_shown:
            text += "  (reasons: computing)"
        text += self.status_note()
        self.query_one("#status", Static).update(Text(text))  # Text: a filter like `[/` is not markup

    def status_note(self) -> str:
        """What a view adds to its status line (plain text: it is drawn as `Text`)."""
        return ""

    def on_row_table_chosen(self, event: RowTable.Chosen) -> None:
        self.gpuadmin.drill_down(self.kind, event.row)

    def current_row(self) -> dict[str, Any] | None:
        """The row under the cursor; None before the table is composed (the gate asks while a view opens)."""
        tables = self.query(RowTable)
        return tables.first().current_row() if tables else None

    def selected(self) -> tuple[str, str] | None:
        row = self.current_row()
        if row is None:
            return None
        kind, column = DESCRIBE[self.kind]
        return kind, str(row[column])

    def apply_filter(self, text: str) -> None:
        grid = self.query_one(RowTable)
        if not text:
            self.filter_text = ""
            grid.set_filter(None)
        elif not self._rows_read:  # the rows are still being read (a view opened with a filter): `_show` applies it
            self.filter_text = text
        else:
            label_keys = {k for labels in self._labels.values() for k in labels}
            keys = self.filter_keys()
            predicate = compile_filter(text, keys, label_keys)  # InputError on a bad selector
            labels = self._labels

            def keep(row: dict[str, Any]) -> bool:
                return predicate(row, labels.get(str(row.get("NODE", row.get("NAME"))), {}))

            self.filter_text = text
            grid.set_filter(keep)
        self._status()
        self.update_header()

    def sort_by(self, column: str) -> bool:
        grid = self.query_one(RowTable)
        name = column.upper().replace("-", "_")
        again = grid.sort_column == name and not grid.sort_reverse  # `:sort X` twice: X reversed
        done = grid.sort_by(name, reverse=again)
        self._status()
        return done

    def on_row_table_reshaped(self) -> None:
        self._status()

    def on_row_table_marked(self) -> None:
        self.update_header()

    def marked_count(self) -> int:
        tables = self.query(RowTable)
        return len(tables.first().marked) if tables else 0

    def action_reload(self) -> None:
        self.load()

    def action_wide(self) -> None:
        """Show the listing's wide columns too (what `-o wide` adds: a job's MESSAGE, a node's MODELS...), or
        no longer; the rows stay, only their columns change."""
        self.show_wide = not self.show_wide
        grid = self.query_one(RowTable)
        grid.set_rows(self.columns(), grid.rows)
        self._status()

    def state_moved(self, moved: Moved) -> None:
        grid = self.query_one(RowTable)
        grid.changed = {name for kind, name in moved.touched}
        super().state_moved(moved)
        if self._unmark_timer is not None:  # an earlier apply's timer must not clear this apply's marks early
            self._unmark_timer.stop()
        self._unmark_timer = self.set_timer(2.0, self._unmark)

    def _unmark(self) -> None:
        grid = self.query_one(RowTable)
        grid.changed = set()
        grid.refresh()


class ListingScreen(TableScreen[Listing]):
    """One of the service's listings (`gpuadmin get KIND`)."""

    def read(self, service: Service) -> Listing:
        """The rows at once; for jobs without REASON and MESSAGE unless the service has it already (a dry-run
        cycle, run once per revision): `show` then asks for them, as a second read."""
        reasons = self.kind != "jobs" or service.reasons_ready()
        return self._listing(service, reasons=reasons)

    def _listing(self, service: Service, *, reasons: bool) -> Listing:
        labels = service.labels_by_node() if self.kind in NODE_THINGS else {}
        table = service.get(self.kind, reasons=reasons)
        if self.kind in TELEMETRY_THINGS:  # the last poll's readings (gpuadmin.tui.metrics_poll): no query here
            service.telemetry_rows(self.kind, table.rows, refresh=False)
        rows = console_rows(self.kind, table.rows)
        return Listing(rows, labels, reasons, natural_widths([c.name for c in self.columns()], rows))

    def show(self, data: Listing) -> None:
        self._reasons_shown = data.reasons
        self.show_rows(data.rows, data.labels, data.widths)
        if not data.reasons:
            self.ask_read(lambda service: self._listing(service, reasons=True))
