"""`gpuadmin idle`: the holders of slices used under N % for M minutes, through a real Prometheus. A golden of its
output (text and JSON) from a server holding a fixed hour (the service's clock set to that hour's end, so every
figure is the same on each run); exit codes, settings and options as real processes; who holds what (jobs with
their MIG shares, VMs) from the samples' states."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.cli.cmd_telemetry import write_idle
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.service import Service
from gpuadmin.service.telemetry import holdings
from gpuadmin.store import load_inventory
from tests.cli.clikit import SAMPLES, gpuadmin, state_from
from tests.telemetry import promserver
from tests.telemetry.conftest import needs_prometheus
from tests.telemetry.scenario import GR_ENGINE, Faults, devices

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GPUADMIN_UPDATE_GOLDEN") == "1"
# The end of the fixed hour: a whole minute, so that the range query's points fall on the series' samples.
# Prometheus keeps blocks by their age against its newest one, not the clock: a fixed past hour stays.
END = 1_796_000_040.0


@pytest.fixture(scope="module")
def fixed_hour(oci_state: ClusterState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[promserver.Prometheus]:
    """The OCI sample's hour: vit-h-pretrain's 4 GPUs idle (0-1.9 %), and reranker-serve's 2g.20gb MIG instance
    at 1 % (engine active 0.01) too."""
    needs_prometheus()
    series = devices(oci_state, Faults(idle_job="vit-h-pretrain"), end=END)
    for device in series:
        if (device.hostname, device.gpu, device.pod) == ("gpu-h100-07", 0, "reranker-serve"):
            device.values[GR_ENGINE] = lambda _t: 0.01
    text = promserver.openmetrics(series, END - 3600, END, 30)
    with promserver.running(text, tmp_path_factory.mktemp("idle")) as server:
        yield server


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return state_from("oci-h100.yaml", tmp_path / "state")


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_idle_golden(state: Path, fixed_hour: promserver.Prometheus, fmt: str,
                     capsys: pytest.CaptureFixture[str]) -> None:
    service = Service(state_dir=state)
    try:
        service.set_setting("metrics.prometheus", fixed_hour.url)
        service._source().clock = lambda: END  # the fixed hour's end: a test's clock, as the source allows
        result = service.idle()
    finally:
        service.close()
    capsys.readouterr()
    write_idle(result, fmt)
    out = capsys.readouterr().out
    _check_golden(f"idle.{'text' if fmt == 'table' else 'json'}", out)
    if fmt == "json":
        doc = json.loads(out)
        assert [i["name"] for i in doc["items"]] == ["vit-h-pretrain", "reranker-serve"]  # most wasteful first
        assert doc["items"][0]["idle_minutes"] == 60.0
        assert doc["wasted_gpu_hours_per_queue"] == {"inference": 0.286, "research": 4.0}
        assert doc["items"][0]["remedy"] == [{"op": "preempt-job", "name": "vit-h-pretrain"}]


def test_idle_as_a_process(state: Path, oci_prometheus: promserver.Prometheus) -> None:
    unset = gpuadmin("--state", state, "idle")
    assert unset.code == 2 and "gpuadmin config set metrics.prometheus" in unset.err
    assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", oci_prometheus.url).code == 0
    found = json.loads(gpuadmin("--state", state, "idle", "-o", "json").out)
    assert (found["below"], found["for_minutes"]) == (5.0, 30.0)  # the documented defaults
    assert [(i["name"], i["queue"], len(i["slices"])) for i in found["items"]] == [("vit-h-pretrain", "research", 4)]
    assert 3.9 <= found["wasted_gpu_hours_per_queue"]["research"] <= 4.0
    # its utilisation is 0-1.9 %: under 1 % it is not idle; nor held idle for 2 hours in one hour's history
    assert json.loads(gpuadmin("--state", state, "idle", "--below", "1", "-o", "json").out)["items"] == []
    assert json.loads(gpuadmin("--state", state, "idle", "--for", "2h", "-o", "json").out)["items"] == []
    # the defaults are settings: idle.for 2h makes the plain command say none
    assert gpuadmin("--state", state, "config", "set", "idle.for", "2h").code == 0
    none = gpuadmin("--state", state, "idle")
    assert none.code == 0 and "for 120 minutes or more" in none.out and "  none" in none.out
    assert gpuadmin("--state", state, "config", "set", "idle.below", "0").code == 2
    for bad in (["--for", "3d"], ["--for", "0s"], ["--below", "nan"], ["--below", "101"]):
        refused = gpuadmin("--state", state, "idle", *bad)
        assert refused.code == 2 and "Traceback" not in refused.err, bad


def test_idle_when_prometheus_is_down(state: Path) -> None:
    gpuadmin("--state", state, "config", "set", "metrics.prometheus", f"http://127.0.0.1:{promserver.free_port()}")
    down = gpuadmin("--state", state, "idle")
    assert down.code == 3 and "connection refused" in down.err


def test_holders_are_running_jobs_with_their_shares_and_lone_vms() -> None:
    oci = {h.name: h for h in holdings(View(ClusterState.from_inventory(load_inventory(SAMPLES / "oci-h100.yaml"))))}
    assert oci["reranker-serve"].slices == ((("gpu-h100-07", 0, 0), 2 / 7),)  # a 2g.20gb of an H100's 7 slices
    assert oci["vit-h-pretrain"].queue == "research" and len(oci["vit-h-pretrain"].slices) == 4
    vsphere = holdings(View(ClusterState.from_inventory(load_inventory(SAMPLES / "vsphere-hgx.yaml"))))
    vms = {h.name: h for h in vsphere if h.kind == "vm"}
    assert len(vms["train-vm-01"].slices) == 8 and vms["train-vm-01"].queue is None  # its device group's 8 GPUs


def test_a_hand_edited_idle_setting_is_bad_input_naming_it(state: Path) -> None:
    """`config set` checks what it stores; a settings file edited by hand is not checked there, and `idle` read
    `idle.for: "abc"` into a traceback."""
    assert gpuadmin("--state", state, "config", "set", "metrics.prometheus",
                    f"http://127.0.0.1:{promserver.free_port()}").code == 0
    path = state / "settings.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "idle.for": "abc"}), encoding="utf-8")
    refused = gpuadmin("--state", state, "idle")
    assert refused.code == 2 and "Traceback" not in refused.err, refused.err
    assert "the setting idle.for" in refused.err and "gpuadmin config set idle.for 30m" in refused.err
    assert gpuadmin("--state", state, "config", "unset", "idle.for").code == 0  # the way out works
