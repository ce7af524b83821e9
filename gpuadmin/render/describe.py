"""`describe`: everything about one entity, as plain data, and its text form.

Catalog facts carry their confidence: where the reference marks a fact derived or uncertain, the
description says so next to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from gpuadmin.catalog import GpuModel, get_catalog
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu, Job, Node, Queue
from gpuadmin.render.overview import dynamic_share
from gpuadmin.render.plan import field_changes
from gpuadmin.render.rows import (
    LIVE_GPU_KEYS,
    age_text,
    describe_request,
    gpu_row,
    job_row,
    node_row,
    placement_text,
    queue_row,
)
from gpuadmin.render.text import safe


def _mark(confidence: str) -> str:
    return "" if confidence == "verified" else f" [{confidence}]"


def model_facts(model: GpuModel) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "name": model.name,
        "memory_mib": model.memory_mib,
        "sms": model.sms,
        "mig_capable": model.mig_capable,
        "source": model.provenance.source,
        "confidence": model.provenance.confidence,
    }
    if model.mig_capable:
        facts["mig_profiles"] = [
            {"name": p.name, "profile_id": p.profile_id, "compute_slices": p.compute_slices,
             "memory_slices": p.memory_slices, "max_instances": p.max_instances, "starts": list(p.starts),
             "confidence": p.provenance.confidence, "source": p.provenance.source,
             "placement_confidence": p.placement_provenance.confidence}
            for p in model.mig_profiles
        ]
    return facts


def _state_of_gpu(view: View, node: Node, gpu: Gpu) -> dict[str, Any]:
    """A GPU's row without the live telemetry columns: a description is of the state (`top` has the readings;
    the spec has the fence, `health`)."""
    return {k.lower(): v for k, v in gpu_row(view, node, gpu).items() if k not in LIVE_GPU_KEYS}


def describe_gpu(view: View, node: Node, gpu: Gpu) -> dict[str, Any]:
    model = get_catalog().model(gpu.model)
    holders = [view.job(n) for n in sorted(view.holders(node.name, gpu.index))]
    out: dict[str, Any] = {
        "kind": "gpu", "name": f"{node.name}/{gpu.index}", "summary": _state_of_gpu(view, node, gpu),
        "spec": gpu.model_dump(mode="json", exclude_none=True),
        "holders": [{"job": j.name, "request": describe_request(j), "placement": placement_text(j, view)}
                    for j in holders if j is not None],
    }
    shared = dynamic_share(view, node, gpu)
    if shared is not None:  # a full GPU of a dynamic-sharing node: what fractions hold and what is left
        out["sharing"] = {
            "fractions": "dynamic", "reserved_gib": shared.reserved_gib, "usable_gib": round(shared.usable_gib, 1),
            "used_gpus": round(shared.used, 3), "left_gib": round(shared.left_gib, 1),
            "fractions_held": [{"job": name, "share": share, "gib": gib} for name, share, gib in shared.holders],
        }
    out["model"] = model_facts(model) if model is not None else _not_in_catalog(gpu)
    return out


def _not_in_catalog(gpu: Gpu) -> dict[str, Any] | None:
    """What is known of a GPU the catalog does not know: what its source reported, and what cannot be checked."""
    if gpu.not_in_catalog is None:
        return None
    return {"name": gpu.model, "in_catalog": False,
            **gpu.not_in_catalog.model_dump(mode="json", exclude_none=True),
            "cannot_check": ["MIG (profiles, placements)", "vGPU (types, frame buffer)"],
            "refused": ["set-mig", "vGPU (set-mode vgpu, assign-vgpu)"]}


def describe_node(view: View, node: Node) -> dict[str, Any]:
    row = node_row(view, node)
    out: dict[str, Any] = {
        "kind": "node", "name": node.name, "summary": {k.lower(): v for k, v in row.items()},
        "spec": node.model_dump(mode="json", exclude_none=True, exclude={"gpus"}),
        "gpus": [_state_of_gpu(view, node, g) for g in node.gpus],
    }
    unknown = [what for what, value in (("cpus", node.cpus), ("memory_gib", node.memory_gib)) if value is None]
    if unknown:  # rule placement.cpu-memory-fit checks only what the inventory says the node has
        out["not_checked"] = [f"{field} not known: jobs' {field} requests are not checked on this node"
                              for field in unknown]
    return out


def describe_job(view: View, job: Job, reason: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "job", "name": job.name, "summary": {k.lower(): v for k, v in job_row(view, job).items()
                                                        if k not in ("REMEDY", "MESSAGE")},  # the explanation's
        "spec": job.model_dump(mode="json", exclude_none=True),
    }
    if reason is not None:  # why it waits: the explanation, and its one line where the listing has it
        out["pending"] = reason
        out["summary"]["reason"] = reason.get("summary", "-")
    return out


def describe_queue(view: View, queue: Queue) -> dict[str, Any]:
    jobs = [j for j in view.jobs() if j.queue == queue.name]
    return {
        "kind": "queue", "name": queue.name, "summary": {k.lower(): v for k, v in queue_row(view, queue).items()},
        "spec": queue.model_dump(mode="json", exclude_none=True),
        "jobs": {status: sum(1 for j in jobs if j.status == status)
                 for status in ("running", "pending", "preempted", "completed")},
    }


def describe_entry(entry: Any) -> dict[str, Any]:
    """A journal entry (gpuadmin.store.JournalEntry, duck-typed): who, from where, what, and its diff; for a change
    executed on a bound cluster, its steps as carried out there (status, the API calls, the API's message)."""
    described = {
        "kind": "entry", "name": str(entry.id),
        "summary": {"id": entry.id, "at": entry.at, "actor": entry.actor, "uid": entry.uid,
                    "identity_source": entry.source, "origin": entry.origin or "local", "command": entry.command,
                    "base_revision": entry.base_revision, "revision": entry.revision, "verdict": entry.verdict,
                    "outcome": entry.outcome, "message": entry.message},
        "diff": [{"entity": f"{d['kind']}/{d['name']}", "action": d.get("action") or _action(d),
                  "fields": [f"{path}: {_show(old)} -> {_show(new)}"
                             for path, old, new in field_changes(d.get("before"), d.get("after"))]
                  if d.get("before") is not None and d.get("after") is not None else []}
                 for d in entry.diff or []],
        "violations": (entry.plan or {}).get("violations", []),
        "changes": (entry.plan or {}).get("changes", []),
    }
    if entry.execution is not None:
        described["steps"] = [{"step": f"{s.get('status')} {s.get('op')} {s.get('target')}",
                               "calls": ", ".join(s.get("calls") or ()) or "-", "message": s.get("message") or "-"}
                              for s in entry.execution]
    return described


def history(entries: Iterable[Any], kind: str, name: str, now: datetime) -> list[dict[str, Any]]:
    """The object's events, newest first: one per applied journal entry (gpuadmin.store.JournalEntry,
    duck-typed) that touched it, saying which revision, when, who, the ops that named it and what they changed
    on it (kubectl describe's Events, from the journal instead of an event store)."""
    events = []
    for entry in entries:
        item = next((d for d in entry.diff or () if d.get("kind") == kind and d.get("name") == name), None)
        if item is None:
            continue
        plan = entry.plan or {}
        ops = list(dict.fromkeys(str(c.get("op")) for c in plan.get("changes", []) if _names(c, name)))
        undoes = (plan.get("intent") or {}).get("undoes") or []
        before, after = item.get("before"), item.get("after")
        events.append({
            "revision": entry.revision, "entry": entry.id, "at": entry.at, "age": age_text(entry.at, now),
            "actor": entry.actor, "ops": ops or [_action(item)], "undoes": list(undoes),
            "fields": [f"{path}: {_show(old)} -> {_show(new)}" for path, old, new in field_changes(before, after)]
            if before is not None and after is not None else [],
        })
    return events


def _names(change: dict[str, Any], name: str) -> bool:
    """Whether a change names the object: one of its fields, or the name of an object it carries whole."""
    return any(value == name or (isinstance(value, dict) and value.get("name") == name) for value in change.values())


def _action(diff: dict[str, Any]) -> str:
    return "add" if diff.get("before") is None else "remove" if diff.get("after") is None else "modify"


def _show(value: Any) -> str:
    return "-" if value is None else str(value)


def _lines(value: Any, indent: int) -> list[str]:
    pad = "  " * indent
    if isinstance(value, dict):
        out: list[str] = []
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{pad}{safe(key)}:")
                out += _lines(item, indent + 1)
            else:
                out.append(f"{pad}{safe(key)}: {_scalar(item)}")
        return out
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, dict) and item:
                first, *rest = _lines(item, indent + 1)
                out.append(f"{pad}- {first.strip()}")
                out += rest
            else:
                out.append(f"{pad}- {_scalar(item)}")
        return out
    return [f"{pad}{_scalar(value)}"]


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return safe(value)


