"""Helpers for driving the console with Textual's pilot and reading what it shows.

Tests read real content: the table's rows and cursor, the screen on top, the header line, the
notifications the app raised, and the screen's text as a terminal would show it (`screen_text`).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey

from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.widgets.boards import BoardsView
from gpuadmin.tui.widgets.header import HeaderBar
from gpuadmin.tui.widgets.prompt import Prompt
from gpuadmin.tui.widgets.table import RowTable

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER = FIXTURES / "cluster.yaml"
HOSTILE = FIXTURES / "hostile.yaml"
ROOT = Path(__file__).resolve().parents[2]

# the nodes, queues and jobs of fixtures/cluster.yaml, in file order
NODES = ["gpu-h100-01", "gpu-h100-02", "gpu-h100-07", "gpu-h100-09", "gpu-h100-11", "a30-01", "esx-hgx-02"]
QUEUES = ["research", "inference", "platform", "interns"]


def make_app(service: Service | None = None, *, theme: str = "gpuadmin-dark", view: str = "overview",
             **kwargs: Any) -> GpuadminApp:
    """The console on the test cluster (in memory) or on `service`; every notification it raises is kept in
    `app.notified` (the app forgets a notification once its toast times out)."""
    app = GpuadminApp(service or Service(inventory=CLUSTER), theme=theme, view=view, **kwargs)
    notified: list[tuple[str, str, str]] = []
    raise_it = app.notify

    def notify(message: str, *, title: str = "", severity: Any = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        notified.append((str(severity), title, message))
        raise_it(message, title=title, severity=severity, timeout=timeout, markup=markup)

    app.notify = notify  # type: ignore[method-assign]
    app.notified = notified  # type: ignore[attr-defined]
    return app


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the views' reads (requests to the service worker, and the reads they start) are done and
    drawn."""
    app = pilot.app
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        await pilot.pause()
        running = [w for w in app.workers if not w.is_finished]
        if running:
            await app.workers.wait_for_complete(running)
        elif app.service_worker.idle and app._foreground is None:  # every request to the service answered and
            # its answer handled; work a user waits for is asked once its "working" line is drawn (after a refresh)
            break
        else:
            await pilot.pause(0.005)
    await pilot.pause()


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Let the console run until `condition` holds (the live watch polls once a second; a loaded machine may
    take longer); fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.1)
        await settle(pilot)
    await settle(pilot)  # and what the change started (a view's reload) is done


async def press(pilot: Pilot[Any], *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


async def enter_in_prompt(pilot: Pilot[Any], opener: str, text: str) -> None:
    """`:` or `/` (the real key), the text put in the prompt in place of what it holds (`/` shows the current
    filter), then Enter (the real key).

    Typing key by key costs the pilot ~60 ms a key; the tests that are about typing (history, completion,
    `q` in the prompt) press every key."""
    await pilot.press(opener)
    field = prompt(pilot.app)
    assert field.display and field.has_focus
    field.value = text
    field.cursor_position = len(text)
    await pilot.press("enter")
    await settle(pilot)


async def command(pilot: Pilot[Any], line: str) -> None:
    """`:` then the line, then Enter."""
    await enter_in_prompt(pilot, "colon", line)


async def filter_rows(pilot: Pilot[Any], text: str) -> None:
    """`/` then the filter, then Enter."""
    await enter_in_prompt(pilot, "slash", text)


def view(app: GpuadminApp) -> ViewScreen:
    screen = app.screen
    assert isinstance(screen, ViewScreen), f"on top: {type(screen).__name__}"
    return screen


def grid(app: GpuadminApp) -> RowTable:
    return view(app).query_one(RowTable)


def shown(app: GpuadminApp, column: str = "NAME") -> list[Any]:
    """One column of the rows the table shows, in their order (after filter and sort)."""
    table = grid(app)
    return [table.rows[i].get(column) for i in table.shown]


def cursor_row(app: GpuadminApp) -> dict[str, Any] | None:
    return grid(app).current_row()


def header(app: GpuadminApp) -> str:
    return str(view(app).query_one(HeaderBar).render())


def status_line(app: GpuadminApp) -> str:
    return str(view(app).query_one("#status", Static).render())


def prompt(app: GpuadminApp) -> Prompt:
    return view(app).query_one(Prompt)


def static_text(app: GpuadminApp, selector: str) -> str:
    """The plain text of a Static on the top screen (the describe body, a drawing)."""
    return str(app.screen.query_one(selector, Static).render())


def drawing_text(app: GpuadminApp, selector: str = "#topology-scroll") -> str:
    """The plain text of a virtualized drawing (the topology view): every line, drawn or not yet on screen."""
    drawing = app.screen.query_one(selector, BoardsView)
    if not drawing.line_count:
        return drawing.message.plain
    return "\n".join(drawing.line(i).plain for i in range(drawing.line_count))


def notes(app: GpuadminApp) -> list[tuple[str, str, str]]:
    """Every notification raised so far: (severity, title, message)."""
    return list(app.notified)  # type: ignore[attr-defined]


def errors(app: GpuadminApp) -> list[str]:
    return [message for severity, _, message in notes(app) if severity == "error"]


def footer_keys(app: GpuadminApp) -> dict[str, str]:
    """The key hints the footer shows: description -> key."""
    return {key.description: key.key for key in app.screen.query(FooterKey)} if app.screen.query(Footer) else {}


def active_actions(app: GpuadminApp) -> set[str]:
    """The actions of every binding active on the top screen (what a key would run)."""
    return {active.binding.action for active in app.active_bindings.values()}


def screen_text(app: GpuadminApp) -> str:
    """What the terminal shows, as text: every cell of the top screen and the screens under a modal.

    Built the way `App.export_screenshot` builds its SVG, so a control byte that reached a segment would be
    here as the raw byte."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


def text_position(app: GpuadminApp, needle: str) -> tuple[int, int] | None:
    """(x, y) of the first cell showing `needle`, for a click on it."""
    for y, line in enumerate(screen_text(app).splitlines()):
        x = line.find(needle)
        if x >= 0:
            return x, y
    return None
