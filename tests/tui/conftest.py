"""The console's tests run in a neutral environment: their own XDG dirs (no user theme, keymap or state
leaks in), colour not switched off, and the prompt's cursor steady (no blink timer), so what is drawn
depends on the test alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import textual._wait
from textual.widgets import Input

from gpuadmin.service import Service
from tests.tui.tuikit import CLUSTER, HOSTILE


@pytest.fixture(autouse=True)
def neutral_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    config = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
    for name in ("NO_COLOR", "TEXTUAL_COLOR_SYSTEM", "COLORTERM", "GPUADMIN_STATE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    # the cursor of an Input blinks on a timer: keep it steady (as Harlequin's and Posting's suites do)
    monkeypatch.setattr(Input, "_toggle_cursor", lambda _self: None)
    # the pilot sleeps in 20 ms steps until the process looks idle, twice a key; 5 ms steps keep the suite
    # fast (the pilot still waits for every message to be handled, and `settle` for the views' workers)
    monkeypatch.setattr(textual._wait, "SLEEP_GRANULARITY", 1 / 200)
    yield config


@pytest.fixture
def cluster() -> Service:
    """The fixed test cluster, in memory (nothing persisted; revision 0)."""
    return Service(inventory=CLUSTER)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A real state (SQLite, journaled) created from the test cluster."""
    path = tmp_path / "state"
    Service.init(path, CLUSTER)
    return path


@pytest.fixture
def hostile_state(tmp_path: Path) -> Path:
    path = tmp_path / "hostile-state"
    Service.init(path, HOSTILE)
    return path
