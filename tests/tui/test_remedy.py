"""Act on a remedy (issue 21, point 6): `R` (edit.remedy) on a pending job — in the jobs view or in its
description — plans explain's checked remedy (its change ops) into the review, on the service worker; applying it
lets the next cycle bind the job. A job with no checkable remedy says so, and nothing is planned."""

from __future__ import annotations

from pathlib import Path

from gpuadmin.service import Service
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.test_forms import confirm, select_row
from tests.tui.tuikit import ROOT, make_app, notes, press, settle, static_text

SIZE = (120, 36)
OCI = ROOT / "gpuadmin" / "samples" / "oci-h100.yaml"


async def test_r_in_the_jobs_view_plans_the_remedy_and_applying_it_lets_the_job_fit(tmp_path: Path) -> None:
    state = tmp_path / "oci"
    Service.init(state, OCI)
    app = make_app(Service(state_dir=state), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=eval-405b-shard")
        await press(pilot, "R")
        await settle(pilot)
        shown = app.screen
        assert isinstance(shown, PlanReviewScreen), type(shown).__name__
        assert shown.title_text == "remedy for eval-405b-shard: repartition gpu-h100-08/4 to 7g.80gb@0 (no running " \
                                   "job affected)"
        assert [c.op for c in shown.plan.changes] == ["set-mig"]  # type: ignore[union-attr]
        assert "gpus[4].mig:" in static_text(app, "#review") and "7g.80gb@0" in static_text(app, "#review")
        await confirm(pilot)
    after = Service(state_dir=state)
    assert after.revision() == 1
    assert "eval-405b-shard" in after.schedule().bound  # the remedy was the one that makes it fit


async def test_r_in_a_pending_jobs_description_plans_its_remedy(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=video-caption-serve")
        await press(pilot, "d")
        await settle(pilot)
        assert isinstance(app.screen, DescribeScreen)
        await press(pilot, "R")
        await settle(pilot)
        shown = app.screen
        assert isinstance(shown, PlanReviewScreen), type(shown).__name__
        assert shown.title_text.startswith("remedy for video-caption-serve: repartition gpu-h100-07/0")
        assert shown.plan.allowed and [c.op for c in shown.plan.changes] == ["set-mig"]  # type: ignore[union-attr]


async def test_a_job_without_a_checkable_remedy_says_so(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=gpt-pretrain-405b")
        await press(pilot, "R")
        await settle(pilot)
        assert isinstance(app.screen, ListingScreen)
        assert notes(app)[-1] == ("warning", "", "gpt-pretrain-405b: no remedy that planning can check (over-limit; "
                                                 "wait for its queue's running jobs to finish)")
    assert Service(state_dir=state_dir).revision() == 0


async def test_r_is_not_offered_on_a_running_job(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=nb-alice")
        assert app.check_action("remedy", ()) is False
        await press(pilot, "R")
        await settle(pilot)
        assert isinstance(app.screen, ListingScreen) and not any("remedy" in n[2] for n in notes(app))
