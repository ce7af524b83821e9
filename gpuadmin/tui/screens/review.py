"""The plan review: every change made from the console is shown as its plan — verdict, violations with
their rule ids, the diff, effects and node commands — and applied only on confirmation. A destructive
plan (evictions, a drain, a removal) asks for the name it hits to be typed; a refused plan cannot be
applied. A plan with a summary (a scheduling cycle: thousands of binds) opens on the summary under its verdict;
`f` shows the full plan and back. The decision (apply or not) is the service's `submit`; this screen only asks.

A draft's review (see `gpuadmin.tui.draft`) also lists the draft's edits, each with the violations that fall
on it, and offers `x` to discard the draft; Esc keeps it. A viewer's scheduling dry run is reviewed without
the apply action: the verdict line says why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gpuadmin.render.plan import plan_heading, plan_text
from gpuadmin.render.text import safe
from gpuadmin.service import Confirmation, Plan


class PlanReviewScreen(ModalScreen[bool | str | None]):
    """Dismisses with the operator's confirmation (True, or the typed token), or None to cancel."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "cancel", "Cancel", id="review.cancel"),
        Binding("y", "confirm", "Apply", id="review.apply"),
        Binding("w", "save", "Save plan", id="review.save"),
        Binding("f", "full_diff", "Full diff/summary", id="review.full_diff"),
        Binding("x", "discard", "Discard draft", id="review.discard"),
    ]

    def __init__(self, title: str, plan: Plan, asked: Confirmation, save: Callable[[str, Callable[[], None]], None],
                 note: str = "", summary: str = "", *, draft: list[str] | None = None,
                 discard: Callable[[], None] | None = None, dry_run: str = "",
                 on_cluster: list[dict[str, Any]] | None = None) -> None:
        """`draft`: the draft's lines, for a draft's review; `discard` empties the draft (x). `dry_run`: why
        this plan is shown only (a viewer's scheduling cycle): no apply action. `on_cluster`: on a state bound to
        a cluster, what apply executes there, change by change (`PlannedStep.to_json()`), shown instead of the
        node commands."""
        super().__init__()
        self.on_cluster = on_cluster
        self.title_text = title
        self.plan = plan
        self.asked = asked
        self.save = save
        self.note = note
        self.summary = summary
        self.full = not summary  # a summarised plan opens on its summary
        self.draft = draft
        self.discard = discard
        self.dry_run = dry_run

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="review-scroll") as scroll:
            scroll.border_title = Text(f"plan: {safe(self.title_text)}")
            if self.note:
                yield Static(Text(self.note), id="review-note")
            if self.draft:  # a draft of several edits: which is which, and which refuses
                yield Static(Text("\n".join(safe(line) for line in self.draft)), id="review-draft")
            yield Static(self._body(), id="review")
            if self.dry_run:
                yield Static(Text(f"Dry run: {self.dry_run}. Esc to go back."), id="review-verdict")
            elif not self.plan.allowed:
                yield Static(Text("REFUSED: this plan cannot be applied. Esc to go back."), id="review-verdict")
            elif self.plan.empty:
                yield Static(Text("Nothing to apply: the state already matches. Esc to go back."),
                             id="review-verdict")
            elif self.asked.destructive:
                yield Static(Text(self.asked.prompt), id="review-verdict")
                yield Input(placeholder=f"type {self.asked.shown} and Enter", id="review-token")
            else:
                yield Static(Text("y to apply, n or Esc to " + ("keep the draft, x to discard it" if self.discard
                                                                 else "cancel")), id="review-verdict")

            yield Input(placeholder="save the plan to (a path), Enter", id="review-path")

    def on_mount(self) -> None:
        self.query_one("#review-path", Input).display = False
        if self.plan.allowed and not self.plan.empty and self.asked.destructive and not self.dry_run:
            self.query_one("#review-token", Input).focus()
        else:
            self.query_one("#review-scroll").focus()

    def _body(self) -> Text:
        data = self.plan.to_json()
        if self.full:
            return Text(plan_text(data, self.on_cluster))
        lines = plan_heading(data)
        full = len(plan_text(data, self.on_cluster).splitlines())
        # in a destructive review the typed confirmation has the focus, and takes the letter `f`
        tab = " (Tab first, out of the confirmation)" if self.asked.destructive else ""
        return Text("\n".join([*lines, self.summary.rstrip("\n"), f"f{tab}: the full plan ({full} lines)"]) + "\n")

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        if action == "full_diff":  # only a summarised plan has two forms
            return bool(self.summary)
        if action == "confirm":  # a refused or empty plan has nothing to confirm; a destructive one is typed
            return self.plan.allowed and not self.plan.empty and not self.asked.destructive and not self.dry_run
        if action == "discard":
            return self.discard is not None
        return True

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_full_diff(self) -> None:
        self.full = not self.full
        self.query_one("#review", Static).update(self._body())

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_discard(self) -> None:
        if self.discard is not None:
            self.discard()
        self.dismiss(None)

    def action_save(self) -> None:
        path = self.query_one("#review-path", Input)
        path.display = True
        self.set_focus(path)

    def _saved(self) -> None:
        if not self.is_attached:  # closed while the plan was being written
            return
        self.query_one("#review-path", Input).display = False
        self.query_one("#review-scroll").focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "review-path":
            # on the service worker: the app says where it went (then the path field closes), or why not
            self.save(event.value, self._saved)
            return
        self.dismiss(event.value)
