"""Every edit flow of the console, driven with the pilot on a real state: the view, the key, the form (or
none), the plan review, the confirmation. Outcomes are read back through a second `Service` on the same state
dir: its revision, the changed entity, the journal's last entry and its outcome.

Each flow is tried in the cases that apply to it: applied; refused (a plan with a violation: the review says
REFUSED, `y` does nothing, nothing is written); stale (another Service applies between planning and
confirming: the review comes back re-planned with a note, nothing is applied blindly); read-only (a viewer:
the key is not active and pressing it changes nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Select

from gpuadmin.service import Service
from gpuadmin.store.state_db import JournalEntry
from gpuadmin.tui.app import VIEWS, GpuadminApp
from gpuadmin.tui.edits import EDITS
from gpuadmin.tui.screens.form import FormScreen
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.mig_form import MigFormScreen
from gpuadmin.tui.screens.progress import ProgressScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import ROOT, cursor_row, filter_rows, make_app, notes, press, settle, static_text

VSPHERE = ROOT / "sample-inventories" / "vsphere-hgx.yaml"
SIZE = (120, 36)
Items = list[dict[str, Any]]


@pytest.fixture
def vsphere_state(tmp_path: Path) -> Path:
    """A real state from the vSphere sample: vGPU hosts with VMs outside device groups, a passthrough host."""
    path = tmp_path / "vsphere-state"
    Service.init(path, VSPHERE)
    return path


# reading outcomes back, through another Service on the same state dir ------------------------------------------
def journal(state: Path) -> list[JournalEntry]:
    return Service(state_dir=state).journal()


def last(state: Path) -> tuple[int | None, str, list[str]]:
    """The journal's last entry: its revision, outcome and the ops of its plan."""
    entry = journal(state)[-1]
    return entry.revision, entry.outcome, [c["op"] for c in (entry.plan or {}).get("changes", [])]


def apply_elsewhere(state: Path, items: Items) -> int:
    """Another operator (a second Service on the state dir) applies `items`; the new revision."""
    other = Service(state_dir=state)
    result = other.submit(other.plan(other.build_changes(items)), confirmed=True)
    assert result is not None
    return result.revision


def gpu(state: Path, node: str, index: int) -> Any:
    found = Service(state_dir=state).state.nodes[node].gpu(index)
    assert found is not None
    return found


# driving the console -----------------------------------------------------------------------------------------
def console(state: Path, view: str, role: str | None = None) -> GpuadminApp:
    return make_app(Service(state_dir=state, role=role), view=view)  # type: ignore[arg-type]


async def select_row(pilot: Pilot[Any], text: str) -> dict[str, Any]:
    """Filter the view down to the one row `text` selects, with the cursor on it."""
    await filter_rows(pilot, text)
    row = cursor_row(pilot.app)  # type: ignore[arg-type]
    assert row is not None, text
    return row


def fill(app: GpuadminApp, values: dict[str, str]) -> None:
    """Put values in a form's fields (an Input's text, a Select's option)."""
    form = app.screen
    assert isinstance(form, FormScreen), type(form).__name__
    for name, value in values.items():
        widget = form.query_one(f"#field-{name}")
        if isinstance(widget, Select):
            widget.value = value if value else Select.NULL
        else:
            assert isinstance(widget, Input)
            widget.value = value


def review(app: GpuadminApp) -> PlanReviewScreen:
    screen = app.screen
    assert isinstance(screen, PlanReviewScreen), f"on top: {type(screen).__name__}"
    return screen


async def confirm(pilot: Pilot[Any]) -> None:
    """Confirm the review on top the way an operator does: `y`, or the token typed for a destructive plan."""
    shown = review(pilot.app)  # type: ignore[arg-type]
    if shown.asked.destructive:
        await press(pilot, *shown.asked.token, "enter")
    else:
        await press(pilot, "y")
    await settle(pilot)


# the flows ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Flow:
    """One edit: where it is made (view, the row a filter selects), its key, what goes in its form, the ops it
    plans, and what the state holds once it is applied."""

    state: str  # "cluster" (tests/tui/fixtures/cluster.yaml) or "vsphere" (the vSphere sample)
    view: str
    row: str | None  # a filter selecting the row to act on; None where the edit needs no row
    key: str
    ops: list[str]
    values: dict[str, str] = field(default_factory=dict)  # None: the edit has no form
    form: bool = True
    applied: Callable[[Service], bool] = lambda _service: True
    setup: Items = field(default_factory=list)  # applied before the console opens
    refused: dict[str, str] | None = None  # form values (or, for a form-less edit, a row filter) refused


