"""A resize never crashes the console: from 160x48 down to 40x10 and back, in every kind of screen. Columns
that do not fit are dropped (the first one always shows), nothing wraps, the cursor stays on its row."""

from __future__ import annotations

import pytest

from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.help import HelpScreen
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import cursor_row, grid, make_app, press, screen_text, settle

SIZES = [(160, 48), (120, 40), (80, 24), (60, 16), (40, 10), (41, 11), (80, 24), (160, 48)]


async def resize_through(pilot, app, check=None) -> None:
    for width, height in SIZES:
        await pilot.resize_terminal(width, height)
        await settle(pilot)
        assert app.is_running and app.size == (width, height)
        lines = screen_text(app).splitlines()
        assert len(lines) == height and all(len(line) <= width for line in lines)
        if check is not None:
            check(width, lines)


@pytest.mark.parametrize("view", ["overview", "topology"])
async def test_resize_a_drawing(view: str) -> None:
    app = make_app(view=view)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        first = screen_text(app).splitlines()[1].strip()

        def check(width: int, lines: list[str]) -> None:
            assert lines[0].startswith(" gpuadmin  tui-lab"[:width])
            assert lines[1].strip() and first.startswith(lines[1].strip().rstrip("…"))  # cut, never wrapped

        await resize_through(pilot, app, check)


@pytest.mark.parametrize(("view", "keys"), [("nodes", ("down", "down")), ("jobs", ("G",)), ("queues", ("down",)),
                                             ("slices", ("pagedown",)), ("journal", ())])
async def test_resize_a_table(view: str, keys: tuple[str, ...], state_dir) -> None:
    from gpuadmin.service import Service

    app = make_app(Service(state_dir=state_dir), view=view)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, *keys)
        row = cursor_row(app)
        first = grid(app).columns[0]

        def check(width: int, lines: list[str]) -> None:
            assert cursor_row(app) == row
            header = lines[2]
            assert header.startswith("  " + first[: width - 3])  # the first column always shows
            cursor_lines = [line for line in lines if line.startswith(">")]
            if len(lines) > 4:
                assert len(cursor_lines) == 1  # the cursor row is on screen
                # lstrip: a number (the journal's ID) is drawn to the right of its column
                assert cursor_lines[0][2:].lstrip().startswith(str(row[first])[: width - 4])

        await resize_through(pilot, app, check)


@pytest.mark.parametrize("keys", [("2", "down", "down", "enter"),   # a node
                                  ("6", "d"),                       # describe
                                  ("question_mark",),               # help
                                  ("2", "r")])                       # a drain's review, with its name field
async def test_resize_a_screen_or_pop_up(keys: tuple[str, ...], state_dir) -> None:
    from gpuadmin.service import Service

    app = make_app(Service(state_dir=state_dir))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, *keys)
        screen = app.screen
        assert isinstance(screen, NodeScreen | DescribeScreen | HelpScreen | PlanReviewScreen)
        await resize_through(pilot, app)
        assert app.screen is screen
        await press(pilot, "escape")
        assert app.screen is not screen and app.is_running


async def test_resize_with_the_prompt_open() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"h100")
        await resize_through(pilot, app)
        await press(pilot, "enter")
        assert len(grid(app).shown) == 5
