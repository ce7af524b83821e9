"""A form that builds change ops: labelled fields, checked as they are read, submitted with Enter on the last
field or ctrl+o (not ctrl+s: it freezes terminals that use XON/XOFF flow control).

Each form is data (`FormSpec`): its fields and a function from the values to change items (plain dicts, as
a change file holds them). The service plans them; the plan review decides. A value that does not read is
shown next to its field and nothing is submitted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select, Static

from gpuadmin.render.text import safe
from gpuadmin.tui.widgets.prompt import SafeInput

Kind = Literal["text", "int", "float", "choice", "bool"]
Items = list[dict[str, Any]]


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    kind: Kind = "text"
    choices: Sequence[str] = ()
    default: str = ""
    required: bool = True
    help: str = ""


@dataclass(frozen=True)
class FormSpec:
    title: str
    fields: Sequence[Field]
    build: Callable[[dict[str, Any]], Items]  # values -> change items; ValueError names what is wrong
    note: str = ""


def read_value(spec: Field, raw: str) -> Any:
    """A field's typed value, or ValueError with what an operator should fix."""
    raw = raw.strip()
    if not raw:
        if spec.required:
            raise ValueError(f"{spec.label}: required")
        return None
    if spec.kind == "int":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{spec.label}: a whole number, not {raw!r}") from None
    if spec.kind == "float":
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"{spec.label}: a number, not {raw!r}") from None
    if spec.kind == "bool":
        if raw.lower() not in ("yes", "no"):
            raise ValueError(f"{spec.label}: yes or no")
        return raw.lower() == "yes"
    if spec.kind == "choice" and raw not in spec.choices:
        raise ValueError(f"{spec.label}: one of {', '.join(spec.choices)}")
    return raw


class FormScreen(ModalScreen[Items | None]):
    """Dismisses with the change items, or None when cancelled."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="form.cancel"),
        Binding("ctrl+o", "submit", "Plan it", id="form.submit"),
    ]

    def __init__(self, spec: FormSpec) -> None:
        super().__init__()
        self.spec = spec

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="form-scroll") as scroll:
            scroll.border_title = Text(safe(self.spec.title))
            if self.spec.note:
                yield Static(Text(self.spec.note), classes="form-note")
            for spec in self.spec.fields:
                yield Label(Text(spec.label + ("" if spec.required else " (optional)")))
                if spec.kind in ("choice", "bool"):
                    options = list(spec.choices) if spec.kind == "choice" else ["yes", "no"]
                    yield Select([(Text(safe(o)), o) for o in options], value=spec.default or Select.NULL,
                                 allow_blank=not spec.required or not spec.default, id=f"field-{spec.name}",
                                 compact=True)
                else:
                    yield SafeInput(value=spec.default, placeholder=spec.help, id=f"field-{spec.name}",
                                    compact=True)
            yield Static("", id="form-error")
            yield Static(Text("Enter on the last field or ctrl+o: plan it; Esc: cancel"), classes="form-note")

    def on_mount(self) -> None:
        self.focus_next()

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in self.spec.fields:
            widget = self.query_one(f"#field-{spec.name}")
            if isinstance(widget, Select):
                raw = "" if widget.value is Select.NULL else str(widget.value)
            else:
                assert isinstance(widget, Input)
                raw = widget.value
            out[spec.name] = read_value(spec, raw)
        return out

    def action_submit(self) -> None:
        try:
            items = self.spec.build(self.values())
        except ValueError as bad:
            self.query_one("#form-error", Static).update(Text(f"! {bad}"))
            return
        self.dismiss(items)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        inputs = [w for w in self.query("Input, Select") if w.id and w.id.startswith("field-")]
        if inputs and event.input is inputs[-1]:
            self.action_submit()
        else:
            self.focus_next()
