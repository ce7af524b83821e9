"""Scheduler benchmark (plain script, never run as a test).

    .venv/bin/python bench/bench_schedule.py [--runs 5] [--skip-growth] [--baseline-rev REV]

(a) Speed: one scheduling cycle (`gpuadmin.engine.scheduler.schedule`, planner included) with 10,000 pending
    mixed jobs on 1,024 nodes x 8 GPUs, from the inventory generator (`bench/generate.py`):
      - "empty":  the generated jobs with their placements removed, so all 10,000 are pending on an idle
                  cluster (the most binds a cycle can make);
      - "loaded": the generated state as is (about 85% of the GPUs busy) plus enough jobs for ~10,000 pending;
      - the same two with sharing (`generate_inventory(..., sharing=True)`): the time-sliced pool becomes
        full GPUs and every non-MIG node shares its full GPUs dynamically (fractions compete with whole jobs);
    and the growth to 128 and 4,096 nodes (about 9.8 pending jobs per node, "empty"). Each tree's cycles run in
    a worker process of their own (`schedule_worker.py`); the runs are interleaved (case A once, case B once,
    ..., --runs times) and medians printed, wall and CPU time. With --baseline-rev REV, the same cases also run
    on REV's code from a temporary git worktree, interleaved with this tree's, with the ratio per case and
    whether both trees decided the same bindings.
(b) Quality (the paper's methodology, Weng et al. ATC'23 §6): a seeded GPU-sharing trace (`trace_mix`: the task
    mix of the Alibaba trace the paper uses, ~40% fractional tasks of 0.05-0.81 GPU, ~58% 1-GPU, ~2% 2/4/8-GPU)
    arrives in batches of 2% of the cluster's GPUs, one real `Cycle` per batch, nothing finishes, until the
    requests reach 100% of the GPUs; 128 nodes x 8 H100, 29 of them time-sliced (sized to the fractional
    demand). Scheduled by gpuadmin (target workload learned, and given the trace's mix) and by two plain
    best-fit baselines implemented here (same order, quotas, constraints): node then GPU by least capacity
    left (the paper's best-fit), and GPU by least share left. Reported: fragmented GPUs by the FGD measure per
    static pool (`metrics.pool_fragmentation`, workload = the trace's mix) at 80/90/100% arrived and over the
    arrival, jobs placed, GPUs allocated, arrival share at the first unplaced task.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import baseline_checkout
from gpuadmin.cli.main import set_gc_policy
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import plan
from gpuadmin.engine.scheduler import cluster_fragmentation
from gpuadmin.engine.scheduler.cycle import Choice, Cycle, Step
from gpuadmin.engine.scheduler.fgd import Workload, classes_from_shapes, usable_memory
from gpuadmin.engine.scheduler.filters import mig_profile_name, model_ok, node_ok, shape_unit_fits
from gpuadmin.engine.scheduler.metrics import pool_fragmentation
from gpuadmin.engine.scheduler.shape import Shape, shape_of
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory, Job, Slot

# ------------------------------------------------------------------------------------------------ (a) speed

WORKER = Path(__file__).resolve().parent / "schedule_worker.py"
ROOT = Path(__file__).resolve().parent.parent


class Worker:
    """A `schedule_worker.py` process timing cycles on the code of one tree (see that module)."""

    def __init__(self, label: str, root: Path, cases: list[list[Any]]) -> None:
        self.label = label
        self.proc = subprocess.Popen([sys.executable, str(WORKER), str(root), json.dumps(cases)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def ready(self) -> str:
        line = self.stdout.readline()
        if not line.startswith("ready "):
            raise SystemExit(f"{self.label}: the worker did not start (exit {self.proc.wait()})")
        return line.split(" ", 1)[1].strip()

    def cycle(self, case: int) -> dict[str, Any]:
        self.stdin.write(f"{case}\n")
        self.stdin.flush()
        answer: dict[str, Any] = json.loads(self.stdout.readline())
        return answer

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait()


def speed_cases(growth: bool) -> list[list[Any]]:
    """[label, nodes, jobs, seed, empty, sharing]: the four 1,024-node cases, then the growth to 128 and 4,096
    nodes (about 9.8 pending jobs per node, empty; the 1,024-node step is the first case)."""
    cases: list[list[Any]] = [
        ["1024 nodes, empty", 1024, 10_000, 0, True, False],
        ["1024 nodes, loaded (85% busy)", 1024, 10_000, 0, False, False],
        ["1024 nodes, sharing, empty", 1024, 10_000, 0, True, True],
        ["1024 nodes, sharing, loaded", 1024, 10_000, 0, False, True],
    ]
    if growth:
        cases += [[f"{n} nodes, empty (growth)", n, n * 10_000 // 1024, 0, True, False] for n in (128, 4096)]
    return cases


def speed(runs: int, growth: bool, baseline_rev: str | None) -> None:
    """Interleaved: each run times every case once on each tree in turn (the trees alternate who goes first),
    so a load that changes from minute to minute falls on all of them alike; medians over the runs."""
    cases = speed_cases(growth)
    with contextlib.ExitStack() as stack:
        workers = [Worker("this tree", ROOT, cases)]
        if baseline_rev is not None:
            tree = stack.enter_context(baseline_checkout(baseline_rev))
            workers.append(Worker(f"baseline {baseline_rev}", tree, cases))
        for worker in workers:
            stack.callback(worker.close)
            print(f"{worker.label}: gpuadmin from {worker.ready()}")
        times: dict[str, list[list[dict[str, Any]]]] = {w.label: [[] for _ in cases] for w in workers}
        for run in range(runs):
            for case in range(len(cases)):
                for worker in workers if run % 2 == 0 else workers[::-1]:
                    times[worker.label][case].append(worker.cycle(case))
    print(f"\n(a) one scheduling cycle, planner included: median of {runs} interleaved runs; wall = time.perf_counter "
          "(elapsed), CPU = time.process_time (this worker's CPU)")
    head = f"{'case':<34}{'pending':>8}{'binds':>7}{'wall s':>9}{'CPU s':>8}{'planner s':>11}"
    if baseline_rev is not None:
        head += f"{'base wall s':>13}{'base CPU s':>12}{'ratio wall':>12}{'ratio CPU':>11}  same decisions"
    print(head)
    for case, spec in enumerate(cases):
        mine = times[workers[0].label][case]
        row = (f"{spec[0]:<34}{mine[0]['pending']:>8}{mine[0]['binds']:>7}{_median(mine, 'wall'):>9.3f}"
               f"{_median(mine, 'cpu'):>8.3f}{_median(mine, 'plan'):>11.3f}")
        if baseline_rev is not None:
            base = times[workers[1].label][case]
            same = {r["decisions"] for r in mine} == {r["decisions"] for r in base}
            row += (f"{_median(base, 'wall'):>13.3f}{_median(base, 'cpu'):>12.3f}"
                    f"{_median(base, 'wall') / _median(mine, 'wall'):>11.2f}x"
                    f"{_median(base, 'cpu') / _median(mine, 'cpu'):>10.2f}x  {'yes' if same else 'NO'}")
        print(row)
    print("ratio = baseline / this tree (above 1: this tree is faster)" if baseline_rev is not None else "")
    if growth:
        small = times[workers[0].label][len(cases) - 2]
        per_small = _median(small, "wall") / small[0]["pending"]
        for case in (0, len(cases) - 1):
            mine = times[workers[0].label][case]
            per = _median(mine, "wall") / mine[0]["pending"]
            print(f"growth: {cases[case][0]}: {per * 1e6:.1f} us per pending job, {per / per_small:.2f}x the 128-node "
                  f"cycle's ({per_small * 1e6:.1f} us)")


def _median(results: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in results))
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

    def _place_unit(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
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
            return self._open_fewest_free(shape, restrict)
        nc = self.index.nodes[best[1]]
        unit = nc.ts_units[best[2]]
        return Choice([Slot(node=nc.name, gpu=unit.gpu, mig_start=unit.mig_start)], [Step(nc, unit=unit)])

    def _open_fewest_free(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        """No shared GPU fits: open a free full GPU of a dynamic-sharing node, best fit — on the node with the
        fewest free GPUs, in its smallest free domain."""
        best: tuple[int, int, int] | None = None
        for nc in self.index.nodes:
            if (restrict is not None and nc.idx not in restrict) or not node_ok(nc, shape):
                continue
            gpu = open_gpu(nc, shape)
            if gpu is not None and (best is None or (nc.free_whole(), nc.idx) < best[:2]):
                best = (nc.free_whole(), nc.idx, gpu)
        if best is None:
            return None
        nc = self.index.nodes[best[1]]
        return Choice([Slot(node=nc.name, gpu=best[2])], [Step(nc, open_gpu=best[2])])


def open_gpu(nc: Any, shape: Shape) -> int | None:
    """The free full GPU a fraction would open on a dynamic-sharing node (lowest index of the smallest free
    domain of the model), or None where the node does not share dynamically or the request does not fit."""
    if nc.reserve is None or shape.exclusive or shape.kind not in ("fraction", "memory"):
        return None
    doms = sorted((len(g), d, min(g)) for d, g in nc.domains.items() if g and model_ok(shape, d[0]))
    for _, dom, gpu in doms:
        if job_unit_need_shape(shape, usable_memory(dom[0], nc.reserve)) <= 1 + 1e-12:
            return gpu
    return None


class BestFitNode(BestFit):
    """Best-fit as Weng et al. run it (hkust-adsl/kubernetes-scheduler-simulator `best_fit_score.go`): the
    node that keeps the least free GPU capacity after the placement (the paper also weighs CPU, which
    gpuadmin does not schedule), then on that node the GPU that keeps the least free share."""

    def _place_unit(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        if shape.exclusive:
            return None
        best: tuple[float, float, int, int] | None = None
        for nc in self.index.nodes:
            if (restrict is not None and nc.idx not in restrict) or not node_ok(nc, shape):
                continue
            node_idle = nc.free_whole() + Workload.mig_idle(nc.mig_part()) + Workload.ts_idle(nc.ts_part())
            for k, unit in enumerate(nc.ts_units):
                if not shape_unit_fits(unit.state(), shape):
                    continue
                need = job_unit_need_shape(shape, unit.memory_gib)
                key = (round(node_idle - need * unit.weight, 9), round(unit.residual - need, 9), nc.idx, k)
                if best is None or key < best:
                    best = key
            gpu = open_gpu(nc, shape)
            if gpu is not None:  # a free GPU it would open: k = -1 - gpu marks it
                need = job_unit_need_shape(shape, usable_memory(nc.gpus[gpu].model, nc.reserve))
                key = (round(node_idle - need, 9), round(1.0 - need, 9), nc.idx, -1 - gpu)
                if best is None or key < best:
                    best = key
        if best is None:
            return None
        nc = self.index.nodes[best[2]]
        if best[3] < 0:
            return Choice([Slot(node=nc.name, gpu=-1 - best[3])], [Step(nc, open_gpu=-1 - best[3])])
        unit = nc.ts_units[best[3]]
        return Choice([Slot(node=nc.name, gpu=unit.gpu, mig_start=unit.mig_start)], [Step(nc, unit=unit)])


def job_unit_need_shape(shape: Shape, memory_gib: float) -> float:
    if shape.kind == "fraction":
        return shape.fraction
    if shape.kind == "memory":
        return shape.gib / memory_gib if memory_gib > 0 else float("inf")
    return 0.0


# The quality trace: a GPU-sharing task mix modelled on the Alibaba PAI trace that Weng et al. evaluate FGD on
# (alibaba/clusterdata cluster-trace-gpu-v2023, `openb_pod_list_default.csv`, 8,152 tasks, 86.7% of them GPU
# tasks). The proportions are estimates read off two samples of that file (its first 246 tasks and ~250 tasks
# around openb-pod-4014..4261): CPU-only tasks are dropped (a gpuadmin job always asks for GPU capacity); of
# the GPU tasks about 40% ask for a fraction of one GPU (gpu_milli < 1000), about 58% for one whole GPU and
# about 2% for 2, 4 or 8 GPUs. The fractions are the trace's most frequent gpu_milli values, with their
# approximate frequencies among the fractional tasks.
FRACTIONS: tuple[tuple[float, float], ...] = (
    (0.81, 25.0),
    (0.47, 25.0),
    (0.32, 14.0),
    (0.46, 8.0),
    (0.22, 7.0),
    (0.16, 6.0),
    (0.23, 4.0),
    (0.11, 3.0),
    (0.65, 3.0),
    (0.55, 2.0),
    (0.59, 1.0),
    (0.27, 1.0),
    (0.05, 1.0),
)
SHARE_TASKS = 0.40  # of the GPU tasks
WHOLE_TASKS: tuple[tuple[int, float], ...] = ((1, 0.58), (2, 0.01), (4, 0.005), (8, 0.005))
TRACE_MODEL = "H100-SXM5-80GB"
TRACE_REPLICAS = 8  # time-slicing replicas per shared GPU (the k8s device plugin's `replicas`)


def trace_mix() -> list[tuple[dict[str, Any], float]]:
    """(request, probability) of each task class of the quality trace."""
    total = sum(w for _, w in FRACTIONS)
    mix: list[tuple[dict[str, Any], float]] = [({"fraction": f}, SHARE_TASKS * w / total) for f, w in FRACTIONS]
    mix += [({"gpus": g}, p) for g, p in WHOLE_TASKS]
    norm = sum(p for _, p in mix)
    return [(r, p / norm) for r, p in mix]


def demand(request: dict[str, Any]) -> float:
    return float(request.get("fraction", request.get("gpus", 0)))


def trace_cluster(nodes: int, sharing: bool = False) -> tuple[dict[str, Any], int]:
    """`nodes` 8-GPU H100 NVSwitch nodes. Static (`sharing` False): a share of them time-sliced, sized to the
    trace's fractional GPU demand (an operator provisions the shared pool for the fractional work), the rest
    full-mode. Sharing: every node full-mode in one dynamic-sharing pool, so fractional and whole tasks compete
    for the same GPUs (Run:ai's setting, and the paper's)."""
    if sharing:
        pool = [
            {"name": f"gpu-{i:04d}", "platform": "kubernetes", "nvlink": "nvswitch", "labels": {"pool": "shared"},
             "gpus": [{"index": g, "model": TRACE_MODEL, "mode": "full"} for g in range(8)]}
            for i in range(nodes)
        ]
        return {
            "version": 1,
            "cluster": "fgd-trace-sharing",
            "sharing_pools": [{"name": "shared", "selector": {"pool": "shared"}, "sharing": {"fractions": "dynamic"}}],
            "queues": [{"name": "q", "quota": {"gpus": 100 * nodes * 8}}],
            "nodes": pool,
            "jobs": [],
        }, nodes
    mix = trace_mix()
    shared_demand = sum(p * demand(r) for r, p in mix if "fraction" in r)
    shared = round(nodes * shared_demand / sum(p * demand(r) for r, p in mix))
    node_list = []
    for i in range(nodes):
        ts = i < shared
        gpus = [
            {"index": g, "model": TRACE_MODEL, "mode": "time-sliced", "replicas": TRACE_REPLICAS}
            if ts
            else {"index": g, "model": TRACE_MODEL, "mode": "full"}
            for g in range(8)
        ]
        node_list.append(
            {"name": f"{'ts' if ts else 'gpu'}-{i:04d}", "platform": "baremetal", "nvlink": "nvswitch", "gpus": gpus}
        )
    data = {
        "version": 1,
        "cluster": "fgd-trace",
        "queues": [{"name": "q", "quota": {"gpus": 100 * nodes * 8}}],
        "nodes": node_list,
        "jobs": [],
    }
    return data, shared


def trace_jobs(nodes: int, seed: int, load: float) -> list[Job]:
    """Tasks drawn i.i.d. from the mix (seeded) until their GPU requests reach `load` x the cluster's GPUs."""
    rng = random.Random(seed)
    mix = trace_mix()
    requests, probs = [r for r, _ in mix], [p for _, p in mix]
    out: list[Job] = []
    total = 0.0
    while total < load * nodes * 8:
        req = rng.choices(requests, probs)[0]
        total += demand(req)
        out.append(Job.model_validate({"name": f"t{len(out):06d}", "queue": "q", "request": req}, strict=False))
    return out


