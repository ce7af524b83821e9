"""Read-only is enforced in one place: a viewer sees no key that would change the cluster, and pressing one
changes nothing. An admin's cordon, uncordon and drain go through the plan review (a drain asks for the node's
name), and undo / redo in the journal view."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding

from gpuadmin.service import Service
from gpuadmin.tui.app import MUTATING, GpuadminApp
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import (
    CLUSTER,
    command,
    cursor_row,
    errors,
    footer_keys,
    grid,
    header,
    make_app,
    notes,
    press,
    screen_text,
    settle,
    shown,
    static_text,
    wait_for,
)

EDIT_BINDINGS = [b for b in GpuadminApp.BINDINGS if isinstance(b, Binding) and (b.id or "").startswith("edit.")]
# every view and screen an edit can apply to, reached from the overview (slices take the gpus' edits)
PLACES = [("2",), ("3",), ("6",), ("7",), ("8",), ("2", "enter")]


def test_every_mutating_binding_is_an_edit_binding() -> None:
    """The gate's MUTATING actions are exactly the edit.* bindings: none is left ungated."""
    gated = {b.action.split("(")[0] for b in GpuadminApp.BINDINGS
             if isinstance(b, Binding) and b.action.split("(")[0] in MUTATING}
    assert gated == MUTATING
    assert {b.action.split("(")[0] for b in EDIT_BINDINGS} == MUTATING
    assert {"edit.cordon", "edit.uncordon", "edit.drain", "edit.undo", "edit.redo"} <= {b.id for b in EDIT_BINDINGS}


def _edit_ids(app: GpuadminApp) -> set[str]:
    return {active.binding.id or "" for active in app.active_bindings.values()} & {b.id for b in EDIT_BINDINGS}


def _journal(state: Path) -> list[tuple[int | None, str]]:
    return [(e.revision, e.outcome) for e in Service(state_dir=state).journal()]


async def test_viewer_sees_read_only_and_no_edit_key(state_dir: Path) -> None:
    """A viewer sees no key that would change the cluster but the scheduling dry run (test_readonly_and_undo_to);
    the others, pressed, are refused with a notification saying why."""
    app = make_app(Service(state_dir=state_dir, role="viewer"))
    journal = _journal(state_dir)
    changing = [b for b in EDIT_BINDINGS if b.id != "edit.schedule"]
    edit_labels = {b.description for b in changing}
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        assert "role viewer" in header(app) and " READ-ONLY " in header(app)
        for keys in PLACES:
            await press(pilot, "escape", *keys)
            assert _edit_ids(app) == {"edit.schedule"}, keys
            assert not edit_labels & set(footer_keys(app)), keys
            assert "READ-ONLY" in header(app)
            stack = list(app.screen_stack)
            for binding in changing:
                await pilot.press(binding.key)
            await settle(pilot)
            assert app.screen_stack == stack, keys  # no review, no form opened
        # the gate holds when an action is run by name too
        for binding in changing:
            await app.run_action(binding.action)
        await settle(pilot)
        assert len(app.screen_stack) == 2  # the node screen over the nodes view: nothing opened
        assert notes(app) and {title for _, title, _ in notes(app)} == {"read-only"}
    assert Service(state_dir=state_dir).revision() == 0
    assert _journal(state_dir) == journal


async def test_admin_sees_the_edit_keys_where_they_apply(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir))
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        assert "READ-ONLY" not in header(app)
        seen: dict[tuple[str, ...], set[str]] = {}
        for keys in PLACES:
            await press(pilot, "escape", *keys)
            seen[keys] = _edit_ids(app)
        await press(pilot, "escape", "6")
        app.screen.apply_filter("status=pending")  # a remedy acts on a pending job
        await settle(pilot)
        seen[("6", "/status=pending")] = _edit_ids(app)
        assert "edit.remedy" in seen[("6", "/status=pending")]
        assert {"edit.cordon", "edit.uncordon", "edit.drain"} <= seen[("2",)]
        assert {"edit.cordon", "edit.uncordon", "edit.drain"} <= seen[("2", "enter")]
        assert {"edit.undo", "edit.redo"} <= seen[("8",)]
        assert not {"edit.undo", "edit.redo", "edit.cordon"} & seen[("6",)]
        assert set().union(*seen.values()) == {b.id for b in EDIT_BINDINGS}  # each applies somewhere
        await press(pilot, "escape", "2")
        assert footer_keys(app)["Cordon"] == "c"


