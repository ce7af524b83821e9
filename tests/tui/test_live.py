"""Live: two consoles (two GpuadminApp objects, each in its own pilot, interleaved on one event loop) and a
real `gpuadmin apply` process on one state dir. Each console shows the other's and the script's apply within
~1.5 s (the watch asks once a second), no apply is lost (distinct revisions, every one in the journal), and
the rows an apply changed are marked (`~`) for a moment."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.screens.listing import ListingScreen
from tests.tui.tuikit import ROOT, grid, header, make_app, notes, press, screen_text, settle

SIZE = (120, 36)
NOTICED_WITHIN = 1.6  # seconds: the watch runs every second, then the view re-reads


def state_of(app: GpuadminApp, name: str) -> str | None:
    table = grid(app)
    return next((str(table.rows[i]["STATE"]) for i in table.shown if table.rows[i]["NAME"] == name), None)


async def noticed(check: Callable[[], bool], limit: float = NOTICED_WITHIN) -> float:
    """Seconds until `check` holds (both consoles keep running meanwhile: they share the loop)."""
    start = time.monotonic()
    while not check():
        elapsed = time.monotonic() - start
        assert elapsed < limit, f"not seen within {limit} s"
        await asyncio.sleep(0.05)
    return time.monotonic() - start


async def cordon_in(pilot: Any, node: str) -> None:
    """Cordon `node` from a console's nodes view, by its keys: move to it, c, y."""
    app = pilot.app
    table = grid(app)
    position = next(p for p, i in enumerate(table.shown) if table.rows[i]["NAME"] == node)
    await press(pilot, "g", *["down"] * position, "c")
    await press(pilot, "y")
    assert isinstance(app.screen, ListingScreen), type(app.screen).__name__


async def cli_apply(state: Path, tmp: Path, items: list[dict[str, Any]]) -> str:
    """A real `gpuadmin apply -f FILE --yes` process (run while both consoles keep running)."""
    changes = tmp / f"changes-{time.monotonic_ns()}.json"
    changes.write_text(json.dumps({"changes": items}))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "apply", "-f", str(changes), "--yes",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_two_consoles_and_a_script_see_each_other(state_dir: Path, tmp_path: Path) -> None:
    one = make_app(Service(state_dir=state_dir), view="nodes")
    two = make_app(Service(state_dir=state_dir), view="nodes")
    async with one.run_test(size=SIZE) as first, two.run_test(size=SIZE) as second:
        await settle(first)
        await settle(second)
        assert state_of(one, "gpu-h100-02") == state_of(two, "gpu-h100-02") == "ready"

        # the first console cordons: the second shows it, marked
        await cordon_in(first, "gpu-h100-02")
        assert state_of(one, "gpu-h100-02") == "cordoned" and "rev 1" in header(one)
        await noticed(lambda: state_of(two, "gpu-h100-02") == "cordoned")
        assert "rev 1" in header(two)
        assert "gpu-h100-02" in grid(two).changed
        marked = [line for line in screen_text(two).splitlines() if "gpu-h100-02" in line]
        assert marked and marked[0].lstrip("│ ").startswith("~"), marked  # the gutter says changed, not colour alone

        # the second console cordons another node: the first shows it
        await cordon_in(second, "a30-01")
        await noticed(lambda: state_of(one, "a30-01") == "cordoned")
        assert "rev 2" in header(one) and grid(one).changed == {"a30-01"}

        # a script applies: both show it
        await cli_apply(state_dir, tmp_path, [{"op": "cordon", "node": "esx-hgx-02"}])
        await noticed(lambda: state_of(one, "esx-hgx-02") == "cordoned" and state_of(two, "esx-hgx-02") == "cordoned")
        assert "rev 3" in header(one) and "rev 3" in header(two)
        assert "esx-hgx-02" in grid(one).changed and "esx-hgx-02" in grid(two).changed

        # the mark is brief: gone about two seconds later
        await noticed(lambda: not grid(one).changed and not grid(two).changed, limit=2.6)
        assert not [line for line in screen_text(two).splitlines() if line.lstrip("│ ").startswith("~")]
        assert not [n for n in notes(one) + notes(two) if n[0] == "error"]

    entries = Service(state_dir=state_dir).journal()
    applied = [(e.revision, e.outcome, e.actor is not None) for e in entries[1:]]
    assert applied == [(1, "applied", True), (2, "applied", True), (3, "applied", True)]
    nodes = Service(state_dir=state_dir).state.nodes
    assert {n: nodes[n].state for n in ("gpu-h100-02", "a30-01", "esx-hgx-02")} == dict.fromkeys(
        ("gpu-h100-02", "a30-01", "esx-hgx-02"), "cordoned")


async def test_a_console_and_a_script_applying_at_once_lose_nothing(state_dir: Path, tmp_path: Path) -> None:
    """The script's apply and a console's confirmation race for the write lock: both are applied, each at its own
    revision, and the console shows both."""
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = grid(app)
        await press(pilot, "c")  # gpu-h100-01, the first row
        script = asyncio.ensure_future(cli_apply(state_dir, tmp_path, [
            {"op": "set-quota", "queue": "interns", "quota": {"gpus": 3}},
            {"op": "cordon", "node": "gpu-h100-07"}]))
        await press(pilot, "y")
        await script
        await noticed(lambda: state_of(app, "gpu-h100-07") == "cordoned")
        assert state_of(app, "gpu-h100-01") == "cordoned" and "rev 2" in header(app)
        assert table is grid(app)
        assert not [n for n in notes(app) if n[0] == "error"]
    entries = Service(state_dir=state_dir).journal()[1:]
    assert sorted(e.revision or 0 for e in entries if e.outcome == "applied") == [1, 2]
    assert [e.outcome for e in entries] == ["applied", "applied"]
    service = Service(state_dir=state_dir)
    assert service.state.queues["interns"].quota.gpus == 3
    assert service.state.nodes["gpu-h100-01"].state == service.state.nodes["gpu-h100-07"].state == "cordoned"


async def test_a_view_not_shown_rereads_when_opened(state_dir: Path, tmp_path: Path) -> None:
    """The jobs view is not shown when the script submits a job: it shows the job once opened."""
    app = make_app(Service(state_dir=state_dir), view="jobs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "2")  # nodes on screen, jobs behind
        await cli_apply(state_dir, tmp_path, [{"op": "submit-job", "job": {
            "name": "from-a-script", "queue": "research", "request": {"gpus": 1}}}])
        await noticed(lambda: "rev 1" in header(app))
        await press(pilot, "6")
        await settle(pilot)
        names = [grid(app).rows[i]["NAME"] for i in grid(app).shown]
        assert "from-a-script" in names
