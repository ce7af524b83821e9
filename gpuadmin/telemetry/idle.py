"""Idle allocations: slices held by a job or a VM and used under N% for at least M minutes.

Pure: from who holds what (`Holding`, built from gpuadmin's state) and each slice's utilisation history
(`Sample`s, from the telemetry snapshot) to the idle holdings and the GPU-hours they waste per queue. Defaults
(documented in docs/telemetry.md): under 5% for 30 minutes. A slice with no sample in the window is unknown,
never idle: missing data is not zero. Each idle holding offers its remedy as change ops to review (preempt a
preemptible job, cancel another, detach a VM's GPUs), never applied here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

DEFAULT_BELOW_PERCENT = 5.0
DEFAULT_FOR_MINUTES = 30.0

SliceKey = tuple[str, int, int | None]  # node, GPU index, MIG start (None: the whole GPU)


@dataclass(frozen=True, slots=True)
class Holding:
    """One holder of slices: a running job (with its queue) or a VM (queue None), and its share of a GPU per
    slice (1 for a whole GPU, the compute share for a MIG instance)."""

    kind: Literal["job", "vm"]
    name: str
    queue: str | None
    node: str  # a VM's host; a job's first node
    slices: tuple[tuple[SliceKey, float], ...]
    preemptible: bool = True


@dataclass(frozen=True, slots=True)
class Sample:
    at: float  # seconds (epoch)
    util: float  # percent, 0-100


@dataclass(frozen=True, slots=True)
class Idle:
    holding: Holding
    minutes: float  # how long every slice has been under the threshold (within the history)
    peak: float  # the highest utilisation seen in that time
    gpu_hours: float  # GPU-hours held idle: share × idle hours, summed over slices
    remedy: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        h = self.holding
        return {"kind": h.kind, "name": h.name, "queue": h.queue, "node": h.node,
                "slices": [list(key) for key, _ in h.slices], "idle_minutes": round(self.minutes, 1),
                "peak_util": self.peak, "gpu_hours": round(self.gpu_hours, 3), "remedy": list(self.remedy)}


def idle_since(samples: Sequence[Sample], now: float, below: float) -> tuple[float, float] | None:
    """How many seconds back from `now` every sample is under `below` (the time since the last busy sample,
    or since the first sample), and the peak in that time; None with no sample at all (unknown)."""
    if not samples:
        return None
    ordered = sorted(samples, key=lambda s: s.at)
    start, peak = ordered[0].at, 0.0
    for sample in ordered:
        if sample.util >= below:
            start, peak = sample.at, 0.0
        else:
            peak = max(peak, sample.util)
    if ordered[-1].util >= below:
        return 0.0, 0.0
    return max(0.0, now - start), peak


def remedy_of(holding: Holding) -> tuple[dict[str, Any], ...]:
    if holding.kind == "vm":
        return ({"op": "detach-vm", "node": holding.node, "vm": holding.name},)
    if holding.preemptible:
        return ({"op": "preempt-job", "name": holding.name},)
    return ({"op": "cancel-job", "name": holding.name},)


def idle_holdings(holdings: Iterable[Holding], history: Mapping[SliceKey, Sequence[Sample]], now: float,
                  below: float = DEFAULT_BELOW_PERCENT, for_minutes: float = DEFAULT_FOR_MINUTES) -> list[Idle]:
    """The holdings whose every slice has been under `below`% for at least `for_minutes`, most wasteful first."""
    out: list[Idle] = []
    for holding in holdings:
        spans = [(idle_since(history.get(key, ()), now, below), share) for key, share in holding.slices]
        if not spans or any(span is None for span, _ in spans):
            continue  # a slice without data: unknown, not idle
        seconds = min(span[0] for span, _ in spans if span is not None)
        if seconds < for_minutes * 60:
            continue
        peak = max(span[1] for span, _ in spans if span is not None)
        hours = sum(share for _, share in spans) * seconds / 3600
        out.append(Idle(holding, seconds / 60, peak, hours, remedy_of(holding)))
    return sorted(out, key=lambda i: (-i.gpu_hours, i.holding.kind, i.holding.name))


def wasted_per_queue(idle: Iterable[Idle]) -> dict[str, float]:
    """GPU-hours held idle per queue (VMs under "-", they have none)."""
    out: dict[str, float] = {}
    for item in idle:
        queue = item.holding.queue or "-"
        out[queue] = out.get(queue, 0.0) + item.gpu_hours
    return dict(sorted(out.items()))
