"""Hostile answers, a killed Prometheus and a slow one, all real: the server is Debian's prometheus; the slow one
is the same behind a tiny HTTP proxy that waits before it forwards."""

from __future__ import annotations

import http.server
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Inventory
from gpuadmin.telemetry import PrometheusClient, PrometheusQueryError, PrometheusSource, PrometheusUnavailable, Targets
from gpuadmin.telemetry.prometheus import check_url
from tests.telemetry import promserver
from tests.telemetry.conftest import needs_prometheus
from tests.telemetry.promserver import Device

ODD = 'gpu-\x1b[31mred\\"quoted"\nline'  # a Hostname with a terminal escape, a backslash, quotes and a newline


def _state() -> ClusterState:
    inventory = Inventory.model_validate({"version": 1, "cluster": "t", "nodes": [
        {"name": "node-a", "platform": "baremetal", "gpus": [
            {"index": i, "model": "H100-SXM5-80GB"} for i in range(6)]}]}, strict=False)
    return ClusterState.from_inventory(inventory)


def _devices() -> list[Device]:
    def const(v: float | str):  # type: ignore[no-untyped-def]
        return lambda _t: v

    return [
        Device("node-a", 0, "GPU-0", values={"DCGM_FI_DEV_GPU_UTIL": const(42), "DCGM_FI_DEV_GPU_TEMP": const("NaN"),
                                             "DCGM_FI_DEV_FB_USED": const(100)}),
        Device("node-a", 1, "GPU-1", values={"DCGM_FI_DEV_GPU_UTIL": const("+Inf"), "DCGM_FI_DEV_FB_USED": const(1),
                                             "DCGM_FI_DEV_GPU_TEMP": const(9223372036854775794)}),  # DCGM's blank
        Device("node-a", 2, "GPU-2", values={"DCGM_FI_DEV_GPU_UTIL": const(1e308), "DCGM_FI_DEV_FB_USED": const(1)}),
        Device("node-a", "03", "GPU-3", values={"DCGM_FI_DEV_GPU_UTIL": const(50)}),  # not how the index is written
        Device(ODD, 4, "GPU-4", values={"DCGM_FI_DEV_GPU_UTIL": const(60)}),  # no such node
        Device("node-a", 5, "GPU-5", pod=ODD, namespace="ns", values={"DCGM_FI_DEV_GPU_UTIL": const(7),
                                                                     "DCGM_FI_DEV_FB_USED": const(1)}),
    ]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[promserver.Prometheus]:
    needs_prometheus()
    now = time.time()
    with promserver.running(promserver.openmetrics(_devices(), now - 600, now, 30),
                            tmp_path_factory.mktemp("hostile")) as server:
        yield server


def test_hostile_values_are_none_with_the_reason(hostile: promserver.Prometheus) -> None:
    snap = PrometheusSource(PrometheusClient(hostile.url)).refresh(Targets.from_view(View(_state())))
    gpus = snap.gpus
    assert gpus[("node-a", 0)].util.value == 42
    assert gpus[("node-a", 0)].temp_c == gpus[("node-a", 0)].temp_c.missing(
        "DCGM_FI_DEV_GPU_TEMP: NaN (the exporter had no value)")
    assert gpus[("node-a", 1)].util.value is None and "infinite" in (gpus[("node-a", 1)].util.reason or "")
    assert "DCGM's blank value" in (gpus[("node-a", 1)].temp_c.reason or "")
    assert gpus[("node-a", 2)].util.value is None and "out of range" in (gpus[("node-a", 2)].util.reason or "")
    # gpu="03" is not GPU 3: nothing is guessed onto it; the odd Hostname matches no node: both counted
    assert gpus[("node-a", 3)].util.value is None
    assert any(note.startswith("2 series not placed: no GPU Hostname/gpu of the state") for note in snap.status.notes)
    # the label values come back byte for byte (shown as repr in the notes: the escape byte is never raw)
    assert gpus[("node-a", 5)].pods == (f"ns/{ODD}",)
    assert all("\x1b" not in note and "\n" not in note for note in snap.status.notes)


