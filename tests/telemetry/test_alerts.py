"""Prometheus's firing alerts about GPUs, through a real Prometheus evaluating real rules (fixtures/gpu-alerts.rules.yml
and, here only, one rule that keeps only the UUID): placed on the GPU they name by the metrics' labels, pending
ones left out, one naming a GPU the state does not have kept unplaced and counted; in `top` (a column and JSON)
and the overview's summary. And health: the XID 79 GPU flagged with a fence command that works as printed; a GPU
whose last XID is outside gpuadmin's table (ours: 8) shown by its code, not `ok`, and not flagged."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.engine.state import ClusterState, View
from gpuadmin.telemetry import PrometheusClient, PrometheusSource, Targets
from gpuadmin.telemetry.alerts import join_alerts
from gpuadmin.telemetry.dcgm import METRICS
from gpuadmin.telemetry.prometheus import Sample
from gpuadmin.tui.screens.overview import overview_page
from tests.cli.clikit import ROOT, gpuadmin, state_from
from tests.telemetry import promserver
from tests.telemetry.conftest import FAULTS, needs_prometheus
from tests.telemetry.scenario import devices

GHOST = "gpu-h100-99"  # a node whose exporter Prometheus scrapes, which the state does not have
UNLISTED_XID_GPU = ("gpu-h100-05", 1)  # ours: its last XID is 8 (NVIDIA's mapping: RESTART_APP), not in the table
# A rule of this test's own (not in the demo's file): its alert keeps only the UUID of the GPU it is about
UUID_RULE = """
  - name: by-uuid
    rules:
      - alert: GpuPowerSeen
        expr: max by (UUID) (DCGM_FI_DEV_POWER_USAGE{Hostname="gpu-h100-01",gpu="0"}) > 0
        labels:
          severity: info
