"""A form that builds change ops: labelled fields, checked as they are read, submitted with Enter on the last
field or ctrl+o (not ctrl+s: it freezes terminals that use XON/XOFF flow control).

Each form is data (`FormSpec`): its fields and a function from the values to change items (plain dicts, as
a change file holds them). The service plans them; the plan review decides. A value that does not read — as
typed, or as the change op's bounded field (replicas 0) — is shown next to its field, the form stays open
and nothing is submitted.
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

from gpuadmin.errors import InputError
from gpuadmin.render.text import safe
from gpuadmin.service import Service
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


class FieldError(ValueError):
    """What the operator typed in named fields does not read: field name -> the message to show under it."""

    def __init__(self, by_field: dict[str, str]) -> None:
        super().__init__("; ".join(by_field.values()))
        self.by_field = by_field


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
                yield Static("", id=f"error-{spec.name}", classes="field-error")
            yield Static("", id="form-error")
            yield Static(Text("Enter on the last field or ctrl+o: plan it; Esc: cancel"), classes="form-note")

    def on_mount(self) -> None:
        for note in self.query(".field-error"):
            note.display = False
        self.focus_next()

    def values(self) -> dict[str, Any]:
        """Every field's typed value; FieldError names the first field that does not read."""
        out: dict[str, Any] = {}
        for spec in self.spec.fields:
            widget = self.query_one(f"#field-{spec.name}")
            if isinstance(widget, Select):
                raw = "" if widget.value is Select.NULL else str(widget.value)
            else:
                assert isinstance(widget, Input)
                raw = widget.value
            try:
                out[spec.name] = read_value(spec, raw)
            except ValueError as bad:
                raise FieldError({spec.name: str(bad)}) from None
        return out

    def action_submit(self) -> None:
        """Plan the form's changes only once they read as a change file's would (the same bounded types): what
        does not is shown next to its field, and the form stays open to fix it."""
        try:
            items = self.spec.build(self.values())
            Service.build_changes(items)
        except FieldError as bad:
            self._show_errors(bad.by_field, "")
            return
        except ValueError as bad:
            self._show_errors({}, f"! {bad}")
            return
        except InputError as bad:
            by_field, rest = self._sort_out(bad)
            self._show_errors(by_field, "\n".join(f"! {line}" for line in rest))
            return
        self.dismiss(items)

    def _sort_out(self, bad: InputError) -> tuple[dict[str, str], list[str]]:
        """A change's diagnostics (`0.set-time-slicing.replicas: must be at least 1, got 0`) by the form field
        they name (the last part of their path that is one), and those that name none."""
        names = {spec.name: spec for spec in self.spec.fields}
        by_field: dict[str, str] = {}
        rest: list[str] = []
        for diagnostic in bad.diagnostics:
            path, _, message = diagnostic.message.partition(": ")
            named = [part for part in reversed(path.split(".")) if part in names]
            if named and named[0] not in by_field:
                by_field[named[0]] = f"{names[named[0]].label}: {message}"
            else:
                rest.append(diagnostic.message)
        return by_field, rest

    def _show_errors(self, by_field: dict[str, str], general: str) -> None:
        for spec in self.spec.fields:
            note = self.query_one(f"#error-{spec.name}", Static)
            message = by_field.get(spec.name, "")
            note.update(Text(f"! {message}" if message else ""))
            note.display = bool(message)
        self.query_one("#form-error", Static).update(Text(general))
        if by_field:  # the cursor to the first field to fix
            first = next(spec.name for spec in self.spec.fields if spec.name in by_field)
            self.query_one(f"#field-{first}").focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        inputs = [w for w in self.query("Input, Select") if w.id and w.id.startswith("field-")]
        if inputs and event.input is inputs[-1]:
            self.action_submit()
        else:
            self.focus_next()