def trace_workload() -> Workload:
    classes = []
    for req, p in trace_mix():
        job = Job.model_validate({"name": "x", "queue": "q", "request": req}, strict=False)
        classes.append(shape_of(job).task_class(p))
    return Workload(classes_from_shapes(classes, top=len(classes)))


def trace_run(
    kind: type[Cycle], nodes: int, seed: int, batch: float, load: float, target: bool = False, sharing: bool = False
) -> dict[str, Any]:
    """Tasks arrive in batches of `batch` x the cluster's GPUs (by request), one scheduling cycle per batch,
    nothing finishes (the paper's workload inflation), until `load` x the GPUs have arrived. Unplaced tasks
    stay pending and are tried again by every later cycle. With `sharing` the fragmentation is the paper's
    measure over the whole cluster (`cluster_fragmentation`: every GPU can host every task); without, per
    static pool (`pool_fragmentation`)."""
    data, shared = trace_cluster(nodes, sharing)
    state = ClusterState.from_inventory(Inventory.model_validate(data, strict=False))
    jobs = trace_jobs(nodes, seed, load)
    workload = trace_workload()
    capacity = nodes * 8
    curve: list[tuple[float, float, float, float, float]] = []  # (arrived, frag, frag ts, frag whole, allocated)
    arrived = 0.0
    first_fail: float | None = None
    elapsed = 0.0
    k = 0
    while k < len(jobs):
        batch_jobs: list[Job] = []
        goal = arrived + batch * capacity
        while k < len(jobs) and arrived < goal:
            batch_jobs.append(jobs[k])
            arrived += demand(jobs[k].request.model_dump(exclude_none=True))
            k += 1
        submit = plan(state, [ch.SubmitJob(op="submit-job", job=j) for j in batch_jobs])
        assert submit.allowed
        state.commit(submit.view)
        t0 = time.perf_counter()
        result = (kind(state, workload=workload) if target else kind(state)).run()
        elapsed += time.perf_counter() - t0
        assert result.plan.allowed, result.plan.violations[:3]
        state.commit(result.plan.view)
        if first_fail is None and result.pending:
            first_fail = arrived / capacity
        allocated = sum(u.gpus for u in state.usage.values())
        if sharing:
            frag = cluster_fragmentation(state, workload)[0]
            curve.append((arrived / capacity, frag, 0.0, 0.0, allocated))
        else:
            pools = pool_fragmentation(state, workload)
            frag = sum(f for f, _ in pools.values())
            curve.append((arrived / capacity, frag, pools["time-sliced"][0], pools["whole"][0], allocated))
    running = [j for j in state.jobs.values() if j.status == "running"]
    fill = first_fail if first_fail is not None else curve[-1][0]
    return {
        "at_fill": at(curve, fill)[1],
        "curve": curve,
        "placed": len(running),
        "placed_share": sum(1 for j in running if j.request.fraction is not None),
        "arrived": len(jobs),
        "allocated": curve[-1][4],
        "first_fail": first_fail,
        "all_pool": cluster_fragmentation(state, workload)[0],
        "seconds": elapsed,
        "shared_nodes": shared,
    }


