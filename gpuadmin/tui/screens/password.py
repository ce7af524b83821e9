"""The vCenter login of a console on a vCenter-bound state that has no password ($GPUADMIN_VCENTER_PASSWORD unset):
asked once, when the watch would start. The user and the vCenter are named (as text: both come from the state's
binding); the password field shows no character. Enter posts `PasswordScreen.Submitted` — the console logs in
with it on its service worker, which keeps it in memory for the watch and for applies
(`gpuadmin.tui.cluster_link`) — and the screen waits for the answer: in, it closes; a wrong password is said here
and asked again; Esc goes on without (the badge says `NOT WATCHED` and why). The password is never drawn, logged or
put in a notification: the message that carries it hides it from its repr."""

from __future__ import annotations

from typing import ClassVar

from rich.repr import Result
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gpuadmin.render.text import safe


class PasswordScreen(ModalScreen[None]):
    """Dismissed by its owner once logged in or out of tries; Esc posts `Skipped` and closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "skip", "Go on without", id="password.skip")]

    class Submitted(Message):
        """A password typed and Enter pressed: log in with it."""

        def __init__(self, password: str) -> None:
            super().__init__()
            self.password = password

        def __rich_repr__(self) -> Result:  # Textual's devtools log a message by its repr: not this one's password
            yield "password", "(hidden)"

    class Skipped(Message):
        """Esc: the console goes on without a password."""

    def __init__(self, user: str, server: str) -> None:
        super().__init__()
        self.user = user
        self.server = server

    def compose(self) -> ComposeResult:
        with Vertical(id="password-box") as box:
            box.border_title = Text("vCenter login")
            yield Static(Text(f"Password for {safe(self.user)} at {safe(self.server)}"), id="password-who")
            yield Input(password=True, placeholder="password, Enter", id="password-input")
            yield Static(Text(""), id="password-said")
            yield Static(Text("Enter logs in (the console watches vCenter and applies there); Esc goes on without "
                              "(not watched)"), classes="form-note")

    def on_mount(self) -> None:
        self.query_one("#password-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        field = self.query_one("#password-input", Input)
        if not event.value:
            self._say("type the password, or Esc to go on without")
            return
        field.disabled = True  # one login at a time
        self._say("logging in...")
        self.app.post_message(self.Submitted(event.value))

    def refused(self, why: str) -> None:
        """The login failed (`why`, already safe text): say so, and ask again with an empty field."""
        field = self.query_one("#password-input", Input)
        field.value = ""
        field.disabled = False
        field.focus()
        self._say(why)

    def action_skip(self) -> None:
        self.app.post_message(self.Skipped())
        self.dismiss(None)

    def _say(self, text: str) -> None:
        self.query_one("#password-said", Static).update(Text(text))


__all__ = ["PasswordScreen"]
