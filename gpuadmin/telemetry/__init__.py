"""Live telemetry (issue 23): the DCGM exporter's series read from Prometheus and joined to gpuadmin's GPUs and
MIG instances (`snapshot`), polled with back-off (`source`); Prometheus's firing alerts about GPUs (`alerts`);
XID/ECC health findings (`xid`) and idle allocations (`idle`). docs/telemetry.md."""

from gpuadmin.telemetry.prometheus import (
    PrometheusClient,
    PrometheusQueryError,
    PrometheusUnavailable,
    check_url,
)
from gpuadmin.telemetry.snapshot import Targets, TelemetrySnapshot, join
from gpuadmin.telemetry.source import PrometheusSource

__all__ = ["PrometheusClient", "PrometheusQueryError", "PrometheusSource", "PrometheusUnavailable", "Targets",
           "TelemetrySnapshot", "check_url", "join"]