def _node(s: Service, name: str) -> Any:
    return s.state.nodes[name]


FLOWS: dict[str, Flow] = {
    "time-slicing": Flow(
        "cluster", "gpus", "name=gpu-h100-02/5", "t", ["set-time-slicing"], {"replicas": "3"},
        applied=lambda s: (g := _node(s, "gpu-h100-02").gpu(5)).mode == "time-sliced" and g.replicas == 3,
        refused={"replicas": "4", "row": "name=gpu-h100-07/0"}),  # MIG instances held: not whole
    "mode": Flow(
        "cluster", "gpus", "name=gpu-h100-02/6", "M", ["set-mode"], {"mode": "time-sliced", "replicas": "2"},
        applied=lambda s: (g := _node(s, "gpu-h100-02").gpu(6)).mode == "time-sliced" and g.replicas == 2,
        refused={"mode": "vgpu", "replicas": ""}),  # vGPU on bare metal: vSphere only
    "device-groups": Flow(
        "cluster", "nodes", "name=esx-hgx-02", "D", ["set-device-groups"],
        {"groups": "dg-a:0,1,2,3 dg-b:4,5 dg-d:6,7"},
        applied=lambda s: [g.name for g in _node(s, "esx-hgx-02").device_groups] == ["dg-a", "dg-b", "dg-d"],
        refused={"groups": "dg-a:0,1,2 dg-b:4,5"}),  # a group of 3
    "set-sharing": Flow(
        "cluster", "nodes", "name=gpu-h100-02", "F", ["set-sharing"], {"fractions": "dynamic", "reserved_gib": "1"},
        setup=[{"op": "set-sharing", "node": "gpu-h100-02", "fractions": "dynamic"},
               {"op": "bind-job", "name": "nb-dana", "placement": [{"node": "gpu-h100-02", "gpu": 5}]}],
        applied=lambda s: (sharing := _node(s, "gpu-h100-02").sharing) is not None and sharing.reserved_gib == 1,
        refused={"fractions": "off", "reserved_gib": ""}),  # nb-dana's fraction holds GPU 5
    "add-node": Flow(
        "cluster", "nodes", None, "N", ["add-node"],
        {"name": "gpu-h100-21", "platform": "baremetal", "shape": "BM.GPU.H100.8", "model": "H100-SXM5-80GB",
         "gpus": "8"},
        applied=lambda s: [g.model for g in _node(s, "gpu-h100-21").gpus] == ["H100-SXM5-80GB"] * 8,
        refused={"name": "gpu-h100-01"}),  # the name is taken
    "remove-node": Flow(
        "cluster", "nodes", "name=gpu-h100-11", "X", ["remove-node"], form=False,
        applied=lambda s: "gpu-h100-11" not in s.state.nodes,
        refused={"row": "name=gpu-h100-02"}),  # runs jobs
    "submit-job": Flow(
        "cluster", "jobs", None, "n", ["submit-job"],
        {"name": "smoke-1", "queue": "research", "kind": "gpus", "amount": "1", "priority": "7", "cpus": "16",
         "memory_gib": "128", "node_selector": "pool=training"},
        applied=lambda s: (j := s.state.jobs["smoke-1"]).status == "pending" and j.request.gpus == 1
        and j.priority == 7 and (j.request.cpus, j.request.memory_gib) == (16, 128)
        and j.node_selector == {"pool": "training"} and j.owner is not None and j.submitted is not None,
        refused={"name": "llm-pretrain-70b"}),  # the name is taken
    "cancel-job": Flow(
        "cluster", "jobs", "name=nb-alice", "x", ["cancel-job"], form=False,
        applied=lambda s: "nb-alice" not in s.state.jobs),  # a cancelled job is removed
    "preempt-job": Flow(
        "cluster", "jobs", "name=nb-bob", "P", ["preempt-job"], form=False,
        applied=lambda s: s.state.jobs["nb-bob"].status == "preempted",
        refused={"row": "name=nb-dana"}),  # pending: nothing to preempt
    "set-quota": Flow(
        "cluster", "queues", "name=interns", "e", ["set-quota"], {"quota": "4", "limit": "6", "weight": "1.5"},
        applied=lambda s: (q := s.state.queues["interns"]).quota.gpus == 4 and q.limit is not None and q.limit.gpus == 6
        and q.over_quota_weight == 1.5,
        refused={"quota": "4", "limit": "2"}),  # a limit under the quota
    "add-queue": Flow(
        "cluster", "queues", None, "n", ["add-queue"], {"name": "batch", "quota": "2", "limit": "4"},
        applied=lambda s: (q := s.state.queues["batch"]).quota.gpus == 2 and q.limit is not None and q.limit.gpus == 4,
        refused={"name": "batch", "quota": "2", "limit": "1"}),
    "remove-queue": Flow(
        "cluster", "queues", "name=spare", "x", ["remove-queue"], form=False,
        setup=[{"op": "add-queue", "queue": {"name": "spare", "quota": {"gpus": 1}}}],
        applied=lambda s: "spare" not in s.state.queues,
        refused={"row": "name=interns"}),  # jobs use it
    "assign-vgpu": Flow(
        "vsphere", "gpus", "name=esx-hgx-03/7", "v", ["assign-vgpu"], {"vm": "dev-vm-03", "profile": "A100X-10C"},
        setup=[{"op": "remove-vgpu", "node": "esx-hgx-03", "gpu": 7, "vm": "dev-vm-03", "profile": "A100X-10C"}],
        applied=lambda s: {v.vm for v in _node(s, "esx-hgx-03").gpu(7).vgpus} >= {"dev-vm-03"},
        refused={"vm": "dev-vm-01", "profile": "A100X-20C"}),  # a 20 GB vGPU beside 10 GB ones, past the frame buffer
    "remove-vgpu": Flow(
        "vsphere", "gpus", "name=esx-hgx-03/6", "V", ["remove-vgpu"], {"vgpu": "dev-vm-01 A100X-20C"},
        applied=lambda s: [v.vm for v in _node(s, "esx-hgx-03").gpu(6).vgpus] == ["dev-vm-02"],
        refused={"vgpu": "train-vm-02 A100DX-80C", "row": "name=esx-hgx-02/0"}),  # leaves its group part-held
    "attach-vm": Flow(
        "vsphere", "nodes", "name=esx-legacy-01", "a", ["attach-vm"], {"vm": "hpc-vm-01", "gpus": "0,1"},
        setup=[{"op": "detach-vm", "node": "esx-legacy-01", "vm": "hpc-vm-01"}],
        applied=lambda s: [g.vm for g in _node(s, "esx-legacy-01").gpus[:2]] == ["hpc-vm-01", "hpc-vm-01"],
        refused={"vm": "train-vm-02", "device_group": "dg-c", "gpus": "", "row": "name=esx-hgx-02"}),
    "detach-vm": Flow(
        "vsphere", "nodes", "name=esx-legacy-01", "A", ["detach-vm"], {"vm": "hpc-vm-01"},
        applied=lambda s: [g.mode for g in _node(s, "esx-legacy-01").gpus[:2]] == ["full", "full"],
        refused={"vm": "train-vm-03", "row": "name=esx-hgx-02"}),  # its vGPUs stay on the group's GPUs
}


