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
from dataclasses import dataclass
from typing import Any

from gpuadmin.telemetry.prometheus import Sample

# One query: firing alerts with a `gpu` label, or with a `UUID` one (`or` keeps each series once)
ALERTS_QUERY = 'ALERTS{alertstate="firing",gpu!=""} or ALERTS{alertstate="firing",UUID!=""}'
ALERTS_KEY = "ALERTS"  # its answer's key among a refresh's answers (no metric has this name)
MAX_TEXT = 200  # an alert's name or severity past this is cut: one table cell, one line
# The `severity` label's usual values (Prometheus's own examples, kube-prometheus's and Alertmanager's
# conventions), worst first; any other value ranks after them, and no severity last
SEVERITIES = ("critical", "error", "warning", "info")

GpuKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Alert:
    """One firing alert about a GPU: its `alertname`, its `severity` label ("" where it has none), the node
    and GPU as its labels name them (`gpu` None where it named only a UUID), and the GPU of the state it is
    placed on (None: no GPU of the state has those labels)."""

    name: str
    severity: str
    node: str
    gpu_label: str
    uuid: str
    placed: GpuKey | None

    @property
    def rank(self) -> int:
        """0 for the worst severity: what `worst` orders by."""
        return SEVERITIES.index(self.severity) if self.severity in SEVERITIES else len(SEVERITIES) + (
            0 if self.severity else 1)

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


def _text(value: str | None) -> str:
    return (value or "")[:MAX_TEXT]


def worst_first(alerts: Iterable[Alert]) -> list[Alert]:
    """The worst severity first, then by name and place (a stable order for tables and tests)."""
    return sorted(alerts, key=lambda a: (a.rank, a.name, a.node, a.gpu_label, a.uuid))


def join_alerts(samples: Iterable[Sample], gpus: Mapping[tuple[str, str], GpuKey], uuids: Mapping[str, GpuKey], *,
                node_label: str) -> tuple[tuple[Alert, ...], tuple[str, ...]]:
    """The firing alerts of `samples` (the answer to `ALERTS_QUERY`), each placed on a GPU of the state by
    (node label, `gpu`) as the metrics are, else by `UUID` (`uuids`: each GPU's, as its series gave it); worst
    first. Returns them and the notes (how many name no GPU of the state). An alert is one per distinct
    (name, severity, GPU): one rule's alert per pod on a GPU counts once."""
    seen: set[tuple[str, str, str, str, str]] = set()
    out: list[Alert] = []
    unplaced = 0
    for sample in samples:
        labels = sample.labels
        if labels.get("alertstate") != "firing":  # the query asks for firing ones: an answer that is not, ignored
            continue
        node, gpu_label, uuid = labels.get(node_label, ""), labels.get("gpu", ""), labels.get("UUID", "")
        placed = gpus.get((node, gpu_label)) if gpu_label else None
        if placed is None and uuid:
            placed = uuids.get(uuid)
        alert = Alert(_text(labels.get("alertname")), _text(labels.get("severity")), _text(node), _text(gpu_label),
                      _text(uuid), placed)
        key = (alert.name, alert.severity, alert.node, alert.gpu_label, alert.uuid)
        if key in seen:
            continue
        seen.add(key)
        unplaced += placed is None
        out.append(alert)
    notes = (f"{unplaced} firing alert{'s' if unplaced != 1 else ''} about a GPU the state does not have "
             f"(by {node_label}/gpu or UUID)",) if unplaced else ()
    return tuple(worst_first(out)), notes


def by_gpu(alerts: Iterable[Alert]) -> dict[GpuKey, tuple[Alert, ...]]:
    """The placed alerts by GPU, each GPU's worst first."""
    out: dict[GpuKey, list[Alert]] = {}
    for alert in alerts:
        if alert.placed is not None:
            out.setdefault(alert.placed, []).append(alert)
    return {key: tuple(worst_first(found)) for key, found in out.items()}
