"""Whole commands as an operator runs them, in fresh processes: this checkout against another source tree.

What a process-wide setting (the GC policy `gpuadmin.cli.main` sets, issue 20 item 6) costs or saves shows only
in whole processes, so each command is run as `python -c 'gpuadmin.cli.main.main()'` with the package imported
from this checkout and, in turn, from `--baseline-rev REV` (a temporary git worktree, `bench.common.baseline_checkout`),
interleaved so both get the same share of a busy machine, and timed in CPU time (user + system) of the
process, which the machine's load disturbs less than wall time. Every run's exit code must match between the two.

    .venv/bin/python -m bench.bench_entry --baseline-rev REV [--nodes 1024] [--jobs 10000] [--repeat 5]

Commands: `--help` (start-up alone: the parser of every command and verb), `validate` of the generated inventory
(load + every rule), `init` of a state from it (load, then write), `get jobs` and `schedule --dry-run` on that state
(the state's load, then a listing or a cycle).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import baseline_checkout, generated_file

HERE = Path(__file__).resolve().parent.parent
_MAIN = "import sys; from gpuadmin.cli.main import main; sys.argv[0] = 'gpuadmin'; main()"


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(src: Path, argv: list[str]) -> tuple[float, int]:
    """The command's CPU time (user + system), which a loaded machine disturbs far less than its wall time."""
    env = {**os.environ, "PYTHONPATH": str(src), "NO_COLOR": "1"}
    started = _cpu_of_children()
    done = subprocess.run([sys.executable, "-c", _MAIN, *argv], env=env, cwd=src, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    took = _cpu_of_children() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{src}: gpuadmin {' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    return took, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-rev", required=True, metavar="REV", help="the revision to compare with")
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    inventory = str(generated_file(args.nodes, args.jobs))
    with tempfile.TemporaryDirectory(prefix="gpuadmin-bench-entry-") as tmp, \
            baseline_checkout(args.baseline_rev) as baseline:
        work = Path(tmp)
        trees = {"this": HERE, "baseline": baseline}
        states = {name: work / name for name in trees}
        commands = {
            "--help": lambda _name: ["--help"],  # start-up: every verb's parser is listed, not built
            "validate": lambda _name: ["validate", inventory],
            "init": lambda name: ["--state", str(states[name]), "init", "--from", inventory, "--force"],
            "get jobs": lambda name: ["--state", str(states[name]), "get", "jobs"],
            "schedule --dry-run": lambda name: ["--state", str(states[name]), "schedule", "--dry-run"],
        }
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeat):
            for command, argv in commands.items():
                codes = set()
                for name, src in trees.items():
                    took, code = _run(src, argv(name))
                    times.setdefault((command, name), []).append(took)
                    codes.add(code)
                assert len(codes) == 1, f"{command}: exit codes differ between the trees: {codes}"
        print(f"{args.nodes} nodes, {args.jobs} jobs; CPU time (user + system), median of {args.repeat} fresh "
              "processes each, interleaved")
        for command in commands:
            this, base = (statistics.median(times[(command, n)]) for n in ("this", "baseline"))
            print(f"{command:20}: this {this:7.3f} s   baseline {base:7.3f} s   ratio {this / base:.2f}x")


if __name__ == "__main__":
    main()
