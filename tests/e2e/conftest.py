"""What the tmux tests share: a state made from the OCI sample (a test may override `state` with its own), and the
panes a test opens, closed when it ends whatever happened."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.service import Service
from tests.e2e.tmuxkit import ROOT, Pane

SAMPLE = ROOT / "sample-inventories" / "oci-h100.yaml"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    Service.init(tmp_path / "state", SAMPLE)
    return tmp_path / "state"


@pytest.fixture
def panes() -> Iterator[list[Pane]]:
    opened: list[Pane] = []
    yield opened
    for pane in opened:
        pane.close()
