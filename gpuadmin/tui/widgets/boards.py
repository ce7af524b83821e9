"""BoardsView: many nodes' drawings in one scrolling view, virtualized like the jobs table.

The topology view draws every host of the cluster (a handful of lines each). Drawn into one `Static`, every
scroll re-lays out the whole drawing — about a second a PageDown at 1,024 nodes. Here each host's line count
is known without drawing it (`count`), so the view knows its height at once, and `render_line` draws only
the hosts that have a line on screen, keeping each drawn host until the width or the hosts change.
What is drawn is the same drawing (`draw`), line for line.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

from rich.segment import Segment
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

Board = dict[str, Any]
Draw = Callable[[Board, int], list[Text]]  # a board at a width -> its lines
Count = Callable[[Board], int]  # how many lines `draw` gives, without drawing


class BoardsView(ScrollView, can_focus=True):
    def __init__(self, draw: Draw, count: Count, *, margin: int, message: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self._draw = draw
        self._count = count
        self._margin = margin  # the width a board is drawn at: the screen's width less this
        self._boards: Sequence[Board] = []
        self._starts: list[int] = [0]  # the first line of each board, and the total last
        self._drawn: dict[int, list[Text]] = {}
        self._drawn_width = -1
        self.message = Text(message)  # shown when there are no boards ("loading...", "no hosts")

    def set_boards(self, boards: Sequence[Board], message: str) -> None:
        self._boards = boards
        self._starts = [0, *accumulate(self._count(board) for board in boards)]
        self._drawn = {}
        self.message = Text(message)
        self.virtual_size = Size(self.size.width, max(1, self._starts[-1]))
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    @property
    def line_count(self) -> int:
        return self._starts[-1]

    def line(self, index: int) -> Text:
        """Line `index` of the whole drawing (drawing only the board it belongs to)."""
        width = self.app.size.width - self._margin
        if width != self._drawn_width:
            self._drawn, self._drawn_width = {}, width
        board = bisect_right(self._starts, index) - 1
        lines = self._drawn.get(board)
        if lines is None:
            lines = self._drawn[board] = self._draw(self._boards[board], width)
        return lines[index - self._starts[board]]

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
        if text.cell_len > width:  # never wrapped: a long line ends in an ellipsis at the edge, as a Static's
            text = text.copy()
            text.truncate(width, overflow="ellipsis")
        segments = Segment.apply_style(text.render(self.app.console, end=""), base)
        return Strip(segments).extend_cell_length(width, base)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, max(1, self.line_count))


__all__ = ["BoardsView"]
