"""The console never blocks its event loop (issue 20 item 5): a slow service call runs on the service worker
while keys are still answered; Esc cancels long work; the topology view draws only what is on screen, and
what it draws equals the whole drawing.

The slow call is a test double: the service's `describe` (or `submit`) waits on a `threading.Event` the
test releases. It gives up after a few seconds, so that code that calls the service on the event loop
fails these tests instead of hanging them.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from bench.generate import dump_inventory, generate_inventory
from gpuadmin.service import Service
from gpuadmin.store.identity import login_identity
from gpuadmin.tui.draw import topology_line_count, topology_lines, tree_items, tree_lines
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.topology import TopologyScreen
from tests.tui.tuikit import cursor_row, make_app, notes, press, screen_text, settle, view

GIVE_UP = 5.0  # seconds the double blocks at most: on the UI thread it freezes the console that long
SAMPLES = Path(__file__).resolve().parents[2] / "sample-inventories"


class Gate:
    """Blocks a service method until released; says when the call has started."""

    def __init__(self, service: Service, method: str) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: list[str] = []
        real = getattr(service, method)

        def slow(*args: Any, **kwargs: Any) -> Any:
            self.threads.append(threading.current_thread().name)
            self.entered.set()
            self.release.wait(GIVE_UP)
            return real(*args, **kwargs)

        setattr(service, method, slow)


async def entered(pilot: Any, gate: Gate) -> bool:
    """Whether the service call began within GIVE_UP seconds, the event loop running meanwhile (the worker
    takes the request once the frame acknowledging the key is drawn)."""
    for _ in range(int(GIVE_UP / 0.01)):
        if gate.entered.is_set():
            return True
        await pilot.pause(0.01)
    return gate.entered.is_set()


async def test_keys_are_answered_while_a_slow_describe_runs(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    gate = Gate(service, "describe")
    app = make_app(service, view="nodes")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        first = cursor_row(app)
        await pilot.press("d")
        assert await entered(pilot, gate)
        working = view(app).query_one("#working")
        assert working.display and "describing node gpu-h100-01" in str(working.render())  # acknowledged
        await pilot.press("down")  # answered while the describe still runs
        assert not gate.release.is_set()
        assert cursor_row(app) != first
        gate.release.set()
        await settle(pilot)
        assert isinstance(app.screen, DescribeScreen)  # the answer, once it came
        assert not working.display
        assert gate.threads == ["gpuadmin-service"]  # the service was called on its worker only


async def test_esc_cancels_long_work_and_its_answer_is_discarded(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    gate = Gate(service, "describe")
    app = make_app(service, view="nodes")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        assert await entered(pilot, gate)
        await pilot.press("escape")
        assert not gate.release.is_set()  # cancelled while the call was still running
        assert ("information", "", "cancelled: describing node gpu-h100-01") in notes(app)
        assert not view(app).query_one("#working").display
        gate.release.set()
        await settle(pilot)
        assert app.current_mode == "nodes" and app.screen is view(app)  # the late answer was dropped
        assert not isinstance(app.screen, DescribeScreen)


async def test_an_apply_waiting_for_the_state_lock_shows_progress(state_dir: Path) -> None:
    from gpuadmin.store.lock import write_lock

    service = Service(state_dir=state_dir)
    service.lock_wait = 2.0
    app = make_app(service, view="nodes")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "c")  # cordon the node under the cursor: the plan review
        with write_lock(state_dir, login_identity(), "another writer"):
            await pilot.press("y")
            line = view(app).query_one("#working")
            assert line.display and "applying" in str(line.render())
            await pilot.press("down")  # the console answers while the apply waits for the lock
            assert cursor_row(app) is not None and cursor_row(app)["NAME"] == "gpu-h100-02"
        await settle(pilot)
        assert not line.display


def _inventory(tmp_path: Path, nodes: int) -> Path:
    path = tmp_path / "generated.yaml"
    with path.open("w", encoding="utf-8") as out:
        dump_inventory(generate_inventory(nodes, 0, seed=3), out)
    return path


async def test_topology_draws_only_the_hosts_on_screen_and_equals_the_whole_drawing(tmp_path: Path) -> None:
    service = Service(inventory=_inventory(tmp_path, 300))
    app = make_app(service, view="topology")
    width, height = 120, 40
    async with app.run_test(size=(width, height)) as pilot:
        await settle(pilot)
        screen = view(app)
        assert isinstance(screen, TopologyScreen)
        drawing = screen.query_one("#topology-scroll")
        drawn: list[str] = []
        real = drawing._draw  # type: ignore[attr-defined]

        def counting(board: dict[str, Any], at: int) -> Any:
            drawn.append(board["name"])
            return real(board, at)

        drawing._draw = counting  # type: ignore[attr-defined]
        boards = screen._boards
        whole = [line.plain for board in boards for line in tree_lines(tree_items(board, set()), set())]
        for presses in range(1, 4):
            drawn.clear()
            await press(pilot, "pagedown")
            top = drawing.scroll_offset.y
            assert top > 0
            body = screen_text(app).splitlines()[1:1 + drawing.size.height]
            # the screen shows exactly the whole drawing's lines from the scroll offset (after the 1-cell padding)
            seen = drawing.scrollable_content_region.width  # less the scroll bar
            # (less the gutter's first cell, where the cursor's `>` goes)
            assert [line[2:1 + seen].rstrip() for line in body] == [
                line[1:seen].rstrip() for line in whole[top:top + len(body)]]
            # and only the hosts with a line on screen were drawn (each has at least 3 lines)
            assert 0 < len(drawn) <= drawing.size.height // 3 + 2, (presses, len(drawn))


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_topology_line_count_equals_the_drawing(sample: str) -> None:
    for board in Service(inventory=SAMPLES / sample).boards():
        assert topology_line_count(board) == len(topology_lines(board, 100))
