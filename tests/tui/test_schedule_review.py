"""`p` reviews a scheduling cycle by its summary first (issue 21, point 4): binds and preemptions per queue and
per node pool, the GPUs placed, the jobs left pending by reason code, and who loses what to a preemption. The full
plan is one key away (`f`, review.full_diff), and back. Tried on the test cluster and on a generated state (64 nodes:
the shape of the 1,024-node one, small enough for CI)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from gpuadmin.service import Service
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import ROOT, make_app, press, settle, static_text

SIZE = (120, 36)


def _generator() -> ModuleType:
    name = "gpuadmin_bench_generate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "generate.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def generated_state(tmp_path: Path, nodes: int, jobs: int) -> Path:
    generator = _generator()
    inventory = tmp_path / "generated.yaml"
    with inventory.open("w") as out:
        generator.dump_inventory(generator.generate_inventory(nodes, jobs, 0), out)
    state = tmp_path / "generated-state"
    Service.init(state, inventory)
    return state


async def test_the_cycle_review_opens_on_its_summary_and_f_shows_the_full_diff(state_dir: Path) -> None:
    app = make_app(Service(state_dir=state_dir), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "p")
        await settle(pilot)
        assert isinstance(app.screen, PlanReviewScreen)
        summary = static_text(app, "#review")
        assert "2 bind(s) placing 2.25 GPU(s), 0 preemption(s), 3 job(s) left pending" in summary
        assert "Per queue:" in summary and "Per node pool (label pool" in summary
        assert "over-limit               2  gpt-pretrain-405b, intern-full-ft-8b" in summary
        assert "profile-not-carved       1  video-caption-serve" in summary
        assert "job/sd-xl-finetune" not in summary  # the diff waits behind `f`
        await press(pilot, "f")
        full = static_text(app, "#review")
        assert "~ job/sd-xl-finetune" in full and "status: pending -> running" in full
        await press(pilot, "f")
        assert static_text(app, "#review") == summary


async def test_a_large_cycle_is_summarised_with_who_loses_what(tmp_path: Path) -> None:
    state = generated_state(tmp_path, 64, 2000)
    app = make_app(Service(state_dir=state), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "p")
        await settle(pilot)
        shown = app.screen
        assert isinstance(shown, PlanReviewScreen)
        summary = static_text(app, "#review")
        binds = sum(1 for c in shown.plan.changes if c.op == "bind-job")
        assert binds > 100 and len(summary.splitlines()) < 40  # not hundreds of diff lines
        assert f"{binds} bind(s) placing" in summary
        assert "Left pending, by reason:" in summary and "capacity" in summary and "more" in summary
        preempted = [c.name for c in shown.plan.changes if c.op == "preempt-job"]
        assert preempted and "Preemptions (who loses what, for whom):" in summary
        assert any(line.lstrip().startswith(f"{name} (") and " loses " in line and " for " in line
                   for name in preempted for line in summary.splitlines())
        # a preemption makes the plan destructive: the confirmation field has the focus; Tab leaves it
        await press(pilot, "tab", "f")
        full = static_text(app, "#review")
        assert len(full.splitlines()) > 3 * binds  # every bind: its job, placement and status