"""


@pytest.fixture(scope="module")
def alerting(oci_state: ClusterState, tmp_path_factory: pytest.TempPathFactory) -> Iterator[promserver.Prometheus]:
    needs_prometheus()
    now = time.time()
    end = now + 600
    series = devices(oci_state, FAULTS, end=end)
    unlisted = next(d for d in series if (d.hostname, d.gpu, d.gi_profile) == (*UNLISTED_XID_GPU, None))
    unlisted.values["DCGM_FI_DEV_XID_ERRORS"] = lambda _t: 8  # ours: an XID outside gpuadmin's table
    series.append(promserver.Device(GHOST, 0, "GPU-ghost", values={
        "DCGM_FI_DEV_XID_ERRORS": lambda _t: 48, "DCGM_FI_DEV_FB_USED": lambda _t: 0.0}))
    base = tmp_path_factory.mktemp("alerting")
    rules = base / "rules.yml"
    rules.write_text(promserver.GPU_RULES.read_text(encoding="utf-8") + UUID_RULE, encoding="utf-8")
    with promserver.running(promserver.openmetrics(series, now - 600, end, 30), base / "prom", rules=rules) as server:
        yield server


def _refresh(server: promserver.Prometheus, state: ClusterState):  # type: ignore[no-untyped-def]
    return PrometheusSource(PrometheusClient(server.url)).refresh(Targets.from_view(View(state)))


def test_firing_alerts_are_placed_on_the_gpu_they_name(alerting: promserver.Prometheus,
                                                       oci_state: ClusterState) -> None:
    snap = _refresh(alerting, oci_state)
    on_bad = snap.alerts_on("gpu-h100-05", 3)
    assert [(a.name, a.severity) for a in on_bad] == [("GpuDoubleBitEccErrors", "critical"),
                                                      ("GpuXidError", "critical")]
    # one rule's alert per series (the GPU's, each MIG instance's, each pod's) counts once per GPU
    assert len({(a.name, a.placed) for a in snap.alerts}) == len(snap.alerts)
    assert snap.alerts_on("gpu-h100-05", 2) == ()
    # and its readings flag it, in the snapshot: XID 79's meaning from the catalog
    assert [(f.node, f.gpu, f.reason) for f in snap.health] == [
        ("gpu-h100-05", 3, "XID 79: GPU has fallen off the bus")]
    # one query for the alerts, beside one per metric and the one last-seen query the stale GPU asks
    assert snap.status.queries == len(METRICS) + 2


def test_an_alert_keeping_only_the_uuid_is_placed_by_it(alerting: promserver.Prometheus,
                                                         oci_state: ClusterState) -> None:
    snap = _refresh(alerting, oci_state)
    assert [a.name for a in snap.alerts_on("gpu-h100-01", 0)] == ["GpuPowerSeen"]
    found = snap.alerts_on("gpu-h100-01", 0)[0]
    assert found.gpu_label == "" and found.to_json()["node"] == "gpu-h100-01"  # placed by UUID, not by gpu


def test_a_pending_alert_is_not_firing(alerting: promserver.Prometheus, oci_state: ClusterState) -> None:
    pending = alerting.query('ALERTS{alertname="GpuUncorrectableRemappedRows"}')
    assert pending and {p["metric"]["alertstate"] for p in pending} == {"pending"}  # Prometheus has it...
    snap = _refresh(alerting, oci_state)
    assert "GpuUncorrectableRemappedRows" not in {a.name for a in snap.alerts}  # ...and it is not shown


def test_an_alert_about_a_gpu_the_state_does_not_have(alerting: promserver.Prometheus,
                                                       oci_state: ClusterState) -> None:
    snap = _refresh(alerting, oci_state)
    ghost = [a for a in snap.alerts if a.node == GHOST]
    assert [(a.name, a.gpu_label, a.placed) for a in ghost] == [("GpuXidError", "0", None)]
    assert "1 firing alert about a GPU the state does not have (by Hostname/gpu or UUID)" in snap.status.notes
    assert all(GHOST not in key[0] for key in snap.gpu_alerts)


def test_hostile_alert_labels_stay_plain_and_bounded() -> None:
    labels = {"alertname": "\x1b]0;pwned\x07[bold]x" + "y" * 500, "alertstate": "firing", "severity": "[red]",
              "Hostname": "n", "gpu": "0"}
    alerts, _ = join_alerts([Sample(labels, 1.0, None), Sample({**labels, "alertstate": "pending"}, 1.0, None)],
                            {("n", "0"): ("n", 0)}, {}, node_label="Hostname")
    assert len(alerts) == 1 and len(alerts[0].name) == 200 and alerts[0].placed == ("n", 0)
    data = {"cluster": "c", "revision": 1, "nodes": 1, "gpus": 1, "gpus_by_use": {"full": 0, "partly used": 0,
            "free": 1}, "gpus_by_mode": {}, "gpus_by_model": {}, "nodes_by_state": {}, "nodes_out_of_service": [],
            "jobs_by_status": {}, "pending_by_reason": {}, "queues_over_quota": [],
            "alerts": {"count": 1, "placed": 1, "worst": alerts[0].to_json(), "state": "ok"}}
    page = overview_page(data, 100).text
    assert "1 firing" in page.plain and "\\x1b]0;pwned\\x07[bold]x" in page.plain
    assert "\x1b" not in page.plain  # escaped, and no markup: only the page's own styles
    assert not any("red" in str(span.style) for span in page.spans)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return state_from("oci-h100.yaml", tmp_path / "state")


def test_top_and_wide_gpus_carry_alerts_and_health(state: Path, alerting: promserver.Prometheus) -> None:
    assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", alerting.url).code == 0
    result = gpuadmin("--state", state, "top", "-o", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    first = doc["items"][0]
    assert first["name"] == "gpu-h100-05/3"
    assert first["alerts"] == "GpuDoubleBitEccErrors (critical), GpuXidError (critical)"
    assert first["health"] == "XID 79: GPU has fallen off the bus"
    assert {(a["name"], a["node"], a["placed"]) for a in doc["alerts"]} >= {("GpuXidError", GHOST, False),
                                                                            ("GpuXidError", "gpu-h100-05", True)}
    assert [h["reason"] for h in doc["health"]] == ["XID 79: GPU has fallen off the bus"]
    table = gpuadmin("--state", state, "top", "-n", "3", env={**os.environ, "COLUMNS": "250"})
    assert "ALERTS" in table.out.splitlines()[0] and "GpuXidError (critical)" in table.out
    assert "1 firing alert(s) about a GPU the state does not have: GpuXidError (critical) on gpu-h100-99/0" \
        in table.err
    gpus = {i["name"]: i for i in json.loads(gpuadmin("--state", state, "get", "gpus", "-o", "json").out)["items"]}
    assert gpus["gpu-h100-05/3"]["health"] == "XID 79: GPU has fallen off the bus"
    assert gpus["gpu-h100-05/2"]["health"] == "ok" and gpus["gpu-h100-05/2"]["alerts"] is None
    # an XID outside gpuadmin's table: its code and where to look, not `ok`, and not flagged (no fence command)
    unlisted = "XID 8: not in gpuadmin's table: see NVIDIA's XID catalog"
    assert gpus["gpu-h100-05/1"]["health"] == unlisted
    assert {i["name"]: i for i in doc["items"]}["gpu-h100-05/1"]["health"] == unlisted
    assert gpus["gpu-h100-01/0"]["alerts"] == "GpuPowerSeen (info)"


def _read_until(fd: int, needle: bytes, timeout: float = 60) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        assert time.monotonic() < deadline, seen
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
    return seen


def test_the_fence_hint_works_as_printed(state: Path, alerting: promserver.Prometheus) -> None:
    """`get gpus -o wide` prints, for the XID 79 GPU, a command; run as printed at a terminal (answering the
    plan's question), it fences the GPU; then the GPU is `fenced` and flagged no more."""
    gpuadmin("--state", state, "config", "set", "metrics.prometheus", alerting.url)
    wide = gpuadmin("--state", state, "get", "gpus", "-o", "wide", env={**os.environ, "COLUMNS": "250"})
    hints = [line for line in wide.err.splitlines() if "flagged" in line]
    assert len(hints) == 1 and "(NVIDIA's action: RESTART_BM)" in hints[0]
    printed = hints[0].split("to keep new work off it: ", 1)[1]
    assert printed == (f"gpuadmin --state {shlex.quote(str(state))} gpu-health gpu-h100-05/3 unhealthy "
                       "--reason 'XID 79: GPU has fallen off the bus'")
    argv = shlex.split(printed)
    assert argv[0] == "gpuadmin"
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gpuadmin.cli.main", *argv[1:]], stdin=slave, stdout=slave,
                            stderr=slave, cwd=ROOT)
    os.close(slave)
    try:
        _read_until(master, b"[y/N]")
        os.write(master, b"y\n")
        proc.wait(timeout=60)
        said = _read_until(master, b"revision")
    finally:
        os.close(master)
        proc.kill()
    assert proc.returncode == 0 and b"applied, revision 1" in said, said
    gpus = {i["name"]: i for i in json.loads(gpuadmin("--state", state, "get", "gpus", "-o", "json").out)["items"]}
    assert gpus["gpu-h100-05/3"]["health"] == "fenced"
    again = gpuadmin("--state", state, "get", "gpus", "-o", "wide")
    assert "flagged" not in again.err
    assert json.loads(gpuadmin("--state", state, "top", "-o", "json").out)["health"] == []


