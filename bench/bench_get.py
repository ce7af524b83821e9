"""`gpuadmin get nodes -o json` on the 1,024-node state, whole process (DESIGN §11: ≤ 0.6 s), and `get gpus -o json`.

The state holds 1,024 nodes × 8 GPUs and 100,000 jobs. Baseline, same run: the bare interpreter starting
and exiting (`python -c pass`), so the ratio shows what gpuadmin adds to process start. Also the RSS of
one process holding the whole state (target ≤ 300 MB).

    .venv/bin/python -m bench.bench_get [--repeat 7]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import generated_file, median_seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