def _state(flow: Flow, request: pytest.FixtureRequest) -> Path:
    state: Path = request.getfixturevalue("state_dir" if flow.state == "cluster" else "vsphere_state")
    if flow.setup:
        apply_elsewhere(state, flow.setup)
    return state


async def open_edit(pilot: Pilot[Any], flow: Flow, values: dict[str, str], row: str | None) -> None:
    """Select the row, press the edit's key, fill its form and plan it (ctrl+o): the review is on top."""
    app = pilot.app
    await settle(pilot)
    if row is not None:
        await select_row(pilot, row)
    await press(pilot, flow.key)
    if flow.form:
        assert isinstance(app.screen, FormScreen), f"{flow.key}: {type(app.screen).__name__}"
        fill(app, values)  # type: ignore[arg-type]
        await press(pilot, "ctrl+o")
    review(app)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(FLOWS))
async def test_an_edit_is_planned_reviewed_and_applied(name: str, request: pytest.FixtureRequest) -> None:
    flow = FLOWS[name]
    state = _state(flow, request)
    before = Service(state_dir=state).revision()
    app = console(state, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, flow.values, flow.row)
        shown = review(app)
        assert "ALLOWED" in static_text(app, "#review")
        assert [c.op for c in shown.plan.changes] == flow.ops
        assert Service(state_dir=state).revision() == before  # planned, not applied
        await confirm(pilot)
        assert isinstance(app.screen, ListingScreen)
        assert notes(app)[-1] == ("information", "", f"applied: revision {before + 1}")
    service = Service(state_dir=state)
    assert service.revision() == before + 1
    assert last(state) == (before + 1, "applied", flow.ops)
    assert flow.applied(service), name


REFUSABLE = [name for name, flow in FLOWS.items() if flow.refused is not None]


