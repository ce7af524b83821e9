"""The overview drills down (issue 21, point 12): a cursor over its counts, and Enter opens the filtered listing
behind the one under it; Esc comes back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuadmin.render.selector import equals
from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.overview import Drill, OverviewScreen
from tests.tui.tuikit import CLUSTER, make_app, press, screen_text, settle, shown, status_line, view

SIZE = (100, 40)


def overview(app: GpuadminApp) -> OverviewScreen:
    screen = app.screen
    assert isinstance(screen, OverviewScreen), type(screen).__name__
    return screen


async def select(pilot: Any, wanted: Callable[[Drill], bool]) -> None:
    """Move the cursor to the top, then down (the real keys) until it is on the count `wanted` picks."""
    app = pilot.app
    while overview(app).cursor > 0:
        await press(pilot, "up")
    for _ in range(40):
        target = overview(app).selected_target
        assert target is not None
        if wanted(target):
            return
        await press(pilot, "down")
    raise AssertionError("no such count on the overview")


async def test_the_cursor_starts_on_the_first_count_and_moves() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert overview(app).selected_target == Drill("gpus", "use=free")
        assert "GPUs by use     >free 10  partly used 6" in screen_text(app)
        await press(pilot, "down")
        assert overview(app).selected_target == Drill("gpus", "use in (partly used)")
        assert "free 10 >partly used 6" in screen_text(app)
        await press(pilot, "up", "up")  # stays on the first
        assert overview(app).selected_target == Drill("gpus", "use=free")


async def test_enter_on_a_node_state_opens_the_nodes_with_that_state_and_esc_comes_back() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, lambda t: t == Drill("nodes", "state=cordoned"))
        await press(pilot, "enter")
        await settle(pilot)
        screen = view(app)
        assert isinstance(screen, ListingScreen) and screen.kind == "nodes"
        assert shown(app) == ["gpu-h100-11"]
        assert "filter /state=cordoned" in status_line(app)
        await press(pilot, "escape", "escape")  # the filter, then the view before
        assert isinstance(app.screen, OverviewScreen)


async def test_enter_on_gpus_by_use_and_by_mode_opens_those_gpus() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "down", "enter")  # partly used
        await settle(pilot)
        assert set(shown(app, "USE")) == {"partly used"} and len(shown(app)) == 6
        await press(pilot, "escape", "escape")
        await select(pilot, lambda t: t == Drill("gpus", "mode=mig"))
        await press(pilot, "enter")
        await settle(pilot)
        assert set(shown(app, "MODE")) == {"mig"} and len(shown(app)) == 6


async def test_enter_on_a_pending_reason_opens_the_jobs_that_wait_for_it() -> None:
    codes = Service(inventory=CLUSTER).pending_reason_codes()
    over_limit = sorted(job for job, code in codes.items() if code == "over-limit")
    assert len(over_limit) == 2
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, lambda t: t.filter == "reason=over-limit")
        await press(pilot, "enter")
        await settle(pilot)
        screen = view(app)
        assert isinstance(screen, ListingScreen) and screen.kind == "jobs"
        assert sorted(shown(app)) == over_limit
        assert set(shown(app, "STATUS")) == {"pending"}


async def test_enter_on_a_queue_over_quota_opens_its_jobs_and_on_a_node_out_of_service_its_screen() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, lambda t: t.filter == "queue=research")
        await press(pilot, "enter")
        await settle(pilot)
        assert set(shown(app, "QUEUE")) == {"research"}
        await press(pilot, "escape", "escape")
        await select(pilot, lambda t: t.node == "gpu-h100-11")
        await press(pilot, "enter")
        await settle(pilot)
        assert isinstance(app.screen, NodeScreen) and app.screen.node == "gpu-h100-11"


def test_filters_spell_any_value() -> None:
    assert equals("state", "cordoned") == "state=cordoned"
    assert equals("queue", "[@click=app.quit]q") == "queue in ([@click=app.quit]q)"
