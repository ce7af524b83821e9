"""The draft plan (issue 21, point 1): edits add their changes to one draft, the review shows the plan of the
whole draft, and applying it is one journal entry. On esx-hgx-02, train-vm-03 holds device group dg-b with a
vGPU on GPUs 4 and 5; moving it to dg-c (GPUs 6 and 7) takes six changes that each refuse alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Select

from gpuadmin.render.text import safe
from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.draft import Draft, DraftEdit, draft_lines, refusing
from gpuadmin.tui.screens.form import FormScreen
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import filter_rows, header, make_app, notes, press, settle, shown, static_text

HOST = "esx-hgx-02"


async def _form(pilot: Pilot[Any], key: str, **choices: str) -> PlanReviewScreen:
    """Press an edit's key, choose its form's values, plan it (ctrl+o): the review of the draft."""
    await press(pilot, key)
    form = pilot.app.screen
    assert isinstance(form, FormScreen), type(form).__name__
    for name, value in choices.items():
        form.query_one(f"#field-{name}", Select).value = value
    await press(pilot, "ctrl+o")
    review = pilot.app.screen
    assert isinstance(review, PlanReviewScreen), type(review).__name__
    return review


async def _on_gpu(pilot: Pilot[Any], app: GpuadminApp, gpu: int) -> None:
    await filter_rows(pilot, f"node={HOST},gpu={gpu}")
    assert shown(app, "NODE") == [HOST] and shown(app, "GPU") == [gpu]


async def _keep(pilot: Pilot[Any], review: PlanReviewScreen, refused: bool) -> None:
    assert review.plan.allowed is not refused, static_text(review.app, "#review")  # type: ignore[arg-type]
    await press(pilot, "escape")
    assert isinstance(pilot.app.screen, ListingScreen)


async def test_the_vm_moves_to_another_device_group_in_one_plan(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, HOST)
        review = await _form(pilot, "A", vm="train-vm-03")  # detach VM: alone it refuses
        assert review.title_text == f"detach a VM on {HOST}" and not review.plan.allowed
        assert "Esc to keep the draft" not in static_text(app, "#review-verdict")  # refused: nothing to apply
        await _keep(pilot, review, refused=True)
        assert " DRAFT 1 " in header(app)
        assert notes(app)[-1][2].startswith("not applied: kept in the draft (1 change(s))")

        await press(pilot, "3")
        for gpu in (4, 5):
            await _on_gpu(pilot, app, gpu)
            review = await _form(pilot, "V", vgpu="train-vm-03 A100DX-80C")
            await _keep(pilot, review, refused=gpu == 4)
        assert " DRAFT 3 " in header(app)

        await press(pilot, "2")
        review = await _form(pilot, "a", vm="train-vm-03", device_group="dg-c")
        await _keep(pilot, review, refused=True)
        await press(pilot, "3")
        await _on_gpu(pilot, app, 6)
        review = await _form(pilot, "v", vm="train-vm-03", profile="A100DX-80C")
        # refused, and the review says which change refuses: attaching dg-c, whose GPU 7 has no vGPU yet
        listed = static_text(app, "#review-draft").splitlines()
        assert listed[4] == f"  4. attach a VM on {HOST}  REFUSES (1 violation(s))"
        assert listed[5].startswith("       ✗ [group.vm-holds-whole-group] VM train-vm-03 holds device group dg-c")
        assert sum("REFUSES" in line for line in listed) == 1
        await _keep(pilot, review, refused=True)

        await _on_gpu(pilot, app, 7)
        review = await _form(pilot, "v", vm="train-vm-03", profile="A100DX-80C")
        assert review.title_text == "draft: 6 edits, 6 changes"
        plan = static_text(app, "#review")
        assert "ALLOWED (6 change(s)" in plan
        assert "vms[1].device_group: dg-b -> dg-c" in plan and "gpus[7].vgpus: - -> train-vm-03/A100DX-80C" in plan
        assert "REFUSES" not in static_text(app, "#review-draft")
        assert review.asked.destructive and review.asked.token == HOST  # it removes vGPUs: the host is typed
        await press(pilot, *HOST, "enter")
        assert notes(app)[-1] == ("information", "", "applied: revision 1")
        await settle(pilot)
        assert "DRAFT" not in header(app) and not app.session.draft
    service = Service(state_dir=state_dir)
    assert service.revision() == 1
    entries = [e for e in service.journal() if e.outcome == "applied" and e.diff]
    assert len(entries) == 1 and len(entries[0].plan["changes"]) == 6  # one journal entry for the whole draft
    vm = next(v for v in service.describe("node", HOST)["spec"]["vms"] if v["name"] == "train-vm-03")
    assert vm["device_group"] == "dg-c"


async def test_esc_keeps_the_draft_b_reviews_it_and_x_discards_it(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "c")  # cordon gpu-h100-01: a single edit is reviewed at once
        assert isinstance(app.screen, PlanReviewScreen) and app.screen.title_text == "cordon gpu-h100-01"
        assert static_text(app, "#review-verdict") == "y to apply, n or Esc to keep the draft, x to discard it"
        await press(pilot, "escape")
        await press(pilot, "down", "c")
        review = app.screen
        assert isinstance(review, PlanReviewScreen) and review.title_text == "draft: 2 edits, 2 changes"
        assert "~ node/gpu-h100-01" in static_text(app, "#review") and "~ node/gpu-h100-02" in static_text(
            app, "#review")
        await press(pilot, "escape")
        assert " DRAFT 2 " in header(app)
        await press(pilot, "6", "b")  # the draft's review from any view
        assert isinstance(app.screen, PlanReviewScreen) and app.screen.title_text == "draft: 2 edits, 2 changes"
        await press(pilot, "x")
        assert isinstance(app.screen, ListingScreen)
        assert notes(app)[-1] == ("information", "", "draft discarded: nothing applied")
        assert "DRAFT" not in header(app)
        await press(pilot, "b")  # an empty draft says so
        assert isinstance(app.screen, ListingScreen)
        assert notes(app)[-1] == ("information", "", "the draft is empty: every edit adds its changes to it")
    assert Service(state_dir=state_dir).revision() == 0


async def test_a_stale_draft_is_planned_again_from_its_items(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        await press(pilot, "escape", "down", "c")
        # meanwhile another console cordons gpu-h100-02 too: this draft's plan is stale
        other = Service(state_dir=state_dir)
        other.submit(other.plan(other.build_changes([{"op": "cordon", "node": "gpu-h100-02"}])), confirmed=True)
        await press(pilot, "y")
        review = app.screen
        assert isinstance(review, PlanReviewScreen) and "planned again" in static_text(app, "#review-note")
        assert review.title_text == "draft: 2 edits, 2 changes" and review.discard is not None
        await press(pilot, "y")
        await settle(pilot)
        assert "DRAFT" not in header(app)
    service = Service(state_dir=state_dir)
    assert service.revision() == 2
    assert service.describe("node", "gpu-h100-01")["summary"]["state"] == "cordoned"


def test_a_refusal_is_blamed_on_the_edit_naming_what_the_rule_names() -> None:
    """Unit: every edit names the host and the VM; the one naming the group the message names refuses."""
    edits = Draft().with_edit("detach", [{"op": "detach-vm", "node": HOST, "vm": "train-vm-03"}])
    edits += [DraftEdit("attach", ({"op": "attach-vm", "node": HOST, "vm": "train-vm-03", "device_group": "dg-c"},)),
              DraftEdit("queue", ({"op": "set-quota", "queue": "research", "quota": {"gpus": 8}},))]
    violation = {"rule": "group.vm-holds-whole-group", "target": f"node/{HOST}",
                 "message": f"VM train-vm-03 holds device group dg-c on {HOST} but not its GPU 7 (mode vgpu)"}
    assert refusing(edits, violation) == {1}
    assert refusing(edits, {"rule": "queue.x", "target": "queue/research", "message": "over"}) == {2}
    assert refusing(edits, {"rule": "job.x", "target": "job/other", "message": "-"}) == set()  # none names it


def test_the_draft_lines_draw_a_hostile_name_as_plain_text() -> None:
    hostile = "vm\x1b[2J\u202eevil"
    edits = [DraftEdit(f"detach {hostile}", ({"op": "detach-vm", "node": HOST, "vm": hostile},)),
             DraftEdit("cordon", ({"op": "cordon", "node": HOST},))]
    lines = draft_lines(edits, [{"rule": "r", "target": f"node/{HOST}", "message": f"{hostile} refuses"}])
    drawn = "\n".join(safe(line) for line in lines)  # as the review draws them
    assert "\x1b" not in drawn and "\u202e" not in drawn and "\\x1b[2J" in drawn
    assert lines[1] == f"  1. detach {hostile}  REFUSES (1 violation(s))"
