"""Input traps (issue 21, point 16): what an operator types is what the console acts on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

from gpuadmin.service import Service
from gpuadmin.tui.screens.form import FormScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import FIXTURES, errors, make_app, notes, press, prompt, screen_text, settle, shown, static_text


async def test_slash_starts_a_new_filter_and_up_recalls_the_active_one() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"status=pending", "enter")
        pending = shown(app)
        assert app.screen.filter_text == "status=pending"
        # typed after `/`, a new filter replaces the one in force: never `status=pendingqueue=research`
        await press(pilot, "slash", *"queue=research", "enter")
        assert app.screen.filter_text == "queue=research"
        assert shown(app) != pending
        # the filter in force is one Up away, to edit rather than retype
        await press(pilot, "slash", "up")
        assert prompt(app).value == "queue=research"
        await press(pilot, "up")
        assert prompt(app).value == "status=pending"
        await press(pilot, "escape")
        assert app.screen.filter_text == "queue=research"  # Esc keeps what was in force


async def test_a_control_byte_name_is_confirmed_as_drawn(hostile_state: Path) -> None:
    """The review asks for the name as it draws it, and takes exactly that text (the raw ESC cannot be typed)."""
    app = make_app(Service(state_dir=hostile_state), view="nodes")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "down", "r")  # drain the node named "\x1b]0;pwned\x07x"
        review = app.screen
        assert isinstance(review, PlanReviewScreen)
        shown = r"\x1b]0;pwned\x07x"
        assert f"Type '{shown}' to apply" in static_text(app, "#review-verdict")
        token = review.query_one("#review-token", Input)
        assert token.has_focus and token.placeholder == f"type {shown} and Enter"
        token.value = shown
        await press(pilot, "enter")
        assert notes(app)[-1][2] == "applied: revision 1", notes(app)


INVISIBLE = FIXTURES / "invisible.yaml"
DRAWS_AS_NOTHING = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


async def test_zero_width_characters_are_drawn_visibly() -> None:
    """`gpu\\u200b-01` and `gpu-01` are two nodes; drawn raw they would look like one."""
    app = make_app(Service(inventory=INVISIBLE), view="nodes")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert r"gpu\u200b-01" in text and "gpu-01" in text
        assert not DRAWS_AS_NOTHING.search(text)
        await press(pilot, "6")  # jobs
        text = screen_text(app)
        assert r"train\u200d7" in text and r"research\ufeff" in text and r"\u202eevil" in text
        assert not DRAWS_AS_NOTHING.search(text)
        await press(pilot, "slash", *"train")  # the prompt draws what it holds visibly as well
        prompt(app).value = "name=train\u200d7"
        await settle(pilot)
        assert "name=train\ufffd7" in screen_text(app)
        await press(pilot, "enter")
        assert shown(app) == ["train\u200d7"]


@pytest.mark.parametrize(("edit", "typed", "message"), [
    ("t", "0", "replicas per GPU (or per MIG instance): must be at least 1, got 0"),
    ("t", "100000", "replicas per GPU (or per MIG instance): must be at most 1024, got 100000"),
    ("M", "0", "replicas (time-sliced): must be at least 1, got 0"),
])
async def test_replicas_out_of_bounds_are_shown_at_their_field(edit: str, typed: str, message: str) -> None:
    """The form stays open with the message under the field; nothing is planned."""
    app = make_app(view="gpus")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, edit)
        form = app.screen
        assert isinstance(form, FormScreen)
        if edit == "M":
            form.query_one("#field-mode", Select).value = "time-sliced"
        form.query_one("#field-replicas", Input).value = typed
        await press(pilot, "ctrl+o")
        assert app.screen is form, "the form closed on a bad number"
        assert f"! {message}" in screen_text(app)
        assert str(form.query_one("#error-replicas", Static).render()) == f"! {message}"
        assert form.query_one("#field-replicas").has_focus
        assert not errors(app)
        form.query_one("#field-replicas", Input).value = "4"  # fixed: planned, the message gone
        await press(pilot, "ctrl+o")
        assert isinstance(app.screen, PlanReviewScreen)


async def test_many_replicas_are_planned_with_a_warning() -> None:
    app = make_app(view="gpus")
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "t")
        app.screen.query_one("#field-replicas", Input).value = "100"
        await press(pilot, "ctrl+o")
        assert isinstance(app.screen, PlanReviewScreen)
        review = static_text(app, "#review")
        assert "Warnings (allowed, but look twice):" in review
        assert "is time-sliced 100 ways" in review and "more than 64 replicas is rarely meant" in review
