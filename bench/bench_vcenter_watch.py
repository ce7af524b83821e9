"""The vCenter watch (gpuadmin/cluster/vcenter_watch.py) end to end: a VM powered off or on through the vSphere API
to the state's journal entry, against VMware's vCenter simulator (tests/vsphere/vcsim.py, the seeded GPU estate).

Timed, in one run, from just before the power task is sent to the entry committed:
- the watch: the service's watch of the bound vCenter (`Service.watch_cluster`), each batch synced at once by one
  thread as the console's service worker syncs it (`Service.sync_watched`: a full read through the watch's session);
  the simulator's 250 ms collection tick and the watch's 150 ms window are part of the figure;
- baseline: the same power task, then a plain `gpuadmin sync` (a new process: start, login, read, commit, logout),
  what an operator ran before the console followed a vCenter.
Each run toggles vdi-01's power (off, on, off, ...); medians over --runs of each: the watch's runs first, then
the baseline's (not interleaved: with the watch running, its sync and the CLI's would race for the entry).

    .venv/bin/python -m bench.bench_vcenter_watch [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from gpuadmin.cluster.watch import Batch
from gpuadmin.service import Moved, Service
from tests.vsphere.estate import find, session, wait
from tests.vsphere.vcsim import ROOT, Simulator, running

VM = "vdi-01"


def gpuadmin(state: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise SystemExit(f"gpuadmin {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")


def toggle(vm: Any) -> None:
    wait(vm.PowerOffVM_Task() if vm.runtime.powerState == "poweredOn" else vm.PowerOnVM_Task())


class Follower:
    """The console's loop without the console: the watch's batches, each synced on this one thread."""

    def __init__(self, state: Path, simulator: Simulator) -> None:
        self.entries: queue.SimpleQueue[float] = queue.SimpleQueue()
        self._batches: queue.SimpleQueue[Batch | None] = queue.SimpleQueue()
        self._service = Service(state_dir=state)
        self._feed = self._service.watch_cluster(self._batches.put, lambda _status: None,
                                                 password=lambda _user, _server: simulator.password)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self._batches.get() is not None:
            moved: Moved | None = self._service.sync_watched(self._feed)
            if moved is not None:
                self.entries.put(time.perf_counter())

    def stop(self) -> None:
        self._batches.put(None)
        self._thread.join(30)
        if self._feed is not None:
            self._feed.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with running() as simulator, tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        env = {**os.environ, "GPUADMIN_VCENTER_PASSWORD": simulator.password}
        gpuadmin(state, env, "init", "--from-cluster", "vcenter", "--server", simulator.server, "--insecure")
        with session(simulator) as admin:
            vm = find(admin, "VirtualMachine", VM)
            watched: list[float] = []
            synced: list[float] = []
            follower = Follower(state, simulator)
            time.sleep(1.0)  # the first batch (every host and VM) synced: no entry, the state is the vCenter
            try:
                for _ in range(args.runs):
                    sent = time.perf_counter()
                    toggle(vm)
                    watched.append(follower.entries.get(timeout=60) - sent)
                    time.sleep(0.5)
            finally:
                follower.stop()
            for _ in range(args.runs):
                sent = time.perf_counter()
                toggle(vm)
                gpuadmin(state, env, "sync")
                synced.append(time.perf_counter() - sent)
        entries = len(Service(state_dir=state).journal())
    watch_s, sync_s = statistics.median(watched), statistics.median(synced)
    print(f"{args.runs} power changes of {VM} each way; {entries} journal entries in all (init + one per change)")
    print(f"event to entry, the watch:         {watch_s:.2f} s median  "
          f"(runs {', '.join(f'{t:.2f}' for t in watched)})")
    print(f"baseline, task + `gpuadmin sync`:  {sync_s:.2f} s median  (runs {', '.join(f'{t:.2f}' for t in synced)})")
    print(f"ratio {watch_s / sync_s:.2f}; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
