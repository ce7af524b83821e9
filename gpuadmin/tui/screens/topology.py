"""Topology: every host's NVLink domains (NVSwitch boards, bridged pairs), its vSphere device groups of
2, 4 or 8 GPUs with the VM holding each, and its RDMA NICs; `/` filters the hosts."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuadmin.render.selector import compile_filter
from gpuadmin.tui.draw import topology_lines, unwrapped
from gpuadmin.tui.screens.base import ViewScreen

COLUMNS = ["NAME", "STATE", "PLATFORM", "ORCHESTRATOR", "NVLINK"]  # what `/` can name here


class TopologyScreen(ViewScreen):
    view_name = "topology"

    def __init__(self) -> None:
        super().__init__()
        self._boards: list[dict[str, Any]] = []

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="topology-scroll"):
            yield Static("loading...", id="topology")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#topology-scroll").focus()

    def read(self) -> None:
        self.app.call_from_thread(self._show, self.session.call(self.session.service.boards))

    def _show(self, boards: list[dict[str, Any]]) -> None:
        self._boards = boards
        self._draw()

    def _draw(self) -> None:
        boards = self._boards
        if self.filter_text:
            keep = compile_filter(self.filter_text, COLUMNS)
            boards = [b for b in boards if keep({"NAME": b["name"], "STATE": b["state"],
                                                 "PLATFORM": b["platform"], "ORCHESTRATOR": b["orchestrator"],
                                                 "NVLINK": b["nvlink"]}, {})]
        lines: list[Text] = []
        for board in boards:
            lines += topology_lines(board, self.size.width - 2)
        self.query_one("#topology", Static).update(unwrapped(lines) if lines else Text("no hosts"))

    def apply_filter(self, text: str) -> None:
        if text:
            compile_filter(text, COLUMNS)  # a bad filter is refused (InputError) before it replaces the one shown
        self.filter_text = text
        self._draw()
        self.update_header()

    def crumb(self) -> str:
        return "topology" + (f" /{self.filter_text}" if self.filter_text else "")
