"""The console's table at 100,000 jobs against Textual's stock DataTable with the same rows, in one run.

Both tables live in the same headless app (Textual's pilot, 120x40), fed the jobs listing the service
returns for the generated 1,024-node / 100,000-job state. For each we time, as an operator would feel it:
  first rows   the rows handed over -> the first frame drawn with them
  filter       a filter (status=pending) -> the frame drawn with the kept rows (DataTable: clear + re-add)
  sort         sort by QUEUE -> the frame drawn
  page scroll  one PageDown -> the frame drawn (a keystroke)
Medians over --runs; the ratio is DataTable / RowTable (how many times faster the console's table is).
Each time includes the pilot's own round trip (a key sent, the app idle again); that floor is measured the
same way on a one-row table and shown, and "net" is a time less that floor: the work a keystroke costs.

    .venv/bin/python -m bench.bench_table [--jobs 100000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from bench.common import generated_file
from gpuadmin.service import Service
from gpuadmin.tui.screens.listing import COLUMNS, console_rows
from gpuadmin.tui.widgets.table import RowTable

SIZE = (120, 40)


class Bench(App[None]):
    def __init__(self, which: str) -> None:
        super().__init__()
        self.which = which

    def compose(self) -> ComposeResult:
        yield RowTable(id="t") if self.which == "rowtable" else DataTable(id="t")


async def _frame(pilot: Any) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def measure(which: str, columns: list[str], rows: list[dict[str, Any]]) -> dict[str, float]:
    app = Bench(which)
    out: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one("#t")
        table.focus()
        start = time.perf_counter()
        if isinstance(table, RowTable):
            table.set_rows(columns, rows)
        else:
            table.add_columns(*columns)
            table.add_rows([[r.get(c) for c in columns] for r in rows])
        await _frame(pilot)
        out["first rows"] = time.perf_counter() - start

        start = time.perf_counter()
        await pilot.press("pagedown")
        await _frame(pilot)
        out["page scroll"] = time.perf_counter() - start

        start = time.perf_counter()
        if isinstance(table, RowTable):
            table.sort_by("QUEUE")
        else:
            table.sort(table.ordered_columns[columns.index("QUEUE")].key)
        await _frame(pilot)
        out["sort"] = time.perf_counter() - start

        start = time.perf_counter()
        if isinstance(table, RowTable):
            table.set_filter(lambda row: row["STATUS"] == "pending")
        else:  # the stock table has no filter: what an app does is clear and add the kept rows
            table.clear()
            table.add_rows([[r.get(c) for c in columns] for r in rows if r["STATUS"] == "pending"])
        await _frame(pilot)
        out["filter"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    state = Path(tempfile.gettempdir()) / f"gpuadmin-bench-state-{args.nodes}n-{args.jobs}j"
    if not (state / "state.db").exists():
        Service.init(state, generated_file(args.nodes, args.jobs))
    table = Service(state_dir=state).get("jobs", reasons=False)
    rows = console_rows("jobs", table.rows)
    columns = [c for c in COLUMNS["jobs"] if c in rows[0]]
    print(f"{len(rows):,} job rows, {len(columns)} columns, terminal {SIZE[0]}x{SIZE[1]}, medians of {args.runs}")
    results: dict[str, list[dict[str, float]]] = {"floor": [], "rowtable": [], "datatable": []}
    one_row = [dict(rows[0], STATUS="pending")]
    for _ in range(args.runs):
        results["floor"].append(asyncio.run(measure("rowtable", columns, one_row)))
        for which in ("rowtable", "datatable"):
            results[which].append(asyncio.run(measure(which, columns, rows)))
    print(f"{'':<12} {'floor':>9} {'RowTable':>10} {'net':>8} {'DataTable':>10} {'net':>9} {'ratio(net)':>11}")
    for step in ("first rows", "filter", "sort", "page scroll"):
        floor, ours, stock = (statistics.median(r[step] for r in results[k])
                              for k in ("floor", "rowtable", "datatable"))
        net_ours, net_stock = max(ours - floor, 1e-4), max(stock - floor, 1e-4)
        print(f"{step:<12} {floor * 1000:>7.1f}ms {ours * 1000:>8.1f}ms {net_ours * 1000:>6.1f}ms "
              f"{stock * 1000:>8.1f}ms {net_stock * 1000:>7.1f}ms {net_stock / net_ours:>10.1f}x")


if __name__ == "__main__":
    main()
