"""The footer: the view's most used keys and `?`, as many whole keys as the width holds.

Textual's Footer draws every shown binding in a row and lets the last ones run off the edge, cut mid-word
("x Cancel j" at 80 columns). This one orders the keys the view offers (`gpuadmin.tui.keys.footer_rank`: `?`
first, then open, describe, filter, the view's changes, ...) and leaves out whole keys that do not fit; `?`
lists the rest.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gpuadmin.tui.keys import footer_rank

KEY_GAP = 1  # the compact footer's margin after each key


class KeyFooter(Footer):
    def __init__(self) -> None:
        super().__init__(compact=True, show_command_palette=False)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        room = self.size.width or self.app.size.width
        for binding, enabled, tooltip in self.offered():
            key_display = self.app.get_key_display(binding)
            width = cell_len(key_display) + (1 + cell_len(binding.description) if binding.description else 0)
            if width > room:
                continue
            room -= width + KEY_GAP
            yield FooterKey(binding.key, key_display, binding.description, binding.action, disabled=not enabled,
                            tooltip=tooltip).data_bind(compact=Footer.compact)

    def offered(self) -> list[tuple[Binding, bool, str]]:
        """The shown bindings active on this screen, one per action (as Textual's footer), in footer order."""
        by_action: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                by_action.setdefault(binding.action, (binding, enabled, tooltip))
        return sorted(by_action.values(), key=lambda offered: footer_rank(offered[0].id or ""))

    def on_resize(self, _event: events.Resize) -> None:
        if self._bindings_ready:  # a new width holds more or fewer keys
            self.call_after_refresh(self.recompose)
