"""The console's reads of telemetry, beside the headless ones (`service.telemetry`): one node's utilisation
history (the node view's and a GPU's describe's sparklines). The idle view reads `Service.idle`, as
`gpuadmin idle` does.

`node_utilisation` asks Prometheus only for one node's series (two range queries filtered by its node label),
not the whole cluster's: a node view opened on a cluster of 8,192 GPUs reads 8 GPUs' hour, not 8,192. It places
them by the same join as `utilisation_history`, and a test holds the two equal on that node.
"""

from __future__ import annotations

from gpuadmin.service.caller import use_case
from gpuadmin.service.telemetry import TelemetryUseCases
from gpuadmin.telemetry.dcgm import JOIN_LABELS, METRICS
from gpuadmin.telemetry.snapshot import DeviceKey, join_history

History = dict[DeviceKey, tuple[tuple[float, float | None], ...]]


def promql_string(value: str) -> str:
    """A PromQL string literal of `value` (double-quoted; backslash and quote escaped, newlines written as \\n)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class ConsoleTelemetry(TelemetryUseCases):
    @use_case("read")
    def node_utilisation(self, node: str, *, seconds: float = 3600, step: float = 60) -> History:
        """The utilisation history of one node's GPUs and MIG instances (keys as `utilisation_history`'s): two
        range queries filtered to the node. Exit 2 where no Prometheus is set or the source is NVML (no history);
        exit 3 where Prometheus fails."""
        source = self._history_source()
        targets = self._telemetry_targets()
        label = source.node_label
        out: History = {}
        for metric in METRICS:
            if metric.field == "util":
                promql = (f"max by ({', '.join((label, *JOIN_LABELS))}) "
                          f"({metric.name}{{{label}={promql_string(node)}}})")
                series = source.history(promql, seconds=seconds, step=step)
                out.update(join_history(metric, series, targets, node_label=label))
        return {key: points for key, points in out.items() if key[0] == node}
