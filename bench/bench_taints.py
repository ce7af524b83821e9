"""What the taint filter costs a scheduling cycle (plain script, never run as a test).

    .venv/bin/python bench/bench_taints.py [--runs 3] [--nodes 1024] [--jobs 10000] [--state empty|loaded]

A GPU Operator cluster commonly taints its GPU nodes `nvidia.com/gpu=present:NoSchedule`, and its GPU pods carry the
toleration (NVIDIA's examples; the ExtendedResourceToleration admission plugin adds it). Once a ready node has such
a taint, every job goes through the node-level filters (`node_filters`: the taint filter applies to all of them),
not the cycle's fast path. This times one cycle (`gpuadmin.engine.scheduler.schedule`, planner included) on the
generated state of bench_schedule (`bench/generate.py`, seed 0) as it is (the baseline); with every ready node so
tainted and every job tolerating it (the fast path: the same bindings as the baseline, printed); and with one ready
node in eight also tainted `dedicated=inference:NoSchedule`, which no job tolerates (every job goes through the
filters). Interleaved runs, medians printed with the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.generate import generate_inventory
from gpuadmin.engine import changes as ch
from gpuadmin.engine.scheduler import schedule
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


DEDICATED = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}


def states(nodes: int, jobs: int, empty: bool) -> tuple[ClusterState, ClusterState, ClusterState]:
    """The generated state; with every ready node tainted and every job tolerating it; and with one ready node in
    eight tainted `dedicated=inference:NoSchedule` besides, which no job tolerates (every job is filtered)."""
    data = generate_inventory(nodes, jobs, 0)
    if empty:
        for raw in data["jobs"]:
            raw.pop("placement", None)
            raw.pop("status", None)
    plain = ClusterState.from_inventory(Inventory.model_validate(data, strict=False))
    ready = [raw for raw in data["nodes"] if raw.get("state", "ready") == "ready"]
    for raw in ready:
        raw["taints"] = [TAINT]
    for raw in data["jobs"]:
        raw["tolerations"] = [TOLERATION]
    tolerated = ClusterState.from_inventory(Inventory.model_validate(data, strict=False))
    for raw in ready[::8]:
        raw["taints"] = [TAINT, DEDICATED]
    return plain, tolerated, ClusterState.from_inventory(Inventory.model_validate(data, strict=False))


def timed(state: ClusterState) -> tuple[float, tuple[Any, ...]]:
    gc.collect()
    start = time.perf_counter()
    result = schedule(state)
    took = time.perf_counter() - start
    decided = tuple((c.name, tuple((s.node, s.gpu, s.mig_start) for s in c.placement))
                    for c in result.changes if isinstance(c, ch.BindJob))
    return took, decided


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--state", choices=("empty", "loaded"), default="empty")
    args = parser.parse_args()
    cases = states(args.nodes, args.jobs, args.state == "empty")
    times: dict[str, list[float]] = {"untainted (baseline)": [], "tainted, tolerated": [],
                                     "1/8 not tolerated": []}
    decisions: dict[str, tuple[Any, ...]] = {}
    for _ in range(args.runs):
        for label, state in zip(times, cases, strict=True):
            took, decisions[label] = timed(state)
            times[label].append(took)
    base = statistics.median(times["untainted (baseline)"])
    print(f"one cycle, {args.nodes} nodes, {args.state} state, {len(cases[0].jobs)} jobs; medians of {args.runs} "
          "runs")
    for label, runs in times.items():
        median = statistics.median(runs)
        print(f"  {label:<22} {median:7.3f} s  ({min(runs):.3f}-{max(runs):.3f})  {median / base:5.2f}x  "
              f"{len(decisions[label])} binds")
    same = decisions["untainted (baseline)"] == decisions["tainted, tolerated"]
    print(f"  tainted, tolerated decides the baseline's bindings: {'yes' if same else 'no'}")


if __name__ == "__main__":
    main()
