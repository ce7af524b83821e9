"""`gpuadmin sync` of a 1,024-node / 10,000-pod cluster from the API server double (issue 22: ≤ 2 s, ≤ 300 MB).

The double (tests/kube/apiserver_double.py) serves `scale_cluster(NODES, PODS)` of tests/kube/seed.py (H100 nodes
with their GFD labels, one in four carved all-1g.10gb; whole-GPU and MIG pods, a tenth pending; KAI queues) from a
process of its own (`python -m tests.kube.demo_cluster --scale`), so that its CPU is not gpuadmin's. A state is
made from it with `init --from-cluster`. Then, in turn, --runs times:

- baseline: every node and pod listed in pages of 500 with the standard library and decoded, in this process:
  what the double costs to serve them, which no client avoids (gpuadmin cannot sync faster than this);
- `gpuadmin sync` as a whole process, after a node is cordoned or uncordoned on the cluster (so each sync finds
  one change and writes one journal entry): its wall time, CPU time and peak RSS, its own (`bench.common`'s
  launcher), run as installed (its bytecode cached: `_as_installed`);
- with `--against REV`: the same sync by a checkout of REV (say `main`), for a before/after ratio in one command.

gpuadmin's own work is the sync's wall time less the baseline's, medians of the same command: the target's
measure, meaningful where a core is free for each process. The sync overlaps its state's load and its translation
with the double's serving (`cluster_sync.read_beside`, `cluster.read.prefetched`), which a saturated machine
cannot do, so CPU times (user + system, all threads) are printed too, the baseline's measured in this process:
"own CPU" is the sync's less the baseline's, the work gpuadmin does beyond the least any client does.

    .venv/bin/python -m bench.bench_cluster_sync [--nodes 1024] [--pods 10000] [--runs 5] [--against main]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.common import ROOT, ChildRun, baseline_checkout, child_run

TARGET_S, TARGET_MB = 2.0, 300.0
PAGE = 500
CORDONED = "gpu-0000"


@contextmanager
def served_double(nodes: int, pods: int, workdir: Path) -> Iterator[tuple[str, Path]]:
    """The seeded double in a process of its own until the block ends; yields its URL and kubeconfig."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.kube.demo_cluster", "--port", "0", "--dir", str(workdir),
                             "--scale", f"{nodes},{pods}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        said = _wait_ready(proc)
        url = next(word for word in said.split() if word.startswith("http://127.0.0.1:"))
        yield url.rstrip(".,):"), workdir / "kubeconfig"
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)


def _wait_ready(proc: subprocess.Popen[bytes], timeout: float = 300) -> str:
    assert proc.stdout is not None
    seen = b""
    while b"Ctrl-C stops it." not in seen:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        chunk = os.read(proc.stdout.fileno(), 65536) if ready else b""
        if not chunk:
            raise RuntimeError(f"the double did not start:\n{seen.decode(errors='replace')}")
        seen += chunk
    return seen.decode()


def list_all(url: str) -> int:
    """Every node and pod, in pages of 500, decoded: the baseline."""
    count = 0
    for path in ("/api/v1/nodes", "/api/v1/pods"):
        token = ""
        while True:
            query = f"?limit={PAGE}" + (f"&continue={token}" if token else "")
            with urllib.request.urlopen(url + path + query, timeout=60) as answer:
                page = json.loads(answer.read())
            count += len(page["items"])
            token = page["metadata"].get("continue") or ""
            if not token:
                break
    return count


