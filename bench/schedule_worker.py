"""One process that times scheduling cycles for `bench_schedule.py` (a), on the code of one source tree.

    python bench/schedule_worker.py ROOT CASES_JSON

ROOT goes first on `sys.path`, so `gpuadmin` is imported from that tree: this tree's, or a baseline revision's
temporary worktree (`common.baseline_checkout`). The worker builds the generated states of CASES_JSON (a list of
[label, nodes, jobs, seed, empty, sharing]), prints `ready PATH-OF-GPUADMIN`, then answers each line naming a
case index on stdin with one JSON line: one cycle's wall and CPU seconds and what it decided. It uses only the
API both trees share (`schedule`, `ClusterState`, `Inventory`, the generator), so an older revision runs it.
"""

from __future__ import annotations

import gc
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from typing import Any


def _generator() -> Any:
    """This tree's bench/generate.py, whichever tree's gpuadmin the worker times: both sides schedule the same
    generated states (a baseline revision may keep its generator elsewhere, or none)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("bench_generate", Path(__file__).resolve().parent / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


def build(spec: Sequence[Any]) -> Any:
    """The case's ClusterState: "empty" drops the generated placements (every job pending on an idle cluster);
    otherwise the generated state (about 85% of the GPUs busy) with about `jobs` pending jobs."""
    from gpuadmin.engine.state import ClusterState
    from gpuadmin.model import Inventory

    _, nodes, jobs, seed, empty, sharing = spec  # label, nodes, jobs, seed, empty, sharing

    def generated(count: int) -> Any:
        data = _generator().generate_inventory(nodes, count, seed, sharing)
        if empty:
            for raw in data["jobs"]:
                raw.pop("placement", None)
                raw.pop("status", None)
        return ClusterState.from_inventory(Inventory.model_validate(data, strict=False))

    if empty:
        return generated(jobs)
    count = jobs
    for _ in range(4):  # grow the generated job count until about `jobs` of them are pending
        state = generated(count)
        have = pending_count(state)
        if abs(have - jobs) <= jobs // 100:
            break
        count += jobs - have
    return state


def pending_count(state: Any) -> int:
    return sum(1 for j in state.jobs.values() if j.status in ("pending", "preempted"))


def time_cycle(state: Any) -> dict[str, Any]:
    """One cycle, planner included: wall and process CPU seconds, and a digest of its decisions (bound jobs in
    order with their slots, then the preempted) to show both trees decided the same."""
    from gpuadmin.engine.scheduler import schedule

    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = schedule(state)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.plan.allowed, result.plan.violations[:3]
    decided = hashlib.sha256()
    for name in result.bound:
        job = result.plan.view.job(name)
        decided.update(f"{name} {[(s.node, s.gpu, s.mig_start) for s in job.placement]}\n".encode())
    decided.update(f"preempted {result.preempted}".encode())
    return {"wall": wall, "cpu": cpu, "binds": len(result.bound), "plan": result.stats["plan_s"],
            "pending": pending_count(state), "decisions": decided.hexdigest()[:12]}


def main() -> int:
    root, cases = sys.argv[1], json.loads(sys.argv[2])
    sys.path.insert(0, root)
    import gpuadmin

    states = [build(spec) for spec in cases]
    # The GC as a headless command runs the cycle (gpuadmin.cli.main.set_gc_policy: off), the same for both
    # trees: the baseline's cycle switched it off itself, this tree's relies on the entry point's policy.
    gc.collect()
    gc.freeze()
    gc.disable()
    time_cycle(states[0])  # untimed: the first cycle fills the catalog's and the MIG geometry's caches
    print("ready", gpuadmin.__file__, flush=True)
    for line in sys.stdin:
        print(json.dumps(time_cycle(states[int(line)])), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