def at(curve: list[tuple[float, float, float, float, float]], x: float) -> tuple[float, float, float, float, float]:
    """The first point of the curve at or past `x` arrived."""
    return next((p for p in curve if p[0] >= x - 1e-9), curve[-1])


def quality(nodes: int, seeds: list[int], batch: float, load: float, sharing: bool = False) -> None:
    _, shared = trace_cluster(nodes, sharing)
    pool = (
        f"all {nodes} full-mode in one dynamic-sharing pool (fractions and whole tasks compete)"
        if sharing
        else f"{shared} time-sliced x{TRACE_REPLICAS}, {nodes - shared} full"
    )
    print(
        f"\n(b) placement quality: GPU-sharing trace (Alibaba-like mix), {nodes} nodes x 8 {TRACE_MODEL} "
        f"({pool}), arrivals of {batch:.0%} of the GPUs per cycle up to {load:.0%}, seeds {seeds}"
    )
    # gpuadmin twice: the default cycle (target workload learned from the running and pending jobs) and the
    # cycle given the trace's task mix as its target workload (the paper's setting: typical tasks known)
    kinds: list[tuple[str, type[Cycle], bool]] = [
        ("gpuadmin (FGD)", Cycle, False),
        ("gpuadmin (FGD, mix)", Cycle, True),
        ("best-fit (node, GPU)", BestFitNode, False),
        ("best-fit (GPU)", BestFit, False),
    ]
    marks = (0.8, 0.9, 1.0)
    head = "".join(f"{f'frag @{m:.0%}':>11}" for m in marks)
    print(
        f"{'scheduler':<22}{'seed':>5}{head}{'  ts / whole @end':>18}{'mean':>8}{'all-pool':>9}"
        f"{'placed':>8}{'of':>7}{'GPUs':>8}{'1st fail':>9}{'@fail':>7}{'s':>6}"
    )
    totals: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in kinds}
    for seed in seeds:
        for label, kind, target in kinds:
            r = trace_run(kind, nodes, seed, batch, load, target, sharing)
            totals[label].append(r)
            cells = "".join(f"{at(r['curve'], m)[1]:>11.1f}" for m in marks)
            end = r["curve"][-1]
            mean = statistics.mean(p[1] for p in r["curve"])
            ff = f"{r['first_fail']:.0%}" if r["first_fail"] is not None else "-"
            print(
                f"{label:<22}{seed:>5}{cells}{f'{end[2]:.1f} / {end[3]:.1f}':>18}{mean:>8.1f}{r['all_pool']:>9.1f}"
                f"{r['placed']:>8}{r['arrived']:>7}{r['allocated']:>8.1f}{ff:>9}{r['at_fill']:>7.1f}"
                f"{r['seconds']:>6.1f}"
            )
    for ours_label in ("gpuadmin (FGD)", "gpuadmin (FGD, mix)"):
        compare(totals, ours_label, [label for label, _, _ in kinds[2:]], marks)


