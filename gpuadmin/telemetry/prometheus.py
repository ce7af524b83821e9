"""A Prometheus HTTP API client (`/api/v1/query` and `/api/v1/query_range`), on the standard library alone.

Every answer is hostile until checked: the body is bounded, its JSON must have the documented shape
(https://prometheus.io/docs/prometheus/latest/querying/api/), label names and values must be strings, and a
sample's value (a string: "12", "NaN", "+Inf", "1e308") becomes a float or None with the reason. A sample
whose shape is wrong is dropped and counted (`QueryResult.malformed`), never guessed at.
"""

from __future__ import annotations

import json
import math
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gpuadmin.errors import ExitCode, GpuadminError

_T = TypeVar("_T")  # what one item of a query's answer reads as: a sample, or a series
MAX_BODY_BYTES = 128 * 1024 * 1024  # 8,192 GPUs' series of one metric are ~3 MB; a body past this is refused
DEFAULT_TIMEOUT = 5.0
MAX_URL_LENGTH = 2048


class PrometheusUnavailable(GpuadminError):
    """Prometheus did not answer usefully: refused, timed out, an HTTP error, or a body that is not its API's
    (exit 3, as an unreachable cluster)."""

    exit_code = ExitCode.CONFLICT
    label = "prometheus unavailable"


class PrometheusQueryError(GpuadminError):
    """Prometheus answered `status: error` to a query (bad PromQL, a query past its limits)."""

    exit_code = ExitCode.CONFLICT
    label = "prometheus refused the query"


