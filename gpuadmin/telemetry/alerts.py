"""Prometheus's firing alerts about GPUs, joined to the GPUs they name.

Prometheus keeps each alert its rules raise as a series of `ALERTS` (labels: `alertname`, `alertstate` — pending
or firing — and the labels of the series the rule's expression returned, plus the rule's own). One query per
refresh asks for the firing ones that name a GPU: by its `gpu` index, or by its `UUID` (an alert whose rule kept
only the UUID). Each is placed by the same labels as the metrics: the node label (`Hostname`) and `gpu`, else
the UUID the exporter's frame-buffer series gave that GPU. Pending alerts (a rule's `for:` not yet met) are not
firing and are not asked for. An alert naming a GPU the state does not have is kept, unplaced, and counted in
the snapshot's notes: it is still a firing alert an operator should see, on no GPU row.

Labels are hostile: an alert's name and severity are any strings (kept to `MAX_TEXT` characters; front ends
show them as plain text, never markup), and a label naming no known GPU places nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from gpuadmin.telemetry.prometheus import Sample

# One query: firing alerts with a `gpu` label, or with a `UUID` one (`or` keeps each series once)
ALERTS_QUERY = 'ALERTS{alertstate="firing",gpu!=""} or ALERTS{alertstate="firing",UUID!=""}'
ALERTS_KEY = "ALERTS"  # its answer's key among a refresh's answers (no metric has this name)
MAX_TEXT = 200  # an alert's name or severity past this is cut: one table cell, one line
# The `severity` label's usual values (Prometheus's own examples, kube-prometheus's and Alertmanager's
# conventions), worst first; any other value ranks after them, and no severity last
SEVERITIES = ("critical", "error", "warning", "info")

GpuKey = tuple[str, int]


class Alert(NamedTuple):
    """One firing alert about a GPU: its `alertname`, its `severity` label ("" where it has none), the node,
    `gpu` and `UUID` labels as they are ("" where absent), and the GPU of the state it is placed on (None: no GPU
    of the state has those labels). A named tuple: built without a per-field `__setattr__` (an alert on every
    GPU of 8,192 is 16,384 of them, bench/bench_alerts.py)."""

    name: str
    severity: str
    node: str
    gpu_label: str
    uuid: str
    placed: GpuKey | None

    @property
    def short(self) -> str:
        """`GpuXidError (critical)`: a cell of a table."""
        return f"{self.name} ({self.severity})" if self.severity else self.name

    def to_json(self) -> dict[str, Any]:
        """`node` and `gpu`: the GPU of the state it is placed on, else the node as its labels name it."""
        return {"name": self.name, "severity": self.severity or None,
                "node": self.placed[0] if self.placed is not None else self.node or None,
                "gpu": self.placed[1] if self.placed is not None else None,
                "gpu_label": self.gpu_label or None, "uuid": self.uuid or None, "placed": self.placed is not None}


_RANK = {severity: i for i, severity in enumerate(SEVERITIES)}


def worst_first(alerts: Iterable[Alert]) -> list[Alert]:
    """The worst severity first, then by name and place (a stable order for tables and tests)."""
    other, none = len(SEVERITIES), len(SEVERITIES) + 1
    return sorted(alerts, key=lambda a: (_RANK.get(a.severity, other if a.severity else none), a.name, a.node,
                                         a.gpu_label, a.uuid))


def join_alerts(samples: Iterable[Sample], gpus: Mapping[tuple[str, str], GpuKey], uuids: Mapping[str, GpuKey], *,
                node_label: str) -> tuple[tuple[Alert, ...], tuple[str, ...]]:
    """The firing alerts of `samples` (the answer to `ALERTS_QUERY`), each placed on a GPU of the state by
    (node label, `gpu`) as the metrics are, else by `UUID` (`uuids`: each GPU's, as its series gave it); worst
    first. Returns them and the notes (how many name no GPU of the state). An alert is one per distinct
    (name, severity, GPU): one rule's alert per pod on a GPU counts once. One pass, lookups bound to locals
    (bench/bench_alerts.py: an alert on every GPU of 8,192)."""
    seen: set[tuple[str, str, str, str, str]] = set()
    out: list[Alert] = []
    unplaced = 0
    for sample in samples:
        labels = sample.labels
        get = labels.get
        if get("alertstate") != "firing":  # the query asks for firing ones: an answer that is not, ignored
            continue
        name, severity = get("alertname") or "", get("severity") or ""
        node, gpu_label, uuid = get(node_label) or "", get("gpu") or "", get("UUID") or ""
        key = (name, severity, node, gpu_label, uuid)
        if key in seen:
            continue
        seen.add(key)
        placed = gpus.get((node, gpu_label)) if gpu_label else None
        if placed is None and uuid:
            placed = uuids.get(uuid)
        if placed is None:
            unplaced += 1
        out.append(Alert(name[:MAX_TEXT], severity[:MAX_TEXT], node[:MAX_TEXT], gpu_label[:MAX_TEXT],
                         uuid[:MAX_TEXT], placed))
    notes = (f"{unplaced} firing alert{'s' if unplaced != 1 else ''} about a GPU the state does not have "
             f"(by {node_label}/gpu or UUID)",) if unplaced else ()
    return tuple(worst_first(out)), notes


def by_gpu(alerts: Iterable[Alert]) -> dict[GpuKey, tuple[Alert, ...]]:
    """The placed alerts by GPU, in the order given (`join_alerts`' answer: each GPU's worst first)."""
    out: dict[GpuKey, list[Alert]] = {}
    for alert in alerts:
        if alert.placed is not None:
            out.setdefault(alert.placed, []).append(alert)
    return {key: tuple(found) for key, found in out.items()}
