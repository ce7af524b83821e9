"""The table views: nodes, gpus, slices, jobs, queues and the journal, each the service's listing.

Rows are read on the service worker, so a large state never blocks a keystroke; the jobs view shows its
rows at once and fills the why-pending REASON column when the service has it (a scheduling cycle, run
once per revision).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Static

from gpuadmin.errors import InputError
from gpuadmin.render.columns import Column, Kind
from gpuadmin.render.rows import JOURNAL, LISTINGS
from gpuadmin.render.selector import compile_filter
from gpuadmin.render.text import safe
from gpuadmin.service import Moved, Service, Table
from gpuadmin.tui.draw import quota_bar
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.session import error_lines
from gpuadmin.tui.widgets.table import RowTable

# describe kind for the row under the cursor, and the column that names it
DESCRIBE: dict[str, tuple[str, str]] = {
    "nodes": ("node", "NAME"), "gpus": ("gpu", "NAME"), "slices": ("gpu", "GPU_NAME"),
    "jobs": ("job", "NAME"), "queues": ("queue", "NAME"), "journal": ("entry", "ID"),
}
# the listings' columns, and what the console adds or leaves out of them
COLUMNS: dict[str, tuple[str, ...]] = {
    "nodes": ("NAME", "STATE", "GPUS", "USED", "FREE", "MODES", "MODELS", "RDMA", "PLATFORM", "ORCHESTRATOR"),
    "gpus": ("NODE", "GPU", "MODE", "LAYOUT", "HOLDERS", "MODEL", "NODE_STATE"),
    "slices": ("NODE", "GPU", "SLICE", "SHARE", "HOLDERS", "MODEL"),
    "jobs": ("NAME", "STATUS", "AGE", "DETAIL", "QUEUE", "REQUEST", "PRIORITY", "PREEMPTIBLE", "OWNER"),
    "queues": ("NAME", "USE", "USED_GPUS", "QUOTA", "LIMIT", "BORROWED_GPUS", "WEIGHT", "PRIORITY"),
    "journal": ("ID", "REVISION", "OUTCOME", "ACTOR", "ORIGIN", "CHANGES", "AT", "MESSAGE"),
}
# the columns the console adds to a listing's (`console_rows`), typed as the listing's own are
CONSOLE_COLUMNS: dict[str, tuple[Column, ...]] = {
    "queues": (Column("USE"),), "slices": (Column("GPU_NAME", Kind.PLACEMENT),), "jobs": (Column("DETAIL"),),
}


def typed_columns(kind: str, names: list[str]) -> list[Column]:
    """The console's columns with their kinds: the listing's declaration, or the console's own."""
    listing = JOURNAL if kind == "journal" else LISTINGS[kind]
    extra = {c.name: c for c in CONSOLE_COLUMNS.get(kind, ())}
    return [extra.get(name) or listing.column(name) for name in names]


NODE_THINGS = {"nodes", "gpus", "slices"}
BAR = 16


def console_rows(kind: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the console adds to a listing's rows: the queue's quota bar, the slice's GPU name, the job's
    placement-or-reason."""
    if kind == "queues":
        for row in rows:
            row["USE"] = quota_bar(float(row["USED_GPUS"]), row["QUOTA_GPUS"], row["LIMIT_GPUS"], BAR)
    elif kind == "slices":
        for row in rows:
            row["GPU_NAME"] = f"{row['NODE']}/{row['GPU']}"
    elif kind == "jobs":  # where a running job runs, or why a pending one waits: one column at 80 wide
        for row in rows:
            row["DETAIL"] = row["PLACEMENT"] if row["STATUS"] == "running" else row["REASON"]
    return rows


@dataclass(frozen=True)
class Listing:
    """One read of a listing, handed from the service worker to the screen."""

    table: Table
    rows: list[dict[str, Any]]
    labels: dict[str, dict[str, str]]
    reasons: bool  # whether the why-pending REASON column is filled in


class ListingScreen(ViewScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "reload", "Reload", show=False, id="view.reload"),
    ]

    def __init__(self, kind: str) -> None:
        super().__init__(name=kind)
        self.kind = kind
        self.view_name = kind
        self._labels: dict[str, dict[str, str]] = {}
        self._table: Table | None = None
        self._reasons_shown = True
        self._unmark_timer: Timer | None = None

    def compose_body(self) -> ComposeResult:
        yield Static("", id="status")
        yield RowTable(key=DESCRIBE[self.kind][1] if self.kind != "slices" else "NAME", id="rows")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(RowTable).focus()

    def crumb(self) -> str:
        return self.kind + (f" /{self.filter_text}" if self.filter_text else "")

    def read(self, service: Service) -> Listing:
        """The rows at once; for jobs without the REASON column unless the service has it already (a dry-run
        cycle, run once per revision): `show` then asks for them, as a second read."""
        reasons = self.kind != "jobs" or service.reasons_ready()
        return self._listing(service, reasons=reasons)

    def _listing(self, service: Service, *, reasons: bool) -> Listing:
        labels = service.labels_by_node() if self.kind in NODE_THINGS else {}
        table = service.get(self.kind, reasons=reasons)
        return Listing(table, console_rows(self.kind, table.rows), labels, reasons)

    def show(self, data: Listing) -> None:
        self._table = data.table
        self._reasons_shown = data.reasons
        self._labels = data.labels
        grid = self.query_one(RowTable)
        rows = data.rows
        columns = [c for c in COLUMNS[self.kind] if not rows or c in rows[0]]
        grid.set_rows(typed_columns(self.kind, columns), rows)
        if self.filter_text:
            try:
                self.apply_filter(self.filter_text)
            except InputError as bad:  # a filter given before the rows came, checked now that they have
                self.apply_filter("")
                self.notify(error_lines(bad), title="filter", severity="error", markup=False)
        self._status()
        if not data.reasons:
            self.ask_read(lambda service: self._listing(service, reasons=True))

    def _status(self) -> None:
        grid = self.query_one(RowTable)
        text = f" {self.kind}: {len(grid.shown)} of {len(grid.rows)}"
        if self.filter_text:
            text += f"  filter /{safe(self.filter_text)}"
        if grid.busy:
            text += "  (filtering...)"
        if grid.sort_column:
            text += f"  sorted by {grid.sort_column}{' (reverse)' if grid.sort_reverse else ''}"
        if self.kind == "jobs" and not self._reasons_shown:
            text += "  (reasons: computing)"
        self.query_one("#status", Static).update(Text(text))  # Text: a filter like `[/` is not markup

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
        elif self._table is None:  # the rows are still being read (a view opened with a filter): `_show` applies it
            self.filter_text = text
        else:
            label_keys = {k for labels in self._labels.values() for k in labels}
            columns = list(grid.rows[0]) if grid.rows else list(grid.columns)
            predicate = compile_filter(text, columns, label_keys)  # InputError on a bad selector
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