@pytest.mark.parametrize("name", REFUSABLE)
async def test_a_refused_plan_cannot_be_applied(name: str, request: pytest.FixtureRequest) -> None:
    flow = FLOWS[name]
    assert flow.refused is not None
    values = {k: v for k, v in {**flow.values, **flow.refused}.items() if k != "row"}
    state = _state(flow, request)
    before = Service(state_dir=state).revision()
    entries = len(journal(state))
    app = console(state, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, values, flow.refused.get("row", flow.row))
        shown = review(app)
        assert not shown.plan.allowed
        text = static_text(app, "#review")
        assert "REFUSED" in text
        assert all(v.rule in text for v in shown.plan.violations)  # each violation with its rule id
        assert static_text(app, "#review-verdict").startswith("REFUSED: this plan cannot be applied")
        assert "review.apply" not in {a.binding.id for a in app.active_bindings.values()}
        await press(pilot, "y", "enter")
        assert app.screen is shown  # y does nothing
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen)
    assert Service(state_dir=state).revision() == before
    assert len(journal(state)) == entries  # nothing written, not even a refusal


# what another operator applies meanwhile that changes the very entity the edit changes
CLASHES: dict[str, Items] = {
    "time-slicing": [{"op": "cordon", "node": "gpu-h100-02"}],
    "device-groups": [{"op": "cordon", "node": "esx-hgx-02"}],
    "set-quota": [{"op": "set-quota", "queue": "interns", "quota": {"gpus": 3}}],
    "remove-node": [{"op": "uncordon", "node": "gpu-h100-11"}],
    "attach-vm": [{"op": "cordon", "node": "esx-legacy-01"}],
    "remove-queue": [{"op": "set-quota", "queue": "spare", "quota": {"gpus": 2}}],
}


@pytest.mark.parametrize("name", list(CLASHES))
async def test_a_stale_plan_is_planned_again_and_shown_again(name: str, request: pytest.FixtureRequest) -> None:
    flow = FLOWS[name]
    state = _state(flow, request)
    before = Service(state_dir=state).revision()
    app = console(state, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, flow.values, flow.row)
        first = review(app)
        assert first.plan.base_revision == before
        moved = apply_elsewhere(state, CLASHES[name])  # another operator changes the same entity meanwhile
        await confirm(pilot)
        again = review(app)
        assert again is not first
        assert again.plan.base_revision == moved
        assert static_text(app, "#review-note") == (
            f"The state moved to revision {moved} since this plan was made: planned again on it. Review it again.")
        assert [c.op for c in again.plan.changes] == flow.ops
        # nothing was applied blindly: the state is the other operator's, the attempt journaled as stale
        assert Service(state_dir=state).revision() == moved
        assert last(state) == (None, "stale", flow.ops)
        assert not flow.applied(Service(state_dir=state))
        await confirm(pilot)
        assert notes(app)[-1] == ("information", "", f"applied: revision {moved + 1}")
    assert last(state) == (moved + 1, "applied", flow.ops)
    assert flow.applied(Service(state_dir=state))


async def test_a_stale_plan_that_becomes_refused_is_shown_refused(state_dir: Path) -> None:
    """Another operator submits a job of the same name meanwhile: the plan made again is refused, and stays so."""
    flow = FLOWS["submit-job"]
    app = console(state_dir, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, flow.values, flow.row)
        moved = apply_elsewhere(state_dir, [{"op": "submit-job", "job": {
            "name": "smoke-1", "queue": "interns", "request": {"gpus": 2}}}])
        await confirm(pilot)
        again = review(app)
        assert not again.plan.allowed and "change.unique-name" in static_text(app, "#review")
        assert f"revision {moved} since" in static_text(app, "#review-note")
        await press(pilot, "y")
        assert app.screen is again
    assert last(state_dir) == (None, "stale", ["submit-job"])
    job = Service(state_dir=state_dir).state.jobs["smoke-1"]
    assert job.queue == "interns" and job.request.gpus == 2  # the other operator's, untouched


async def test_an_unrelated_apply_meanwhile_does_not_make_the_plan_stale(state_dir: Path) -> None:
    """The service re-plans (rules re-checked) a plan whose base moved when nothing it changes was changed since:
    another operator's cordon elsewhere does not send the quota edit back for review."""
    flow = FLOWS["set-quota"]
    app = console(state_dir, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, flow.values, flow.row)
        moved = apply_elsewhere(state_dir, [{"op": "cordon", "node": "a30-01"}])
        await confirm(pilot)
        assert isinstance(app.screen, ListingScreen)
        assert notes(app)[-1] == ("information", "", f"applied: revision {moved + 1}")
    assert last(state_dir) == (moved + 1, "applied", ["set-quota"])
    service = Service(state_dir=state_dir)
    assert flow.applied(service) and service.state.nodes["a30-01"].state == "cordoned"


