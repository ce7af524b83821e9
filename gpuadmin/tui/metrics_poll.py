"""The console's telemetry polling: every few seconds, one refresh on the service worker, never on the UI thread.

A refresh (`Service.telemetry`) asks Prometheus one query per metric for the whole cluster and joins the answers
to the state; while Prometheus is slow or down the source backs off (`gpuadmin.telemetry.source`: a refresh
before its `retry_at` asks nothing and returns the last readings), so polling at a fixed pace costs nothing
then. The header says when the metrics are not live: `metrics: down since 12:01, retry in 40 s`. A refresh
still out when the next tick comes is not asked again (a slow Prometheus never queues refreshes behind the
worker); where no Prometheus is set a tick costs one small settings read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpuadmin.render.text import safe
from gpuadmin.service import Service, SourceStatus
from gpuadmin.tui.worker import Request

if TYPE_CHECKING:
    from gpuadmin.tui.session import Session

# how often the console refreshes telemetry where a Prometheus is set (seconds): the DCGM exporter's own
# collection interval is 30 s by default and Prometheus scrapes every 15-60 s, so a faster poll shows nothing new
METRICS_SECONDS = 10.0
MIN_METRICS_SECONDS = 1.0  # a faster setting is refused: each refresh is a dozen cluster-wide queries


def check_metrics_seconds(seconds: float) -> float:
    """The polling interval, checked: a finite number of seconds, at least `MIN_METRICS_SECONDS`."""
    if not seconds == seconds or seconds in (float("inf"), float("-inf")) or seconds < MIN_METRICS_SECONDS:
        raise ValueError(f"the metrics polling interval must be at least {MIN_METRICS_SECONDS:g} s, not {seconds!r}")
    return seconds


def _clock(when: float) -> str:
    return time.strftime("%H:%M", time.localtime(when))


def metrics_notice(status: SourceStatus | None, now: float) -> str:
    """What the header says about the metrics: nothing while they are live (or none are set), else the state,
    since when, and when the next try is — `metrics: down since 12:01, retry in 40 s`."""
    if status is None or status.state in ("ok", "unset"):
        return ""
    text = f"metrics: {safe(status.state)}"
    if status.since is not None:
        text += f" since {_clock(status.since)}"
    if status.retry_at is not None:
        text += f", retry in {max(0, round(status.retry_at - now))} s"
    return text


class MetricsPoller:
    """Asks the service worker for a telemetry refresh every `seconds`, one at a time, and keeps the answer."""

    def __init__(self, session: Session, changed: Callable[[], None], refreshed: Callable[[], None],
                 seconds: float = METRICS_SECONDS) -> None:
        self._session = session
        self._changed = changed  # the app's: the header says the new status
        self._refreshed = refreshed  # the app's: the views showing readings re-read them (no query: the last)
        self.seconds = check_metrics_seconds(seconds)
        self.status: SourceStatus | None = None  # the last refresh's (None before the first answer)
        self._out: Request[Any] | None = None

    def tick(self) -> None:
        """One refresh, unless the last is still out (a slow Prometheus: the source's timeout bounds it)."""
        if self._out is not None:
            return
        self._out = self._session.ask(Request("refreshing telemetry", _refresh, self._answered,
                                              failed=lambda _: self._answered(None)))

    def _answered(self, status: SourceStatus | None) -> None:
        self._out = None
        if status is None:
            return
        if status.state != "unset":  # new readings, or the held ones under a new status
            self._refreshed()
        # while not live, every answer re-says the header: its "retry in N s" counts down
        if status != self.status or status.state not in ("ok", "unset"):
            self.status = status
            self._changed()

    def dropped(self, request: Request[Any]) -> None:
        """An answer the app did not hand on (the console closing): the next tick may ask again."""
        if request is self._out:
            self._out = None

    def notice(self, now: float | None = None) -> str:
        return metrics_notice(self.status, time.time() if now is None else now)


def _refresh(service: Service) -> SourceStatus:
    """Runs on the service worker: the refresh (one query per metric, or none while backing off)."""
    return service.telemetry().status


__all__ = ["METRICS_SECONDS", "MetricsPoller", "check_metrics_seconds", "metrics_notice"]