def _with_marks(data: dict[str, Any]) -> dict[str, Any]:
    """The catalog model's facts with their confidence marks, one line per MIG profile."""
    model = data.get("model")
    if not isinstance(model, dict):
        return data
    model = dict(model)
    model["name"] = f"{model['name']}{_mark(str(model.get('confidence', 'verified')))}"
    profiles = model.get("mig_profiles")
    if isinstance(profiles, list):
        model["mig_profiles"] = [
            f"{p['name']} (id {p['profile_id']}, {p['compute_slices']}c/{p['memory_slices']}m, "
            f"max {p['max_instances']}, starts {','.join(str(s) for s in p['starts'])}"
            f"{_mark(str(p.get('placement_confidence', 'verified')))})"
            f"{_mark(str(p['confidence']))}" for p in profiles
        ]
    return {**data, "model": model}


_WIDTH = 16  # the field column, as kubectl describe aligns its values
_SHOWN_ELSEWHERE = {"name", "labels", "placement"}  # spec fields with their own section in the text


def _title(key: str) -> str:
    return safe(key).replace("_", " ").capitalize()


def _field(key: str, value: Any, indent: int = 0) -> str:
    label = f"{'  ' * indent}{_title(key)}:"
    line = f"{label:<{_WIDTH}}{_scalar(value)}" if len(label) < _WIDTH else f"{label} {_scalar(value)}"
    return line.rstrip()


