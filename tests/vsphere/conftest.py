"""VMware's vCenter simulator, seeded with GPU hosts (tests/vsphere/vcsim.py), for each test that asks for it; the
tests skip, saying why, where it cannot be built (no Go, no govmomi source: `make system-deps` installs them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.vsphere.vcsim import Simulator, running, why_not


@pytest.fixture
def vcsim() -> Iterator[Simulator]:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    with running() as simulator:
        yield simulator
