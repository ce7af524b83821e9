"""Scheduler benchmark (plain script, never run as a test).

    .venv/bin/python bench/bench_schedule.py [--runs 5] [--skip-growth]

(a) Speed: one scheduling cycle (`gpuadmin.engine.scheduler.schedule`, planner included) with 10,000 pending
    mixed jobs on 1,024 nodes x 8 GPUs, from the inventory generator (`gpuadmin/store/generate.py`):
      - "empty":  the generated jobs with their placements removed, so all 10,000 are pending on an idle
                  cluster (the most binds a cycle can make);
      - "loaded": the generated state as is (about 85% of the GPUs busy) plus enough jobs for ~10,000 pending;
    and the growth 128 -> 1,024 -> 4,096 nodes (about 9.8 pending jobs per node, "empty"). Medians of --runs
    runs; the ratio column is against the 128-node cycle per pending job, measured in the same run.
(b) Quality: one generated trace (256 nodes; the generator's jobs arrive in 10 batches, one cycle per batch,
    30% of the running jobs finish after each cycle), scheduled by gpuadmin and by a plain best-fit baseline
    implemented here (same order, same quotas, same constraints; it takes the node, GPU or shared unit that
    leaves the least free capacity behind, GPUs by index). Reported: fragmented GPUs by the FGD measure
    (gpuadmin.engine.scheduler.fgd; workload = the trace's request shapes) averaged over the cycles and at the
    end, jobs and GPUs placed.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import plan
from gpuadmin.engine.scheduler import cluster_fragmentation, schedule, workload_of
from gpuadmin.engine.scheduler.cycle import Choice, Cycle, Step
from gpuadmin.engine.scheduler.fgd import Workload
from gpuadmin.engine.scheduler.filters import mig_profile_name, model_ok, node_ok, shape_unit_fits
from gpuadmin.engine.scheduler.index import CapacityIndex
from gpuadmin.engine.scheduler.shape import Shape
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory, Job, Slot
from gpuadmin.store.generate import generate_inventory

# ------------------------------------------------------------------------------------------------ inputs


def generated(nodes: int, jobs: int, seed: int, empty: bool) -> ClusterState:
    data = generate_inventory(nodes, jobs, seed)
    if empty:
        for j in data["jobs"]:
            j.pop("placement", None)
            j.pop("status", None)
    return ClusterState.from_inventory(Inventory.model_validate(data, strict=False))


def loaded(nodes: int, pending: int, seed: int) -> ClusterState:
    """The generated state (about 85% busy) with about `pending` pending jobs."""
    jobs = pending
    for _ in range(4):
        state = generated(nodes, jobs, seed, empty=False)
        have = sum(1 for j in state.jobs.values() if j.status == "pending")
        if abs(have - pending) <= pending // 100:
            return state
        jobs += pending - have
    return state


def pending_count(state: ClusterState) -> int:
    return sum(1 for j in state.jobs.values() if j.status in ("pending", "preempted"))


# ------------------------------------------------------------------------------------------------ (a) speed


def time_cycle(state: ClusterState, runs: int) -> dict[str, float]:
    walls: list[float] = []
    stats: list[dict[str, float]] = []
    binds = 0
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        result = schedule(state)
        walls.append(time.perf_counter() - t0)
        assert result.plan.allowed, result.plan.violations[:3]
        stats.append(result.stats)
        binds = len(result.bound)
    own = [s["total_s"] - s["plan_s"] for s in stats]
    return {
        "wall": statistics.median(walls),
        "own": statistics.median(own),
        "plan": statistics.median(s["plan_s"] for s in stats),
        "binds": binds,
        "evictions": stats[-1]["evictions"],
        "min": min(walls),
        "max": max(walls),
    }


def speed(runs: int, growth: bool) -> None:
    print(f"(a) one scheduling cycle, planner included (median of {runs} runs)")
    print(
        f"{'case':<34}{'pending':>8}{'binds':>7}{'median s':>10}{'scheduler s':>13}{'planner s':>11}{'min-max s':>14}"
    )
    cases: list[tuple[str, ClusterState]] = [
        ("1024 nodes, empty", generated(1024, 10_000, 0, empty=True)),
        ("1024 nodes, loaded (85% busy)", loaded(1024, 10_000, 0)),
    ]
    rows: dict[str, tuple[int, dict[str, float]]] = {}
    for label, state in cases:
        r = time_cycle(state, runs)
        rows[label] = (pending_count(state), r)
        print(
            f"{label:<34}{pending_count(state):>8}{r['binds']:>7}{r['wall']:>10.3f}{r['own']:>13.3f}"
            f"{r['plan']:>11.3f}{r['min']:>7.3f}-{r['max']:.3f}"
        )
    if not growth:
        return
    print("\n    growth (empty clusters, ~9.8 pending jobs per node)")
    print(f"{'nodes':>10}{'pending':>9}{'binds':>7}{'median s':>10}{'us/job':>9}{'ratio/job vs 128':>18}")
    base = None
    for nodes in (128, 1024, 4096):
        state = generated(nodes, nodes * 10_000 // 1024, 0, empty=True)
        r = time_cycle(state, runs if nodes < 4096 else max(3, runs // 2 + 1))
        per = r["wall"] / pending_count(state)
        base = base or per
        print(
            f"{nodes:>10}{pending_count(state):>9}{r['binds']:>7}{r['wall']:>10.3f}{per * 1e6:>9.1f}{per / base:>18.2f}"
        )


# ------------------------------------------------------------------------------------------------ (b) quality


class BestFit(Cycle):
    """The plain best-fit baseline: same order, quotas and constraints as gpuadmin; placement takes what
    leaves the least free capacity behind (node by free GPUs of the model, then GPUs by index; the shared unit
    with the least share left; the MIG instance on the GPU and node with the fewest free instances)."""

    def _place_whole(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        best: tuple[int, int, list[int]] | None = None
        for nc in self.index.nodes:
            if (restrict is not None and nc.idx not in restrict) or not node_ok(nc, shape):
                continue
            gpus = self._gpus_on(nc, shape)
            if gpus is not None:
                left = nc.free_whole(shape.model) - shape.gpus
                if best is None or (left, nc.idx) < best[:2]:
                    best = (left, nc.idx, gpus)
        if best is None:
            return None
        nc = self.index.nodes[best[1]]
        return Choice([Slot(node=nc.name, gpu=g) for g in best[2]], [Step(nc, gpus=best[2])])

    @staticmethod
    def _gpus_on(nc: Any, shape: Shape) -> list[int] | None:
        doms = sorted((d, sorted(g)) for d, g in nc.domains.items() if g and model_ok(shape, d[0]))
        if shape.nvlink and shape.gpus >= 2:
            for _, gpus in sorted(doms, key=lambda dg: dg[1][0]):  # first domain by GPU index that fits
                if len(gpus) >= shape.gpus:
                    return gpus[: shape.gpus]
            return None
        free = sorted(g for _, gs in doms for g in gs)
        return free[: shape.gpus] if len(free) >= shape.gpus else None

    def _place_gang(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        groups: dict[str, list[tuple[int, int, list[int]]]] = {}
        for nc in self.index.nodes:
            if (restrict is not None and nc.idx not in restrict) or not node_ok(nc, shape):
                continue
            gpus = self._gpus_on(nc, shape)
            if gpus is not None:
                key = (nc.network or "") if shape.rdma else ""
                groups.setdefault(key, []).append((nc.free_whole(shape.model) - shape.gpus, nc.idx, gpus))
        best: tuple[int, str, list[tuple[int, int, list[int]]]] | None = None
        for net, cands in sorted(groups.items()):
            if len(cands) >= shape.nodes:
                chosen = sorted(cands)[: shape.nodes]
                left = sum(c[0] for c in chosen)
                if best is None or (left, net) < best[:2]:
                    best = (left, net, chosen)
        if best is None:
            return None
        slots: list[Slot] = []
        steps: list[Step] = []
        for _, idx, gpus in best[2]:
            nc = self.index.nodes[idx]
            slots += [Slot(node=nc.name, gpu=g) for g in gpus]
            steps.append(Step(nc, gpus=gpus))
        return Choice(slots, steps)

    def _place_mig(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        best: tuple[int, int, int, int] | None = None
        for nc in self.index.nodes:
            if (restrict is not None and nc.idx not in restrict) or not node_ok(nc, shape):
                continue
            node_free = sum(len(s) for s in nc.mig.values())
            for (model, profile), members in nc.mig.items():
                if not model_ok(shape, model) or profile != mig_profile_name(model, shape.profile):
                    continue
                for gpu, start in members:
                    key = (nc.free_instances(gpu) * 100 + node_free, nc.idx, gpu, start)
                    if best is None or key < best:
                        best = key
        if best is None:
            return None
        nc = self.index.nodes[best[1]]
        return Choice([Slot(node=nc.name, gpu=best[2], mig_start=best[3])], [Step(nc, mig=(best[2], best[3]))])

    def _place_unit(self, job: Job, shape: Shape, restrict: set[int] | None) -> Choice | None:
        if shape.exclusive:
            return None
        best: tuple[float, int, int] | None = None
        for nc in self.index.nodes:
            if (restrict is not None and nc.idx not in restrict) or not node_ok(nc, shape):
                continue
            for k, unit in enumerate(nc.ts_units):
                state = unit.state()
                if not shape_unit_fits(state, shape):
                    continue
                need = (
                    shape.fraction
                    if shape.kind == "fraction"
                    else (shape.gib / unit.memory_gib if shape.kind == "memory" else 0.0)
                )
                key = (round(unit.residual - need, 9), nc.idx, k)
                if best is None or key < best:
                    best = key
        if best is None:
            return None
        nc = self.index.nodes[best[1]]
        unit = nc.ts_units[best[2]]
        return Choice([Slot(node=nc.name, gpu=unit.gpu, mig_start=unit.mig_start)], [Step(nc, unit=unit)])


def trace_run(kind: type[Cycle], nodes: int, jobs: int, cycles: int, seed: int, pairs: float = 0.0) -> dict[str, Any]:
    data = generate_inventory(nodes, jobs, seed)
    pick = random.Random(seed + 3)
    for n in data["nodes"]:  # optionally: bridged-pair boxes instead of NVSwitch boards
        if pick.random() < pairs:
            n["nvlink"] = "pairs"
    trace = [
        Job.model_validate({k: v for k, v in j.items() if k not in ("placement", "status")}, strict=False)
        for j in data["jobs"]
    ]
    data["jobs"] = []
    state = ClusterState.from_inventory(Inventory.model_validate(data, strict=False))
    workload = workload_of(trace)
    rng = random.Random(seed + 7)
    per = len(trace) // cycles
    frags: list[float] = []
    placed = 0
    gpus = 0.0
    elapsed = 0.0
    for c in range(cycles):
        submit = plan(state, [ch.SubmitJob(op="submit-job", job=j) for j in trace[c * per : (c + 1) * per]])
        assert submit.allowed
        state.commit(submit.view)
        t0 = time.perf_counter()
        result = kind(state).run()
        elapsed += time.perf_counter() - t0
        assert result.plan.allowed, result.plan.violations[:3]
        state.commit(result.plan.view)
        placed += len(result.bound)
        gpus += sum(state.usage[n].gpus for n in result.bound)
        frags.append(cluster_fragmentation(state, workload)[0])
        parts = fragmentation_parts(state, workload)
        running = sorted(j.name for j in state.jobs.values() if j.status == "running")
        done = [n for n in running if rng.random() < 0.3]
        state.commit(plan(state, [ch.CancelJob(op="cancel-job", name=n) for n in done]).view)
    return {
        "frag_mean": statistics.mean(frags),
        "frag_end": frags[-1],
        "placed": placed,
        "gpus": gpus,
        "seconds": elapsed,
        "frags": frags,
        "parts_end": parts,
    }


def fragmentation_parts(state: ClusterState, workload: Workload) -> tuple[float, float, float]:
    """The fragmented GPUs split by where they are: whole GPUs, MIG instances, time-sliced units."""
    whole = mig = shared = 0.0
    w = workload.total_weight
    for nc in CapacityIndex(state).nodes:
        a, b, c = nc.whole_part(), nc.mig_part(), nc.ts_part()
        whole += w * Workload.whole_idle(a) - workload.whole_credit(a)
        mig += w * Workload.mig_idle(b) - workload.mig_credit(b)
        shared += w * Workload.ts_idle(c) - workload.ts_credit(c)
    return whole, mig, shared


def quality(nodes: int, jobs: int, cycles: int, seed: int, pairs: float) -> None:
    print(
        f"\n(b) placement quality: generated trace, {nodes} nodes ({pairs:.0%} with NVLink pairs), "
        f"{jobs} jobs in {cycles} batches, seed {seed}"
    )
    ours = trace_run(Cycle, nodes, jobs, cycles, seed, pairs)
    base = trace_run(BestFit, nodes, jobs, cycles, seed, pairs)
    print(f"{'scheduler':<22}{'fragmented GPUs (mean)':>24}{'at end':>9}{'jobs placed':>13}{'GPUs placed':>13}")
    for label, r in (("gpuadmin (FGD)", ours), ("best-fit baseline", base)):
        parts = " / ".join(f"{x:.1f}" for x in r["parts_end"])
        print(
            f"{label:<22}{r['frag_mean']:>24.1f}{r['frag_end']:>9.1f}{r['placed']:>13}{r['gpus']:>13.1f}"
            f"   end by part (whole / MIG / time-sliced): {parts}"
        )
    cut = 1 - ours["frag_mean"] / base["frag_mean"] if base["frag_mean"] else 0.0
    print(
        f"ratio gpuadmin/best-fit fragmented GPUs (mean): {ours['frag_mean'] / base['frag_mean']:.3f} "
        f"({cut:+.1%} fewer); jobs placed ratio {ours['placed'] / max(1, base['placed']):.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-growth", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--quality-nodes", type=int, default=256)
    ap.add_argument("--quality-jobs", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--pairs",
        type=float,
        nargs="*",
        default=[0.0, 0.5],
        help="quality traces: share of nodes with NVLink pairs instead of NVSwitch (default 0 and 0.5)",
    )
    args = ap.parse_args()
    if not args.skip_speed:
        speed(args.runs, not args.skip_growth)
    for pairs in args.pairs:
        quality(args.quality_nodes, args.quality_jobs, 10, args.seed, pairs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
