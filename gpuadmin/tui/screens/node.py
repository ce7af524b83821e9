"""One node: its GPUs with each MIG layout drawn as memory and compute slices, time-sliced replicas and
vGPUs with their holders, its device groups, NVLink domain and NICs. Opened with Enter on a node."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuadmin.service import Service
from gpuadmin.tui.draw import node_lines, unwrapped
from gpuadmin.tui.screens.base import ViewScreen


class NodeScreen(ViewScreen):
    view_name = "node"

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node
        self._board: dict[str, Any] | None = None

    def crumb(self) -> str:
        return self.node

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="node-scroll"):
            yield Static("loading...", id="node")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#node-scroll").focus()

    def read(self, service: Service) -> dict[str, Any]:
        return service.node_board(self.node)

    def show(self, data: dict[str, Any]) -> None:
        self._show(data)

    def read_failed(self, message: str) -> None:
        """Say it in the body too: a node that is not there must not look like one still loading."""
        self.query_one("#node", Static).update(Text(message))
        super().read_failed(message)

    def _show(self, board: dict[str, Any]) -> None:
        self._board = board
        self.query_one("#node", Static).update(unwrapped(node_lines(board, self.size.width - 4)))

    def on_resize(self) -> None:
        if self._board is not None:
            self._show(self._board)

    def selected(self) -> tuple[str, str] | None:
        return "node", self.node
