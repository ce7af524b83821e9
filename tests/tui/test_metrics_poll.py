"""The console polls telemetry on the service worker, against a real Prometheus (tests/telemetry's fixture:
the OCI sample's DCGM series): live, the header says nothing; the server killed, the header says the metrics are
down, since when and when the next try is, and the console keeps answering keys meanwhile."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from gpuadmin.service import Service, SourceStatus
from gpuadmin.tui.metrics_poll import check_metrics_seconds, metrics_notice
from tests.cli.clikit import gpuadmin, state_from
from tests.telemetry import promserver
from tests.telemetry.conftest import FAULTS, needs_prometheus
from tests.telemetry.scenario import devices
from tests.tui.tuikit import grid, header, make_app, press, settle

SIZE = (120, 36)


def test_the_notice_says_state_since_and_retry() -> None:
    since = time.mktime((2026, 12, 4, 12, 1, 0, 0, 0, -1))
    down = SourceStatus("down", url="http://p:9090", since=since, retry_at=since + 100, message="refused")
    assert metrics_notice(down, since + 60) == "metrics: down since 12:01, retry in 40 s"
    assert metrics_notice(SourceStatus("ok"), since) == ""
    assert metrics_notice(SourceStatus("unset"), since) == ""
    assert metrics_notice(None, since) == ""


@pytest.mark.parametrize("seconds", [0.0, 0.5, -3.0, float("nan"), float("inf")])
def test_a_polling_interval_too_fast_or_not_a_number_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="at least 1 s"):
        check_metrics_seconds(seconds)


async def _until(check: object, limit: float) -> None:
    start = time.monotonic()
    while not check():  # type: ignore[operator]
        assert time.monotonic() - start < limit, "not seen in time"
        await asyncio.sleep(0.1)


async def test_a_killed_prometheus_is_said_in_the_header(tmp_path: Path) -> None:
    needs_prometheus()
    state = state_from("oci-h100.yaml", tmp_path / "state")
    service = Service(state_dir=state)
    now = time.time()
    text = promserver.openmetrics(devices(service.state, FAULTS, end=now + 600), now - 600, now + 600, 30)
    with promserver.running(text, tmp_path / "prom") as server:
        assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", server.url).code == 0
        app = make_app(Service(state_dir=state), view="gpus", metrics_seconds=1.0)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await _until(lambda: app.metrics.status is not None, 20)
            status = app.metrics.status
            assert status is not None and status.state == "ok", status
            assert status.queries >= 12  # one query per metric for the whole cluster
            assert "metrics:" not in header(app)
            await press(pilot, "ctrl+w")  # wide: UTIL, MEM, TEMP, POWER
            await settle(pilot)
            rows = {(r["NODE"], r["GPU"]): r for r in grid(app).rows}
            busy = rows[("gpu-h100-01", 0)]
            assert isinstance(busy["UTIL"], float) and isinstance(busy["TEMP"], int), busy
            stale = rows[FAULTS.stale_gpu]
            assert stale["UTIL"] is None and stale["TEMP"] is None, stale  # `-`, never 0
            server.kill()
            await _until(lambda: "metrics: down since" in header(app), 20)
            assert "retry in" in header(app)
            await press(pilot, "j")  # keys are still answered: the refresh runs on the worker
            assert app.metrics.status is not None and "connection refused" in app.metrics.status.message
