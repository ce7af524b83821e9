"""Topology as a tree, as k9s's `:xray`: every host, its NVLink domains and vSphere device groups (with the VM
holding each), their GPUs, each GPU's slices (MIG instances, replicas, vGPUs) and who holds each; `/` filters
the hosts.

A host opens one level (its domains, groups and NICs, as the drawing always showed); →/`l` opens the part
under the cursor, ←/`h` shuts it (on a part already shut or a leaf: goes to its parent), Enter opens the
thing itself — a host or a part of it: that node's screen; a GPU or a slice: the node's screen at that GPU; a
job: its describe. Only the hosts on screen are drawn (1,024 nodes cost one screenful).
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from gpuadmin.render.selector import compile_filter
from gpuadmin.service import Service
from gpuadmin.tui.draw import Toggled, TreeItem, is_open, tree_items, tree_lines
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.widgets.boards import BoardsView

COLUMNS = ["NAME", "STATE", "PLATFORM", "ORCHESTRATOR", "NVLINK"]  # what `/` can name here
MARGIN = 2  # the hosts are drawn this much narrower than the screen (the view's padding)


class TopologyScreen(ViewScreen):
    view_name = "topology"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="topology.open"),
        Binding("right,l", "expand", "Expand", show=False, id="topology.expand"),
        Binding("left,h", "collapse", "Collapse", show=False, id="topology.collapse"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._boards: list[dict[str, Any]] = []
        self._shown: list[dict[str, Any]] = []
        self.toggled: Toggled = set()  # parts opened or shut by hand, kept across live updates

    def compose_body(self) -> ComposeResult:
        toggled = self.toggled
        yield BoardsView(lambda board, _width: tree_lines(tree_items(board, toggled), toggled),
                         lambda board: len(tree_items(board, toggled)), margin=MARGIN, message="loading...",
                         id="topology-scroll")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(BoardsView).focus()

    def read(self, service: Service) -> list[dict[str, Any]]:
        return service.boards()

    def show(self, data: list[dict[str, Any]]) -> None:
        first = not self._boards
        self._boards = data
        self._draw(top=first)

    def _draw(self, *, top: bool = True) -> None:
        boards = self._boards
        if self.filter_text:
            keep = compile_filter(self.filter_text, COLUMNS)
            boards = [b for b in boards if keep({"NAME": b["name"], "STATE": b["state"],
                                                 "PLATFORM": b["platform"], "ORCHESTRATOR": b["orchestrator"],
                                                 "NVLINK": b["nvlink"]}, {})]
        self._shown = boards
        self.query_one(BoardsView).set_boards(boards, "no hosts", top=top)

    def apply_filter(self, text: str) -> None:
        if text:
            compile_filter(text, COLUMNS)  # a bad filter is refused (InputError) before it replaces the one shown
        self.filter_text = text
        self._draw()
        self.update_header()

    def crumb(self) -> str:
        return "topology" + (f" /{self.filter_text}" if self.filter_text else "")

    # the cursor ------------------------------------------------------------------------------------
    def current(self) -> tuple[int, TreeItem] | None:
        """(board, item) under the cursor."""
        tree = self.query(BoardsView)
        if not tree or not self._shown:
            return None
        view = tree.first()
        board, line = view.locate(view.cursor)
        items = tree_items(self._shown[board], self.toggled)
        return board, items[min(line, len(items) - 1)]

    def selected(self) -> tuple[str, str] | None:
        """What `d` describes: the host, the GPU or the job under the cursor."""
        current = self.current()
        return current[1].opens if current is not None else None

    def action_open(self) -> None:
        current = self.current()
        if current is not None:
            self.gpuadmin.open_thing(*current[1].opens)

    def action_expand(self) -> None:
        current = self.current()
        if current is not None and current[1].expandable and not is_open(current[1], self.toggled):
            self._toggle(*current)

    def action_collapse(self) -> None:
        current = self.current()
        if current is None:
            return
        board, item = current
        if is_open(item, self.toggled):
            self._toggle(board, item)
            return
        view = self.query_one(BoardsView)  # shut already, or a leaf: to its parent, as a file tree does
        items = tree_items(self._shown[board], self.toggled)
        line = view.cursor - view.board_start(board)
        parent = next((i for i in range(line - 1, -1, -1) if items[i].depth < item.depth), None)
        if parent is not None:
            view.action_cursor(parent - line)

    def _toggle(self, board: int, item: TreeItem) -> None:
        self.toggled.symmetric_difference_update({item.key})
        self.query_one(BoardsView).redraw(board)