# read-only ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["cluster", "vsphere"])
async def test_a_viewer_has_no_edit_key_and_pressing_one_changes_nothing(kind: str, request: pytest.FixtureRequest
                                                                         ) -> None:
    state: Path = request.getfixturevalue("state_dir" if kind == "cluster" else "vsphere_state")
    entries = len(journal(state))
    flows = [f for f in FLOWS.values() if f.state == kind and not f.setup]
    # the MIG form (a viewer's `p` is a dry run: tests/tui/test_readonly_and_undo_to.py)
    flows += [Flow(kind, "gpus", "name=esx-hgx-02/6" if kind == "vsphere" else "name=gpu-h100-02/5", "m", [])]
    ids = {edit.key + ":" + view: edit.id for edit in EDITS for view in edit.views}
    app = console(state, "nodes", role="viewer")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for flow in sorted(flows, key=lambda f: f.view):  # one visit per view
            if app.current_mode != flow.view:
                await press(pilot, str(list(VIEWS).index(flow.view) + 1))
            if flow.row is not None:
                await select_row(pilot, flow.row)
            active = {a.binding.id for a in app.active_bindings.values()}
            assert ids.get(f"{flow.key}:{flow.view}", "edit.schedule") not in active, flow
            assert not {i for i in active if i and i.startswith("edit.")} - {"edit.schedule"}
            stack = list(app.screen_stack)
            await press(pilot, flow.key)
            assert app.screen_stack == stack, flow  # no form, no review
        # each key said why it did nothing, and nothing else went wrong
        assert {title for severity, title, _ in notes(app) if severity != "information"} == {"read-only"}
    assert Service(state_dir=state).revision() == 0
    assert len(journal(state)) == entries


# forms: bad values, Enter, Esc -------------------------------------------------------------------------------
BAD_VALUES = [  # (field, what is typed in it, what the form says)
    ("priority", "high", "! priority: a whole number, not 'high'"),
    ("amount", "lots", "! amount: a number for gpus, not 'lots'"),
    ("name", "", "! name: required"),
]


async def test_a_bad_value_in_the_job_form_is_shown_and_nothing_is_planned(state_dir: Path) -> None:
    flow = FLOWS["submit-job"]
    app = console(state_dir, "jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        form = app.screen
        assert isinstance(form, FormScreen)
        for field_name, typed, error in BAD_VALUES:
            fill(app, {**flow.values, field_name: ""})
            form.query_one(f"#field-{field_name}", Input).focus()
            await press(pilot, *typed)  # typed as an operator types it
            await press(pilot, "ctrl+o")
            assert app.screen is form, field_name  # still the form: no plan
            # under the field that does not read; a value that reads but does not build, under the form
            assert error in (static_text(app, f"#error-{field_name}"), static_text(app, "#form-error")), field_name
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen)
        assert not notes(app)
    assert Service(state_dir=state_dir).revision() == 0
    assert len(journal(state_dir)) == 1


async def test_device_groups_written_wrong_say_how_to_write_them(state_dir: Path) -> None:
    app = console(state_dir, "nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=esx-hgx-02")
        await press(pilot, "D")
        assert isinstance(app.screen, FormScreen)
        assert app.screen.query_one("#field-groups", Input).value == "dg-a:0,1,2,3 dg-b:4,5 dg-c:6,7"  # the current
        fill(app, {"groups": "dg-a:0,1,x,3"})
        await press(pilot, "ctrl+o")
        assert static_text(app, "#form-error") == "! GPU indexes are numbers separated by commas, not '0,1,x,3'"
        fill(app, {"groups": "dg-a"})
        await press(pilot, "ctrl+o")
        assert static_text(app, "#form-error") == "! write each group as NAME:GPU,GPU,... ('dg-a')"
        assert isinstance(app.screen, FormScreen)
    assert Service(state_dir=state_dir).revision() == 0


async def test_enter_on_the_last_field_plans_and_esc_cancels(state_dir: Path) -> None:
    app = console(state_dir, "queues")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "n")
        assert isinstance(app.screen, FormScreen)
        await press(pilot, "escape")  # Esc on a form: nothing planned
        assert isinstance(app.screen, ListingScreen)
        await press(pilot, "n")
        form = app.screen
        assert isinstance(form, FormScreen)
        await press(pilot, *"batch", "tab", "2", "enter")  # Enter moves on until the last field
        assert app.screen is form and form.query_one("#field-limit", Input).has_focus
        await press(pilot, "enter", "enter", "enter")  # no limit, weight 1 and priority 0 (the defaults): plan it
        assert review(app).plan.changes[0].op == "add-queue"
        await press(pilot, "y")
    assert Service(state_dir=state_dir).state.queues["batch"].quota.gpus == 2
    assert last(state_dir) == (1, "applied", ["add-queue"])


