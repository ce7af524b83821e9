"""Long work (a scheduling cycle on a large state): a progress bar, the time it has taken, and Esc to cancel.
Cancelling drops the result: the work only plans, so the state is left as it was."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import ProgressBar, Static


class ProgressScreen(ModalScreen[bool]):
    """Dismisses with False when cancelled; the owner dismisses it with True when the work is done."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="progress.cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title
        self.started = time.monotonic()

    def compose(self) -> ComposeResult:
        with Vertical(id="progress-box") as box:
            box.border_title = Text(self.title_text)
            yield ProgressBar(total=None, show_eta=False, id="progress-bar")
            yield Static(Text("Esc cancels: nothing is applied"), id="progress-elapsed")

    def on_mount(self) -> None:
        self.set_interval(0.25, self._tick)

    def _tick(self) -> None:
        elapsed = time.monotonic() - self.started
        self.query_one("#progress-elapsed", Static).update(Text(f"{elapsed:.1f} s  Esc cancels: nothing is applied"))

    def action_cancel(self) -> None:
        self.dismiss(False)
