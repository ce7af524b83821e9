"""The read commands on the 1,024-node, 100,000-job state, whole process: `get nodes -o json` (DESIGN §11:
≤ 0.6 s), `get gpus -o json`, `get jobs -o name` and `get jobs` (its REASON column from a dry-run cycle, computed
once per revision and kept), each with its own peak RSS (target ≤ 300 MB for the whole state).

Baseline, same run: with `--baseline-rev REV`, the same commands on REV's code (a temporary `git worktree`, its
own state made by its own `init`), alternating with this tree's run by run, so both see the same load; the ratio
is this tree's median over REV's. Without it, the bare interpreter starting and exiting (`python -c pass`).

    .venv/bin/python -m bench.bench_get [--repeat 7] [--baseline-rev main]

With `--first-get-jobs`, only the first `get jobs` (REASON column: a dry-run cycle and an explanation per
pending job) on a fresh state, each run on a state just made by `init` (untimed), this tree against
`--baseline-rev REV` alternated.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.common import ROOT, ChildRun, baseline_checkout, child_run, generated_file, in_tree

COMMANDS = {
    "get nodes -o json": ("get", "nodes", "-o", "json"),
    "get gpus -o json": ("get", "gpus", "-o", "json"),
    "get jobs -o name": ("get", "jobs", "-o", "name"),
    "get jobs": ("get", "jobs"),  # the first run at a revision computes the REASONs: measured after `warm`
}
LOAD = ("-c", "import sys; from pathlib import Path; from gpuadmin.store import Store; "
              "s = Store.open(Path(sys.argv[1])).load(); print(len(s.nodes), len(s.jobs))")


@contextmanager
def _side(tree: Path, source: Path, work: Path, name: str) -> Iterator[tuple[list[str], dict[str, str]]]:
    """The gpuadmin command line of `tree`'s code on its own state (made from `source`), and its environment."""
    env = in_tree(tree)
    cli = [sys.executable, "-m", "gpuadmin.cli.main", "--state", str(work / name)]
    child_run([*cli, "init", "--from", str(source)], env, tree)
    child_run([*cli, "get", "jobs"], env, tree)  # warm: the REASONs of this revision are computed and kept
    yield cli, env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--baseline-rev", metavar="REV", default=None,
                        help="compare with the same commands on REV's code (a temporary git worktree)")
    parser.add_argument("--first-get-jobs", action="store_true",
                        help="only the first `get jobs` on a fresh state (needs --baseline-rev)")
    args = parser.parse_args()
    if args.first_get_jobs:
        if args.baseline_rev is None:
            parser.error("--first-get-jobs needs --baseline-rev")
        compare_get_jobs(args.baseline_rev, args.jobs, args.repeat)
        return
    source = generated_file(1024, args.jobs)
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        sides = {"this": stack.enter_context(_side(ROOT, source, work, "this"))}
        if args.baseline_rev is not None:
            tree = stack.enter_context(baseline_checkout(args.baseline_rev))
            sides[args.baseline_rev] = stack.enter_context(_side(tree, source, work, "base"))
        trees = {"this": ROOT, **({args.baseline_rev: tree} if args.baseline_rev is not None else {})}
        runs: dict[tuple[str, str], list[ChildRun]] = {}
        for _ in range(args.repeat):
            for label, command in COMMANDS.items():
                for side, (cli, env) in sides.items():  # alternating: both sides share each moment's load
                    runs.setdefault((label, side), []).append(child_run([*cli, *command], env, trees[side]))
        python = ([statistics.median(child_run([sys.executable, "-c", "pass"]).wall for _ in range(args.repeat))]
                  if args.baseline_rev is None else [])
        cli, env = sides["this"]
        loaded = child_run([sys.executable, *LOAD, cli[-1]], env)
    print(f"state: 1024 nodes, {args.jobs} jobs; medians of {args.repeat}: wall time, CPU time (user + system) and "
          "peak RSS, each the command's own")
    for label in COMMANDS:
        this = _medians(runs[(label, "this")])
        line = f"gpuadmin {label:<18}: {_figures(this)}"
        if args.baseline_rev is not None:
            base = _medians(runs[(label, args.baseline_rev)])
            line += (f"   {args.baseline_rev}: {_figures(base)}   ratio {this.wall / base.wall:.2f}x wall, "
                     f"{this.cpu / base.cpu:.2f}x CPU")
        else:
            line += f"   ratio {this.wall / python[0]:.1f}x python -c pass ({python[0] * 1000:.1f} ms)"
        print(line + ("  (target <= 600 ms)" if label == "get nodes -o json" else ""))
    print(f"max RSS, whole state loaded in one process: {loaded.rss_mb:.0f} MB (target <= 300 MB)")


def compare_get_jobs(rev: str, jobs: int, repeat: int) -> None:
    """The first `get jobs` on a fresh state (the why-pending reasons are cached per revision in the state, so
    each run gets a state just made with `init`, untimed), this tree against `rev`, alternated."""
    source = generated_file(1024, jobs)
    runs: dict[str, list[ChildRun]] = {"this": [], rev: []}
    with tempfile.TemporaryDirectory() as tmp, baseline_checkout(rev) as base_tree:
        for run in range(repeat):
            for side, tree in (("this", ROOT), (rev, base_tree)):
                env = in_tree(tree)
                cli = [sys.executable, "-m", "gpuadmin.cli.main", "--state", str(Path(tmp) / f"{side}-{run}")]
                child_run([*cli, "init", "--from", str(source)], env, tree)
                runs[side].append(child_run([*cli, "get", "jobs"], env, tree))
    this, base = _medians(runs["this"]), _medians(runs[rev])
    print(f"state: 1024 nodes, {jobs} jobs; first `get jobs` (REASON column) on a fresh state, "
          f"medians of {repeat}, alternated")
    print(f"this tree : {_figures(this)}   (target <= 3 s)")
    print(f"{rev:10}: {_figures(base)}")
    print(f"ratio     : {base.wall / this.wall:.2f}x faster than {rev} in wall time, {base.cpu / this.cpu:.2f}x in CPU")


def _medians(runs: list[ChildRun]) -> ChildRun:
    return ChildRun(*(statistics.median(getattr(r, f) for r in runs) for f in ("wall", "cpu", "rss_mb")))


def _figures(run: ChildRun) -> str:
    return f"{run.wall * 1000:7.0f} ms wall {run.cpu * 1000:7.0f} ms CPU {run.rss_mb:5.0f} MB"

if __name__ == "__main__":
    main()
