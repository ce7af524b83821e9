"""RowTable: a virtualized table over plain rows (the service's listings), k9s-style.

Only the lines on screen are rendered (`render_line`), so a listing of any length costs what fits in the
window; rows stay plain dicts, never widgets. Each column is typed (`gpuadmin.render.columns.Column`): its kind
sorts it (AGE by the time it spells, numbers numerically) and aligns it (numbers to the right). Columns that do
not fit the width are dropped by priority (`Column.priority`, then the listing's order: the first column is the
most important) and the last one shown is shortened with an ellipsis; nothing wraps. Cells are plain text: a
name is drawn as the characters it holds, with control bytes made visible, never read as markup.

The cursor row is marked by a `>` gutter as well as by colour, marked rows by `*`, so both read the
same without colour. Marks are kept by row key: through a filter, a sort and a live reload (a row that is gone
loses its mark), until they are cleared (`ctrl+\\`, or by the app once an apply used them).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from gpuadmin.render.columns import Align, Column, Kind, any_key
from gpuadmin.render.text import cell_text
from gpuadmin.tui.draw import shorten

Row = dict[str, Any]
BACKGROUND_ROWS = 5_000  # above this, filter and sort run in a worker thread
WIDTH_SAMPLE = 2_000  # rows read to size the columns
MAX_CELL = 48  # a column is never wider than this; longer text ends in an ellipsis
GUTTER = 2  # "> " or "* " before each row


@dataclass(frozen=True)
class Fitted:
    """The columns shown at a width, each with its width."""

    columns: tuple[str, ...]
    widths: tuple[int, ...]


def fit_columns(columns: Sequence[str], natural: dict[str, int], width: int,
                priorities: dict[str, int] | None = None) -> Fitted:
    """Keep columns in priority order (`priorities`, highest first; then the order given) while they fit (at
    least 3 cells each); shorten the last kept one to what is left. The first column always shows; the kept
    ones show in the order given."""
    rank = priorities or {}
    order = sorted(range(len(columns)), key=lambda i: (i > 0, -rank.get(columns[i], 0)))
    kept: dict[int, int] = {}  # position -> width
    room = width - GUTTER
    for i in order:
        column = columns[i]
        need = natural[column] + (1 if kept else 0)
        if need <= room:
            kept[i] = natural[column]
            room -= need
        elif i == 0 or room >= 4 + (1 if kept else 0):
            kept[i] = max(3, room - (1 if kept else 0))
            room = 0
    return Fitted(tuple(columns[i] for i in sorted(kept)), tuple(kept[i] for i in sorted(kept)))


class RowTable(ScrollView, can_focus=True):
    """A table of rows; Enter posts `RowTable.Chosen` with the row under the cursor."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "rowtable--header", "rowtable--cursor", "rowtable--marked", "rowtable--changed",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="table.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="table.down"),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False, id="table.page_up"),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False, id="table.page_down"),
        Binding("home,g", "jump(0)", "Top", show=False, id="table.top"),
        Binding("end,G", "jump(-1)", "Bottom", show=False, id="table.bottom"),
        Binding("space", "mark", "Mark", show=False, id="table.mark"),
        # k9s's keys; a terminal sends ctrl+space as NUL, which Textual names ctrl+@
        Binding("ctrl+space,ctrl+@", "mark_range", "Mark range", show=False, id="table.mark_range"),
        Binding("ctrl+backslash", "clear_marks", "Clear marks", show=False, id="table.clear_marks"),
        Binding("enter", "choose", "Open", id="table.open"),
        Binding("s", "sort(1)", "Sort", id="table.sort"),
        Binding("S", "sort(-1)", "Sort back", show=False, id="table.sort_reverse"),
    ]

    busy = False  # a filter or sort is running in the background

    class Reshaped(Message):
        """The rows shown changed (filter or sort applied): views update their counts."""

        def __init__(self, table: RowTable) -> None:
            super().__init__()
            self.table = table

    class Marked(Message):
        """The marks changed: views show the count."""

        def __init__(self, table: RowTable) -> None:
            super().__init__()
            self.table = table

    class Chosen(Message):
        def __init__(self, table: RowTable, row: Row) -> None:
            super().__init__()
            self.table = table
            self.row = row

    def __init__(self, *, key: str = "NAME", id: str | None = None) -> None:
        super().__init__(id=id)
        self.key = key
        self.columns: tuple[str, ...] = ()
        self._typed: dict[str, Column] = {}  # each column's kind, alignment and priority
        self.rows: list[Row] = []
        self.shown: list[int] = []  # indexes into rows: filtered, then sorted
        self.cursor = 0
        self.marked: set[str] = set()
        self._last_mark: str | None = None  # where a range mark starts
        # names another apply just touched (a row's key, or its NODE: an apply names nodes, not their GPUs),
        # drawn marked for a moment
        self.changed: set[str] = set()
        self.sort_column: str | None = None
        self.sort_reverse = False
        self._predicate: Callable[[Row], bool] | None = None
        self._natural: dict[str, int] = {}
        self._texts: dict[int, list[str]] = {}  # a row's cells as text, made when it is first drawn
        # each sorted column's sort keys over these rows (`_column_keys`), kept until the rows are replaced:
        # sorting by the same column again (`S`, or after a filter) is one C-speed sort
        self._sort_keys: dict[str, list[Any]] = {}

    # data ----------------------------------------------------------------------------------------
    def set_rows(self, columns: Sequence[Column | str], rows: list[Row],
                 widths: dict[str, int] | None = None) -> None:
        """Replace the data; the cursor stays on the same key where it still exists. A column given by its name
        alone is plain text. `widths`: the columns' `natural_widths` of these rows, made off the event loop
        (a view's read, on the service worker); made here where not given, or not for these columns."""
        current = self.current_key()
        typed = [c if isinstance(c, Column) else Column(c) for c in columns]
        self._typed = {c.name: c for c in typed}
        self.columns = tuple(c.name for c in typed)
        self.rows = rows
        if self.marked:  # a row that is gone (a removed node, a finished job) cannot stay a target
            keys = {str(row.get(self.key)) for row in rows}
            if not self.marked <= keys:
                self.marked &= keys
                self.post_message(self.Marked(self))
        self._texts = {}
        self._sort_keys = {}  # a new dict, not cleared: a worker still sorting the old rows fills the old one
        fits = widths is not None and tuple(widths) == self.columns
        self._natural = widths if widths is not None and fits else natural_widths(self.columns, rows)
        self._reshape(keep=current)

    def set_filter(self, predicate: Callable[[Row], bool] | None) -> None:
        self._predicate = predicate
        self._reshape(keep_index=self._current_index())

    def _current_index(self) -> int | None:
        return self.shown[min(self.cursor, len(self.shown) - 1)] if self.shown else None

    def _reshape(self, keep: str | None = None, keep_index: int | None = None) -> None:
        """Filter, sort and find where the cursor's row went (by its key after new data, by its index after
        a filter or sort). Above BACKGROUND_ROWS rows this runs in a worker thread, so a keystroke never waits
        for it; the rows shown until then are the previous ones."""
        rows, predicate, key, keys_cache = self.rows, self._predicate, self.key, self._sort_keys
        column = self._typed.get(self.sort_column) if self.sort_column is not None else None
        reverse = self.sort_reverse

        def order() -> tuple[list[int], int]:
            shown = _order(rows, predicate, column, reverse, keys_cache)
            return shown, _position(rows, shown, key, keep, keep_index)

        if len(rows) <= BACKGROUND_ROWS:
            self._show(*order())
            return
        self.busy = True

        def work() -> None:
            shown, cursor = order()
            if rows is self.rows:  # still the data it was asked about
                self.app.call_from_thread(self._show, shown, cursor)

        self.run_worker(work, thread=True, exclusive=True, group="reshape")

    def _show(self, shown: list[int], cursor: int) -> None:
        self.busy = False
        self.shown = shown
        self.cursor = cursor
        self.virtual_size = Size(self.size.width, len(self.shown) + 1)
        self._scroll_cursor_into_view()
        self.refresh()
        # the keys that act on a row (describe, an edit) act now that there is one: Textual asks the gate again
        # only on a focus or screen change, so the footer would keep the keys of the empty table it first saw
        self.refresh_bindings()
        self.post_message(self.Reshaped(self))

    def current_row(self) -> Row | None:
        if not self.shown:
            return None
        return self.rows[self.shown[min(self.cursor, len(self.shown) - 1)]]

    def current_key(self) -> str | None:
        row = self.current_row()
        return None if row is None else str(row.get(self.key))

    def marked_rows(self) -> list[Row]:
        """Every marked row, shown or hidden by the filter, in the listing's order."""
        return [r for r in self.rows if str(r.get(self.key)) in self.marked]

    def hidden_marks(self) -> list[str]:
        """The marked rows' keys the filter hides, in the listing's order."""
        if not self.marked:
            return []
        shown = {str(self.rows[i].get(self.key)) for i in self.shown}
        return [str(r.get(self.key)) for r in self.marked_rows() if str(r.get(self.key)) not in shown]

    def clear_marks(self) -> None:
        self._last_mark = None
        if self.marked:
            self.marked = set()
            self.refresh()
            self.post_message(self.Marked(self))

    # drawing -------------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width  # less the vertical bar, so a cut cell shows its …
        fitted = fit_columns(self.columns, self._natural, width, {c.name: c.priority for c in self._typed.values()})
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("rowtable--header")
            text = " " * GUTTER + " ".join(
                self._cell(self._header_label(c), c, w) for c, w in zip(fitted.columns, fitted.widths, strict=True))
            return Strip([Segment(shorten(text, width), base + header)], width)
        position = self.scroll_offset.y + y - 1
        if position >= len(self.shown):
            return Strip.blank(width, base)
        index = self.shown[position]
        texts = self._cells(index)
        key = str(self.rows[index].get(self.key))
        style = base
        gutter = "  "
        if key in self.changed or self.rows[index].get("NODE") in self.changed:  # a GPU's or slice's node
            style += self.get_component_rich_style("rowtable--changed")
            gutter = "~ "
        if key in self.marked:
            style += self.get_component_rich_style("rowtable--marked")
            gutter = "* "
        if position == self.cursor:
            style += self.get_component_rich_style("rowtable--cursor")
            gutter = ">" + gutter[1]
        where = {c: i for i, c in enumerate(self.columns)}
        text = gutter + " ".join(self._cell(texts[where[c]], c, w) for c, w in zip(fitted.columns, fitted.widths,
                                                                                   strict=True))
        return Strip([Segment(shorten(text, width), style)], width)

    def _cells(self, index: int) -> list[str]:
        texts = self._texts.get(index)
        if texts is None:
            row = self.rows[index]
            texts = self._texts[index] = [cell_text(row.get(c)) for c in self.columns]
        return texts

    def _cell(self, text: str, column: str, width: int) -> str:
        """A cell (or a header) in exactly `width` cells: a number's column that fits to the right, anything else
        as `shorten` puts it."""
        room = width - cell_len(text)
        if room > 0 and self._typed[column].align is Align.RIGHT:
            return " " * room + text
        return shorten(text, width)

    def _header_label(self, column: str) -> str:
        if column == self.sort_column:
            return column + ("v" if self.sort_reverse else "^")
        return column

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.shown) + 1)
        self.call_after_refresh(self._scroll_cursor_into_view)  # a smaller window must not hide the cursor row

    # moving --------------------------------------------------------------------------------------
    def _move_to(self, position: int) -> None:
        if not self.shown:
            return
        self.cursor = max(0, min(position, len(self.shown) - 1))
        self._scroll_cursor_into_view()
        self.refresh()

    def _scroll_cursor_into_view(self) -> None:
        visible = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def on_click(self, event: events.Click) -> None:
        """The mouse works but is never needed: a click puts the cursor on a row, a second click opens it."""
        position = self.scroll_offset.y + event.y - 1
        if event.y == 0 or not 0 <= position < len(self.shown):
            return
        if position == self.cursor and event.chain >= 2:
            self.action_choose()
        else:
            self._move_to(position)

    def action_cursor(self, step: int) -> None:
        self._move_to(self.cursor + step)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor + direction * max(1, self.size.height - 2))

    def action_jump(self, where: int) -> None:
        self._move_to(0 if where == 0 else len(self.shown) - 1)

    def action_mark(self) -> None:
        key = self.current_key()
        if key is not None:
            self.marked.symmetric_difference_update({key})
            self._last_mark = key if key in self.marked else None
            self._move_to(self.cursor + 1)
            self.post_message(self.Marked(self))

    def action_mark_range(self) -> None:
        """Mark every row shown from the last one marked to the cursor (k9s's ctrl+space); with no last mark
        on screen, the row under the cursor."""
        if not self.shown:
            return
        start = self.cursor
        if self._last_mark in self.marked:
            for position, index in enumerate(self.shown):
                if str(self.rows[index].get(self.key)) == self._last_mark:
                    start = position
                    break
        low, high = sorted((start, min(self.cursor, len(self.shown) - 1)))
        self.marked |= {str(self.rows[i].get(self.key)) for i in self.shown[low:high + 1]}
        self._last_mark = self.current_key()
        self.refresh()
        self.post_message(self.Marked(self))

    def action_clear_marks(self) -> None:
        self.clear_marks()

    def action_choose(self) -> None:
        row = self.current_row()
        if row is not None:
            self.post_message(self.Chosen(self, row))

    def action_sort(self, direction: int) -> None:
        """`s` sorts by the next column (the first press by the first column); `S` reverses the order."""
        if direction < 0:
            self.sort_reverse = not self.sort_reverse
            if self.sort_column is None and self.columns:
                self.sort_column = self.columns[0]
        else:
            names = list(self.columns)
            if self.sort_column in names:
                self.sort_column = names[(names.index(self.sort_column) + 1) % len(names)]
            elif names:
                self.sort_column = names[0]
            self.sort_reverse = False
        self._reshape(keep_index=self._current_index())

    def sort_by(self, column: str, reverse: bool = False) -> bool:
        if column not in self.columns:
            return False
        self.sort_column, self.sort_reverse = column, reverse
        self._reshape(keep_index=self._current_index())
        return True


