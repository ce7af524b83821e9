"""`d` and `y`: the selected thing described (the same data as `gpuadmin describe`), as text or YAML."""

from __future__ import annotations

from typing import Any, ClassVar

import yaml
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpuadmin.render.describe import as_text
from gpuadmin.render.text import safe


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

    def __init__(self, title: str, data: dict[str, Any], fmt: str) -> None:
        super().__init__()
        self.title_text = title
        self.data = data
        self.fmt = fmt

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="describe-scroll") as scroll:
            scroll.border_title = Text(f"{self.fmt}: {safe(self.title_text)}")
            yield Static(describe_body(self.data, self.fmt), id="describe")

    def on_mount(self) -> None:
        self.query_one("#describe-scroll").focus()

    def action_switch_format(self) -> None:
        self.fmt = "text" if self.fmt == "yaml" else "yaml"
        self.query_one("#describe", Static).update(describe_body(self.data, self.fmt))
        self.query_one("#describe-scroll").border_title = Text(f"{self.fmt}: {safe(self.title_text)}")
