"""The Kubernetes client candidates for issue 22, measured the same way: import time and memory after import.

Each candidate is imported in a fresh interpreter of a scratch virtual environment (never the project's), five
times; the figure is the median. Import time is the top-level module's cumulative time from `python -X importtime`
(what a command pays on its first cluster call); memory is the process's RSS after the import, less the RSS
of a bare interpreter of the same venv.

    python3 -m venv /tmp/kbench && /tmp/kbench/bin/pip install kubernetes lightkube kr8s
    .venv/bin/python -m bench.bench_kube_clients --python /tmp/kbench/bin/python [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess

# the module each client's users import first, as their documentation shows
CANDIDATES = {
    "kubernetes": "kubernetes",
    "lightkube": "lightkube",
    "kr8s": "kr8s",
}
_RSS = (
    "import sys\n"
    "def rss():\n"
    "    with open('/proc/self/statm') as f:\n"
    "        import os\n"
    "        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')\n"
    "before = rss()\n"
    "{imports}\n"
    "print(rss() - before)\n"
)


def _import_us(python: str, module: str) -> int:
    """The cumulative import time of `module` in microseconds, from a fresh process's -X importtime log."""
    done = subprocess.run([python, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True,
                          check=True)
    for line in reversed(done.stderr.splitlines()):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    raise RuntimeError(f"no importtime line for {module}")


def _rss_bytes(python: str, imports: str) -> int:
    done = subprocess.run([python, "-c", _RSS.format(imports=imports)], capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the scratch venv's interpreter with the candidates")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'client':<12} {'import ms (median)':>19} {'min..max':>14} {'RSS after import MB':>20}")
    for name, module in CANDIDATES.items():
        times = [_import_us(args.python, module) / 1000 for _ in range(args.repeat)]
        rss = [_rss_bytes(args.python, f"import {module}") / 2**20 for _ in range(args.repeat)]
        print(f"{name:<12} {statistics.median(times):>19.1f} {min(times):>6.1f}..{max(times):<6.1f} "
              f"{statistics.median(rss):>20.1f}")


if __name__ == "__main__":
    main()
