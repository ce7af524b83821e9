"""Load the hardware catalog (the four YAML files under gpuadmin/catalog/data), as every CLI start does.

Each round starts fresh processes in turn (interleaved, so each side gets the same share of a loaded machine's
quiet and busy moments): this checkout, and `--against REV` checked out in a temporary git worktree
(`bench.common.baseline_checkout`; issue 20 item 6: the pydantic loader against the hand-written one it
replaced). Each process imports pydantic and PyYAML first (the CLI imports both anyway), then times

- first: importing `gpuadmin.catalog` (the loader and its schema classes) and the first `load_catalog()`;
- warm: the median of `--loads` further `load_catalog()` calls;
- parse: the median of parsing the same four files with `yaml.load(CSafeLoader)` alone (no checks): the
  baseline of the ratio, in the same process.

Times are CPU time of the process (`time.process_time`), which the other processes of a shared machine disturb
less than wall time; `--wall` takes wall time.

    .venv/bin/python -m bench.bench_catalog [--against 267015a] [--rounds 7] [--loads 20] [--wall]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from bench.common import baseline_checkout

_ROUND = """
import json, statistics, sys, time
import pydantic, yaml
clock = time.perf_counter if sys.argv[1] == "wall" else time.process_time
loads = int(sys.argv[2])
started = clock()
from gpuadmin.catalog import default_data_dir, load_catalog
load_catalog()
first = clock() - started
def timed(fn):
    out = []
    for _ in range(loads):
        start = clock()
        fn()
        out.append(clock() - start)
    return statistics.median(out)
data = default_data_dir()
texts = [data.joinpath(n).read_text(encoding="utf-8") for n in ("gpus.yaml", "mig.yaml", "vgpu.yaml", "platforms.yaml")]
warm = timed(load_catalog)
parse = timed(lambda: [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts])
print(json.dumps({"first": first, "warm": warm, "parse": parse}))
"""


def _round(pythonpath: str, clock: str, loads: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _ROUND, clock, str(loads)], capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": pythonpath, "PATH": "/usr/bin:/bin"})
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="267015a", help="git revision of the reference loader")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--loads", type=int, default=20)
    parser.add_argument("--wall", action="store_true", help="wall time instead of the process's CPU time")
    args = parser.parse_args()
    clock = "wall" if args.wall else "cpu"
    here = str(Path(__file__).resolve().parent.parent)
    with baseline_checkout(args.against) as ref:
        sides = {"this checkout": here, f"--against {args.against}": str(ref)}
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, path in sides.items():
                runs[name].append(_round(path, clock, args.loads))
    print(f"catalog load, {clock} time, medians of {args.rounds} processes ({args.loads} warm loads each)")
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in ("first", "warm", "parse")}
               for name, rs in runs.items()}
    for name, m in medians.items():
        print(f"{name:22s} first (import + load) {m['first'] * 1e3:7.1f} ms   warm load {m['warm'] * 1e3:6.1f} ms"
              f"   parse only (baseline) {m['parse'] * 1e3:6.1f} ms   warm/parse {m['warm'] / m['parse']:.2f}x")
    new, old = medians["this checkout"], medians[f"--against {args.against}"]
    print(f"ratio this checkout / {args.against}: first {new['first'] / old['first']:.2f}x, "
          f"warm {new['warm'] / old['warm']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