def test_a_bad_query_is_a_typed_error(hostile: promserver.Prometheus) -> None:
    with pytest.raises(PrometheusQueryError, match="bad_data"):
        PrometheusClient(hostile.url).query("max by (")


@pytest.mark.parametrize("url", ["ftp://h:9090", "file:///etc/passwd", "http://", "http://u:p@h:9090",
                                 "http://h:9090/?q=1", "http://h:99999", "http://h 1:9090", "javascript:alert(1)"])
def test_urls_other_than_a_prometheus_base_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        check_url(url)


def test_a_good_url_is_kept() -> None:
    assert check_url("https://prom.example:9090/prometheus/") == "https://prom.example:9090/prometheus"


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_killed_prometheus_is_down_and_polling_backs_off(tmp_path: Path) -> None:
    needs_prometheus()
    now = time.time()
    clock = _Clock()
    clock.now = now
    with promserver.running(promserver.openmetrics(_devices(), now - 300, now, 30), tmp_path) as server:
        source = PrometheusSource(PrometheusClient(server.url, timeout=2), clock=clock)
        targets = Targets.from_view(View(_state()))
        first = source.refresh(targets)
        assert first.status.state == "ok" and first.gpus[("node-a", 0)].util.value == 42
        server.kill()
        down = source.refresh(targets)
    assert down.status.state == "down" and "connection refused" in down.status.message
    assert down.status.since == clock.now and down.status.retry_at == clock.now + 5
    assert down.gpus[("node-a", 0)].util.value == 42 and down.at == first.at  # the last readings, dated
    clock.now += 1  # before retry_at: nothing is asked (a query would fail again and take its time)
    held = source.refresh(targets)
    assert held.status == down.status
    clock.now += 5  # past it: asked, failed again; down since the first failure, the wait doubled
    again = source.refresh(targets)
    assert again.status.since == down.status.since and again.status.retry_at == clock.now + 10


class _SlowProxy(http.server.ThreadingHTTPServer):
    delay = 0.0
    upstream = ""


class _Forward(http.server.BaseHTTPRequestHandler):
    server: _SlowProxy

    def do_POST(self) -> None:  # http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(self.server.delay)
        request = urllib.request.Request(self.server.upstream + self.path, data=body, method="POST",
                                         headers={"Content-Type": self.headers.get("Content-Type", "")})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                data = answer.read()
        except OSError:
            return
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up waiting
            pass

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def slow_proxy(hostile: promserver.Prometheus) -> Iterator[_SlowProxy]:
    proxy = _SlowProxy(("127.0.0.1", 0), _Forward)
    proxy.upstream = hostile.url
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    yield proxy
    proxy.shutdown()
    proxy.server_close()


def test_a_slow_prometheus_is_slow_and_backs_off(slow_proxy: _SlowProxy) -> None:
    slow_proxy.delay = 0.05
    clock = _Clock()
    url = f"http://127.0.0.1:{slow_proxy.server_address[1]}"
    source = PrometheusSource(PrometheusClient(url, timeout=5), clock=clock, slow_after=0.3)
    targets = Targets.from_view(View(_state()))
    snap = source.refresh(targets)  # 13 queries x 50 ms: answered, past 0.3 s
    assert snap.status.state == "slow" and snap.status.retry_at == clock.now + 5
    assert snap.gpus[("node-a", 0)].util.value == 42 and "backs off" in snap.status.message


def test_a_prometheus_slower_than_the_timeout_is_down(slow_proxy: _SlowProxy) -> None:
    slow_proxy.delay = 1.0
    url = f"http://127.0.0.1:{slow_proxy.server_address[1]}"
    with pytest.raises(PrometheusUnavailable, match=r"no answer within 0.3s"):
        PrometheusClient(url, timeout=0.3).query("DCGM_FI_DEV_GPU_UTIL")
    source = PrometheusSource(PrometheusClient(url, timeout=0.3), clock=_Clock())
    assert source.refresh(Targets.from_view(View(_state()))).status.state == "down"