def test_the_overview_summary_is_the_last_refresh(state: Path, alerting: promserver.Prometheus) -> None:
    """`alerts_summary` asks nothing (the console's overview): held equal to what a refresh gives."""
    from gpuadmin.service import Service

    service = Service(state_dir=state)
    try:
        assert service.alerts_summary()["state"] == "unset"
        service.set_setting("metrics.prometheus", alerting.url)
        fresh = service.telemetry()
        summary = service.alerts_summary()
        assert summary["count"] == len(fresh.alerts) and summary["placed"] == len(fresh.alerts) - 1
        assert summary["worst"] == fresh.alerts[0].to_json()
        assert summary["worst"]["severity"] == "critical" and summary["state"] == "ok"
    finally:
        service.close()


def test_make_demo_metrics_fires_the_xid_gpus_alerts(state: Path) -> None:
    needs_prometheus()
    port = promserver.free_port()
    demo = subprocess.Popen([sys.executable, "-m", "tests.telemetry.demo_metrics", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert demo.stdout is not None
        assert f"Prometheus at http://127.0.0.1:{port}" in demo.stdout.readline()
        gpuadmin("--state", state, "config", "set", "metrics.prometheus", f"http://127.0.0.1:{port}")
        top = json.loads(gpuadmin("--state", state, "top", "-o", "json").out)
        assert {(a["name"], a["node"], a["gpu"]) for a in top["alerts"]} == {
            ("GpuDoubleBitEccErrors", "gpu-h100-05", 3), ("GpuXidError", "gpu-h100-05", 3)}
    finally:
        os.killpg(demo.pid, 2)
        demo.communicate(timeout=30)


def _reference(samples: list[Sample], gpus: dict[tuple[str, str], tuple[str, int]],
               uuids: dict[str, tuple[str, int]]) -> list[tuple[object, ...]]:
    """Written alert by alert: each firing one's GPU by Hostname/gpu, else by UUID; one per distinct labels;
    worst severity first (critical, error, warning, info, other, none), then by name and labels."""
    rank = {"critical": 0, "error": 1, "warning": 2, "info": 3}
    found: dict[tuple[str, ...], tuple[object, ...]] = {}
    for sample in samples:
        if sample.labels.get("alertstate") != "firing":
            continue
        labels = [sample.labels.get(k, "")[:200] for k in ("alertname", "severity", "Hostname", "gpu", "UUID")]
        name, severity, node, gpu, uuid = labels
        placed = gpus.get((node, gpu)) if gpu else None
        placed = placed or (uuids.get(uuid) if uuid else None)
        found.setdefault(tuple(labels), (name, severity, node, gpu, uuid, placed))
    return sorted(found.values(), key=lambda a: (rank.get(str(a[1]), 4 if a[1] else 5), *map(str, a[:1]),
                                                  *map(str, a[2:5])))


def test_the_alert_join_matches_a_reference_on_generated_answers() -> None:
    import random

    rng = random.Random(23)
    gpus = {(f"n{i}", str(g)): (f"n{i}", g) for i in range(3) for g in range(2)}
    uuids = {f"U{i}{g}": (f"n{i}", g) for i in range(3) for g in range(2)}
    pick = rng.choice
    for _ in range(300):
        samples = []
        for _ in range(rng.randint(0, 12)):
            labels = {"alertname": pick(["A", "B", "\x1b[1m", "z" * 300]),
                      "alertstate": pick(["firing", "firing", "pending"]),
                      "severity": pick(["critical", "warning", "info", "page", ""]),
                      "Hostname": pick(["n0", "n1", "n2", "ghost", ""]), "gpu": pick(["0", "1", "7", "", "00"]),
                      "UUID": pick(["U00", "U21", "Ux", ""])}
            samples.append(Sample({k: v for k, v in labels.items() if v or rng.random() < 0.5}, 1.0, None))
        alerts, _ = join_alerts(samples, gpus, uuids, node_label="Hostname")
        assert [tuple(a) for a in alerts] == _reference(samples, gpus, uuids)