async def test_the_service_refuses_a_viewer_even_past_the_gate(state_dir: Path) -> None:
    """Defence in depth: a plan submitted for a viewer (as if a key slipped through) is refused by the service."""
    app = make_app(Service(state_dir=state_dir, role="viewer"), view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.review("cordon gpu-h100-02", [{"op": "cordon", "node": "gpu-h100-02"}])
        await settle(pilot)
        assert isinstance(app.screen, PlanReviewScreen)
        await press(pilot, "y")
        assert errors(app) == ["not permitted: role viewer may not apply: it needs operator"]
    assert Service(state_dir=state_dir).revision() == 0


async def test_readonly_in_memory_says_so() -> None:
    app = make_app(Service(inventory=CLUSTER, role="viewer"), view="nodes")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert header(app) == " gpuadmin  tui-lab  cluster.yaml  rev 0  role viewer   READ-ONLY   (in memory)  nodes"
        assert "Cordon" not in footer_keys(app)


async def test_cordon_opens_the_plan_and_y_applies_it(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "down")
        assert cursor_row(app)["NAME"] == "gpu-h100-02"
        await press(pilot, "c")
        review = app.screen
        assert isinstance(review, PlanReviewScreen)
        assert review.title_text == "cordon gpu-h100-02"
        plan = static_text(app, "#review")
        assert "ALLOWED" in plan and "~ node/gpu-h100-02" in plan and "state: ready -> cordoned" in plan
        assert static_text(app, "#review-verdict") == "y to apply, n or Esc to keep the draft, x to discard it"
        await press(pilot, "y")
        assert isinstance(app.screen, ListingScreen)
        assert notes(app) == [("information", "", "applied: revision 1")]
        await settle(pilot)
        assert Service(state_dir=state_dir).describe("node", "gpu-h100-02")["summary"]["state"] == "cordoned"
        assert _journal(state_dir)[-1] == (1, "applied")
        # the view shows the new state and revision
        assert "rev 1" in header(app)
        assert cursor_row(app)["NAME"] == "gpu-h100-02" and cursor_row(app)["STATE"] == "cordoned"


@pytest.mark.parametrize("key", ["n", "escape"])
async def test_n_or_esc_in_the_review_applies_nothing(state_dir: Path, key: str) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        assert isinstance(app.screen, PlanReviewScreen)
        await press(pilot, key)
        assert isinstance(app.screen, ListingScreen)
        assert notes(app) == [("information", "", "not applied: kept in the draft (1 change(s)); b reviews it, x "
                                                  "there discards it")]
    assert Service(state_dir=state_dir).revision() == 0
    assert len(_journal(state_dir)) == 1


async def test_drain_asks_for_the_node_name_and_refuses_a_wrong_one(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "down")  # gpu-h100-02 runs vit-h-pretrain and fss-loader-bench
        await press(pilot, "r")
        review = app.screen
        assert isinstance(review, PlanReviewScreen) and review.title_text == "drain gpu-h100-02"
        assert review.asked.destructive and review.asked.token == "gpu-h100-02"
        verdict = static_text(app, "#review-verdict")
        assert "evicts 2 running job(s)" in verdict and "Type 'gpu-h100-02' to apply" in verdict
        token = review.query_one("#review-token")
        assert token.has_focus
        await press(pilot, "y")  # y is a letter of the name here, not "apply"
        assert app.screen is review and token.value == "y"
        await press(pilot, "backspace", *"gpu-h100-01", "enter")
        assert isinstance(app.screen, ListingScreen)
        assert errors(app) == ["not applied: type 'gpu-h100-02' to apply this plan"]
        assert Service(state_dir=state_dir).revision() == 0
        await press(pilot, "r")
        await press(pilot, *"gpu-h100-02", "enter")
        assert notes(app)[-1] == ("information", "", "applied: revision 1")
    service = Service(state_dir=state_dir)
    assert service.revision() == 1
    assert service.describe("node", "gpu-h100-02")["summary"]["state"] == "draining"
    assert service.describe("job", "vit-h-pretrain")["summary"]["status"] == "preempted"


async def test_marked_nodes_are_cordoned_together_and_uncordon(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "space", "space", "c")
        assert isinstance(app.screen, PlanReviewScreen)
        assert app.screen.title_text == "cordon gpu-h100-01, gpu-h100-02"
        await press(pilot, "y")
        await settle(pilot)
        assert shown(app, "STATE")[:2] == ["cordoned", "cordoned"]
        await press(pilot, "g", "space", "space", "u")  # the apply cleared the marks: marked again
        assert app.screen.title_text == "uncordon gpu-h100-01, gpu-h100-02"
        await press(pilot, "y")
        await settle(pilot)
        assert shown(app, "STATE")[:2] == ["ready", "ready"]
    assert Service(state_dir=state_dir).revision() == 2


async def test_cordon_from_a_node_screen(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "node a30-01")
        assert isinstance(app.screen, NodeScreen)
        await press(pilot, "c")
        assert app.screen.title_text == "cordon a30-01"
        await press(pilot, "y")
        await settle(pilot)
        assert isinstance(app.screen, NodeScreen)
        assert static_text(app, "#node").startswith("a30-01  baremetal + kubernetes  state cordoned")
        assert "rev 1" in header(app)


async def test_undo_and_redo_in_the_journal(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    service.submit(service.plan(service.build_changes([{"op": "cordon", "node": "gpu-h100-02"}])), confirmed=True)
    app = make_app(Service(state_dir=state_dir), view="journal")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert shown(app, "ID") == [1, 2] and footer_keys(app)["Undo"] == "ctrl+z"
        await press(pilot, "ctrl+z")
        review = app.screen
        assert isinstance(review, PlanReviewScreen)
        assert review.title_text.startswith("undo")
        assert "state: cordoned -> ready" in static_text(app, "#review")
        await press(pilot, "y")
        await settle(pilot)
        assert notes(app)[-1] == ("information", "", "applied: revision 2")
        assert shown(app, "ID") == [1, 2, 3]
        assert Service(state_dir=state_dir).describe("node", "gpu-h100-02")["summary"]["state"] == "ready"
        await press(pilot, "ctrl+y")
        assert isinstance(app.screen, PlanReviewScreen) and app.screen.title_text.startswith("redo")
        assert "state: ready -> cordoned" in static_text(app, "#review")
        await press(pilot, "y")
        await settle(pilot)
        assert "rev 3" in header(app)
    assert Service(state_dir=state_dir).describe("node", "gpu-h100-02")["summary"]["state"] == "cordoned"


async def test_undo_with_nothing_to_undo_says_so(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="journal")
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+z")
        assert isinstance(app.screen, ListingScreen)
        assert len(errors(app)) == 1 and "nothing to undo" in errors(app)[0]
        assert "nothing to undo" in screen_text(app)


async def test_another_consoles_apply_shows_up_within_a_second(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        other = Service(state_dir=state_dir)
        other.submit(other.plan(other.build_changes([{"op": "cordon", "node": "a30-01"}])), confirmed=True)
        await wait_for(pilot, lambda: "rev 1" in header(app))
        row = next(grid(app).rows[i] for i in grid(app).shown if grid(app).rows[i]["NAME"] == "a30-01")
        assert row["STATE"] == "cordoned"
