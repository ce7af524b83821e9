"""A telemetry refresh for 8,192 GPUs (1,024 nodes x 8, and their MIG instances) against a real Prometheus
(Debian's, backfilled by promtool with the DCGM exporter's series: tests/telemetry/promserver.py): the whole
refresh (one query per metric for the whole cluster, the answers read and checked, the join), and the join alone
(target: <= 200 ms of work, CPU time), under the console's garbage-collector policy (`set_gc_policy`).

Baseline, same run: decoding the same answers' JSON bodies (`json.loads`, what reading them costs any client,
before any join), alternated with the join run by run; the ratio is the join's median over the decoding's.

    .venv/bin/python -m bench.bench_telemetry [--nodes 1024] [--jobs 20000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from bench.common import generated_file, interleaved_medians, median_seconds
from gpuadmin.cli.main import set_gc_policy
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.store import load_inventory
from gpuadmin.telemetry import PrometheusClient, PrometheusSource, Targets, join
from gpuadmin.telemetry.dcgm import METRICS, metric_query
from gpuadmin.telemetry.prometheus import Sample
from tests.telemetry import promserver
from tests.telemetry.scenario import Faults, devices


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    why = promserver.available()
    if why is not None:
        print(f"bench_telemetry: skipped: {why}")
        return 0
    state = ClusterState.from_inventory(load_inventory(generated_file(args.nodes, args.jobs)))
    set_gc_policy(long_lived=True)  # the console's, where the refresh runs (its service worker)
    gpus = sum(len(n.gpus) for n in state.nodes.values())
    now = time.time()
    started = time.perf_counter()
    series = devices(state, Faults(), end=now)
    text = promserver.openmetrics(series, now - 60, now, 30)  # 3 samples a series: the refresh reads the last
    with tempfile.TemporaryDirectory(prefix="gpuadmin-bench-prom-") as work, \
            promserver.running(text, Path(work)) as server:
        print(f"{gpus} GPUs, {len(series) - gpus} MIG instances, {len(text) / 1e6:.0f} MB of OpenMetrics "
              f"backfilled and served in {time.perf_counter() - started:.1f}s")
        targets = Targets.from_view(View(state))
        client = PrometheusClient(server.url, timeout=60)
        source = PrometheusSource(client, slow_after=60)
        refresh = median_seconds(lambda: source.refresh(targets), args.repeat)
        snapshot = source.refresh(targets)
        print(f"refresh (queries + read + join), wall: median {refresh * 1000:.0f} ms over {args.repeat}; "
              f"{snapshot.status.queries} queries; state {snapshot.status.state}")
        answers = {m.name: client.query(metric_query(m)).samples for m in METRICS}
        bodies = [_raw(server.url, metric_query(m)) for m in METRICS]
        placed = sum(1 for d in snapshot.gpus.values() if d.util.value is not None)
        print(f"answers: {sum(len(a) for a in answers.values())} samples, {sum(map(len, bodies)) / 1e6:.1f} MB "
              f"of JSON; {placed} of {gpus} GPUs with a utilisation")
        join_cpu, decode_cpu = interleaved_medians(
            [lambda: _join(answers, targets), lambda: [json.loads(b) for b in bodies]], args.repeat,
            clock=time.process_time)
        print(f"join alone, CPU, the console's GC policy: median {join_cpu * 1000:.0f} ms (target <= 200 ms); "
              f"baseline json.loads of the answers: {decode_cpu * 1000:.0f} ms; "
              f"ratio join/decode {join_cpu / decode_cpu:.2f}")
        gc.disable()  # a headless command's policy (`gpuadmin top`): no collection at all
        headless, decode_headless = interleaved_medians(
            [lambda: _join(answers, targets), lambda: [json.loads(b) for b in bodies]], args.repeat,
            clock=time.process_time)
        gc.enable()
        print(f"join alone, CPU, headless (collector off): median {headless * 1000:.0f} ms; "
              f"json.loads {decode_headless * 1000:.0f} ms; ratio {headless / decode_headless:.2f}")
        targets_cpu = median_seconds(lambda: Targets.from_view(View(state)), args.repeat, clock=time.process_time)
        print(f"targets from the state (once per revision), CPU: median {targets_cpu * 1000:.0f} ms")
    return 0 if join_cpu <= 0.2 else 1


def _join(answers: dict[str, tuple[Sample, ...]], targets: Targets) -> object:
    return join(answers, targets)


def _raw(url: str, promql: str) -> bytes:
    body = urllib.parse.urlencode({"query": promql}).encode()
    with urllib.request.urlopen(f"{url}/api/v1/query", data=body, timeout=60) as answer:
        raw: bytes = answer.read()
        return raw


if __name__ == "__main__":
    sys.exit(main())
