"""A scheduling cycle and a why-pending explanation, as data and as text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuadmin.render.cycle_summary import cycle_summary, summary_text
from gpuadmin.render.plan import plan_text
from gpuadmin.render.text import safe


def cycle_json(result: Any, *, applied_revision: int | None = None) -> dict[str, Any]:
    """`gpuadmin schedule -o json` (result is an engine.scheduler.SchedulePlan)."""
    return {
        "policy": result.policy,
        "allowed": result.plan.allowed,
        "bound": result.bound,
        "preempted": result.preempted,
        "pending": [{"job": name, **result.explanations[name].to_json()} for name in result.pending
                    if name in result.explanations],
        "summary": cycle_summary(result),
        "plan": result.plan.to_json(),
        "stats": result.stats,
        "applied_revision": applied_revision,
    }


def cycle_text(data: dict[str, Any], on_cluster: Sequence[dict[str, Any]] | None = None) -> str:
    """The summary first (its first line: the counts), then the full plan (`on_cluster`: what apply executes on a
    bound state's cluster, as `plan_text`), then every pending job's reason."""
    lines = [f"Scheduling cycle ({data['policy']}): " + summary_text(data["summary"]).rstrip("\n")]
    lines.append(plan_text(data["plan"], on_cluster).rstrip("\n"))
    if data["pending"]:
        lines.append("Pending:")
        for item in data["pending"]:
            lines.append(f"  {safe(item['job'])}: {safe(item['summary'])}")
    return "\n".join(lines) + "\n"


def explanation_text(data: dict[str, Any]) -> str:
    lines = [f"job {safe(data['job'])} (queue {safe(data['queue'])}): {data['status']}"]
    if data["status"] in ("pending", "preempted"):
        if data.get("nodes"):
            lines.append(f"  nodes: {safe(data['nodes'])}")
        lines.append(f"  reason: {data['reason']}: {safe(data['message'])}")
        if data.get("remedy"):
            lines.append(f"  remedy: {safe(data['remedy'])}")
        else:
            lines.append("  remedy: none that would make it fit now")
        if data.get("as_of", "now") != "now":
            lines.append(f"  figures: {safe(data['as_of'])}")
        if data.get("queue_position") is not None:
            ahead = ", ".join(safe(a) for a in data.get("ahead", []))
            more = data.get("ahead_count", 0) - len(data.get("ahead", []))
            lines.append(f"  position: {data['queue_position']} in its queue"
                         + (f", {data['cluster_position']} in the cluster" if data.get("cluster_position") else "")
                         + (f"; ahead: {ahead}" + (f" and {more} more" if more > 0 else "") if ahead else ""))
        for key, value in (data.get("details") or {}).items():
            shown = f"{value:.2f}".rstrip("0").rstrip(".") if isinstance(value, float) else value
            lines.append(f"  {safe(key)}: {safe(shown)}")
    else:
        lines.append(f"  {safe(data['message'])}")
    return "\n".join(lines) + "\n"
