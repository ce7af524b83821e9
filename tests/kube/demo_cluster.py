"""`make demo-cluster`: the API server double, seeded with a sample's cluster, served until Ctrl-C.

    python -m tests.kube.demo_cluster [--port 17443] [--dir .demo] [--inventory sample-inventories/oci-h100.yaml]
                                      [--scale NODES,PODS]

It is the test double of tests/kube/apiserver_double.py — not a Kubernetes cluster, and never shipped — seeded by
tests/kube/seed.py with the objects a real cluster would hold for the inventory (or, with `--scale`, the large
cluster of `scale_cluster`), with the simulated GPU Operator mig-manager accepting the configs of the seeded
mig-parted ConfigMap. It listens on 127.0.0.1 on a fixed port (so the kubeconfig it writes stays valid from one run
to the next; `--port 0` takes a free one), writes `DIR/kubeconfig` with the context `demo`, prints the README's
"A live cluster" session, and serves until SIGINT (Ctrl-C) or SIGTERM: then it stops and exits 0.
A port already taken is exit 2 with the way out. The bench (bench/bench_cluster_sync.py) starts it as its own process
with `--scale`, so that the double's CPU is not the measured client's.
"""

from __future__ import annotations

import argparse
import errno
import re
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from gpuadmin.store.inventory_io import load_inventory
from tests.kube import seed
from tests.kube.apiserver_double import ApiServerDouble

DEFAULT_PORT = 17443
CONTEXT = "demo"
README = seed.ROOT / "README.md"
SESSION_HEADING = "## A live cluster"


def readme_session(readme: Path = README) -> list[str]:
    """The commands of the README's "A live cluster" session: its indented lines, comments dropped."""
    text = readme.read_text(encoding="utf-8")
    if SESSION_HEADING not in text:
        return []
    block = text.split(SESSION_HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [re.sub(r"\s+# .*$", "", line.strip()) for line in block.splitlines() if line.startswith("    ")]
    return [line for line in lines if line]


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make demo-cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0: a free port")
    parser.add_argument("--dir", type=Path, default=Path(".demo"), help="where the kubeconfig goes (.demo)")
    parser.add_argument("--inventory", type=Path, default=seed.SAMPLES / "oci-h100.yaml")
    parser.add_argument("--scale", metavar="NODES,PODS", help="serve scale_cluster(NODES, PODS) instead")
    parser.add_argument("--mig-delay", type=float, default=1.0, help="seconds the mig-manager takes (1.0)")
    return parser.parse_args(argv)


def _cluster(args: argparse.Namespace) -> tuple[str, seed.ClusterSeed]:
    if args.scale:
        nodes, pods = (int(n) for n in args.scale.split(","))
        return f"scale_cluster({nodes}, {pods})", seed.scale_cluster(nodes, pods)
    inventory = load_inventory(args.inventory)
    return inventory.cluster, seed.cluster_of(inventory)


def _stop_on_sigterm() -> None:
    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    _stop_on_sigterm()
    try:
        return _serve(args)
    except KeyboardInterrupt:  # Ctrl-C while it was still seeding
        print("demo-cluster: stopped.")
        return 0


def _serve(args: argparse.Namespace) -> int:
    name, cluster = _cluster(args)
    # its mig-manager reads the mig-parted ConfigMap the seeded ClusterPolicy points at, as the GPU Operator's does:
    # the configs gpuadmin writes there are applied, and GFD relabels the node
    double = ApiServerDouble(mig_delay_s=args.mig_delay,
                             mig_configmap=(seed.GPU_OPERATOR_NAMESPACE, seed.MIG_PARTED_CONFIGMAP))
    try:
        double.start(args.port)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        print(f"demo-cluster: 127.0.0.1:{args.port} is already in use (another demo-cluster?); "
              "choose another port: make demo-cluster DEMO_PORT=N", file=sys.stderr)
        return 2
    try:
        _announce(args, name, cluster, double)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        double.stop()
    print("demo-cluster: stopped.")
    return 0


def _announce(args: argparse.Namespace, name: str, cluster: seed.ClusterSeed, double: ApiServerDouble) -> None:
    started = time.monotonic()
    seed.seed(double, cluster)
    args.dir.mkdir(parents=True, exist_ok=True)
    kubeconfig = double.write_kubeconfig(args.dir / "kubeconfig", context=CONTEXT)
    kubeconfig.chmod(0o600)
    print(f"API server double (a test double, not a Kubernetes cluster) serving {name}: {len(cluster.nodes)} "
          f"nodes, {len(cluster.pods)} pods, {len(cluster.queues)} KAI queues, the GPU Operator's ConfigMaps "
          f"and a simulated mig-manager, on {double.url} (seeded in {time.monotonic() - started:.1f} s)")
    print(f"kubeconfig: {kubeconfig} (context {CONTEXT})")
    session = readme_session()
    if session:
        print("The README's \"A live cluster\" session, from the checkout in another terminal:")
        print("\n".join(f"    {line}" for line in session))
    print("Ctrl-C stops it.", flush=True)


if __name__ == "__main__":
    sys.exit(main())
