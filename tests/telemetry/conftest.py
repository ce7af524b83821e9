"""A real Prometheus per test module (tests/telemetry/promserver.py); skipped, with why, where it is not installed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.engine.state import ClusterState
from gpuadmin.store import load_inventory
from tests.telemetry import promserver
from tests.telemetry.scenario import Faults, devices

SAMPLE = Path(__file__).resolve().parents[2] / "sample-inventories" / "oci-h100.yaml"
# The series run 10 minutes past the fixture's start (an instant query reads the latest sample at or before its
# time), so a slow run of a module's tests still finds them fresh; the stale GPU's end 20 minutes before the start.
AHEAD = 600.0
FAULTS = Faults(idle_job="vit-h-pretrain", xid_gpu=("gpu-h100-05", 3), stale_gpu=("gpu-h100-12", 0),
                stale_for=1200 + AHEAD)


def needs_prometheus() -> None:
    why = promserver.available()
    if why is not None:
        pytest.skip(why)


@pytest.fixture(scope="module")
def oci_state() -> ClusterState:
    return ClusterState.from_inventory(load_inventory(SAMPLE))


@pytest.fixture(scope="module")
def oci_prometheus(oci_state: ClusterState,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[promserver.Prometheus]:
    """The OCI sample's GPUs over the last hour (30 s apart), with an idle holder, an XID 79 GPU and a stale one;
    the GPU alerting rules evaluated (the XID 79 GPU's alerts fire)."""
    needs_prometheus()
    now = time.time()
    end = now + AHEAD
    text = promserver.openmetrics(devices(oci_state, FAULTS, end=end), now - 3600, end, 30)
    with promserver.running(text, tmp_path_factory.mktemp("prom"), rules=promserver.GPU_RULES) as server:
        yield server
