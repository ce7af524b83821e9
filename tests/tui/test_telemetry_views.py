"""The console's telemetry views against a real Prometheus (tests/telemetry's fixture: the OCI sample's DCGM
series over the last hour, with an idle holder, a GPU with XID 79 and double-bit ECC errors, and a stale GPU):
`:top` at 80x24, `:idle` and its reviewed remedy, and the sparklines of the node view and a GPU's describe.
The console's own reads are held equal to the headless ones they stand for."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Sparkline, Static

from gpuadmin.service import Service
from gpuadmin.tui.draw import level_bar
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from gpuadmin.tui.screens.telemetry import IdleScreen, TopScreen, top_columns
from gpuadmin.tui.widgets.sparks import spark_lines
from gpuadmin.tui.widgets.table import natural_widths
from tests.cli.clikit import gpuadmin, state_from
from tests.telemetry.conftest import FAULTS, oci_prometheus, oci_state  # noqa: F401  # the module's Prometheus
from tests.telemetry.promserver import Prometheus
from tests.tui.tuikit import grid, make_app, press, screen_text, settle, wait_for

SMALL = (80, 24)


@pytest.fixture
def state(tmp_path: Path, oci_prometheus: Prometheus) -> Iterator[Path]:  # noqa: F811
    path = state_from("oci-h100.yaml", tmp_path / "state")
    assert gpuadmin("--state", path, "config", "set", "metrics.prometheus", oci_prometheus.url).code == 0
    yield path


async def _polled(pilot: object, app: object) -> None:
    await wait_for(pilot, lambda: app.metrics.status is not None)  # type: ignore[attr-defined,arg-type]
    await settle(pilot)  # type: ignore[arg-type]


async def test_top_puts_the_erroring_gpu_first_shows_stale_as_stale_and_reorders(state: Path) -> None:
    app = make_app(Service(state_dir=state), view="top")
    async with app.run_test(size=SMALL) as pilot:
        await _polled(pilot, app)
        rows = grid(app).rows
        assert isinstance(app.screen, TopScreen) and rows
        first = rows[0]
        assert first["NAME"] == "/".join(map(str, FAULTS.xid_gpu)) and first["XID"] == 79 and first["DBE"] == 3
        assert any("@" in str(r["NAME"]) for r in rows)  # MIG instances, with their holders
        stale = next(r for r in rows if r["NAME"] == "/".join(map(str, FAULTS.stale_gpu)))
        assert stale["UTIL"] is None and stale["TEMP"] is None and stale["BUSY"] == "stale", stale  # never 0
        text = screen_text(app)
        header = next(line for line in text.splitlines() if "NAME" in line)
        for column in ("NAME", "HOLDERS", "UTIL", "TEMP", "XID"):  # kept at 80 columns; MODEL given up first
            assert column in header, header
        assert "MODEL" not in header
        assert "worst first by errors" in text
        await press(pilot, "o")
        utils = [r["UTIL"] for r in grid(app).rows]
        known = [u for u in utils if u is not None]
        assert known == sorted(known, reverse=True) and utils[: len(known)] == known  # unknown after every known
        assert "worst first by util" in screen_text(app)
        selected = grid(app).current_row()
        assert selected is not None
        gpu = str(selected["GPU_NAME"])
        await press(pilot, "enter")  # a row opens its GPU on its node's screen
        assert isinstance(app.screen, NodeScreen) and app.screen.crumb() == gpu


async def test_at_80_columns_the_gpus_and_slices_views_keep_utilisation_under_wide(state: Path) -> None:
    app = make_app(Service(state_dir=state), view="gpus")
    async with app.run_test(size=SMALL) as pilot:
        await _polled(pilot, app)
        for view in ("3", "5"):
            await press(pilot, view)
            await press(pilot, "ctrl+w")
            header = next(line for line in screen_text(app).splitlines() if "HOLDERS" in line)
            assert "UTIL" in header and "NODE_STATE" not in header and "MEMORY_MIB" not in header, header
            assert any(isinstance(r["UTIL"], float) for r in grid(app).rows)


async def test_idle_lists_the_idle_holder_and_r_plans_its_remedy_for_review_only(state: Path) -> None:
    service = Service(state_dir=state)
    app = make_app(service, view="idle")
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, IdleScreen)
        rows = grid(app).rows
        assert [r["NAME"] for r in rows] == [FAULTS.idle_job], rows
        assert rows[0]["QUEUE"] == "research" and rows[0]["REMEDY"] == "preempt-job" and rows[0]["GPU_HOURS"] > 0
        assert "GPU-hours held idle per queue: research" in screen_text(app)
        await press(pilot, "R")
        review = app.screen
        assert isinstance(review, PlanReviewScreen)
        assert "preempt" in screen_text(app) and FAULTS.idle_job in screen_text(app)
        await press(pilot, "escape")  # not applied: only the review may apply it
    assert Service(state_dir=state).state.revision == 0


async def test_node_view_and_gpu_describe_draw_the_last_hour(state: Path) -> None:
    app = make_app(Service(state_dir=state), view="nodes")
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        app.run_command("node gpu-h100-01")
        await settle(pilot)
        await wait_for(pilot, lambda: len(app.screen.query(Sparkline)) == 8)
        assert all(len(s.data or ()) >= 50 for s in app.screen.query(Sparkline))  # a point a minute
        assert "utilisation, last hour" in screen_text(app)
        await press(pilot, "escape")
        app.run_command(f"node {FAULTS.stale_gpu[0]}")
        await settle(pilot)
        await wait_for(pilot, lambda: len(app.screen.query(Sparkline)) == 8)
        notes = [str(note.content) for note in app.screen.query(".spark-note").results(Static)]
        stale = FAULTS.stale_gpu[1]
        assert notes[stale].startswith("stale: last "), notes  # its last samples are gone: not "now 0%"
        assert all(note.startswith("now ") for i, note in enumerate(notes) if i != stale), notes
        await press(pilot, "escape")
        app.open_thing("gpu", "gpu-h100-05/3")
        await settle(pilot)
        await press(pilot, "d")
        await wait_for(pilot, lambda: len(app.screen.query(Sparkline)) == 1)
        assert "GPU 3" in screen_text(app)


async def test_without_prometheus_the_views_say_so(tmp_path: Path) -> None:
    app = make_app(Service(state_dir=state_from("oci-h100.yaml", tmp_path / "s")), view="top")
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert not grid(app).rows and "no Prometheus is set" in screen_text(app)
        await press(pilot, "0")
        assert not grid(app).rows and "no Prometheus is set" in screen_text(app)
        await press(pilot, "R")  # nothing selected: no remedy, no review
        assert isinstance(app.screen, IdleScreen)


def test_the_console_reads_equal_the_headless_ones(state: Path) -> None:
    """`node_utilisation` (one node's series) equals the cluster-wide history on that node; `top(refresh=False)`
    (the last poll's readings) equals the refresh that made them."""
    service = Service(state_dir=state)
    source = service._source()
    now = time.time()
    source.clock = lambda: now  # both histories end at the same instant
    everything = service.utilisation_history()
    for node in ("gpu-h100-01", "gpu-h100-07", FAULTS.stale_gpu[0]):
        mine = service.node_utilisation(node)
        assert mine and mine == {k: v for k, v in everything.items() if k[0] == node}
    fresh = service.top("util")
    assert service.top("util", refresh=False).rows == fresh.rows


def test_a_missing_reading_is_a_word_never_an_empty_bar() -> None:
    assert level_bar(None, 10, "stale") == "stale"
    assert level_bar(0.0, 10, "stale") == ".........."
    assert level_bar(0.4, 10, "stale") == "#........."  # any use shows
    assert level_bar(100.0, 4, "-") == "####"
    lines = spark_lines({("n", 1): ((0, 5.0), (60, None)), ("n", 0): ((0, None), (60, None)),
                         ("n", 1, 4): ((0, 1.0), (60, 2.0))}, 600, window=120, step=60)
    assert [(s.label, s.values, s.note) for s in lines] == [
        ("GPU 0", [], "no samples"), ("GPU 1", [5.0], "stale: last 10 min ago (1/2 min)"),
        ("GPU 1 @4", [1.0, 2.0], "stale: last 9 min ago")]
    assert spark_lines({("n", 0): ((540, 3.0), (600, 4.0))}, 610, window=120, step=60)[0].note == "now 4%"


async def test_widths_made_on_the_worker_equal_the_tables_own() -> None:
    """A view's read makes its columns' widths with the rows (off the event loop); the table takes them only for
    its columns, and they equal what it makes itself."""
    rows = [{"NAME": f"n-{i}/{i % 8}", "HOLDERS": "j" * (i % 60), "UTIL": i / 7 if i % 5 else None, "BUSY": "#"}
            for i in range(9000)]
    columns = top_columns(wide=False)
    names = [c.name for c in columns]
    app = make_app(view="gpus")
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        table = grid(app)
        table.set_rows(columns, rows)
        made_here = dict(table._natural)
        assert made_here["HOLDERS"] == 48  # MAX_CELL
        table.set_rows(columns, rows, natural_widths(names, rows))
        assert table._natural == made_here
        table.set_rows(columns, rows, {"NAME": 1})  # widths of other columns: made again
        assert table._natural == made_here
        await settle(pilot)


def test_sparklines_are_drawn_against_0_to_100_percent() -> None:
    """Textual's own sparkline scales each line to its own range, drawing a GPU idling at 0-2 % as full bars."""
    import io

    from rich.color import Color
    from rich.console import Console

    from gpuadmin.tui.widgets.sparks import _PercentRenderable

    def drawn(values: list[float]) -> str:
        out = io.StringIO()
        Console(file=out, width=len(values), color_system=None).print(
            _PercentRenderable(values, width=len(values), min_color=Color.parse("green"),
                               max_color=Color.parse("red")), end="")
        return out.getvalue()

    assert drawn([0.0, 1.0, 1.9, 0.5]) == "▁▁▁▁"
    assert drawn([0.0, 50.0, 100.0, 99.0]) == "▁▅██"


def test_a_node_name_is_quoted_as_a_promql_string() -> None:
    from gpuadmin.service.telemetry_console import promql_string

    assert promql_string('gpu-01"} or vector(1) or {a="') == '"gpu-01\\"} or vector(1) or {a=\\""'
    assert promql_string("a\\b\nc") == '"a\\\\b\\nc"'


def test_tui_view_takes_every_view_of_the_console() -> None:
    """`gpuadmin tui --view` lists the views without importing Textual: held equal to the console's."""
    from gpuadmin.cli.cmd_tui import VIEWS as CLI_VIEWS
    from gpuadmin.tui.app import VIEWS

    assert tuple(VIEWS) == CLI_VIEWS
