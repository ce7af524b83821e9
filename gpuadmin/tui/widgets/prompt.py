"""The `:` command line and the `/` filter line: one Input, with completion and history for commands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input

from gpuadmin.render.text import UNSAFE


def _picture(char: str) -> str:
    """One visible cell for a character `safe` escapes: a C0 control's Unicode control picture (ESC: \u241b),
    else U+FFFD (a C1 control, a bidi override, a zero-width space: each takes a cell the operator sees)."""
    code = ord(char)
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"


class SafeInput(Input):
    """An Input whose value may hold data (a filter from a queue's name, a form's default from the state): a
    control byte or an invisible character in it is drawn as a picture of itself, one cell for one character so
    the cursor stays in place, and never reaches the terminal. The value itself is kept as it is."""

    @property
    def _value(self) -> Text:
        return Text(UNSAFE.sub(lambda m: _picture(m.group()), self.value), no_wrap=True, overflow="ignore", end="")


class Prompt(SafeInput):
    """Hidden until `:` or `/`; Enter posts `Prompt.Done`, Esc cancels. Up/down walk the command history."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", show=False, id="prompt.cancel"),
        Binding("up", "history(-1)", "Previous", show=False, id="prompt.history_back"),
        Binding("down", "history(1)", "Next", show=False, id="prompt.history_forward"),
        Binding("tab", "complete", "Complete", show=False, id="prompt.complete"),
    ]

    class Done(Message):
        def __init__(self, mode: str, value: str | None) -> None:
            super().__init__()
            self.mode = mode  # "command" or "filter"
            self.value = value  # None when cancelled

    def __init__(self, words: Sequence[str], *, history: dict[str, list[str]] | None = None,
                 id: str | None = None) -> None:
        super().__init__(id=id, select_on_focus=False)
        self.mode = "command"
        self.words = list(words)
        # one history for the whole console (every view's prompt shares the app's), not one per view
        self.history: dict[str, list[str]] = history if history is not None else {"command": [], "filter": []}
        self._walk = 0

    def open(self, mode: str, active: str = "") -> None:
        """Open empty, as k9s's `/` does: what is typed is the whole new filter, never appended to the one in
        force. The `active` filter becomes the latest history entry, so Up brings it back to edit."""
        self.mode = mode
        self.suggester = SuggestFromList(self.words, case_sensitive=False) if mode == "command" else None
        past = self.history[mode]
        if active and (not past or past[-1] != active):
            past.append(active)
        if mode == "command":
            self.placeholder = "command: nodes gpus topo slices jobs queues journal overview theme q"
        elif active:
            self.placeholder = "new filter (Up: edit the one in force; Enter on empty: clear it)"
        else:
            self.placeholder = "filter: text, key=value, key!=value, key in (a,b); ! inverts"
        self.value = ""
        self._walk = len(past)
        self.display = True
        # at once, not on the next idle (Widget.focus): keys typed right after `:` must land here
        self.screen.set_focus(self)

    def close(self) -> None:
        self.display = False
        self.value = ""

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = self.value.strip()
        if value and (not self.history[self.mode] or self.history[self.mode][-1] != value):
            self.history[self.mode].append(value)
        self.post_message(self.Done(self.mode, value))

    def action_cancel(self) -> None:
        self.post_message(self.Done(self.mode, None))

    def action_history(self, step: int) -> None:
        past = self.history[self.mode]
        if not past:
            return
        self._walk = max(0, min(len(past), self._walk + step))
        self.value = past[self._walk] if self._walk < len(past) else ""
        self.cursor_position = len(self.value)

    def action_complete(self) -> None:
        if self.mode != "command":
            return
        matches = [w for w in self.words if w.startswith(self.value.strip().lower())]
        if matches:
            self.value = matches[0]
            self.cursor_position = len(self.value)
