"""Marks (issue 21, point 3): the header counts them, `ctrl+\\` clears them, `ctrl+space` marks a range, an
apply that used them clears them, and a bulk action's review names every target — those the filter hides too."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from gpuadmin.service import Service
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import filter_rows, grid, header, make_app, notes, press, settle, shown

SIZE = (100, 30)


def review(app: object) -> PlanReviewScreen:
    screen = getattr(app, "screen", None)
    assert isinstance(screen, PlanReviewScreen), type(screen).__name__
    return screen


def review_note(screen: PlanReviewScreen) -> str:
    return str(screen.query_one("#review-note", Static).render())


async def test_the_header_counts_the_marks_and_ctrl_backslash_clears_them(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "marked" not in header(app)
        await press(pilot, "space", "space")
        assert "2 marked" in header(app)
        await press(pilot, "ctrl+backslash")
        assert grid(app).marked == set()
        assert "marked" not in header(app)


async def test_ctrl_space_marks_from_the_last_mark_to_the_cursor(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "space", "down", "down", "down", "ctrl+space")  # 01 marked, cursor on 11
        assert grid(app).marked == {"gpu-h100-01", "gpu-h100-02", "gpu-h100-07", "gpu-h100-09", "gpu-h100-11"}
        assert "5 marked" in header(app)
        await press(pilot, "down", "ctrl+space")  # from the range's end (11) to a30-01
        assert "a30-01" in grid(app).marked and len(grid(app).marked) == 6


async def test_marks_stay_across_views_and_are_cleared_by_the_apply_that_used_them(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "space", "space")
        await press(pilot, "3")  # the GPUs view, and back: the marks are the nodes view's, still there
        await press(pilot, "2")
        assert "2 marked" in header(app)
        await press(pilot, "c")
        await press(pilot, "y")
        assert notes(app)[-1] == ("information", "", "applied: revision 1")
        await settle(pilot)
        assert grid(app).marked == set()
        assert "marked" not in header(app)
        await press(pilot, "g", "c")  # acts on the row under the cursor only: the marks did their work
        assert review(app).title_text == "cordon gpu-h100-01"


async def test_a_bulk_review_names_every_target_and_those_the_filter_hides(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "space", "space")  # gpu-h100-01, gpu-h100-02
        await filter_rows(pilot, "name=a30-01")
        assert shown(app) == ["a30-01"]
        assert "2 marked" in header(app)  # off screen, still counted
        await press(pilot, "space")
        await press(pilot, "c")
        screen = review(app)
        assert screen.title_text == "cordon gpu-h100-01, gpu-h100-02, a30-01"
        assert [change.node for change in screen.plan.changes] == ["gpu-h100-01", "gpu-h100-02", "a30-01"]
        note = review_note(screen)
        assert "3 marked: gpu-h100-01, gpu-h100-02, a30-01." in note
        assert "2 of them hidden by the filter /name=a30-01: gpu-h100-01, gpu-h100-02." in note
        await press(pilot, "escape")  # not applied: the marks stay
        assert len(grid(app).marked) == 3


async def test_cancel_and_preempt_act_on_every_marked_job(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "status=pending")
        await press(pilot, "space", "space")
        marked = sorted(grid(app).marked)
        await press(pilot, "x")
        screen = review(app)
        assert sorted(change.name for change in screen.plan.changes) == marked
        assert {change.op for change in screen.plan.changes} == {"cancel-job"}
        assert all(name in screen.title_text for name in marked)
        await press(pilot, "tab", "x")  # Tab out of the typed name, x discards the draft (Esc keeps the cancels)
        await filter_rows(pilot, "status=running")
        await press(pilot, "ctrl+backslash", "space", "space", "P")
        screen = review(app)
        assert [change.op for change in screen.plan.changes] == ["preempt-job", "preempt-job"]
