"""One node: its GPUs with each MIG layout drawn as memory and compute slices, time-sliced replicas and
vGPUs with their holders, its device groups, NVLink domain and NICs. Opened with Enter on a node; Enter on a
GPU (or a free slice) opens it at that GPU: scrolled to it, its title marked `>` and reversed, and `d`
describes that GPU. Below the drawing, each GPU's (and MIG instance's) utilisation over the last hour as a
sparkline, read on the service worker after the board (`Service.node_utilisation`: this node's series only)."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuadmin.errors import GpuadminError
from gpuadmin.service import Service, TelemetryUnset
from gpuadmin.tui.draw import gpu_lines, node_lines, unwrapped
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.session import error_lines
from gpuadmin.tui.widgets.sparks import UtilSparks, spark_lines
from gpuadmin.tui.worker import Request

SPARKS_TITLE = "utilisation, last hour (a point a minute):"


class NodeScreen(ViewScreen):
    view_name = "node"

    def __init__(self, node: str, *, gpu: int | None = None) -> None:
        super().__init__()
        self.node = node
        self.gpu = gpu  # the GPU it was opened at, if any
        self._board: dict[str, Any] | None = None

    def crumb(self) -> str:
        return self.node if self.gpu is None else f"{self.node}/{self.gpu}"

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="node-scroll"):
            yield Static("loading...", id="node")
            yield UtilSparks(id="node-sparks")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#node-scroll").focus()

    def read(self, service: Service) -> dict[str, Any]:
        return service.node_board(self.node)

    def show(self, data: dict[str, Any]) -> None:
        self._show(data)
        node = self.node
        self.session.ask(Request(f"reading {node}'s utilisation history",
                                 lambda service: service.node_utilisation(node), self._show_sparks,
                                 failed=self._sparks_failed, owner=self, key=f"sparks:{id(self)}"))

    def _show_sparks(self, history: dict[Any, Any]) -> None:
        sparks = self.query_one("#node-sparks", UtilSparks)
        lines = spark_lines(history, time.time())
        if lines:
            sparks.show_lines(SPARKS_TITLE, lines)
        else:
            sparks.show_message("utilisation, last hour: Prometheus has no series for this node's GPUs")

    def _sparks_failed(self, failed: GpuadminError) -> None:
        sparks = self.query_one("#node-sparks", UtilSparks)
        if isinstance(failed, TelemetryUnset):
            sparks.hide()
        else:
            sparks.show_message(f"utilisation, last hour: {error_lines(failed)}")

    def read_failed(self, message: str) -> None:
        """Say it in the body too: a node that is not there must not look like one still loading."""
        self.query_one("#node", Static).update(Text(message))
        super().read_failed(message)

    def _show(self, board: dict[str, Any]) -> None:
        self._board = board
        width = self.size.width - 4
        lines = node_lines(board, width)
        at = self._gpu_line(board, width, len(lines))
        if at is not None:
            title = lines[at] = Text("> ") + lines[at]
            title.stylize("reverse")
        self.query_one("#node", Static).update(unwrapped(lines))
        if at is not None:
            self.query_one("#node-scroll", VerticalScroll).scroll_to(y=at, animate=False, immediate=True)

    def _gpu_line(self, board: dict[str, Any], width: int, total: int) -> int | None:
        """The line of the GPU this screen was opened at: the GPUs are drawn last, in order."""
        gpus = board["gpus"]
        position = next((i for i, gpu in enumerate(gpus) if gpu["index"] == self.gpu), None)
        if position is None:
            return None
        return total - sum(len(gpu_lines(gpu, width)) for gpu in gpus[position:])

    def on_resize(self) -> None:
        if self._board is not None:
            self._show(self._board)

    def selected(self) -> tuple[str, str] | None:
        return ("node", self.node) if self.gpu is None else ("gpu", f"{self.node}/{self.gpu}")
