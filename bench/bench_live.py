"""How long a console takes to show another process's apply (issue 9: within 1 s).

A console runs headless (Textual's pilot) on a state; a separate `gpuadmin apply` process cordons a node.
Timed: the apply process itself (the baseline, in the same run), and from the apply process's exit (its
commit is a little earlier) to the console's header showing the new revision. The console checks the revision
twice a second (WATCH_SECONDS): expect a quarter of a second plus the view's re-read on average.
Medians over --runs applies.

    .venv/bin/python -m bench.bench_live [--nodes 1024 --jobs 10000] [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import generated_file
from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.widgets.header import HeaderBar


async def run(state: Path, runs: int, nodes: list[str]) -> tuple[list[float], list[float]]:
    app = GpuadminApp(Service(state_dir=state), view="nodes", theme="gpuadmin-dark")
    applies: list[float] = []
    shown: list[float] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        for node in nodes[:runs]:
            changes = state.parent / "cordon.yaml"
            changes.write_text(f"changes:\n  - {{op: cordon, node: {node}}}\n", encoding="utf-8")
            started = time.perf_counter()
            proc = await asyncio.create_subprocess_exec(  # the console's loop keeps running meanwhile
                sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "apply", "-f", str(changes),
                "--yes", stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
            _, err = await proc.communicate()
            committed = time.perf_counter()  # the process has exited: its commit is at most this old
            applies.append(committed - started)
            revision = int(err.decode().rsplit("revision", 1)[1].split()[0])
            while f"rev {revision}" not in str(app.screen.query_one(HeaderBar).render()):
                await asyncio.sleep(0.01)
            shown.append(time.perf_counter() - committed)
    return applies, shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpuadmin-live-"))
    try:
        state = work / "state"
        Service.init(state, generated_file(args.nodes, args.jobs))
        nodes = [n for n in Service(state_dir=state).state.nodes][: args.runs]
        applies, shown = asyncio.run(run(state, args.runs, nodes))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.nodes} nodes, {args.jobs:,} jobs; medians of {len(shown)} applies")
    print(f"apply process (baseline)         {statistics.median(applies) * 1000:7.0f} ms")
    ratio = statistics.median(shown) / statistics.median(applies)
    print(f"commit -> console shows it       {statistics.median(shown) * 1000:7.0f} ms "
          f"(max {max(shown) * 1000:.0f} ms; ratio to the apply {ratio:.2f})")


if __name__ == "__main__":
    main()