# the MIG form ------------------------------------------------------------------------------------------------
def fits(app: GpuadminApp) -> list[str]:
    """The placements the MIG form offers, as PROFILE@START."""
    options = app.screen.query_one("#mig-fits", OptionList)
    return [o.id for o in (options.get_option_at_index(i) for i in range(options.option_count)) if o.id]


async def add_placement(pilot: Pilot[Any], placement: str) -> None:
    """Walk the list of fitting placements to `placement` (↓) and add it (Enter)."""
    app = pilot.app
    offered = fits(app)  # type: ignore[arg-type]
    assert placement in offered, offered
    options = app.screen.query_one("#mig-fits", OptionList)
    assert options.has_focus
    await press(pilot, "home", *["down"] * offered.index(placement), "enter")


async def test_mig_form_offers_only_what_fits_and_applies_set_mig(state_dir: Path) -> None:
    app = console(state_dir, "gpus")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=gpu-h100-02/5")  # a free H100 in full mode
        await press(pilot, "m")
        form = app.screen
        assert isinstance(form, MigFormScreen)
        assert form.instances == []
        assert {"1g.10gb@0", "3g.40gb@4", "7g.80gb@0"} <= set(fits(app))
        await add_placement(pilot, "1g.10gb@0")
        assert form.instances == [("1g.10gb", 0)]
        offered = set(fits(app))
        assert "1g.10gb@0" not in offered and "7g.80gb@0" not in offered  # taken / no longer fits
        assert "1g.10gb@1" in offered and "3g.40gb@4" in offered
        assert "1g.10gb" in static_text(app, "#mig-drawing")
        await add_placement(pilot, "3g.40gb@4")
        assert "3g.40gb@4" not in fits(app) and "4g.40gb@0" not in fits(app)
        await press(pilot, "x")  # removes the last
        assert form.instances == [("1g.10gb", 0)] and "3g.40gb@4" in fits(app)
        await add_placement(pilot, "3g.40gb@4")
        await press(pilot, "ctrl+o")
        shown = review(app)
        assert [c.op for c in shown.plan.changes] == ["set-mig"] and shown.plan.allowed
        assert "ALLOWED" in static_text(app, "#review")
        await press(pilot, "y")
        assert notes(app)[-1] == ("information", "", "applied: revision 1")
    changed = gpu(state_dir, "gpu-h100-02", 5)
    assert changed.mode == "mig" and [(i.profile, i.start) for i in changed.mig] == [("1g.10gb", 0), ("3g.40gb", 4)]
    assert last(state_dir) == (1, "applied", ["set-mig"])


async def test_a_named_mig_layout_fills_the_layout(state_dir: Path) -> None:
    app = console(state_dir, "gpus")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=gpu-h100-02/6")
        await press(pilot, "m")
        form = app.screen
        assert isinstance(form, MigFormScreen)
        named = form.query_one("#mig-named", Select)
        assert {"all-1g.10gb", "all-balanced", "all-7g.80gb"} <= set(form.form["named"])
        await press(pilot, "shift+tab")  # from the list of placements to the named layouts
        assert named.has_focus
        await press(pilot, "enter", *"all-balanced", "enter")  # open, type to find, pick
        assert named.value == "all-balanced"
        assert form.instances == [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]
        assert fits(app) == []  # fully carved: nothing more is offered
        await press(pilot, "ctrl+o")
        assert review(app).plan.allowed
        await press(pilot, "y")
    changed = gpu(state_dir, "gpu-h100-02", 6)
    assert [(i.profile, i.start) for i in changed.mig] == [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3),
                                                            ("3g.40gb", 4)]
    assert last(state_dir) == (1, "applied", ["set-mig"])


async def test_f_in_the_mig_form_turns_mig_off(state_dir: Path) -> None:
    app = console(state_dir, "gpus")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=a30-01/0")  # MIG, nothing running on it
        await press(pilot, "m")
        assert isinstance(app.screen, MigFormScreen)
        assert app.screen.instances == [("1g.6gb", 0), ("1g.6gb", 1), ("1g.6gb", 2), ("1g.6gb", 3)]
        await press(pilot, "f")
        shown = review(app)
        assert [(c.op, c.mode) for c in shown.plan.changes] == [("set-mode", "full")]  # type: ignore[union-attr]
        await press(pilot, "y")
    assert gpu(state_dir, "a30-01", 0).mode == "full"
    assert last(state_dir) == (1, "applied", ["set-mode"])