def check_url(text: str) -> str:
    """The Prometheus base URL, checked: http or https, a host, no credentials, query or fragment (a URL
    with credentials would store them in the state in plain text); the path is kept (a Prometheus behind a
    prefix, `https://host/prometheus`). Raises ValueError saying what is wrong."""
    if len(text) > MAX_URL_LENGTH or any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise ValueError("a URL of at most 2048 printable characters, without spaces")
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"the scheme must be http or https, not {parts.scheme or 'none'!r}")
    if not parts.hostname:
        raise ValueError("the URL names no host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("credentials in the URL are refused: they would be stored in the state in plain text")
    if parts.query or parts.fragment:
        raise ValueError("the URL is the server's base (http://host:9090), without a query or fragment")
    try:
        parts.port  # noqa: B018  # a port out of range or not a number raises here
    except ValueError as exc:
        raise ValueError(f"bad port: {exc}") from None
    return text.rstrip("/")


def sample_value(text: Any) -> tuple[float | None, str | None]:
    """A sample's value as Prometheus sends it (a string), as a finite float, or None and why not."""
    if not isinstance(text, str) or len(text) > 64:
        return None, "not a number as Prometheus writes one"
    try:
        value = float(text)
    except ValueError:
        return None, "not a number as Prometheus writes one"
    if math.isnan(value):
        return None, "NaN (the exporter had no value)"
    if math.isinf(value):
        return None, "infinite"
    return value, None


@dataclass(frozen=True, slots=True)
class Sample:
    """One series' value at the query's time: its labels (`__name__` among them where the query kept it)."""

    labels: dict[str, str]
    value: float | None
    reason: str | None  # why value is None


@dataclass(frozen=True, slots=True)
class Series:
    """One series over a range: (Unix time, value or None) points, oldest first."""

    labels: dict[str, str]
    points: tuple[tuple[float, float | None], ...]


@dataclass(frozen=True, slots=True)
class QueryResult:
    samples: tuple[Sample, ...]
    seconds: float  # how long the request took, answer read and checked
    malformed: int = 0  # results of a wrong shape, dropped


@dataclass(frozen=True, slots=True)
class RangeResult:
    series: tuple[Series, ...]
    seconds: float
    malformed: int = 0


def _labels(metric: Any) -> dict[str, str] | None:
    if not isinstance(metric, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metric.items()):
        return None
    return metric


def _timestamp(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


class PrometheusClient:
    """Instant and range queries against one Prometheus; each request bounded by `timeout` seconds."""

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = check_url(url)
        self.timeout = timeout

    def query(self, promql: str, at: float | None = None) -> QueryResult:
        """An instant query (`/api/v1/query`): a vector of samples."""
        params = {"query": promql, **({"time": f"{at:.3f}"} if at is not None else {})}
        started = time.perf_counter()
        samples, malformed = self._results("/api/v1/query", params, "vector", "an instant vector", self._sample)
        return QueryResult(tuple(samples), time.perf_counter() - started, malformed)

    def query_range(self, promql: str, start: float, end: float, step: float) -> RangeResult:
        """A range query (`/api/v1/query_range`): each series' points from `start` to `end` every `step` s."""
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        started = time.perf_counter()
        series, malformed = self._results("/api/v1/query_range", params, "matrix", "a range matrix", self._series)
        return RangeResult(tuple(series), time.perf_counter() - started, malformed)

    def _results(self, path: str, params: dict[str, str], result_type: str, what: str,
                 read: Callable[[Any], _T | None]) -> tuple[list[_T], int]:
        """The answer's items read by `read`, and how many of them did not read (malformed, counted, never zero)."""
        data = self._post(path, params)
        if data.get("resultType") != result_type or not isinstance(data.get("result"), list):
            raise PrometheusUnavailable(f"{self.url}: the answer to {params['query']!r} is not {what}")
        items = [read(item) for item in data["result"]]
        good = [item for item in items if item is not None]
        return good, len(items) - len(good)

    @staticmethod
    def _sample(item: Any) -> Sample | None:
        if not isinstance(item, dict):
            return None
        labels = _labels(item.get("metric"))
        pair = item.get("value")
        if labels is None or not isinstance(pair, list) or len(pair) != 2 or _timestamp(pair[0]) is None:
            return None
        value, reason = sample_value(pair[1])
        return Sample(labels, value, reason)

    @staticmethod
    def _series(item: Any) -> Series | None:
        if not isinstance(item, dict):
            return None
        labels = _labels(item.get("metric"))
        values = item.get("values")
        if labels is None or not isinstance(values, list):
            return None
        points: list[tuple[float, float | None]] = []
        for pair in values:
            at = _timestamp(pair[0]) if isinstance(pair, list) and len(pair) == 2 else None
            if at is None:
                return None
            points.append((at, sample_value(pair[1])[0]))
        return Series(labels, tuple(points))

    def _post(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        """POST the form (as the API allows: a long query does not meet a URL length limit); the `data` of a
        `status: success` answer."""
        body = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(self.url + path, data=body, method="POST", headers={
            "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # http(s) checked
                raw = response.read(MAX_BODY_BYTES + 1)
        except urllib.error.HTTPError as exc:  # 4xx/5xx: Prometheus's error body says why, where it is its own
            raw = exc.read(64 * 1024)
            exc.close()
            return self._error_answer(raw, exc.code)
        except OSError as exc:
            raise PrometheusUnavailable(f"{self.url}: {_why(exc, self.timeout)}") from None
        if len(raw) > MAX_BODY_BYTES:
            raise PrometheusUnavailable(f"{self.url}: an answer over {MAX_BODY_BYTES // (1024 * 1024)} MiB, refused")
        return self._success(raw)

    def _success(self, raw: bytes) -> dict[str, Any]:
        answer = _json(raw)
        if answer is None or answer.get("status") != "success" or not isinstance(answer.get("data"), dict):
            if answer is not None and answer.get("status") == "error":
                raise PrometheusQueryError(f"{self.url}: {_error_text(answer)}")
            raise PrometheusUnavailable(f"{self.url}: the answer is not Prometheus's API (no status: success)")
        data: dict[str, Any] = answer["data"]
        return data

    def _error_answer(self, raw: bytes, status: int) -> dict[str, Any]:
        answer = _json(raw)
        if answer is not None and answer.get("status") == "error" and 400 <= status < 500:
            raise PrometheusQueryError(f"{self.url}: HTTP {status}: {_error_text(answer)}")
        raise PrometheusUnavailable(f"{self.url}: HTTP {status}"
                                    + (f": {_error_text(answer)}" if answer is not None else ""))


def _json(raw: bytes) -> dict[str, Any] | None:
    try:
        answer = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return answer if isinstance(answer, dict) else None


def _error_text(answer: dict[str, Any]) -> str:
    kind, error = answer.get("errorType"), answer.get("error")
    text = f"{kind}: {error}" if isinstance(kind, str) and isinstance(error, str) else "an error, unexplained"
    return text[:500]


def _why(exc: BaseException, timeout: float) -> str:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError):
        return f"no answer within {timeout:g}s"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is Prometheus running there?)"
    if isinstance(reason, socket.gaierror):
        return "the host name does not resolve"
    return f"{type(reason).__name__}: {reason}"[:300]
