"""The DCGM exporter's series, through a real Prometheus and real PromQL, joined to the OCI sample's GPUs and MIG
instances: one query per metric, stale and missing readings as None with the reason, never zero."""

from __future__ import annotations

import re

from gpuadmin.engine.state import ClusterState, View
from gpuadmin.telemetry import PrometheusClient, PrometheusSource, Targets
from gpuadmin.telemetry.dcgm import METRICS
from tests.telemetry.promserver import Prometheus


def _snapshot(server: Prometheus, state: ClusterState):  # type: ignore[no-untyped-def]
    return PrometheusSource(PrometheusClient(server.url)).refresh(Targets.from_view(View(state)))


def test_every_gpu_of_the_state_has_its_readings(oci_prometheus: Prometheus, oci_state: ClusterState) -> None:
    snap = _snapshot(oci_prometheus, oci_state)
    assert snap.status.state == "ok"
    gpus = [(n.name, g.index) for n in oci_state.nodes.values() for g in n.gpus]
    assert set(snap.gpus) == set(gpus)
    busy = snap.gpus[("gpu-h100-01", 0)]
    assert busy.util.value is not None and 55 <= busy.util.value <= 99
    assert busy.fb_used_mib.value is not None and busy.fb_used_mib.value + (busy.fb_free_mib.value or 0) == 81559
    assert busy.temp_c.value is not None and busy.power_w.value is not None
    assert busy.pods == ("research/llm-pretrain-70b",)
    assert busy.uuid is not None and busy.uuid.startswith("GPU-")


def test_one_query_per_metric_for_the_whole_cluster(oci_prometheus: Prometheus, oci_state: ClusterState) -> None:
    # 96 GPUs and their MIG instances: 12 queries, one for the firing alerts (14 with the one last-seen query a
    # stale GPU asks), never per GPU
    snap = _snapshot(oci_prometheus, oci_state)
    assert snap.status.queries == len(METRICS) + 2


def test_the_idle_holder_and_the_erroring_gpu(oci_prometheus: Prometheus, oci_state: ClusterState) -> None:
    snap = _snapshot(oci_prometheus, oci_state)
    idle = snap.gpus[("gpu-h100-04", 0)]
    assert idle.util.value is not None and idle.util.value < 2 and idle.pods == ("research/vit-h-pretrain",)
    bad = snap.gpus[("gpu-h100-05", 3)]
    assert (bad.xid.value, bad.ecc_dbe_volatile.value, bad.ecc_dbe_aggregate.value) == (79, 3, 5)
    assert bad.remapped_rows_uncorrectable.value == 2 and bad.errors > 0
    assert snap.gpus[("gpu-h100-05", 2)].errors == 0


def test_a_stale_gpu_is_none_with_when_it_was_last_seen(oci_prometheus: Prometheus, oci_state: ClusterState) -> None:
    snap = _snapshot(oci_prometheus, oci_state)
    stale = snap.gpus[("gpu-h100-12", 0)]
    assert stale.util.value is None and stale.fb_used_mib.value is None
    assert stale.util.reason is not None and stale.util.reason.startswith("stale: last sample at ")
    assert re.search(r"\((19|2[0-4])m ago\)", stale.util.reason), stale.util.reason
    # its neighbour is fresh, and an idle GPU reads 0 %, which is a value, not a missing one
    assert snap.gpus[("gpu-h100-12", 1)].util.value == 0.0


def test_mig_instances_by_the_pod_of_their_holder(oci_prometheus: Prometheus, oci_state: ClusterState) -> None:
    snap = _snapshot(oci_prometheus, oci_state)
    held = snap.instance("gpu-h100-07", 0, 0)
    assert held is not None and held.profile == "2g.20gb" and held.pods == ("research/reranker-serve",)
    assert held.util.value is not None and 30 <= held.util.value <= 95  # GR_ENGINE_ACTIVE x 100
    assert held.temp_c.value is None and held.temp_c.reason == "a figure of the whole GPU: see the GPU"
    # one of two 1g.10gb on its GPU: placed by its holder's pod, which the exporter's series names
    by_pod = snap.instance("gpu-h100-07", 0, 2)
    assert by_pod is not None and by_pod.pods == ("research/ocr-serve",) and by_pod.util.value is not None
    # a unique profile on its GPU is placed without a pod: the 3g.40gb of gpu-h100-07/0 (unheld: 0 % busy)
    unique = snap.instance("gpu-h100-07", 0, 4)
    assert unique is not None and unique.util.value is not None
    # two unheld 1g.10gb on one GPU: the exporter's GI id cannot say which is which, so neither is guessed
    twin = snap.instance("gpu-h100-07", 0, 3)
    assert twin is not None and twin.util.value is None and twin.util.reason is not None
    assert twin.util.reason.startswith("not placed: several 1g.10gb instances")
    assert any("series not placed: several instances of its profile" in n for n in snap.status.notes)


def test_a_metric_prometheus_has_no_series_of(oci_prometheus: Prometheus, oci_state: ClusterState) -> None:
    """A metric Prometheus holds no series of (ECC is off in dcgm-exporter's default counters): every GPU says
    why, never 0."""
    from gpuadmin.telemetry.dcgm import metric_query
    from gpuadmin.telemetry.prometheus import PrometheusClient as Client
    from gpuadmin.telemetry.snapshot import join

    client = Client(oci_prometheus.url)
    answers = {m.name: client.query(metric_query(m)).samples for m in METRICS
               if m.name != "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}
    gpus, _, _ = join(answers, Targets.from_view(View(oci_state)))
    reading = gpus[("gpu-h100-05", 3)].ecc_dbe_volatile
    assert reading.value is None and reading.reason is not None
    assert "no DCGM_FI_DEV_ECC_DBE_VOL_TOTAL series in Prometheus" in reading.reason
    assert "default counters" in reading.reason


def test_range_query_gives_the_last_hour(oci_prometheus: Prometheus) -> None:
    source = PrometheusSource(PrometheusClient(oci_prometheus.url))
    series = source.history('DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-h100-01",gpu="0"}', seconds=3600, step=60)
    assert len(series) == 1 and 55 <= len(series[0].points) <= 61
    assert all(v is not None and 55 <= v <= 99 for _, v in series[0].points)


def test_utilisation_history_of_every_device(oci_prometheus: Prometheus, oci_state: ClusterState) -> None:
    """Two range queries for the whole cluster: the idle holder stayed under 2 % for the hour, a busy GPU did not,
    a MIG instance has its own history, the stale GPU's ends 20 minutes ago."""
    source = PrometheusSource(PrometheusClient(oci_prometheus.url))
    history = source.util_history(Targets.from_view(View(oci_state)), seconds=3600, step=60)
    idle = [v for _, v in history[("gpu-h100-04", 0)]]
    assert len(idle) >= 55 and all(v is not None and v < 2 for v in idle)
    busy = [v for _, v in history[("gpu-h100-01", 0)]]
    assert max(v for v in busy if v is not None) > 55
    mig = history[("gpu-h100-07", 0, 0)]
    assert all(v is not None and 30 <= v <= 95 for _, v in mig)
    stale = history[("gpu-h100-12", 0)]
    assert stale[-1][0] < history[("gpu-h100-12", 1)][-1][0] - 15 * 60
