"""The console's views fill their telemetry columns from the last refresh (`telemetry_rows(refresh=False)`, no
query): held equal to a refresh's rows, against the real Prometheus (tests/telemetry/conftest.py)."""

from __future__ import annotations

import copy
from pathlib import Path

from gpuadmin.service import Service
from tests.cli.clikit import gpuadmin, state_from
from tests.telemetry.promserver import Prometheus


def test_the_last_readings_are_a_refreshs(oci_prometheus: Prometheus, tmp_path: Path) -> None:
    state = state_from("oci-h100.yaml", tmp_path / "state")
    service = Service(state_dir=state)
    before = service.get("gpus").rows
    assert service.telemetry_rows("gpus", copy.deepcopy(before), refresh=False).state == "unset"  # none yet
    assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", oci_prometheus.url).code == 0
    for kind in ("gpus", "slices"):
        refreshed = copy.deepcopy(service.get(kind).rows)
        status = service.telemetry_rows(kind, refreshed)
        held = copy.deepcopy(service.get(kind).rows)
        assert service.telemetry_rows(kind, held, refresh=False) == status
        assert held == refreshed and any(row["UTIL"] is not None for row in held)
