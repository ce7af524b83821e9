"""`gpuadmin config`, `gpuadmin top` and the telemetry columns of `get gpus|slices -o wide`, as real processes
against a real Prometheus (the OCI sample's series: tests/telemetry/conftest.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.clikit import ROOT, gpuadmin, state_from
from tests.telemetry import promserver
from tests.telemetry.conftest import needs_prometheus
from tests.telemetry.promserver import Prometheus


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return state_from("oci-h100.yaml", tmp_path / "state")


def test_config_set_get_unset(state: Path) -> None:
    bad = gpuadmin("--state", state, "config", "set", "metrics.prometheus", "ftp://prom:9090")
    assert bad.code == 2 and "http or https" in bad.err
    creds = gpuadmin("--state", state, "config", "set", "metrics.prometheus", "http://u:secret@prom:9090")
    assert creds.code == 2 and "credentials" in creds.err and not (state / "settings.json").exists()
    assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", "http://prom:9090/").code == 0
    shown = json.loads(gpuadmin("--state", state, "config", "get", "-o", "json").out)
    assert shown["metrics.prometheus"]["value"] == "http://prom:9090"
    assert shown["metrics.node-label"] == {"value": None, "default": "Hostname",
                                           "doc": "the label of the DCGM series that names the node"}
    one = gpuadmin("--state", state, "config", "get", "metrics.prometheus")
    assert one.out == "metrics.prometheus  http://prom:9090\n"
    unknown = gpuadmin("--state", state, "config", "get", "metrics.nope")
    assert unknown.code == 2 and "known: metrics.prometheus, metrics.node-label" in unknown.err
    assert gpuadmin("--state", state, "config", "set", "metrics.node-label", "__name__").code == 2
    assert gpuadmin("--state", state, "config", "unset", "metrics.prometheus").code == 0
    assert "metrics.prometheus  -" in gpuadmin("--state", state, "config", "get").out


def test_setting_needs_an_admin_and_a_state(state: Path) -> None:
    refused = gpuadmin("--state", state, "--as-role", "operator", "config", "set", "metrics.prometheus", "http://p:1")
    assert refused.code == 4 and "needs admin" in refused.err
    assert gpuadmin("--state", state, "--as-role", "viewer", "config", "get").code == 0
    memory = gpuadmin("--inventory", ROOT / "sample-inventories" / "oci-h100.yaml", "config", "set",
                      "metrics.prometheus", "http://p:1")
    assert memory.code == 2 and "--inventory" in memory.err


@pytest.mark.parametrize("content", ['["http://p:1"]', '{"metrics.prometheus": 7}', "not json", "{" * 100000])
def test_a_hostile_settings_file_is_refused(state: Path, content: str) -> None:
    (state / "settings.json").write_text(content, encoding="utf-8")
    result = gpuadmin("--state", state, "top")
    assert result.code == 2 and "settings.json" in result.err and "Traceback" not in result.err


def test_a_settings_link_is_not_followed(state: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"metrics.prometheus": "http://evil:1"}', encoding="utf-8")
    (state / "settings.json").symlink_to(elsewhere)
    result = gpuadmin("--state", state, "config", "get")
    assert result.code == 2 and "symbolic link" in result.err


def test_without_a_prometheus_top_says_how_and_the_columns_are_dashes(state: Path) -> None:
    top = gpuadmin("--state", state, "top")
    assert top.code == 2 and "gpuadmin config set metrics.prometheus http://HOST:9090" in top.err
    wide = gpuadmin("--state", state, "get", "gpus", "-o", "wide")
    header, first = wide.out.splitlines()[:2]
    assert header.split()[-6:] == ["UTIL", "MEM", "TEMP", "POWER", "HEALTH", "ALERTS"]
    assert first.split()[-6:] == ["-"] * 6  # HEALTH too: unknown without readings (a fenced GPU says `fenced`)
    items = json.loads(gpuadmin("--state", state, "get", "gpus", "-o", "json").out)["items"]
    assert {(i["util"], i["mem"], i["temp"], i["power"]) for i in items} == {(None, None, None, None)}


def test_top_against_a_real_prometheus(state: Path, oci_prometheus: Prometheus) -> None:
    assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", oci_prometheus.url).code == 0
    result = gpuadmin("--state", state, "top", "-o", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["kind"] == "top" and doc["source"]["state"] == "ok" and doc["source"]["queries"] == 14
    first = doc["items"][0]
    assert first["name"] == "gpu-h100-05/3" and first["xid"] == 79 and first["dbe"] == 3
    by_name = {i["name"]: i for i in doc["items"]}
    assert by_name["gpu-h100-04/0"]["holders"] == "vit-h-pretrain" and by_name["gpu-h100-04/0"]["util"] < 2
    assert by_name["gpu-h100-12/0"]["util"] is None and by_name["gpu-h100-12/0"]["note"].startswith("stale:")
    assert by_name["gpu-h100-07/0/2g.20gb@0"]["holders"] == "reranker-serve"
    hottest = json.loads(gpuadmin("--state", state, "top", "--sort", "temp", "-o", "json").out)["items"]
    temps = [i["temp"] for i in hottest if i["temp"] is not None]
    assert temps == sorted(temps, reverse=True) and hottest[-1]["temp"] is None


def test_wide_listings_carry_the_readings(state: Path, oci_prometheus: Prometheus) -> None:
    gpuadmin("--state", state, "config", "set", "metrics.prometheus", oci_prometheus.url)
    gpus = {i["name"]: i for i in json.loads(gpuadmin("--state", state, "get", "gpus", "-o", "json").out)["items"]}
    assert 55 <= gpus["gpu-h100-01/0"]["util"] <= 99 and gpus["gpu-h100-01/0"]["temp"] > 30
    assert gpus["gpu-h100-12/0"]["util"] is None  # stale: no number
    slices = {i["name"]: i for i in json.loads(gpuadmin("--state", state, "get", "slices", "-o", "json").out)["items"]}
    held = slices["gpu-h100-07/0/2g.20gb@0"]
    assert held["util"] is not None and held["mem"] > 0 and held["temp"] is None
    table = gpuadmin("--state", state, "get", "slices", "-o", "wide").out
    assert "UTIL" in table.splitlines()[0]
    plain = gpuadmin("--state", state, "get", "gpus").out  # no telemetry asked: no query, no column
    assert "UTIL" not in plain.splitlines()[0]


def test_top_when_prometheus_is_down(state: Path) -> None:
    port = promserver.free_port()  # nothing listens there
    gpuadmin("--state", state, "config", "set", "metrics.prometheus", f"http://127.0.0.1:{port}")
    top = gpuadmin("--state", state, "top")
    assert top.code == 3 and "prometheus down" in top.err and "connection refused" in top.err
    wide = gpuadmin("--state", state, "get", "gpus", "-o", "wide")
    assert wide.code == 0 and "prometheus down since" in wide.err
    assert wide.out.splitlines()[1].split()[-4:] == ["-"] * 4


def test_make_demo_metrics_serves_and_stops(state: Path) -> None:
    needs_prometheus()
    port = promserver.free_port()
    demo = subprocess.Popen([sys.executable, "-m", "tests.telemetry.demo_metrics", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert demo.stdout is not None
        first = demo.stdout.readline()
        assert f"Prometheus at http://127.0.0.1:{port}" in first, demo.stderr.read() if demo.poll() else first
        lines = [demo.stdout.readline() for _ in range(5)]
        setting = next(line.split("#")[0].split() for line in lines if "config set" in line)
        assert setting[-2:] == ["metrics.prometheus", f"http://127.0.0.1:{port}"]
        assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", setting[-1]).code == 0
        top = json.loads(gpuadmin("--state", state, "top", "-o", "json").out)
        assert top["items"][0]["name"] == "gpu-h100-05/3" and top["items"][0]["xid"] == 79
        os.kill(demo.pid, signal.SIGINT)
        out, err = demo.communicate(timeout=30)
        assert demo.returncode == 0 and "stopped" in out and "Traceback" not in err
        down = gpuadmin("--state", state, "top")
        assert down.code == 3  # the demo's Prometheus went with it
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()


def test_the_service_gives_every_device_its_utilisation_history(state: Path, oci_prometheus: Prometheus) -> None:
    from gpuadmin.service import Service

    service = Service(state_dir=state)
    try:
        with pytest.raises(Exception, match="no Prometheus is set") as unset:
            service.utilisation_history(seconds=1800)
        assert unset.value.exit_code == 2  # type: ignore[attr-defined]
        service.set_setting("metrics.prometheus", oci_prometheus.url)
        history = service.utilisation_history(seconds=1800, step=60)
        assert all(v is not None and v < 2 for _, v in history[("gpu-h100-04", 0)])
        assert ("gpu-h100-07", 0, 2) in history  # a MIG instance, placed by its holder's pod
    finally:
        service.close()
