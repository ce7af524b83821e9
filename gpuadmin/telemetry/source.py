"""The telemetry source: one refresh asks Prometheus one query per metric for the whole cluster and one for the
firing alerts about GPUs, joins the answers to the state, and backs off while Prometheus is slow or down.

States (`SourceStatus.state`): `ok`; `slow` — it answered, but the refresh took over `slow_after` seconds;
`down` — a query failed (refused, timed out, an HTTP error, an answer that is not Prometheus's), `since` the
first failure. While slow or down, a refresh before `retry_at` asks nothing: it returns the last snapshot's
readings with the status (the console says so), and each failure in a row doubles the wait, up to
`max_backoff`. A success makes the state `ok` again at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpuadmin.errors import GpuadminError
from gpuadmin.model.telemetry import SourceStatus
from gpuadmin.telemetry.alerts import ALERTS_KEY, ALERTS_QUERY, join_alerts
from gpuadmin.telemetry.dcgm import ANCHOR, DEFAULT_NODE_LABEL, METRICS, last_seen_query, metric_query
from gpuadmin.telemetry.prometheus import PrometheusClient, Sample, Series
from gpuadmin.telemetry.snapshot import DeviceKey, Targets, TelemetrySnapshot, join, join_history, stale_reasons

SLOW_AFTER = 2.0  # seconds: a refresh slower than this backs off (the console polls every few seconds)
FIRST_BACKOFF = 5.0
MAX_BACKOFF = 300.0


@dataclass
class PrometheusSource:
    client: PrometheusClient
    node_label: str = DEFAULT_NODE_LABEL
    slow_after: float = SLOW_AFTER
    first_backoff: float = FIRST_BACKOFF
    max_backoff: float = MAX_BACKOFF
    clock: Callable[[], float] = time.time
    status: SourceStatus = field(init=False)
    last: TelemetrySnapshot | None = field(init=False, default=None)
    _failures: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.status = SourceStatus("ok", url=self.client.url)

    def refresh(self, targets: Targets) -> TelemetrySnapshot:
        """A snapshot now, or (while backing off) the last one with the status; never raises for Prometheus."""
        now = self.clock()
        if self.status.retry_at is not None and now < self.status.retry_at:
            return self._held(now)
        started = time.perf_counter()
        try:
            answers, queries = self._ask()
        except GpuadminError as exc:
            return self._failed(now, str(exc))
        seconds = time.perf_counter() - started
        gpus, instances, notes = join(answers, targets, node_label=self.node_label,
                                      absent=self._absent(answers, targets, now))
        uuids = {device.uuid: key for key, device in gpus.items() if device.uuid}
        alerts, alert_notes = join_alerts(answers[ALERTS_KEY], targets.gpus, uuids, node_label=self.node_label)
        slow = seconds > self.slow_after
        self._failures = self._failures + 1 if slow else 0
        self.status = SourceStatus(
            "slow" if slow else "ok", url=self.client.url,
            since=(self.status.since if self.status.state == "slow" else now) if slow else now,
            retry_at=now + self._backoff() if slow else None,
            message=f"the queries took {seconds:.1f}s (over {self.slow_after:g}s): polling backs off" if slow else "",
            seconds=seconds, queries=queries + (1 if "last-seen" in answers else 0), notes=alert_notes + notes)
        self.last = TelemetrySnapshot.judged(self.status, now, gpus, instances, alerts)
        return self.last

    def _ask(self) -> tuple[dict[str, tuple[Sample, ...]], int]:
        """One query per metric, each for the whole cluster (never one per GPU), and one for the firing alerts."""
        answers: dict[str, tuple[Sample, ...]] = {}
        for metric in METRICS:
            answers[metric.name] = self.client.query(metric_query(metric, self.node_label)).samples
        answers[ALERTS_KEY] = self.client.query(ALERTS_QUERY).samples
        return answers, len(METRICS) + 1

    def _absent(self, answers: dict[str, tuple[Sample, ...]], targets: Targets, now: float) -> dict[str, str]:
        """Why GPUs without a fresh anchor sample have none: asked once, only when some GPU lacks one."""
        seen = {(s.labels.get(self.node_label, ""), s.labels.get("gpu", "")) for s in answers.get(ANCHOR, ())}
        if not answers.get(ANCHOR) or all(key in seen for key in targets.gpus):
            return {}
        fresh = {gpu for key, gpu in targets.gpus.items() if key in seen}
        try:
            last_seen = self.client.query(last_seen_query(self.node_label)).samples
        except GpuadminError:
            return {}  # the readings stay "no series for it"; the status is the main queries'
        answers["last-seen"] = last_seen
        return stale_reasons(last_seen, targets, now, fresh, node_label=self.node_label)

    def _backoff(self) -> float:
        return float(min(self.max_backoff, self.first_backoff * 2.0 ** max(0, self._failures - 1)))

    def _failed(self, now: float, message: str) -> TelemetrySnapshot:
        self._failures += 1
        since = self.status.since if self.status.state == "down" else now
        self.status = SourceStatus("down", url=self.client.url, since=since, retry_at=now + self._backoff(),
                                   message=message)
        return self._held(now)

    def _held(self, now: float) -> TelemetrySnapshot:
        """The last readings (none before the first success) under the current status."""
        if self.last is None:
            return TelemetrySnapshot(self.status, now)
        return replace(self.last, status=self.status)

    def history(self, promql: str, *, seconds: float = 3600, step: float = 60) -> tuple[Series, ...]:
        """One range query (the console's sparklines: the last hour of a metric, cluster-wide)."""
        end = self.clock()
        return self.client.query_range(promql, end - seconds, end, step).series

    def util_history(self, targets: Targets, *, seconds: float = 3600,
                     step: float = 60) -> dict[DeviceKey, tuple[tuple[float, float | None], ...]]:
        """Every GPU's and MIG instance's utilisation (%) over the last `seconds`, a point every `step`: two range
        queries for the whole cluster (GPU_UTIL, GR_ENGINE_ACTIVE), placed as the instant join places them.
        What idle allocations are computed from. Raises PrometheusUnavailable / PrometheusQueryError."""
        out: dict[DeviceKey, tuple[tuple[float, float | None], ...]] = {}
        for metric in METRICS:
            if metric.field == "util":
                series = self.history(metric_query(metric, self.node_label), seconds=seconds, step=step)
                out.update(join_history(metric, series, targets, node_label=self.node_label))
        return out
