"""Shared helpers: medians of repeated timings, and generated inventories written once per run."""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpuadmin.store.generate import dump_inventory, generate_inventory


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def generated_file(nodes: int, jobs: int, seed: int = 0) -> Path:
    path = Path(tempfile.gettempdir()) / f"gpuadmin-bench-{nodes}n-{jobs}j-s{seed}.yaml"
    if not path.exists():
        with path.open("w", encoding="utf-8") as out:  # the generator's own compact writer (one line per entry)
            dump_inventory(generate_inventory(nodes, jobs, seed), out)
    return path
