"""`describe`: everything about one entity, as plain data, and its text form.

Catalog facts carry their confidence: where the reference marks a fact derived or uncertain, the
description says so next to it.
"""

from __future__ import annotations

from typing import Any

from gpuadmin.catalog import GpuModel, get_catalog
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu, Job, Node, Queue
from gpuadmin.render.overview import dynamic_share
from gpuadmin.render.plan import field_changes
from gpuadmin.render.rows import describe_request, gpu_row, job_row, node_row, placement_text, queue_row
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


def describe_gpu(view: View, node: Node, gpu: Gpu) -> dict[str, Any]:
    row = gpu_row(view, node, gpu)
    model = get_catalog().model(gpu.model)
    holders = [view.job(n) for n in sorted(view.holders(node.name, gpu.index))]
    out: dict[str, Any] = {
        "kind": "gpu", "name": f"{node.name}/{gpu.index}", "summary": {k.lower(): v for k, v in row.items()},
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
        "gpus": [{k.lower(): v for k, v in gpu_row(view, node, g).items()} for g in node.gpus],
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
    if reason is not None:
        out["pending"] = reason
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
    """A journal entry (gpuadmin.store.JournalEntry, duck-typed): who, from where, what, and its diff."""
    return {
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


def as_text(data: dict[str, Any]) -> str:
    """An indented, plain-text rendering; confidence marks shown after catalog facts."""
    model = data.get("model")
    if isinstance(model, dict):
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
        data = {**data, "model": model}
    return "\n".join(_lines(data, 0)) + "\n"
