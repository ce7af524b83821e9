"""Issue 21, point 2: the MIG form draws the running holders of each instance, as the node screen does; an
instance kept at the same profile@start keeps its holder; removing a held instance says whom it evicts, and the
plan preempts them, so the review shows the eviction and asks for the node's name to be typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Select, Static

from gpuadmin.service import Service
from gpuadmin.tui.screens.mig_form import MigFormScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import cursor_row, filter_rows, make_app, notes, press, screen_text, settle, static_text


async def open_mig_form(pilot: Pilot[Any], gpu: str) -> MigFormScreen:
    await settle(pilot)
    await filter_rows(pilot, f"name={gpu}")
    assert cursor_row(pilot.app) is not None  # type: ignore[arg-type]
    await press(pilot, "m")
    form = pilot.app.screen
    assert isinstance(form, MigFormScreen)
    return form


async def add_placement(pilot: Pilot[Any], placement: str) -> None:
    """Walk the MIG form's list of fitting placements to `placement` (down) and add it (Enter)."""
    options = pilot.app.screen.query_one("#mig-fits", OptionList)
    offered = [o.id for o in (options.get_option_at_index(i) for i in range(options.option_count)) if o.id]
    assert placement in offered and options.has_focus, offered
    await press(pilot, "home", *["down"] * offered.index(placement), "enter")


def drawing(form: MigFormScreen) -> str:
    return str(form.query_one("#mig-drawing", Static).render())


def evicts(form: MigFormScreen) -> str:
    return str(form.query_one("#mig-evicts", Static).render())


async def test_holders_are_drawn_and_kept_across_edits(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="gpus")
    async with app.run_test(size=(140, 40)) as pilot:
        form = await open_mig_form(pilot, "gpu-h100-07/0")  # reranker-serve on 2g.20gb@0, llama3 on 3g.40gb@4
        holders = next(line for line in drawing(form).splitlines() if line.startswith("  holders"))
        assert "reranker-serve" in holders and "llama3-8b-serve" in holders and holders.count("|free") == 2
        assert "reranker-serve" in screen_text(app) and not evicts(form)
        await press(pilot, "ctrl+l")  # clear the layout: both held instances go
        assert "reranker-serve" not in drawing(form)
        assert evicts(form).splitlines() == ["removing 2g.20gb@0 evicts reranker-serve",
                                             "removing 3g.40gb@4 evicts llama3-8b-serve"]
        named = form.query_one("#mig-named", Select)
        named.value = "all-balanced"  # 2g.20gb@0 1g.10gb@2 1g.10gb@3 3g.40gb@4: the held ones come back
        await settle(pilot)
        assert "reranker-serve" in drawing(form) and "llama3-8b-serve" in drawing(form)
        assert not evicts(form)


async def test_removing_a_held_instance_plans_the_eviction(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="gpus")
    async with app.run_test(size=(140, 40)) as pilot:
        form = await open_mig_form(pilot, "gpu-h100-07/2")  # eval-harness-7b on 3g.40gb@0; 3g.40gb@4 free
        assert "eval-harness-7b" in drawing(form)
        await press(pilot, "ctrl+l")  # clear, then keep only the free 3g.40gb@4
        await add_placement(pilot, "3g.40gb@4")
        assert form.instances == [("3g.40gb", 4)]
        assert evicts(form) == "removing 3g.40gb@0 evicts eval-harness-7b"
        await press(pilot, "ctrl+o")
        review = app.screen
        assert isinstance(review, PlanReviewScreen) and review.plan.allowed
        assert review.plan.effects.evicted == ["eval-harness-7b"]
        assert [c.op for c in review.plan.changes] == ["preempt-job", "set-mig"]
        assert review.asked.destructive and review.asked.token == "gpu-h100-07"
        assert "evicted: eval-harness-7b" in static_text(app, "#review")
        assert "evicts 1 running job(s)" in static_text(app, "#review-verdict")
        review.query_one("#review-token", Input).value = "gpu-h100-07"
        await press(pilot, "enter")
        assert notes(app)[-1][2] == "applied: revision 1", notes(app)
    changed = Service(state_dir=state_dir).state
    assert [(i.profile, i.start) for i in changed.nodes["gpu-h100-07"].gpu(2).mig] == [("3g.40gb", 4)]
    assert changed.jobs["eval-harness-7b"].status == "preempted"
