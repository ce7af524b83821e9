"""The console's reads of telemetry, beside the headless ones (`service.telemetry`): one node's utilisation
history (the node view's and a GPU's describe's sparklines) and the idle allocations view.

`node_utilisation` asks Prometheus only for one node's series (two range queries filtered by its node label),
not the whole cluster's: a node view opened on a cluster of 8,192 GPUs reads 8 GPUs' hour, not 8,192. It places
them by the same join as `utilisation_history`, and a test holds the two equal on that node.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpuadmin.engine.state import View
from gpuadmin.engine.usage import slot_share
from gpuadmin.service.caller import use_case
from gpuadmin.service.telemetry import TelemetryUseCases
from gpuadmin.telemetry.dcgm import JOIN_LABELS, METRICS
from gpuadmin.telemetry.idle import (
    DEFAULT_BELOW_PERCENT,
    DEFAULT_FOR_MINUTES,
    Holding,
    Idle,
    Sample,
    SliceKey,
    idle_holdings,
    wasted_per_queue,
)
from gpuadmin.telemetry.snapshot import DeviceKey, join_history

History = dict[DeviceKey, tuple[tuple[float, float | None], ...]]
# the idle view reads this much history beyond its threshold (at least an hour), so a holder idle for longer
# than M minutes shows how long, up to the window
_IDLE_WINDOW_FLOOR = 3600.0


def promql_string(value: str) -> str:
    """A PromQL string literal of `value` (double-quoted; backslash and quote escaped, newlines written as \\n)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@dataclass(frozen=True)
class IdleReport:
    """Holders under `below` % for at least `for_minutes`, most wasteful first, and the GPU-hours they hold
    idle per queue (VMs under "-")."""

    idle: list[Idle]
    wasted: dict[str, float]
    below: float
    for_minutes: float


class ConsoleTelemetry(TelemetryUseCases):
    @use_case("read")
    def node_utilisation(self, node: str, *, seconds: float = 3600, step: float = 60) -> History:
        """The utilisation history of one node's GPUs and MIG instances (keys as `utilisation_history`'s): two
        range queries filtered to the node. Exit 2 where no Prometheus is set; exit 3 where it fails."""
        source = self._source()
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

    @use_case("read")
    def idle_allocations(self, below: float = DEFAULT_BELOW_PERCENT,
                         for_minutes: float = DEFAULT_FOR_MINUTES) -> IdleReport:
        """Running jobs and VMs whose every slice has been under `below` % busy for at least `for_minutes`
        (a slice with no sample is unknown, never idle), with the GPU-hours they hold idle per queue."""
        window = max(_IDLE_WINDOW_FLOOR, for_minutes * 60 * 2)
        history = self.utilisation_history(seconds=window, step=60)
        samples: dict[SliceKey, list[Sample]] = {}
        for key, points in history.items():
            slice_key: SliceKey = (key[0], key[1], key[2] if len(key) > 2 else None)
            samples[slice_key] = [Sample(at, util) for at, util in points if util is not None]
        idle = idle_holdings(holdings(View(self._holding_state())), samples, time.time(), below, for_minutes)
        return IdleReport(idle, wasted_per_queue(idle), below, for_minutes)


def holdings(view: View) -> list[Holding]:
    """Who holds which slices: each running job (its share of each slot's GPU) and each VM's passthrough
    GPUs (its own, and its device group's)."""
    out: list[Holding] = []
    for job in view.jobs():
        if job.status != "running" or not job.placement:
            continue
        slices = tuple(((slot.node, slot.gpu, slot.mig_start), slot_share(view.node(slot.node), slot, job)[0])
                       for slot in job.placement)
        out.append(Holding("job", job.name, job.queue, job.placement[0].node, slices, job.preemptible))
    for node in view.nodes():
        groups = {group.name: group.gpus for group in node.device_groups}
        for vm in node.vms:
            gpus = sorted({*(vm.gpus or ()), *groups.get(vm.device_group or "", ())})
            if gpus:
                out.append(Holding("vm", vm.name, None, node.name, tuple(((node.name, i, None), 1.0) for i in gpus)))
    return out
