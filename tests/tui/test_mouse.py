"""The mouse works but is never needed: a click moves the cursor to a row, a second click opens it."""

from __future__ import annotations

from gpuadmin.service import Service
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.widgets.table import RowTable
from tests.tui.tuikit import grid, make_app, settle


async def test_click_selects_and_double_click_opens(cluster: Service) -> None:
    app = make_app(cluster, view="nodes")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = grid(app)
        third = table.rows[table.shown[2]]["NAME"]
        await pilot.click(RowTable, offset=(4, 3))  # line 0 is the header: line 3 is the third row
        assert table.current_key() == third and not isinstance(app.screen, NodeScreen)
        await pilot.click(RowTable, offset=(4, 3), times=2)
        await settle(pilot)
        assert isinstance(app.screen, NodeScreen) and app.screen.node == third


async def test_a_click_on_the_header_moves_nothing(cluster: Service) -> None:
    app = make_app(cluster, view="nodes")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = grid(app)
        await pilot.click(RowTable, offset=(4, 0))
        assert table.cursor == 0