async def test_a_mig_layout_that_evicts_a_non_preemptible_job_is_refused(state_dir: Path) -> None:
    """The form preempts the holders of the instances a layout drops (tests/tui/test_mig_form_holders.py); a
    holder that is not preemptible makes that plan refused, with the rule that says why."""
    app = console(state_dir, "gpus")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=gpu-h100-07/0")  # reranker-serve (not preemptible) runs on its 2g.20gb@0
        await press(pilot, "m")
        form = app.screen
        assert isinstance(form, MigFormScreen)
        await press(pilot, "ctrl+l")
        assert form.instances == [] and "7g.80gb@0" in fits(app)
        await add_placement(pilot, "7g.80gb@0")
        await press(pilot, "ctrl+o")
        shown = review(app)
        assert not shown.plan.allowed
        assert "REFUSED" in static_text(app, "#review")
        assert "placement.non-preemptible-kept" in static_text(app, "#review")
        await press(pilot, "y")
        assert app.screen is shown
    assert Service(state_dir=state_dir).revision() == 0 and len(journal(state_dir)) == 1


async def test_a_stale_mig_plan_is_shown_again(state_dir: Path) -> None:
    app = console(state_dir, "gpus")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=gpu-h100-02/5")
        await press(pilot, "m")
        await add_placement(pilot, "7g.80gb@0")
        await press(pilot, "ctrl+o")
        first = review(app)
        moved = apply_elsewhere(state_dir, [{"op": "set-time-slicing", "node": "gpu-h100-02", "gpu": 5,
                                             "replicas": 2}])
        await press(pilot, "y")
        again = review(app)
        assert again is not first and again.plan.base_revision == moved
        assert f"revision {moved} since" in static_text(app, "#review-note")
        assert gpu(state_dir, "gpu-h100-02", 5).mode == "time-sliced"  # the other operator's, untouched
        assert last(state_dir) == (None, "stale", ["set-mig"])
        await press(pilot, "y")
    assert gpu(state_dir, "gpu-h100-02", 5).mode == "mig"
    assert last(state_dir) == (moved + 1, "applied", ["set-mig"])


# the scheduling cycle ----------------------------------------------------------------------------------------
def gated(service: Service) -> threading.Event:
    """Hold the service's scheduling cycles until the returned event is set: long work, on a small state."""
    gate = threading.Event()
    real = service.schedule

    def schedule(*args: Any, **kwargs: Any) -> Any:
        assert gate.wait(10)
        return real(*args, **kwargs)

    service.schedule = schedule  # type: ignore[method-assign]
    return gate


