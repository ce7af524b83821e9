"""`make demo-metrics`: a real Prometheus on 127.0.0.1 holding DCGM exporter series for the OCI sample's GPUs over
the last hour (and the next, so that it stays live) — utilisation, frame buffer, temperature and power of every
GPU, the MIG instances' engine activity (labelled with their holders' pods), one idle holder (vit-h-pretrain,
under 2 % on its 4 GPUs), one GPU with XID 79 and double-bit ECC errors (gpu-h100-05/3), whose alerts fire
(the rules of tests/telemetry/fixtures/gpu-alerts.rules.yml, evaluated every second) — and prints the
`config set` line. Runs until Ctrl-C (exit 0), its data in a temporary folder that goes with it.

    .venv/bin/python -m tests.telemetry.demo_metrics [--port 9091] [--inventory sample-inventories/oci-h100.yaml]
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path

from gpuadmin.engine.state import ClusterState
from gpuadmin.store import load_inventory
from tests.telemetry import promserver
from tests.telemetry.scenario import Faults, devices

ROOT = Path(__file__).resolve().parents[2]
DEMO_FAULTS = Faults(idle_job="vit-h-pretrain", xid_gpu=("gpu-h100-05", 3))
DEFAULT_PORT = 9091  # beside a Prometheus of one's own on 9090
AHEAD = 3600.0  # the series run an hour past the start, so the demo stays live that long (an exporter would)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo-metrics", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--inventory", type=Path, default=ROOT / "sample-inventories" / "oci-h100.yaml")
    args = parser.parse_args(argv)
    why = promserver.available()
    if why is not None:
        sys.stderr.write(f"demo-metrics: {why}\n")
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    state = ClusterState.from_inventory(load_inventory(args.inventory))
    now = time.time()
    end = now + AHEAD
    text = promserver.openmetrics(devices(state, DEMO_FAULTS, end=end), now - 3600, end, 30)
    with promserver.running(text, port=args.port, rules=promserver.GPU_RULES) as server:
        sys.stdout.write(
            f"demo-metrics: Prometheus at {server.url} holds the DCGM exporter's series of "
            f"{args.inventory.name}'s GPUs over the last hour.\n"
            f"  gpuadmin --state /tmp/gpa init --from {args.inventory}   # if there is no state yet\n"
            f"  gpuadmin --state /tmp/gpa config set metrics.prometheus {server.url}\n"
            "  gpuadmin --state /tmp/gpa top\n"
            "  gpuadmin --state /tmp/gpa get gpus -o wide      # HEALTH, ALERTS (its rules fire on gpu-h100-05/3)\n"
            "  gpuadmin --state /tmp/gpa idle\n"
            "Ctrl-C stops it. (The series run for an hour from now; after that Prometheus calls them stale.)\n")
        sys.stdout.flush()
        while not stop.wait(0.5):
            if server.process.poll() is not None:
                sys.stderr.write(f"demo-metrics: prometheus exited ({server.process.returncode})\n")
                return 1
    sys.stdout.write("demo-metrics: stopped\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
