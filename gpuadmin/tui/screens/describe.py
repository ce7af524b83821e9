"""`d` and `y`: the selected thing described (the same data as `gpuadmin describe`), as text or YAML; a GPU's
with its (and its MIG instances') utilisation over the last hour as sparklines, read on the service worker once
the description shows."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import yaml
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpuadmin.errors import GpuadminError
from gpuadmin.render.describe import as_text
from gpuadmin.render.text import safe
from gpuadmin.service import TelemetryUnset
from gpuadmin.tui.session import Session, error_lines
from gpuadmin.tui.widgets.sparks import UtilSparks, spark_lines
from gpuadmin.tui.worker import Request


def describe_body(data: dict[str, Any], fmt: str) -> Text:
    if fmt == "yaml":
        text = yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)
        return Text("\n".join(safe(line) for line in text.split("\n")))
    return Text(as_text(data))


class DescribeScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Back", id="describe.close"),
        Binding("y", "switch_format", "YAML/text", id="describe.format"),
        # a pending job's remedy, planned into the review: the app's action (and gate), under the jobs view's id
        # so one keymap entry moves both
        Binding("R", "app.remedy", "Remedy", id="edit.remedy"),
    ]

    def __init__(self, title: str, data: dict[str, Any], fmt: str, *,
                 gpu: tuple[Session, str, int] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.data = data
        self.fmt = fmt
        self.gpu = gpu  # a GPU's describe: the session to ask for its history, its node and index

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="describe-scroll") as scroll:
            scroll.border_title = Text(f"{self.fmt}: {safe(self.title_text)}")
            if self.gpu is not None:
                yield UtilSparks(id="describe-sparks")
            yield Static(describe_body(self.data, self.fmt), id="describe")

    def on_mount(self) -> None:
        self.query_one("#describe-scroll").focus()
        if self.gpu is not None:
            session, node, index = self.gpu
            session.ask(Request(f"reading {node}/{index}'s utilisation history",
                                lambda service: service.node_utilisation(node), self._show_sparks,
                                failed=self._sparks_failed, owner=self))

    def _show_sparks(self, history: dict[Any, Any]) -> None:
        assert self.gpu is not None
        index = self.gpu[2]
        keys = [key for key in history if key[1] == index]
        lines = spark_lines(history, time.time(), only=keys)
        sparks = self.query_one(UtilSparks)
        if lines:
            sparks.show_lines("utilisation, last hour:", lines)
        else:
            sparks.show_message("utilisation, last hour: Prometheus has no series for this GPU")

    def _sparks_failed(self, failed: GpuadminError) -> None:
        sparks = self.query_one(UtilSparks)
        if isinstance(failed, TelemetryUnset):
            sparks.hide()
        else:
            sparks.show_message(f"utilisation, last hour: {error_lines(failed)}")

    def action_switch_format(self) -> None:
        self.fmt = "text" if self.fmt == "yaml" else "yaml"
        self.query_one("#describe", Static).update(describe_body(self.data, self.fmt))
        self.query_one("#describe-scroll").border_title = Text(f"{self.fmt}: {safe(self.title_text)}")
