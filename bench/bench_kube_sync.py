"""Sync of a 1,024-node / 10,000-pod cluster from the API server double (issue 22: ≤ 2 s and ≤ 300 MB).

The double (tests/kube/apiserver_double.py, seeded by tests/kube/seed.py's `scale_cluster`) runs as its own
process (`python -m tests.kube.demo_cluster --scale`), so its CPU is not the measured client's. Then, in turn,
`--repeat` times each, every command a fresh process whose wall time and peak RSS are its own (bench.common's
launcher):

- baseline: `kubectl get nodes,pods -A -o json` against the same double (kubectl pages by 500 too);
- read: `python -m bench.kube_read` — lightkube lists every Node, Pod and KAI Queue in pages of `--page`;
- init: `gpuadmin init --from-cluster kubernetes` (a new state bound to the double: the whole read, translated,
  checked and written);
- sync: `gpuadmin sync` on that state (the whole read again, compared; nothing drifted, so no journal entry).

init and sync are timed only where this checkout has them (`gpuadmin sync --help` answers), else said so.

    .venv/bin/python -m bench.bench_kube_sync [--nodes 1024] [--pods 10000] [--repeat 5] [--page 500]
"""

from __future__ import annotations

import argparse
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import ROOT, ChildRun, child_run

GPUADMIN = str(Path(sys.executable).with_name("gpuadmin"))
TARGET_S, TARGET_MB = 2.0, 300.0


@contextmanager
def served_double(nodes: int, pods: int, workdir: Path) -> Iterator[Path]:
    """The seeded double in a process of its own until the block ends; yields its kubeconfig (context demo)."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.kube.demo_cluster", "--port", "0", "--dir", str(workdir),
                             "--scale", f"{nodes},{pods}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        said = _wait_ready(proc)
        print(said.splitlines()[0], flush=True)
        yield workdir / "kubeconfig"
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


def _has_sync() -> bool:
    done = subprocess.run([GPUADMIN, "sync", "--help"], capture_output=True, text=True, check=False)
    return done.returncode == 0


def _commands(kubeconfig: Path, state: Path, page: int, with_sync: bool) -> dict[str, list[str]]:
    kubectl = shutil.which("kubectl")
    commands: dict[str, list[str]] = {}
    if kubectl:
        commands["kubectl get nodes,pods -A -o json (baseline)"] = [
            kubectl, "--kubeconfig", str(kubeconfig), "get", "nodes,pods", "-A", "-o", "json"]
    commands[f"lightkube list nodes, pods, queues (pages of {page})"] = [
        sys.executable, "-m", "bench.kube_read", str(kubeconfig), str(page)]
    if with_sync:
        commands["gpuadmin init --from-cluster kubernetes"] = [
            GPUADMIN, "--state", str(state), "init", "--from-cluster", "kubernetes", "--kubeconfig", str(kubeconfig),
            "--context", "demo", "--force"]
        commands["gpuadmin sync (no drift)"] = [GPUADMIN, "--state", str(state), "sync"]
    return commands


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--page", type=int, default=500)
    args = parser.parse_args()
    with_sync = _has_sync()
    with tempfile.TemporaryDirectory(prefix="gpuadmin-bench-kube-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "HOME": str(work), "KUBECONFIG": str(work / "kubeconfig"), "NO_COLOR": "1"}
        with served_double(args.nodes, args.pods, work) as kubeconfig:
            commands = _commands(kubeconfig, work / "state", args.page, with_sync)
            for command in commands.values():  # warm: kubectl's discovery cache, the page cache of the venv
                child_run(command, env=env, cwd=ROOT)
            runs: dict[str, list[ChildRun]] = {name: [] for name in commands}
            for _ in range(args.repeat):
                for name, command in commands.items():
                    runs[name].append(child_run(command, env=env, cwd=ROOT))
    _report(runs, args, with_sync)
    return 0


def _report(runs: dict[str, list[ChildRun]], args: argparse.Namespace, with_sync: bool) -> None:
    load = os.getloadavg()[0]
    print(f"{args.nodes} nodes, {args.pods} pods; medians of {args.repeat}; load average {load:.1f}")
    baseline = next((statistics.median(r.wall for r in taken) for name, taken in runs.items()
                     if name.startswith("kubectl")), None)
    print(f"{'command':<52} {'wall s':>8} {'min..max':>13} {'CPU s':>7} {'peak RSS MB':>12} {'× kubectl':>10}")
    for name, taken in runs.items():
        walls = [r.wall for r in taken]
        wall = statistics.median(walls)
        ratio = f"{wall / baseline:.2f}" if baseline else "-"
        print(f"{name:<52} {wall:>8.2f} {min(walls):>6.2f}..{max(walls):<5.2f} "
              f"{statistics.median(r.cpu for r in taken):>7.2f} {statistics.median(r.rss_mb for r in taken):>12.0f} "
              f"{ratio:>10}")
    if not with_sync:
        print("gpuadmin sync: not in this checkout yet (`gpuadmin sync --help` fails): init and sync not timed")
    for name, taken in runs.items():
        if re.match(r"gpuadmin (init|sync)", name):
            wall, rss = statistics.median(r.wall for r in taken), statistics.median(r.rss_mb for r in taken)
            verdict = "met" if wall <= TARGET_S and rss <= TARGET_MB else "NOT met"
            print(f"target ≤ {TARGET_S:g} s and ≤ {TARGET_MB:g} MB, {name}: {verdict}")


if __name__ == "__main__":
    sys.exit(main())
