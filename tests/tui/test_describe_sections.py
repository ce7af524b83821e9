"""The console's describe reads like `kubectl describe`: a pending job says why it waits on the first screen (not
`reason: -` with the explanation two pages down), and a node's history from the journal is its Events."""

from __future__ import annotations

from pathlib import Path

from gpuadmin.service import Service
from gpuadmin.tui.screens.describe import DescribeScreen
from tests.tui.tuikit import cursor_row, make_app, press, screen_text, settle, static_text


async def test_a_pending_job_shows_why_it_waits_first() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "G")
        assert cursor_row(app)["STATUS"] == "pending"
        name = cursor_row(app)["NAME"]
        await press(pilot, "d")
        await settle(pilot)
        assert isinstance(app.screen, DescribeScreen)
        lines = static_text(app, "#describe").splitlines()
        assert lines[0].split() == ["Name:", name]
        assert lines[2].split() == ["Status:", "pending"]
        assert lines[3].startswith("Pending:") and lines[3].split()[1] == app.screen.data["pending"]["reason"]
        first_screen = screen_text(app)  # what an 80x24 terminal shows before any scrolling
        assert "Pending:" in first_screen and "Remedy:" in first_screen
        assert "reason: -" not in static_text(app, "#describe").lower()


async def test_a_node_describe_lists_its_journal_events(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    service.submit(service.plan(service.build_changes([{"op": "cordon", "node": "gpu-h100-02"}])), confirmed=True)
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "down")
        assert cursor_row(app)["NAME"] == "gpu-h100-02"
        await press(pilot, "d")
        await settle(pilot)
        assert isinstance(app.screen, DescribeScreen)
        body = static_text(app, "#describe")
        events = body[body.index("Events:"):].splitlines()
        assert events[1].split()[:4] == ["REVISION", "AGE", "BY", "CHANGE"]
        assert events[2].split()[0] == "1" and events[2].split()[2] == service.caller.identity.name
        assert "cordon" in events[2] and events[2].endswith("state: ready -> cordoned")