async def test_p_plans_a_cycle_with_progress_then_reviews_and_applies_its_binds(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    gate = gated(service)
    app = make_app(service, view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, ProgressScreen)
        assert app.screen.query_one("#progress-bar") is not None
        gate.set()
        await settle(pilot)
        shown = review(app)
        assert shown.title_text == ("scheduling cycle: 2 bind(s) placing 2.25 GPU(s), 0 preemption(s), "
                                    "3 job(s) left pending")
        assert sorted((c.op, c.name) for c in shown.plan.changes) == [  # type: ignore[union-attr]
            ("bind-job", "nb-dana"), ("bind-job", "sd-xl-finetune")]
        await press(pilot, "f")  # the review opens on the cycle's summary; `f` shows the diff
        assert "job/sd-xl-finetune" in static_text(app, "#review")
        await press(pilot, "y")
        assert notes(app)[-1] == ("information", "", "applied: revision 1")
    jobs = Service(state_dir=state_dir).state.jobs
    assert jobs["sd-xl-finetune"].status == "running" and jobs["nb-dana"].status == "running"
    assert last(state_dir) == (1, "applied", ["bind-job", "bind-job"])


async def test_esc_on_the_progress_screen_cancels_and_applies_nothing(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    gate = gated(service)
    app = make_app(service, view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, ProgressScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ListingScreen)
        gate.set()  # the cycle finishes after the cancel: its result is dropped
        await settle(pilot)
        assert isinstance(app.screen, ListingScreen)  # no review comes up
        assert notes(app) == [("information", "", "scheduling cycle cancelled: nothing applied")]
    assert Service(state_dir=state_dir).revision() == 0
    assert len(journal(state_dir)) == 1


async def test_a_stale_cycle_is_planned_again(state_dir: Path) -> None:
    app = console(state_dir, "nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "p")
        first = review(app)
        assert len(first.plan.changes) == 2
        moved = apply_elsewhere(state_dir, [{"op": "cancel-job", "name": "nb-dana"}])
        await press(pilot, "y")
        again = review(app)
        assert again is not first and f"revision {moved} since" in static_text(app, "#review-note")
        assert [(c.op, c.name) for c in again.plan.changes] == [("bind-job", "sd-xl-finetune")]  # type: ignore[union-attr]
        assert last(state_dir) == (None, "stale", ["bind-job", "bind-job"])
        await press(pilot, "y")
    assert last(state_dir) == (moved + 1, "applied", ["bind-job"])


# saving a plan, bulk actions ---------------------------------------------------------------------------------
async def test_w_saves_the_same_file_as_plan_save(state_dir: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    flow = FLOWS["set-quota"]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    app = console(state_dir, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, flow.values, flow.row)
        shown = review(app)
        await press(pilot, "w")
        path = shown.query_one("#review-path", Input)
        assert path.display and path.has_focus
        await press(pilot, *"plans/q.json")  # `/` is a character in the path, not the filter
        await press(pilot, "enter")
        assert notes(app)[-1][0] == "error" and "not saved" in notes(app)[-1][2]  # no such folder
        (work / "plans").mkdir()
        await press(pilot, "enter")
        assert notes(app)[-1] == ("information", "", "plan saved to plans/q.json "
                                  "(gpuadmin apply --plan plans/q.json)")
        assert not path.display and app.screen is shown
        await press(pilot, "escape")
    saved = (work / "plans" / "q.json").read_text()
    items = shown.plan.to_json()["changes"]
    service = Service(state_dir=state_dir)
    service.save_plan(service.plan(service.build_changes(items)), tmp_path / "service.json")
    assert saved == (tmp_path / "service.json").read_text()
    (tmp_path / "changes.json").write_text(json.dumps({"changes": items}))
    cli = [sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state_dir)]
    subprocess.run([*cli, "plan", "-f", str(tmp_path / "changes.json"), "--save", str(tmp_path / "cli.json")],
                   check=True, capture_output=True, cwd=ROOT)
    assert saved == (tmp_path / "cli.json").read_text()
    assert Service(state_dir=state_dir).revision() == 0  # saved, not applied
    done = subprocess.run([*cli, "apply", "--plan", str(work / "plans" / "q.json"), "--yes"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert flow.applied(Service(state_dir=state_dir))


async def test_marked_nodes_are_cordoned_in_one_plan(state_dir: Path) -> None:
    app = console(state_dir, "nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "space", "space", "down", "space", "space")  # 01, 02, (not 07), 09, 11
        await press(pilot, "c")
        shown = review(app)
        assert shown.title_text == "cordon gpu-h100-01, gpu-h100-02, gpu-h100-09, gpu-h100-11"
        assert [c.op for c in shown.plan.changes] == ["cordon"] * 4
        await press(pilot, "y")
        assert notes(app)[-1] == ("information", "", "applied: revision 1")
    nodes = Service(state_dir=state_dir).state.nodes
    assert [nodes[n].state for n in ("gpu-h100-01", "gpu-h100-02", "gpu-h100-07", "gpu-h100-09", "gpu-h100-11")] == [
        "cordoned", "cordoned", "ready", "cordoned", "cordoned"]
    assert last(state_dir) == (1, "applied", ["cordon"] * 4)  # one plan, one revision


async def test_sharing_from_one_nodes_screen_starts_from_its_current_sharing(state_dir: Path) -> None:
    """`F` on a node's own screen: the form shows the node's sharing, and what it plans is applied and journaled."""
    apply_elsewhere(state_dir, [{"op": "set-sharing", "node": "gpu-h100-02", "fractions": "dynamic",
                                 "reserved_gib": 1.5}])
    app = console(state_dir, "nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select_row(pilot, "name=gpu-h100-02")
        await press(pilot, "enter", "F")
        form = app.screen
        assert isinstance(form, FormScreen), type(form).__name__
        assert form.query_one("#field-fractions", Select).value == "dynamic"
        assert form.query_one("#field-reserved_gib", Input).value == "1.5"
        fill(app, {"fractions": "off"})
        await press(pilot, "ctrl+o")
        shown = review(app)
        assert [c.model_dump(exclude_none=True) for c in shown.plan.changes] == [
            {"op": "set-sharing", "node": "gpu-h100-02", "fractions": "off"}]
        assert "ALLOWED" in static_text(app, "#review")
        await confirm(pilot)
    assert last(state_dir) == (2, "applied", ["set-sharing"])
    assert Service(state_dir=state_dir).state.nodes["gpu-h100-02"].sharing is None
