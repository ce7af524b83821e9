"""Watch event to console row (issue 22: <= 1 s): a console on a state bound to the API server double.

The double (in this process) serves --nodes nodes and --pods one-GPU pods; the state is made by
`init --from-cluster`; a console runs headless (Textual's pilot) on its nodes view. Timed: from a cordon's
response on the double to the console's row saying `cordoned` — the watch's batch window, the sync on the service
worker (after the console's first, full, sync: only what changed, from the watch's cache — `sync_changes`), the
view's re-read — against the baseline of a full sync run alone (`gpuadmin sync`'s use case, no console: what the
console ran for every batch before it synced the changes alone), in the same run. Medians over --runs cordons.

    .venv/bin/python -m bench.bench_watch_console [--nodes 1024 --pods 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from gpuadmin.service import Service, init_from_cluster
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.widgets.header import HeaderBar
from gpuadmin.tui.widgets.table import RowTable
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble


def cordon(double: ApiServerDouble, node: str, on: bool) -> None:
    request = urllib.request.Request(f"{double.url}/api/v1/nodes/{node}", method="PATCH",
                                     data=json.dumps({"spec": {"unschedulable": on}}).encode(),
                                     headers={"Content-Type": "application/strategic-merge-patch+json"})
    with urllib.request.urlopen(request, timeout=30):
        pass


def row_state(app: GpuadminApp, node: str) -> str | None:
    table = app.screen.query_one(RowTable)
    return next((str(table.rows[i]["STATE"]) for i in table.shown if table.rows[i]["NAME"] == node), None)


async def console_runs(state: Path, double: ApiServerDouble, nodes: list[str]) -> list[float]:
    app = GpuadminApp(Service(state_dir=state), view="nodes", theme="gpuadmin-dark")
    took = []
    async with app.run_test(size=(120, 36)) as pilot:
        deadline = time.monotonic() + 120
        while " LIVE " not in str(app.screen.query_one(HeaderBar).render()) or not app.service_worker.idle:
            assert time.monotonic() < deadline, "the console never went live"
            await pilot.pause(0.05)
        for node in nodes:
            cordon(double, node, True)
            sent = time.perf_counter()
            while row_state(app, node) != "cordoned":
                assert time.perf_counter() - sent < 120, f"{node} never shown cordoned"
                await asyncio.sleep(0.01)
            took.append(time.perf_counter() - sent)
    return took


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with ApiServerDouble(bookmark_interval_s=5.0) as double, tempfile.TemporaryDirectory() as tmp:
        for i in range(args.nodes):
            double.create(objects.node(f"gpu-{i:04d}"))
        for i in range(args.pods):
            double.create(objects.pod(f"job-{i:05d}", node_name=f"gpu-{i % args.nodes:04d}"))
        kubeconfig = double.write_kubeconfig(Path(tmp) / "kubeconfig")
        os.environ["KUBECONFIG"] = str(kubeconfig)
        state = Path(tmp) / "state"
        init_from_cluster(state, kubeconfig=kubeconfig)
        baseline = []
        for i in range(args.runs):  # the sync alone, after the same kind of change
            node = f"gpu-{args.nodes - 1 - i:04d}"
            cordon(double, node, True)
            started = time.perf_counter()
            Service(state_dir=state).sync()
            baseline.append(time.perf_counter() - started)
            cordon(double, node, False)
        Service(state_dir=state).sync()
        shown = asyncio.run(console_runs(state, double, [f"gpu-{i:04d}" for i in range(args.runs)]))
    print(f"{args.nodes} nodes, {args.pods} pods; {args.runs} cordons")
    print(f"event to console row, median: {statistics.median(shown):.2f} s "
          f"(runs {', '.join(f'{t:.2f}' for t in shown)})")
    print(f"baseline, the sync alone:     {statistics.median(baseline):.2f} s "
          f"(runs {', '.join(f'{t:.2f}' for t in baseline)}); ratio "
          f"{statistics.median(shown) / statistics.median(baseline):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
