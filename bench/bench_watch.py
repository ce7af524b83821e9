"""The cluster watch (gpuadmin/cluster/watch.py) against the API server double: its first list, and an event's way
to a batch (issue 22: "watch event to console row <= 1 s"; this is the watch's share of it).

Timed, in one run, each against a baseline that pays only the double's own cost:
- first list: from start() to the first batch holding every node, pod and queue, against listing the same
  collections with urllib in pages of 500 (what the double takes to serve them);
- event to batch: from a node patch's response to the batch holding it, against a bare urllib watch stream
  receiving the same event (the double's delivery). The batch window (150 ms) is by design part of the figure.
Medians over --runs events.

    .venv/bin/python -m bench.bench_watch [--nodes 1024 --pods 10000] [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from gpuadmin.cluster.connect import connect
from gpuadmin.cluster.watch import WATCHED, Batch, ClusterWatch, HttpTransport
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble


def seed(double: ApiServerDouble, nodes: int, pods: int) -> None:
    for i in range(nodes):
        double.create(objects.node(f"gpu-{i:04d}"))
    for i in range(pods):
        double.create(objects.pod(f"job-{i:05d}", node_name=f"gpu-{i % nodes:04d}"))
    double.create(objects.kai_queue("research", gpu_quota=8))


def list_all(double: ApiServerDouble) -> int:
    count = 0
    for watched in WATCHED:
        cont = ""
        while True:
            url = f"{double.url}{watched.path}?limit=500" + (f"&continue={cont}" if cont else "")
            with urllib.request.urlopen(url, timeout=30) as response:
                page = json.loads(response.read())
            count += len(page["items"])
            cont = page["metadata"].get("continue", "")
            if not cont:
                break
    return count


def patch(double: ApiServerDouble, node: str, value: str) -> None:
    body = json.dumps({"metadata": {"labels": {"bench": value}}}).encode()
    request = urllib.request.Request(f"{double.url}/api/v1/nodes/{node}", data=body, method="PATCH",
                                     headers={"Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(request, timeout=10):
        pass


def bare_stream_latency(double: ApiServerDouble, runs: int) -> list[float]:
    """Patch response to the event read from a bare watch stream: the double's delivery alone."""
    with urllib.request.urlopen(f"{double.url}/api/v1/nodes", timeout=30) as response:
        since = json.loads(response.read())["metadata"]["resourceVersion"]
    arrived: list[float] = []
    got = threading.Event()

    def read() -> None:
        with urllib.request.urlopen(f"{double.url}/api/v1/nodes?watch=1&resourceVersion={since}", timeout=60) as s:
            for _line in s:
                arrived.append(time.perf_counter())
                got.set()
                if len(arrived) == runs:
                    return

    threading.Thread(target=read, daemon=True).start()
    time.sleep(0.2)
    latencies = []
    for i in range(runs):
        got.clear()
        patch(double, "gpu-0000", f"bare-{i}")
        sent = time.perf_counter()
        got.wait(10)
        latencies.append(arrived[-1] - sent)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with ApiServerDouble(bookmark_interval_s=1.0) as double, tempfile.TemporaryDirectory() as tmp:
        seed(double, args.nodes, args.pods)
        started = time.perf_counter()
        total = list_all(double)
        baseline_list = time.perf_counter() - started

        batches: list[tuple[float, Batch]] = []
        arrived = threading.Event()

        def on_batch(batch: Batch) -> None:
            batches.append((time.perf_counter(), batch))
            arrived.set()

        connection = connect(double.write_kubeconfig(Path(tmp) / "kubeconfig"))
        started = time.perf_counter()
        with ClusterWatch(HttpTransport.of_client(connection.client), on_batch) as watch:
            while sum(len(b.changes) for _, b in batches) < total:
                arrived.wait(30)
                arrived.clear()
            first_list = batches[-1][0] - started
            time.sleep(0.3)
            latencies = []
            for i in range(args.runs):
                arrived.clear()
                patch(double, "gpu-0000", f"watch-{i}")
                sent = time.perf_counter()
                arrived.wait(10)
                latencies.append(batches[-1][0] - sent)
            assert watch.status.state == "live"
        bare = bare_stream_latency(double, args.runs)

    watch_ms, bare_ms = statistics.median(latencies) * 1000, statistics.median(bare) * 1000
    print(f"{args.nodes} nodes, {args.pods} pods, {total} objects; {args.runs} events")
    print(f"first list to first batch: {first_list:.2f} s   (baseline, the double's paged list alone: "
          f"{baseline_list:.2f} s; ratio {first_list / baseline_list:.2f})")
    print(f"event to batch, median:    {watch_ms:.0f} ms (max {max(latencies) * 1000:.0f} ms)   "
          f"(baseline, a bare watch stream: {bare_ms:.1f} ms; the 150 ms window is by design)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
