"""Shared helpers: medians of repeated timings, generated inventories written once per run, a checkout of
another revision to compare against in the same run, and a child process's own time and peak memory."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.generate import dump_inventory, generate_inventory

ROOT = Path(__file__).resolve().parents[1]


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


@contextmanager
def baseline_checkout(rev: str) -> Iterator[Path]:
    """A temporary `git worktree` of `rev` (detached), removed afterwards: run the same command on its code (with
    `PYTHONPATH` set to it, see `in_tree`) and on this tree's, alternating, for a ratio in one run."""
    holder = Path(tempfile.mkdtemp(prefix="gpuadmin-baseline-"))
    tree = holder / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(holder, ignore_errors=True)


def in_tree(tree: Path) -> dict[str, str]:
    """The environment that makes `python -m gpuadmin...` import the code of `tree` (ahead of the installed one)."""
    return {**os.environ, "PYTHONPATH": str(tree)}


# Run by a fresh, small interpreter: the child's peak RSS is that launcher's RUSAGE_CHILDREN. Measured from this
# process instead, a child inherits its parent's high-water mark on Linux (exec keeps the larger of the two in
# `ru_maxrss`): the bench's own 600 MB of generated inventory was reported as the command's.
_LAUNCHER = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
took = time.perf_counter() - start
child = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([took, child.ru_utime + child.ru_stime, child.ru_maxrss / 1024]))
"""


@dataclass(frozen=True)
class ChildRun:
    """One command's run: wall time (without the launcher's start), CPU time (user + system: what the other
    processes of a loaded machine disturb less) and peak RSS in MB, all its own."""

    wall: float
    cpu: float
    rss_mb: float


def child_run(command: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> ChildRun:
    """Run `command` once, under the launcher (see above)."""
    out = subprocess.run([sys.executable, "-c", _LAUNCHER, *command], check=True, capture_output=True, text=True,
                         env=env, cwd=cwd).stdout
    wall, cpu, rss = json.loads(out)
    return ChildRun(float(wall), float(cpu), float(rss))