def cordon(url: str, node: str, on: bool) -> None:
    body = json.dumps({"spec": {"unschedulable": True if on else None}}).encode()
    request = urllib.request.Request(f"{url}/api/v1/nodes/{node}", data=body, method="PATCH",
                                     headers={"Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(request, timeout=30):
        pass


def _as_installed(env: dict[str, str]) -> dict[str, str]:
    """The environment of gpuadmin's runs, as an installed gpuadmin runs: with its bytecode cached (pip compiles
    it at install). A PYTHONDONTWRITEBYTECODE set in the bench's own environment would make every run compile
    gpuadmin's and its libraries' modules again (~0.4 s here), a cost no installed copy pays; the first, untimed
    run of each command writes the cache, the timed ones read it."""
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="also time the sync of a checkout of REV, in turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuadmin-bench-sync-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        env = _as_installed({**os.environ, "HOME": str(work), "NO_COLOR": "1"})
        url, kubeconfig = stack.enter_context(served_double(args.nodes, args.pods, work))
        state = work / "state"
        trees = {"this checkout": ROOT}
        if args.against:
            trees[args.against] = stack.enter_context(baseline_checkout(args.against))

        # run in each tree (cwd), whose gpuadmin `-m` imports ahead of the installed one
        sync = [sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "sync", "--kubeconfig",
                str(kubeconfig)]

        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "init", "--from-cluster",
                        "kubernetes", "--kubeconfig", str(kubeconfig)], check=True, capture_output=True, cwd=ROOT,
                       env=env)
        print(f"init --from-cluster: {time.perf_counter() - started:.2f} s (one run)", flush=True)
        for tree in trees.values():  # untimed: each tree's bytecode cache written
            child_run(sync, env=env, cwd=tree)
        baselines: list[float] = []
        baseline_cpu: list[float] = []
        runs: dict[str, list[ChildRun]] = {name: [] for name in trees}
        listed, flip = 0, False
        for _ in range(args.runs):
            started, cpu = time.perf_counter(), time.process_time()
            listed = list_all(url)
            baselines.append(time.perf_counter() - started)
            baseline_cpu.append(time.process_time() - cpu)
            for name, tree in trees.items():
                flip = not flip
                cordon(url, CORDONED, on=flip)
                runs[name].append(child_run(sync, env=env, cwd=tree))
    _report(args, listed, (baselines, baseline_cpu), runs)
    return 0


def _report(args: argparse.Namespace, listed: int, baseline: tuple[list[float], list[float]],
            runs: dict[str, list[ChildRun]]) -> None:
    baselines, baseline_cpu = baseline
    base, base_cpu = statistics.median(baselines), statistics.median(baseline_cpu)
    print(f"{args.nodes} nodes, {args.pods} pods ({listed} objects listed); medians of {args.runs}; "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'command':<40} {'wall s':>7} {'min..max':>12} {'× base':>7} {'own s':>6} {'CPU s':>6} "
          f"{'own CPU':>7} {'peak MB':>8}")
    print(f"{'baseline: list + decode (stdlib)':<40} {base:>7.2f} {min(baselines):>5.2f}..{max(baselines):<5.2f} "
          f"{1:>7.2f} {'':>6} {base_cpu:>6.2f} {'':>7} {'':>8}")
    for name, taken in runs.items():
        walls = [r.wall for r in taken]
        wall, cpu = statistics.median(walls), statistics.median(r.cpu for r in taken)
        rss = max(r.rss_mb for r in taken)
        print(f"{'gpuadmin sync, ' + name:<40} {wall:>7.2f} {min(walls):>5.2f}..{max(walls):<5.2f} "
              f"{wall / base:>7.2f} {wall - base:>6.2f} {cpu:>6.2f} {cpu - base_cpu:>7.2f} {rss:>8.0f}")
    if len(runs) == 2:
        (_, ours), (rev, theirs) = runs.items()
        wall_ratio = statistics.median(r.wall for r in ours) / statistics.median(r.wall for r in theirs)
        cpu_ratio = statistics.median(r.cpu for r in ours) / statistics.median(r.cpu for r in theirs)
        print(f"this checkout / {rev}: wall {wall_ratio:.2f}, CPU {cpu_ratio:.2f}")
    ours = runs["this checkout"]
    own = statistics.median(r.wall for r in ours) - base
    rss = max(r.rss_mb for r in ours)
    verdict = "met" if own <= TARGET_S and rss <= TARGET_MB else "NOT met"
    print(f"target ≤ {TARGET_S:g} s of gpuadmin's own work and ≤ {TARGET_MB:g} MB: {verdict} "
          f"({own:.2f} s, {rss:.0f} MB)")


if __name__ == "__main__":
    sys.exit(main())
