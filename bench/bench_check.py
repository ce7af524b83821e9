"""Checking one change at 64 GPUs vs at 8,192 GPUs (DESIGN §11: ≤ 1 ms median, ratio ≤ 2).

The change is a `set-mig` on an idle GPU (starts chosen by the engine): plan() applies it to a copy-on-write
view and runs the rules on what it touches. The 64-GPU cluster is the baseline of the ratio. Then plan +
apply throughput on a real SQLite state (WAL, synchronous=FULL), against planning alone.

    .venv/bin/python -m bench.bench_check [--repeat 301]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.common import median_seconds
from bench.generate import generate_inventory
from gpuadmin.catalog import get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import plan
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory
from gpuadmin.service import Service
from gpuadmin.store import Store


def _idle_full_gpu(state: ClusterState) -> tuple[str, int, str]:
    for node in state.nodes.values():
        if node.state != "ready":
            continue
        for gpu in node.gpus:
            model = get_catalog().model(gpu.model)
            if gpu.mode == "full" and not state.holders.get((node.name, gpu.index)) and model and model.mig_capable:
                return node.name, gpu.index, gpu.model
    raise SystemExit("no idle MIG-capable GPU in the generated inventory")


def _balanced(model_name: str) -> list[ch.MigInstance]:
    """mig-parted's all-balanced shape for this model: one 3g, one 2g, two 1g (starts left to the engine)."""
    model = get_catalog().model(model_name)
    assert model is not None
    pick = {(p.compute_slices, p.memory_slices): p.name for p in model.mig_profiles if not p.media_extensions}
    return [ch.MigInstance(profile=pick[(g, m)]) for g, m in ((3, 4), (2, 2), (1, 1), (1, 1))]


def one_change_seconds(nodes: int, jobs: int, repeat: int) -> tuple[float, int]:
    state = ClusterState.from_inventory(Inventory.model_validate(generate_inventory(nodes, jobs)))
    node, gpu, model = _idle_full_gpu(state)
    change = ch.SetMig(op="set-mig", node=node, gpu=gpu, instances=_balanced(model))
    result = plan(state, [change])
    assert result.allowed, result.violations
    gpus = sum(len(n.gpus) for n in state.nodes.values())
    return median_seconds(lambda: plan(state, [change]), repeat), gpus


def apply_throughput(applies: int) -> tuple[float, float]:
    inventory = Inventory.model_validate(generate_inventory(64, 2000))
    with tempfile.TemporaryDirectory() as tmp:
        Store.create(Path(tmp) / "state", inventory)
        service = Service(state_dir=Path(tmp) / "state")
        node = next(iter(service.state.nodes))
        changes: list[list[ch.Change]] = [[ch.Cordon(op="cordon", node=node)],
                                          [ch.Uncordon(op="uncordon", node=node)]]
        plan_only = median_seconds(lambda: service.plan(changes[0]), 51)
        import time

        start = time.perf_counter()
        for i in range(applies):
            service.apply(service.plan(changes[i % 2]))
        per_apply = (time.perf_counter() - start) / applies
    return per_apply, plan_only


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=301)
    parser.add_argument("--applies", type=int, default=200)
    args = parser.parse_args()
    small, small_gpus = one_change_seconds(8, 80, args.repeat)
    large, large_gpus = one_change_seconds(1024, 10_000, args.repeat)
    print(f"one set-mig change, {small_gpus:5d} GPUs: {small * 1e3:.3f} ms median of {args.repeat} (baseline)")
    print(f"one set-mig change, {large_gpus:5d} GPUs: {large * 1e3:.3f} ms median of {args.repeat}   "
          f"ratio {large / small:.2f}x (target <= 1 ms, ratio <= 2)")
    per_apply, plan_only = apply_throughput(args.applies)
    print(f"plan + apply on SQLite (64 nodes, 2,000 jobs): {per_apply * 1e3:.2f} ms each, "
          f"{1 / per_apply:.0f} applies/s; planning alone {plan_only * 1e3:.3f} ms "
          f"(apply costs {per_apply / plan_only:.1f}x the plan)")


if __name__ == "__main__":
    main()
