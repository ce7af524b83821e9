"""The alerts' share of a telemetry refresh for 8,192 GPUs (1,024 nodes x 8): placing Prometheus's firing alerts
on the GPUs they name (`join_alerts`), in the worst case of two firing alerts on every GPU (16,384 ALERTS
series, each with the exporter's labels), in CPU time under the console's garbage-collector policy.

Baseline, same run, alternated: decoding the answer's JSON body (`json.loads`, what reading it costs any client,
before any join); the ratio is the join's median over the decoding's. No Prometheus is needed: the body is written
as Prometheus's HTTP API writes an instant vector (its query cost is the server's, measured by bench_telemetry).

    .venv/bin/python -m bench.bench_alerts [--nodes 1024] [--jobs 20000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from bench.common import generated_file, interleaved_medians
from gpuadmin.cli.main import set_gc_policy
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.store import load_inventory
from gpuadmin.telemetry import Targets
from gpuadmin.telemetry.alerts import join_alerts
from gpuadmin.telemetry.prometheus import Sample, sample_value


def _body(targets: Targets) -> bytes:
    result = []
    for (node, index), _ in targets.gpus.items():
        for name, severity in (("GpuXidError", "critical"), ("GpuHot", "warning")):
            result.append({"metric": {
                "__name__": "ALERTS", "alertname": name, "alertstate": "firing", "severity": severity,
                "gpu": str(index), "UUID": f"GPU-{node}-{index}", "pci_bus_id": "00000000:18:00.0",
                "device": f"nvidia{index}", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": node,
                "container": "main", "namespace": "research", "pod": f"job-{node}-{index}"},
                "value": [time.time(), "1"]})
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


def _read_and_join(body: bytes, targets: Targets, uuids: dict[str, tuple[str, int]]) -> int:
    items = json.loads(body)["data"]["result"]
    samples = [Sample(item["metric"], *sample_value(item["value"][1])) for item in items]
    alerts, _ = join_alerts(samples, targets.gpus, uuids, node_label="Hostname")
    return len(alerts)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    state = ClusterState.from_inventory(load_inventory(generated_file(args.nodes, args.jobs)))
    set_gc_policy(long_lived=True)  # the console's, where the refresh runs (its service worker)
    targets = Targets.from_view(View(state))
    body = _body(targets)
    uuids = {f"GPU-{node}-{index}": (node, index) for (node, index) in targets.gpus.values()}
    placed = _read_and_join(body, targets, uuids)
    print(f"{len(targets.gpus)} GPUs; {placed} firing alerts placed of {2 * len(targets.gpus)} series; "
          f"{len(body) / 1e6:.1f} MB of JSON")
    joined, decoded = interleaved_medians(
        [lambda: _read_and_join(body, targets, uuids), lambda: json.loads(body)], args.repeat,
        clock=time.process_time)
    print(f"alerts read + joined, CPU, the console's GC policy: median {joined * 1000:.0f} ms over {args.repeat}; "
          f"baseline json.loads of the answer: {decoded * 1000:.0f} ms; ratio {joined / decoded:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