def natural_widths(columns: Sequence[str], rows: list[Row]) -> dict[str, int]:
    """Each column's width for these rows: its widest cell (or its name), at most MAX_CELL, read from an even
    sample of WIDTH_SAMPLE rows, so a long listing costs no more (~27,000 cells, 50-100 ms at 10,000 rows of 13
    columns: work a view does on the service worker, not on the event loop, when it re-reads every refresh)."""
    step = max(1, len(rows) // WIDTH_SAMPLE)
    sample = [[cell_text(rows[i].get(c)) for c in columns] for i in range(0, len(rows), step)]
    return {c: min(MAX_CELL, max([cell_len(c), *(cell_len(t[n]) for t in sample)])) for n, c in enumerate(columns)}


def _position(rows: list[Row], shown: list[int], key: str, keep: str | None, keep_index: int | None) -> int:
    """Where the cursor's row is in `shown` (0 if it is gone): by index (a C-speed search), else by key."""
    if keep_index is not None:
        try:
            return shown.index(keep_index)
        except ValueError:
            return 0
    if keep is not None:
        for position, i in enumerate(shown):
            if str(rows[i].get(key)) == keep:
                return position
    return 0


def _order(rows: list[Row], predicate: Callable[[Row], bool] | None, column: Column | str | None,
           reverse: bool, keys_cache: dict[str, list[Any]] | None = None) -> list[int]:
    """The indexes of the rows to show: those the filter keeps, sorted by the column's kind (a column given by
    its name alone: numbers, then text, then none); its keys are read from and added to `keys_cache`, kept for
    these rows."""
    shown = list(range(len(rows))) if predicate is None else [i for i, row in enumerate(rows) if predicate(row)]
    if column is not None:
        typed = column if isinstance(column, Column) else Column(column)
        shown.sort(key=_column_keys(rows, typed, keys_cache).__getitem__, reverse=reverse)
    return shown


#: A column with at most one distinct value in this many rows is sorted by ranks, not by its values.
RANKED_SHARE = 4


def _column_keys(rows: list[Row], column: Column, cache: dict[str, list[Any]] | None) -> list[Any]:
    """Every row's sort key in the column (`_sort_keys`), from `cache` or made and added to it.

    A column of few distinct values (a queue, a status) is keyed by ranks instead, equal keys sharing one:
    sorting by them gives the same order, ties included (stable alike, in both directions), but compares
    small integers rather than text or tuples.
    """
    keys = None if cache is None else cache.get(column.name)
    if keys is None:
        keys = _sort_keys(list(map(operator.methodcaller("get", column.name), rows)), column)
        distinct = set(keys)
        if len(distinct) * RANKED_SHARE <= len(keys):
            place = {key: rank for rank, key in enumerate(sorted(distinct))}
            keys = list(map(place.__getitem__, keys))
        if cache is not None:
            cache[column.name] = keys
    return keys


def _sort_keys(values: list[Any], column: Column) -> list[Any]:
    """Sort keys for a column by its kind. A text or number column of all text or all whole numbers (the
    usual case) keys in C-speed passes, in the order its kind's key gives; any other through the kind's key."""
    if column.kind in (Kind.TEXT, Kind.NUMBER):
        kinds = set(map(type, values))
        if kinds == {str} and "-" not in values:  # "-" (none) sorts last: the slow path places it
            return list(map(str.casefold, values))
        if kinds == {int}:
            return values
    return list(map(column.sort_key, values))


_sort_key = any_key  # the key of a column of no declared kind


__all__ = ["Fitted", "RowTable", "fit_columns"]
