"""`d` describes the selection and `y` shows it as YAML: the same data as `gpuadmin describe`, drawn by the same
renderer; Enter on a job or a journal entry does the same. Nothing to describe, no `d`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
import yaml

from gpuadmin.render.describe import as_text
from gpuadmin.service import Service
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.node import NodeScreen
from tests.tui.tuikit import (
    CLUSTER,
    ROOT,
    active_actions,
    cursor_row,
    footer_keys,
    make_app,
    notes,
    press,
    screen_text,
    settle,
    static_text,
)

# view, keys to the row, the describe kind and name that row is
CASES = [
    ("nodes", ("down", "down"), "node", "gpu-h100-07"),
    ("gpus", ("down",) * 9, "gpu", "gpu-h100-02/1"),
    ("slices", ("slash", *"mig", "enter", "down"), "gpu", "gpu-h100-07/0"),  # a MIG slice describes its GPU
    ("jobs", ("down",) * 3, "job", "llama3-8b-serve"),
    ("jobs", ("G",), "job", "nb-dana"),  # pending: with the scheduler's explanation
    ("queues", ("down",), "queue", "inference"),
]


def _plain(data: Any) -> Any:
    """As JSON has it (tuples are lists), to compare with the CLI's JSON and with YAML read back."""
    return json.loads(json.dumps(data))


@pytest.mark.parametrize(("name", "keys", "kind", "target"), CASES)
async def test_d_and_y_describe_the_row_under_the_cursor(name: str, keys: tuple[str, ...], kind: str,
                                                         target: str) -> None:
    service = Service(inventory=CLUSTER)
    app = make_app(service, view=name)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await press(pilot, *keys)
        assert footer_keys(app)["Describe"] == "d"
        await press(pilot, "d")
        screen = app.screen
        assert isinstance(screen, DescribeScreen)
        assert screen.title_text == f"{kind} {target}"
        expected = service.describe(kind, target)
        if kind == "job" and expected["summary"]["status"] == "pending":
            assert screen.data["pending"] == service.explain(target).to_json()  # why it waits, from the service
        assert screen.data == expected
        assert static_text(app, "#describe") == as_text(expected)
        assert f"text: {kind} {target}" in screen_text(app)  # the border title
        await press(pilot, "y")  # YAML of the same data
        assert screen.fmt == "yaml"
        assert yaml.safe_load(static_text(app, "#describe")) == _plain(screen.data)
        assert f"yaml: {kind} {target}" in screen_text(app)
        await press(pilot, "y")
        assert screen.fmt == "text"
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen) and app.screen.kind == name
        await press(pilot, "y")  # y in a view: YAML at once
        assert isinstance(app.screen, DescribeScreen) and app.screen.fmt == "yaml"
        assert yaml.safe_load(static_text(app, "#describe"))["name"] == target
        await press(pilot, "q")
        assert isinstance(app.screen, ListingScreen) and app.is_running
        assert not notes(app)


async def test_the_data_is_what_gpuadmin_describe_prints() -> None:
    """The real CLI, in its own processes, against the console's pop-ups."""
    wanted = [("node", "gpu-h100-07"), ("job", "nb-dana")]  # gpus and queues: the same service call, above
    processes = {target: subprocess.Popen([sys.executable, "-m", "gpuadmin.cli.main", "--inventory", str(CLUSTER),
                                           "describe", kind, target, "-o", "json"],
                                          cwd=ROOT, env=os.environ.copy(), stdout=subprocess.PIPE, text=True)
                 for kind, target in wanted}
    app = make_app(view="nodes")
    shown: dict[str, dict[str, Any]] = {}
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        for (kind, target), view, keys in zip(wanted, ("nodes", "jobs"), (("down", "down"), ("G",)), strict=True):
            await press(pilot, str(list(app.MODES).index(view) + 1), *keys)
            await press(pilot, "d")
            assert isinstance(app.screen, DescribeScreen) and app.screen.title_text == f"{kind} {target}"
            shown[target] = app.screen.data
            await press(pilot, "escape")
    for (kind, target), process in zip(wanted, processes.values(), strict=True):
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 0
        cli = json.loads(out)
        assert _plain(shown[target]) == cli, f"{kind} {target}"
        assert ("pending" in cli) == (kind == "job")  # both carry the scheduler's why-pending


async def test_d_on_a_node_screen_describes_the_node() -> None:
    service = Service(inventory=CLUSTER)
    app = make_app(service)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "colon", *"node a30-01", "enter")
        assert isinstance(app.screen, NodeScreen)
        await press(pilot, "d")
        assert isinstance(app.screen, DescribeScreen)
        assert app.screen.data == service.describe("node", "a30-01")
        assert "Name:           a30-01" in static_text(app, "#describe")
        await press(pilot, "escape")
        assert isinstance(app.screen, NodeScreen)


async def test_describe_a_journal_entry(state_dir) -> None:
    service = Service(state_dir=state_dir)
    service.submit(service.plan(service.build_changes([{"op": "cordon", "node": "gpu-h100-02"}])), confirmed=True)
    app = make_app(Service(state_dir=state_dir), view="journal")
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "G")
        assert cursor_row(app)["ID"] == 2
        await press(pilot, "d")
        assert isinstance(app.screen, DescribeScreen) and app.screen.title_text == "entry 2"
        assert app.screen.data == service.describe("entry", "2")
        body = static_text(app, "#describe")
        assert "node/gpu-h100-02" in body and "state: ready -> cordoned" in body


@pytest.mark.parametrize("name", ["overview"])  # the topology's cursor describes: tests/tui/test_enter.py
async def test_nothing_to_describe_no_d(name: str) -> None:
    app = make_app(view=name)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "Describe" not in footer_keys(app)
        assert not {"describe('text')", "describe('yaml')"} & active_actions(app)
        await press(pilot, "d", "y")
        assert app.screen is app.screen_stack[-1] and len(app.screen_stack) == 1
        assert not notes(app)


async def test_an_empty_table_has_no_d(state_dir) -> None:
    app = make_app(Service(state_dir=state_dir), view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"zzz", "enter")
        assert cursor_row(app) is None
        assert "Describe" not in footer_keys(app)
        await press(pilot, "d")
        assert isinstance(app.screen, ListingScreen)
