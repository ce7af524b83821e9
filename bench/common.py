"""Shared helpers: medians of repeated timings, generated inventories written once per run, and a temporary
checkout of a baseline revision to time against in the same run."""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from bench.generate import dump_inventory, generate_inventory


def median_seconds(fn: Callable[[], object], repeat: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """The median time of `repeat` calls of `fn`, by `clock` (wall time unless told: see `interleaved_medians`)."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def interleaved_medians(fns: Sequence[Callable[[], object]], repeat: int,
                        clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """The median time of each of `fns`, run in turn `repeat` times: on a shared machine whose load changes
    from minute to minute, each gets the same share of the quiet and the busy moments. `clock` may be
    `time.process_time`: this process's CPU time, which other processes on the machine disturb less."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, taken in zip(fns, times, strict=True):
            start = clock()
            fn()
            taken.append(clock() - start)
    return [statistics.median(taken) for taken in times]


def generated_file(nodes: int, jobs: int, seed: int = 0) -> Path:
    path = Path(tempfile.gettempdir()) / f"gpuadmin-bench-{nodes}n-{jobs}j-s{seed}.yaml"
    if not path.exists():
        with path.open("w", encoding="utf-8") as out:  # the generator's own compact writer (one line per entry)
            dump_inventory(generate_inventory(nodes, jobs, seed), out)
    return path


@contextlib.contextmanager
def baseline_checkout(rev: str) -> Iterator[Path]:
    """`rev` of this repository checked out in a temporary `git worktree` (detached), removed afterwards: run
    the same measurement there in a subprocess (`PYTHONPATH` at the returned folder) for a ratio against
    that code in the same command."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="gpuadmin-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tree), rev],
                       check=True, capture_output=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)
