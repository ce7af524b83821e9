"""`?`: the keys of the view on top, grouped (navigate, view, change), then the global keys, the `:` commands and
the filter language. Keys the role may not use are listed and marked with the role they need (the gate hides
them from the footer). Every key is drawn with the keymap's keys and its binding id, to remap it."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gpuadmin.render.text import safe
from gpuadmin.tui.keys import KeyRow, grouped

KEYS_WIDTH = 14
DESCRIPTION_WIDTH = 34


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "Back", id="help.close")]

    def __init__(self, view: str, here: list[KeyRow], everywhere: list[KeyRow], role: str,
                 commands: list[tuple[str, str]]) -> None:
        super().__init__()
        self.view = view
        self.here = here
        self.everywhere = everywhere
        self.role = role
        self.commands = commands

    @property
    def rows(self) -> list[KeyRow]:
        """Every key listed, in the order shown."""
        return [row for _, members in [*grouped(self.here), *grouped(self.everywhere)] for row in members]

    def compose(self) -> ComposeResult:
        text = Text()
        text.append(f"Keys in {self.view}", style="bold")
        text.append("  (remap by id in keymap.yaml; every id: docs/tui.md)\n")
        self._groups(text, self.here)
        text.append("\nIn every view\n", style="bold")
        self._groups(text, self.everywhere)
        if any(row.needs for row in self.rows):
            text.append(f"\n(needs ROLE): refused to your role, {self.role} (`gpuadmin whoami`)\n")
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

    def _groups(self, text: Text, rows: list[KeyRow]) -> None:
        for group, members in grouped(rows):
            text.append(f" {group}\n", style="italic")
            for row in members:
                keys = " ".join(self.app.get_key_display(Binding(key, "")) for key in row.keys.split(","))
                description = f"{row.description} (needs {row.needs})" if row.needs else row.description
                # safe: a keymap's keys are the user's text, drawn as written
                text.append(f"  {safe(keys):<{KEYS_WIDTH}} {description:<{DESCRIPTION_WIDTH}} {row.binding_id}\n",
                            style="dim" if row.needs else "")

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()
