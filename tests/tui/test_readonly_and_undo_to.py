"""Issue 21, points 7 and 8. Undo back to the selected journal entry (`undo --to` its revision), reviewed, and
a notification saying why wherever undo is not available. A viewer's change key is not silent: it names the
role and `gpuadmin whoami`; and a viewer may run the scheduling cycle as a dry run, as `schedule --dry-run`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from gpuadmin.service import Service
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import cursor_row, make_app, notes, press, settle, shown, static_text, wait_for

NODES = ("gpu-h100-01", "gpu-h100-02", "a30-01")


def _cordoned(state_dir: Path) -> None:
    """Three applied entries after the init (entry 1): cordon each of NODES (revisions 1, 2, 3)."""
    service = Service(state_dir=state_dir)
    for node in NODES:
        service.submit(service.plan(service.build_changes([{"op": "cordon", "node": node}])), confirmed=True)


def _states(state_dir: Path) -> list[str]:
    service = Service(state_dir=state_dir)
    return [service.describe("node", node)["summary"]["state"] for node in NODES]


async def _select_entry(pilot: Pilot[Any], entry: int) -> None:
    app = pilot.app
    await press(pilot, "g", *(["down"] * shown(app, "ID").index(entry)))  # type: ignore[arg-type]
    assert cursor_row(app)["ID"] == entry  # type: ignore[arg-type,index]


async def test_undo_back_to_the_selected_entry(state_dir: Path) -> None:
    _cordoned(state_dir)
    app = make_app(Service(state_dir=state_dir), view="journal")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await _select_entry(pilot, 2)  # the cordon of gpu-h100-01, revision 1
        await press(pilot, "U")
        review = app.screen
        assert isinstance(review, PlanReviewScreen)
        assert review.title_text.startswith("undo entry 4 (revision 3") and "entry 3 (revision 2" in review.title_text
        plan = static_text(app, "#review")
        assert "~ node/gpu-h100-02" in plan and "~ node/a30-01" in plan and "gpu-h100-01" not in plan
        await press(pilot, "y")
        await wait_for(pilot, lambda: bool(notes(app)))
        assert notes(app)[-1] == ("information", "", "applied: revision 4")
    assert _states(state_dir) == ["cordoned", "ready", "ready"]


async def test_undo_says_why_where_it_is_not_available(state_dir: Path) -> None:
    _cordoned(state_dir)
    service = Service(state_dir=state_dir)
    reversal = service.undo()  # entry 5 undoes entry 4 (revision 3)
    service.submit(reversal.plan, confirmed=True, intent=reversal.intent)
    app = make_app(Service(state_dir=state_dir), view="journal")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        said = []
        for entry in (4, 3):  # undone already; the latest still in effect
            await _select_entry(pilot, entry)
            await press(pilot, "U")
            assert isinstance(app.screen, ListingScreen)
            said.append(notes(app)[-1][2])
        assert said[0].startswith("entry 4 is undone already: its revision is not in effect")
        assert said[1].startswith("nothing to undo after entry 3 (revision 2)")
        await press(pilot, "2", "ctrl+z")  # not the journal view
        assert isinstance(app.screen, ListingScreen) and app.screen.kind == "nodes"
        assert notes(app)[-1] == ("warning", "", "undo and redo work in the journal view (8, or :journal), "
                                                 "on its entries")
        await press(pilot, "U")
        assert notes(app)[-1][2].startswith("undo and redo work in the journal view")
    assert Service(state_dir=state_dir).revision() == 4


async def test_a_viewers_change_key_says_why(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir, role="viewer"), view="nodes")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        for key in ("c", "r", "U", "ctrl+z"):
            await press(pilot, key)
            assert isinstance(app.screen, ListingScreen)
            severity, title, message = notes(app)[-1]
            assert (severity, title) == ("warning", "read-only"), key
            # this console was lowered to viewer (`tui --readonly`) on a state where the tester is admin: whoami
            # would say admin, so the notice says both, and how to get the changes back
            assert "opened as viewer" in message and "your role on this state is admin" in message, message
            assert "`gpuadmin whoami`" in message
        assert len(notes(app)) == 4
    assert Service(state_dir=state_dir).revision() == 0


async def test_a_viewer_runs_the_scheduling_dry_run(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir, role="viewer"), view="jobs")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "p")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanReviewScreen))
        review = app.screen
        assert isinstance(review, PlanReviewScreen)
        assert review.title_text.startswith("scheduling cycle:") and "bind(s)" in static_text(app, "#review")
        assert static_text(app, "#review-verdict").startswith("Dry run: role viewer may not apply this cycle")
        assert "confirm" not in {b.binding.action for b in app.active_bindings.values()}
        await press(pilot, "y")
        assert app.screen is review  # no apply action
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen)
    assert Service(state_dir=state_dir).revision() == 0
