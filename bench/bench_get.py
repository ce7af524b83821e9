"""`gpuadmin get nodes -o json` on the 1,024-node state, whole process (DESIGN §11: ≤ 0.6 s), and `get gpus -o json`.

The state holds 1,024 nodes × 8 GPUs and 100,000 jobs. Baseline, same run: the bare interpreter starting
and exiting (`python -c pass`), so the ratio shows what gpuadmin adds to process start. Also the RSS of
one process holding the whole state (target ≤ 300 MB).

    .venv/bin/python -m bench.bench_get [--repeat 7] [--baseline-rev main]

With `--baseline-rev REV`, the first `get jobs` (REASON column: a dry-run cycle and an explanation per pending
job) on a fresh state is also timed with REV's code, checked out in a temporary git worktree, the two runs
alternated, and their ratio printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import baseline_checkout, generated_file, median_seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--baseline-rev", help="also time `get jobs` with this revision's code, alternated")
    args = parser.parse_args()
    if args.baseline_rev:
        compare_get_jobs(args.baseline_rev, args.jobs, args.repeat)
        return
    source = generated_file(1024, args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        cli = [sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state)]
        subprocess.run([*cli, "init", "--from", str(source)], check=True, capture_output=True)
        base = median_seconds(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), args.repeat)
        get = median_seconds(lambda: subprocess.run([*cli, "get", "nodes", "-o", "json"], check=True,
                                                    stdout=subprocess.DEVNULL), args.repeat)
        gpus = median_seconds(lambda: subprocess.run([*cli, "get", "gpus", "-o", "json"], check=True,
                                                     stdout=subprocess.DEVNULL), args.repeat)
        jobs = median_seconds(lambda: subprocess.run([*cli, "get", "jobs", "-o", "name"], check=True,
                                                     stdout=subprocess.DEVNULL), 3)
        reasons = median_seconds(lambda: subprocess.run([*cli, "get", "jobs"], check=True,
                                                        stdout=subprocess.DEVNULL), 3)
        rss = subprocess.run(
            [sys.executable, "-c",
             "import resource, sys; from pathlib import Path; from gpuadmin.store import Store;"
             "s = Store.open(Path(sys.argv[1])).load();"
             "print(len(s.nodes), len(s.jobs), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)",
             str(state)], check=True, capture_output=True, text=True).stdout.split()
    print(f"state: 1024 nodes, {args.jobs} jobs")
    print(f"baseline python -c pass           : {base * 1000:7.1f} ms (median of {args.repeat})")
    print(f"gpuadmin get nodes -o json        : {get * 1000:7.1f} ms   ratio {get / base:.1f}x baseline "
          f"(target <= 600 ms)")
    print(f"gpuadmin get gpus -o json         : {gpus * 1000:7.1f} ms   ratio {gpus / base:.1f}x baseline")
    print(f"gpuadmin get jobs -o name (all)   : {jobs * 1000:7.1f} ms (median of 3)")
    print(f"gpuadmin get jobs (REASON column) : {reasons * 1000:7.1f} ms (median of 3; runs a dry-run cycle)")
    print(f"max RSS, whole state loaded ({rss[0]} nodes, {rss[1]} jobs): {rss[2]} MB (target <= 300 MB)")


def compare_get_jobs(rev: str, jobs: int, repeat: int) -> None:
    """The first `get jobs` on a fresh state (the why-pending reasons are cached per revision in the state, so
    each run gets a state just made with `init`, untimed), this tree against `rev`, alternated."""
    source = generated_file(1024, jobs)
    here = Path(__file__).resolve().parents[1]
    times: dict[str, list[float]] = {"here": [], "base": []}
    with tempfile.TemporaryDirectory() as tmp, baseline_checkout(rev) as base_tree:
        for run in range(repeat):
            for label, tree in (("here", here), ("base", base_tree)):
                env = {**os.environ, "PYTHONPATH": str(tree)}
                cli = [sys.executable, "-m", "gpuadmin.cli.main", "--state", str(Path(tmp) / f"{label}-{run}")]
                subprocess.run([*cli, "init", "--from", str(source)], check=True, capture_output=True, env=env)
                start = time.perf_counter()
                subprocess.run([*cli, "get", "jobs"], check=True, stdout=subprocess.DEVNULL, env=env)
                times[label].append(time.perf_counter() - start)
    mine, theirs = statistics.median(times["here"]), statistics.median(times["base"])
    print(f"state: 1024 nodes, {jobs} jobs; first `get jobs` (REASON column) on a fresh state, "
          f"median of {repeat}, alternated")
    print(f"this tree : {mine:7.2f} s (target <= 3 s)   runs: {', '.join(f'{t:.2f}' for t in times['here'])}")
    print(f"{rev:10}: {theirs:7.2f} s   runs: {', '.join(f'{t:.2f}' for t in times['base'])}")
    print(f"ratio     : {theirs / mine:.2f}x faster than {rev}")


if __name__ == "__main__":
    main()
