"""`gpuadmin sync` of a 1,024-node / 10,000-pod cluster from the API server double (issue 22: ≤ 2 s, ≤ 300 MB).

The double (tests/kube/apiserver_double.py) runs in its own process, seeded once: 1,024 nodes of 8 whole H100s and
10,000 one-GPU pods (8,000 running, 2,000 pending, 50 namespaces), and a state is made from it with `init
--from-cluster`. Then, in turn, --runs times:

- baseline: the same nodes and pods listed in pages of 500 with the standard library and decoded (what any client
  pays the double to serve them: gpuadmin cannot sync faster than this);
- `gpuadmin sync` as a whole process (with its bytecode cached, as installed: `_as_installed`), after a node is
  cordoned or uncordoned on the cluster (so each sync writes one journal entry): its wall time and peak RSS
  (the child's own, `bench.common.child_run`).

    .venv/bin/python -m bench.bench_cluster_sync [--nodes 1024 --pods 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.common import ROOT, child_run

SERVE = """
import sys, time
from pathlib import Path
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble
nodes, pods, kubeconfig = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
with ApiServerDouble() as double:
    double.create(objects.mig_parted_configmap())
    for i in range(nodes):
        double.create(objects.whole_gpu_node(f"gpu-{i:04d}"))
    for i in range(pods):
        node = f"gpu-{i % nodes:04d}" if i < pods * 8 // 10 else None
        double.create(objects.pod(f"p-{i:05d}", namespace=f"ns-{i % 50}", node_name=node))
    double.write_kubeconfig(kubeconfig)
    print(double.url, flush=True)
    sys.stdin.read()  # serve until the bench closes our stdin
"""


def list_all(url: str) -> int:
    """Every node and pod, in pages of 500, decoded: the baseline."""
    count = 0
    for path in ("/api/v1/nodes", "/api/v1/pods"):
        token = ""
        while True:
            query = "?limit=500" + (f"&continue={token}" if token else "")
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


def _as_installed() -> dict[str, str]:
    """The environment of gpuadmin's runs, as an installed gpuadmin runs: with its bytecode cached (pip compiles
    it at install). A PYTHONDONTWRITEBYTECODE set in the bench's own environment would make every run compile
    gpuadmin's and its libraries' modules again (~0.4 s here), a cost no installed copy pays; `init` writes the
    cache, the timed syncs read it."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpuadmin-bench-sync-"))
    kubeconfig, state = work / "kubeconfig", work / "state"
    server = subprocess.Popen([sys.executable, "-c", SERVE, str(args.nodes), str(args.pods), str(kubeconfig)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        gpuadmin = [sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state)]
        installed = _as_installed()
        started = time.perf_counter()
        subprocess.run([*gpuadmin, "init", "--from-cluster", "kubernetes", "--kubeconfig", str(kubeconfig)],
                       check=True, capture_output=True, cwd=ROOT, env=installed)
        print(f"init --from-cluster: {time.perf_counter() - started:.2f} s (one run)")
        baselines, syncs, peaks = [], [], []
        for run in range(args.runs):
            started = time.perf_counter()
            listed = list_all(url)
            baselines.append(time.perf_counter() - started)
            cordon(url, "gpu-0007", on=run % 2 == 0)
            synced = child_run([*gpuadmin, "sync", "--kubeconfig", str(kubeconfig)], env=installed, cwd=ROOT)
            syncs.append(synced.wall)
            peaks.append(synced.rss_mb)
        base, sync = statistics.median(baselines), statistics.median(syncs)
        print(f"{args.nodes} nodes, {args.pods} pods ({listed} objects listed), medians of {args.runs}:")
        print(f"  baseline (list + decode, stdlib): {base:.2f} s")
        print(f"  gpuadmin sync (whole process):    {sync:.2f} s  ({sync / base:.2f}x the baseline), "
              f"peak RSS {max(peaks):.0f} MB")
        print(f"  gpuadmin's own work (sync - baseline): {sync - base:.2f} s")
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