def _listed(title: str, items: list[str]) -> list[str]:
    """kubectl's one-item-per-line field: the first beside the title, the rest aligned under it."""
    first, *rest = items or ["<none>"]
    return [_field(title, first)] + [" " * _WIDTH + safe(item) for item in rest]


def _table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> list[str]:
    """Rows as an indented table with upper-case headings, every cell plain text."""
    cells = [[c.upper() for c in columns]] + [[_scalar(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in cells]


def _pending(why: dict[str, Any]) -> list[str]:
    """Why a pending job waits, first: the reason, its numbers and the remedy, as `explain` says them."""
    lines = [_field("pending", why.get("reason"))]
    for key in ("message", "nodes", "remedy"):
        lines.append(_field(key, why.get(key), 1))
    lines.append(_field("position", f"{why.get('queue_position', '-')} in its queue, "
                                    f"{why.get('cluster_position', '-')} in the cluster", 1))
    details = why.get("details") or {}
    if details:
        lines.append(_field("figures", " ".join(f"{k}={f'{round(v, 2):g}' if isinstance(v, float) else v}"
                                                for k, v in details.items()), 1))
    if why.get("as_of"):
        lines.append(_field("as of", why["as_of"], 1))
    for key in ("ahead", "victims"):
        if why.get(key):
            lines.append(_field(key, ", ".join(str(v) for v in why[key]), 1))
    return lines


def _allocations(data: dict[str, Any]) -> list[str]:
    """What the object holds or is held by: a node's GPUs with their holders, a GPU's holders, a job's GPUs,
    a queue's jobs."""
    kind = data.get("kind")
    if kind == "node":
        return ["Allocations:", *_table(data.get("gpus") or [], ("gpu", "model", "mode", "use", "holders", "layout"))]
    if kind == "gpu":
        holders = data.get("holders") or []
        return ["Allocations:", *(_table(holders, ("job", "request", "placement")) if holders else ["  <none>"])]
    if kind == "job":
        placement = str(data.get("summary", {}).get("placement", "-"))
        return _listed("allocations", [] if placement == "-" else placement.split(","))
    if kind == "queue":
        jobs = data.get("jobs") or {}
        return _listed("jobs", [f"{status}: {n}" for status, n in jobs.items()])
    return []


def _events(events: list[dict[str, Any]]) -> list[str]:
    """The journal's entries that touched the object, newest first, as kubectl's Events."""
    if not events:
        return [_field("events", "<none>")]
    rows = [{"revision": e["revision"], "age": e["age"], "by": e["actor"],
             "change": " ".join(e["ops"]) + (f" (undoes {', '.join(f'#{n}' for n in e['undoes'])})"
                                             if e.get("undoes") else ""),
             "fields": "; ".join(e["fields"]) or "-"} for e in events]
    return ["Events:", *_table(rows, ("revision", "age", "by", "change", "fields"))]


def as_text(data: dict[str, Any]) -> str:
    """Sections as `kubectl describe` prints them: Name and Kind; for a pending job why it waits, first; the
    summary's fields aligned; Labels one per line; Allocations; the rest (spec, catalog model with its
    confidence marks, sharing) indented; Events from the journal last."""
    data = _with_marks(data)
    summary: dict[str, Any] = dict(data.get("summary") or {})
    why = data.get("pending")
    lines = [_field("name", data.get("name")), _field("kind", data.get("kind"))]
    status = summary.pop("status", None)
    if status is not None:
        lines.append(_field("status", status))
    if isinstance(why, dict):
        lines += _pending(why)
        summary.pop("reason", None)
    summary.pop("name", None)
    summary.pop("labels", None)
    if data.get("kind") == "job":
        summary.pop("placement", None)  # its GPUs are the Allocations
    lines += [_field(key, value) for key, value in summary.items()]
    spec = data.get("spec") or {}
    if data.get("kind") == "node":
        labels = spec.get("labels") or {}
        lines += _listed("labels", [f"{k}={v}" for k, v in labels.items()])
    lines += _allocations(data)
    shown = data.get("summary") or {}  # a spec field the summary already says, the same, is not said again
    rest = {"spec": {k: v for k, v in spec.items() if k not in _SHOWN_ELSEWHERE and shown.get(k, ...) != v}}
    rest = rest if rest["spec"] else {}
    rest.update({k: v for k, v in data.items()
                 if k not in {"kind", "name", "summary", "spec", "pending", "events", "gpus", "holders", "jobs"}})
    for key, value in rest.items():
        if isinstance(value, dict | list) and value:
            lines.append(f"{_title(key)}:")
            lines += _lines(value, 1)
        else:
            lines.append(_field(key, value))
    if "events" in data:
        lines += _events(data["events"])
    return "\n".join(lines) + "\n"
