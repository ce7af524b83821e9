"""SVG snapshots of the main views at 80x24 and 160x48, in the dark and the ANSI theme, on the fixed test
cluster in memory (no timestamps, no clock: the journal view is left out). `--snapshot-update` rewrites them;
look at the SVGs before committing them."""

from __future__ import annotations

from typing import Any

import pytest

from gpuadmin.service import Service
from tests.tui.tuikit import HOSTILE, make_app, settle

# name -> (the view the console opens on, keys pressed then)
VIEWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "overview": ("overview", ()),
    "nodes": ("nodes", ("down", "down")),
    "node": ("nodes", ("down", "down", "enter")),  # gpu-h100-07: four MIG layouts drawn
    "jobs": ("jobs", ()),
    "queues": ("queues", ()),
    "topology": ("topology", ()),
}
SIZES = {"80x24": (80, 24), "160x48": (160, 48)}
THEMES = ["gpuadmin-dark", "gpuadmin-ansi"]


def _before(keys: tuple[str, ...]) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run_before


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("name", list(VIEWS))
def test_view(snap_compare: Any, name: str, size: str, theme: str) -> None:
    view, keys = VIEWS[name]
    assert snap_compare(make_app(theme=theme, view=view), terminal_size=SIZES[size], run_before=_before(keys))


def test_hostile_names_jobs(snap_compare: Any) -> None:
    """What an operator sees of names made of markup and escapes: the characters, escaped where they are bytes."""
    app = make_app(Service(inventory=HOSTILE), view="jobs")
    assert snap_compare(app, terminal_size=(80, 24), run_before=_before(()))
