"""Input traps (issue 21, point 16): what an operator types is what the console acts on."""

from __future__ import annotations

from tests.tui.tuikit import make_app, press, prompt, settle, shown


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
