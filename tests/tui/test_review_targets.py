"""The console's review says what a change acts on (issue 21, point 5): a new job's spec, the GPUs or slices a
cancelled or preempted job frees, and the vGPU a VM loses — that one destructive: a `y` does not apply it, the
node's name typed does. The text is the plan's own (render/plan.py), as `gpuadmin plan` prints it."""

from __future__ import annotations

from pathlib import Path

from gpuadmin.service import Service
from tests.tui.test_forms import FLOWS, console, open_edit, review, vsphere_state
from tests.tui.tuikit import press, settle, static_text

__all__ = ["vsphere_state"]  # the fixture, used by name
SIZE = (120, 36)


async def test_a_new_job_is_reviewed_with_its_spec(state_dir: Path) -> None:
    flow = FLOWS["submit-job"]
    app = console(state_dir, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, flow.values, flow.row)
        text = static_text(app, "#review")
        assert "+ job/smoke-1" in text
        for line in ("queue: research", "request: gpus=1", "priority: 7", "preemptible: true",
                     "node_selector: pool=training"):
            assert f"      {line}" in text, line


async def test_cancel_and_preempt_say_what_they_free(state_dir: Path) -> None:
    held = {name: " ".join(f"{s.node}/{s.gpu}" + (f"/@{s.mig_start}" if s.mig_start is not None else "")
                           for s in Service(state_dir=state_dir).state.jobs[name].placement)
            for name in ("nb-alice", "nb-bob")}
    for flow, job in ((FLOWS["cancel-job"], "nb-alice"), (FLOWS["preempt-job"], "nb-bob")):
        app = console(state_dir, flow.view)
        async with app.run_test(size=SIZE) as pilot:
            await open_edit(pilot, flow, flow.values, flow.row)
            assert f"evicted: {job} (frees {held[job]})" in static_text(app, "#review")


async def test_a_vgpu_removal_names_the_vm_and_needs_the_node_typed(vsphere_state: Path) -> None:
    flow = FLOWS["remove-vgpu"]
    app = console(vsphere_state, flow.view)
    async with app.run_test(size=SIZE) as pilot:
        await open_edit(pilot, flow, flow.values, flow.row)
        shown = review(app)
        assert "vGPUs taken from VMs: esx-hgx-03/6: dev-vm-01 A100X-20C" in static_text(app, "#review")
        assert shown.asked.destructive and shown.asked.token == "esx-hgx-03"
        await press(pilot, "y", "enter")  # a yes is not the node's name
        await settle(pilot)
    assert Service(state_dir=vsphere_state).revision() == 0
