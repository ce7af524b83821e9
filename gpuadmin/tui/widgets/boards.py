"""BoardsView: many nodes' drawings in one scrolling view, virtualized like the jobs table, with a cursor.

The topology view draws every host of the cluster (a handful of lines each). Drawn into one `Static`, every
scroll re-lays out the whole drawing — about a second a PageDown at 1,024 nodes. Here each host's line count
is known without drawing it (`count`), so the view knows its height at once, and `render_line` draws only
the hosts that have a line on screen, keeping each drawn host until the width, the hosts or that host's
expansion (`redraw`) change. The cursor is one line of the whole drawing: `>` in the gutter and the cursor
style, so it reads without colour; the view that owns the drawing says what a line is (`locate`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any, ClassVar

from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

Board = dict[str, Any]
Draw = Callable[[Board, int], list[Text]]  # a board at a width -> its lines
Count = Callable[[Board], int]  # how many lines `draw` gives, without drawing


class BoardsView(ScrollView, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"boardsview--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="boards.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="boards.down"),
        Binding("pageup,ctrl+b", "page(-1)", "Page up", show=False, id="boards.page_up"),
        Binding("pagedown,ctrl+f", "page(1)", "Page down", show=False, id="boards.page_down"),
        Binding("home,g", "jump(0)", "Top", show=False, id="boards.top"),
        Binding("end,G", "jump(-1)", "Bottom", show=False, id="boards.bottom"),
    ]

    def __init__(self, draw: Draw, count: Count, *, margin: int, message: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self._draw = draw
        self._count = count
        self._margin = margin  # the width a board is drawn at: the screen's width less this
        self._boards: Sequence[Board] = []
        self._starts: list[int] = [0]  # the first line of each board, and the total last
        self._drawn: dict[int, list[Text]] = {}
        self._drawn_width = -1
        self.cursor = 0  # a line of the whole drawing
        self.message = Text(message)  # shown when there are no boards ("loading...", "no hosts")

    def set_boards(self, boards: Sequence[Board], message: str, *, top: bool = True) -> None:
        """New boards; the cursor goes to the top (a new filter), or stays where it was (`top=False`: a live
        update of the same hosts)."""
        self._boards = boards
        self._starts = [0, *accumulate(self._count(board) for board in boards)]
        self._drawn = {}
        self.message = Text(message)
        self.virtual_size = Size(self.size.width, max(1, self._starts[-1]))
        if top:
            self.cursor = 0
            self.scroll_to(y=0, animate=False, immediate=True)
        self._move_to(self.cursor)
        self.refresh()

    def redraw(self, board: int) -> None:
        """One board's lines changed in number (a part expanded or collapsed): recount, draw it again."""
        self._starts = [0, *accumulate(self._count(b) for b in self._boards)]
        self._drawn.pop(board, None)
        self.virtual_size = Size(self.size.width, max(1, self._starts[-1]))
        self._move_to(self.cursor)
        self.refresh()

    @property
    def line_count(self) -> int:
        return self._starts[-1]

    def locate(self, index: int) -> tuple[int, int]:
        """(board, line within it) of line `index`."""
        board = bisect_right(self._starts, index) - 1
        return board, index - self._starts[board]

    def board_start(self, board: int) -> int:
        return self._starts[board]

    def line(self, index: int) -> Text:
        """Line `index` of the whole drawing (drawing only the board it belongs to)."""
        width = self.app.size.width - self._margin
        if width != self._drawn_width:
            self._drawn, self._drawn_width = {}, width
        board, at = self.locate(index)
        lines = self._drawn.get(board)
        if lines is None:
            lines = self._drawn[board] = self._draw(self._boards[board], width)
        return lines[at]

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        index = self.scroll_offset.y + y
        if not self._boards:
            text = self.message if y == 0 else None
        else:
            text = self.line(index) if index < self.line_count else None
        if text is None:
            return Strip.blank(width, base)
        if index == self.cursor and self._boards:
            text = Text(">") + text[1:]  # the gutter's first cell: the drawing leaves it blank for this
            text.stylize(self.get_component_rich_style("boardsview--cursor"))
        if text.cell_len > width:  # never wrapped: a long line ends in an ellipsis at the edge, as a Static's
            text = text.copy()
            text.truncate(width, overflow="ellipsis")
        segments = Segment.apply_style(text.render(self.app.console, end=""), base)
        return Strip(segments).extend_cell_length(width, base)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, max(1, self.line_count))
        self.call_after_refresh(self._scroll_cursor_into_view)

    # the cursor ------------------------------------------------------------------------------------
    def _move_to(self, line: int) -> None:
        self.cursor = max(0, min(line, self.line_count - 1))
        self._scroll_cursor_into_view()
        self.refresh()

    def _scroll_cursor_into_view(self) -> None:
        visible = max(1, self.size.height)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        self._move_to(self.cursor + step)

    def action_page(self, direction: int) -> None:
        """A page down moves the view a page and the cursor with it (the cursor keeps its place on screen)."""
        page = max(1, self.size.height - 1)
        self.scroll_to(y=self.scroll_offset.y + direction * page, animate=False, immediate=True)
        self._move_to(self.cursor + direction * page)

    def action_jump(self, where: int) -> None:
        self._move_to(0 if where == 0 else self.line_count - 1)


__all__ = ["BoardsView"]
