"""`?`: every binding of the console (after the user's keymap), the `:` commands and the filter language."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "Back", id="help.close")]

    def __init__(self, rows: list[tuple[str, str, str]], commands: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows
        self.commands = commands

    def compose(self) -> ComposeResult:
        text = Text()
        text.append("Keys", style="bold")
        text.append("  (remap any by its id in the keymap file; `gpuadmin tui --help`)\n")
        for keys, description, binding_id in self.rows:
            text.append(f"  {keys:<16} {description:<34} {binding_id}\n")
        text.append("\nCommands after `:`\n", style="bold")
        for command, description in self.commands:
            text.append(f"  :{command:<22} {description}\n")
        text.append("\nFilter after `/`\n", style="bold")
        text.append("  text              rows with that text in any cell (any case)\n"
                    "  key=value         a column or node label equals (key!=value: differs)\n"
                    "  key in (a,b)      one of; key notin (a,b): none of; a,b: both hold\n"
                    "  !...              inverts the filter; an empty filter clears it\n")
        with VerticalScroll(id="help-scroll") as scroll:
            scroll.border_title = "help"
            yield Static(text)

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()
