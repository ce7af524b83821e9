"""What gpuadmin reads of the DCGM exporter, held to NVIDIA's own files (fixtures/README.md says where from)."""

from __future__ import annotations

import http.server
import threading
import time
from pathlib import Path

import pytest

from gpuadmin.telemetry import PrometheusClient
from gpuadmin.telemetry.dcgm import METRICS
from tests.telemetry import promserver
from tests.telemetry.conftest import needs_prometheus

FIXTURES = Path(__file__).parent / "fixtures"


def _counters(name: str) -> tuple[set[str], set[str]]:
    """The fields a counters file turns on, and those it lists commented out."""
    on, off = set(), set()
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        field = line.lstrip("# ").split(",", 1)[0].strip()
        if field.startswith("DCGM_FI_") and "," in line:
            (off if line.startswith("#") else on).add(field)
    return on, off


def test_default_says_what_the_exporter_serves_by_default() -> None:
    on, off = _counters("default-counters.csv")
    dcp_on, _ = _counters("dcp-metrics-included.csv")
    for metric in METRICS:
        if metric.default:
            assert metric.name in on, metric.name
        else:
            assert metric.name in off or metric.name in dcp_on, metric.name
            assert metric.name not in on, metric.name
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in dcp_on


class _Exporter(http.server.BaseHTTPRequestHandler):
    body = (FIXTURES / "exporter-readme.txt").read_bytes()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_args: object) -> None:
        pass


def test_the_exporter_readme_lines_scraped_by_prometheus(tmp_path: Path) -> None:
    """The exporter's own output, served and scraped (not backfilled): its blank value is no temperature."""
    needs_prometheus()
    exporter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    threading.Thread(target=exporter.serve_forever, daemon=True).start()
    server = promserver.Prometheus(tmp_path / "data", scrape=f"127.0.0.1:{exporter.server_address[1]}")
    try:
        client = PrometheusClient(server.url)
        deadline = time.monotonic() + 20
        while not (samples := client.query("DCGM_FI_DEV_MEMORY_TEMP").samples) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert len(samples) == 1 and samples[0].labels["UUID"] == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
        value = samples[0].value
        assert value is not None and value > 9.2e18  # what the exporter wrote, as Prometheus keeps it (a float)
        temp = next(m for m in METRICS if m.field == "temp_c")
        reading, why = temp.check(value)
        assert reading is None and why is not None and why.startswith("DCGM's blank value")
        assert client.query("DCGM_FI_DEV_SM_CLOCK").samples[0].value == 139
    finally:
        server.stop()
        exporter.shutdown()
        exporter.server_close()


@pytest.mark.parametrize("value", [2147483632.0, 140737488355328.0, 9223372036854775792.0, 9223372036854775807.0])
def test_every_dcgm_blank_is_no_reading(value: float) -> None:
    for metric in METRICS:
        reading, why = metric.check(value)
        assert reading is None and why is not None and "blank" in why, (metric.name, value)
