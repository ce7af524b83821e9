"""`python -m bench [NAME ...]`: run the benchmarks (all, or those named: load check get schedule tui table live
telemetry kube_sync), one after the other (telemetry: a real Prometheus; kube_sync: the API server double in its own
process), each in its own process so none inherits another's warm caches."""

from __future__ import annotations

import subprocess
import sys

BENCHMARKS = ("load", "check", "get", "schedule", "tui", "table", "live", "telemetry", "kube_sync")


def main() -> int:
    names = sys.argv[1:] or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        sys.stderr.write(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}\n")
        return 2
    worst = 0
    for name in names:
        print(f"== bench_{name}", flush=True)
        worst = max(worst, subprocess.run([sys.executable, "-m", f"bench.bench_{name}"], check=False).returncode)
    return worst


if __name__ == "__main__":
    sys.exit(main())
