"""Topology: every host's NVLink domains (NVSwitch boards, bridged pairs), its vSphere device groups of
2, 4 or 8 GPUs with the VM holding each, and its RDMA NICs; `/` filters the hosts."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult

from gpuadmin.render.selector import compile_filter
from gpuadmin.service import Service
from gpuadmin.tui.draw import topology_line_count, topology_lines
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.widgets.boards import BoardsView

COLUMNS = ["NAME", "STATE", "PLATFORM", "ORCHESTRATOR", "NVLINK"]  # what `/` can name here
MARGIN = 2  # the hosts are drawn this much narrower than the screen (the view's padding)


class TopologyScreen(ViewScreen):
    view_name = "topology"

    def __init__(self) -> None:
        super().__init__()
        self._boards: list[dict[str, Any]] = []

    def compose_body(self) -> ComposeResult:
        # only the hosts on screen are drawn (a PageDown at 1,024 nodes costs one screenful)
        yield BoardsView(topology_lines, topology_line_count, margin=MARGIN, message="loading...",
                         id="topology-scroll")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(BoardsView).focus()

    def read(self, service: Service) -> list[dict[str, Any]]:
        return service.boards()

    def show(self, data: list[dict[str, Any]]) -> None:
        self._boards = data
        self._draw()

    def _draw(self) -> None:
        boards = self._boards
        if self.filter_text:
            keep = compile_filter(self.filter_text, COLUMNS)
            boards = [b for b in boards if keep({"NAME": b["name"], "STATE": b["state"],
                                                 "PLATFORM": b["platform"], "ORCHESTRATOR": b["orchestrator"],
                                                 "NVLINK": b["nvlink"]}, {})]
        self.query_one(BoardsView).set_boards(boards, "no hosts")
    def apply_filter(self, text: str) -> None:
        if text:
            compile_filter(text, COLUMNS)  # a bad filter is refused (InputError) before it replaces the one shown
        self.filter_text = text
        self._draw()
        self.update_header()

    def crumb(self) -> str:
        return "topology" + (f" /{self.filter_text}" if self.filter_text else "")