def compare(
    totals: dict[str, list[dict[str, Any]]], ours_label: str, bases: list[str], marks: tuple[float, ...]
) -> None:
    ours = totals[ours_label]
    print(f"  {ours_label}:")
    for label in bases:
        base = totals[label]
        for m in marks:
            a = sum(at(r["curve"], m)[1] for r in ours)
            b = sum(at(r["curve"], m)[1] for r in base)
            print(f"  vs {label:<20} @{m:.0%} arrived: fragmented GPUs ratio {a / b:.3f} ({1 - a / b:+.1%} fewer)")
        a = sum(r["at_fill"] for r in ours)
        b = sum(r["at_fill"] for r in base)
        print(
            f"  vs {label:<20} at the first unplaced task: fragmented GPUs ratio {a / b:.3f} ({1 - a / b:+.1%} fewer)"
        )
        placed = sum(r["placed"] for r in ours) / sum(r["placed"] for r in base)
        gpus = sum(r["allocated"] for r in ours) / sum(r["allocated"] for r in base)
        print(f"  vs {label:<20} jobs placed ratio {placed:.3f}, GPUs allocated ratio {gpus:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-growth", action="store_true")
    ap.add_argument("--baseline-rev", metavar="REV", default=None,
                    help="also time the speed cases on REV's code (a temporary git worktree), interleaved, with ratios")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--quality-nodes", type=int, default=128)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--batch", type=float, default=0.02, help="arrivals per cycle, share of the cluster's GPUs")
    ap.add_argument("--load", type=float, default=1.0, help="arrive until this share of the GPUs is requested")
    ap.add_argument(
        "--cluster", choices=("static", "sharing", "both"), default="both",
        help="(b) on static pools (time-sliced + full), on one dynamic-sharing pool, or both",
    )
    args = ap.parse_args()
    set_gc_policy(long_lived=False)  # the process-wide GC policy a headless gpuadmin command runs under
    if not args.skip_speed:
        speed(args.runs, not args.skip_growth, args.baseline_rev)
    if not args.skip_quality:
        if args.cluster in ("static", "both"):
            quality(args.quality_nodes, args.seeds, args.batch, args.load)
        if args.cluster in ("sharing", "both"):
            quality(args.quality_nodes, args.seeds, args.batch, args.load, sharing=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
