"""A scheduling cycle summarised for review: what an operator checks before applying thousands of binds.

At 1,024 nodes / 100,000 jobs one cycle binds thousands of jobs; its raw diff runs to ~10,000 lines. The
summary comes first, in both front ends: binds and preemptions per queue and per node pool, the GPUs placed,
the jobs left pending counted by reason code, and every preemption with who loses what and for whom. The full
diff stays one key (or one `-o json`) away.

A node pool is the value of one node label, `pool` (POOL_LABEL: the label the samples and the generator use,
as in `node_selector: {pool: training}`); a node without it counts under NO_POOL.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from gpuadmin.engine.state import ClusterState
from gpuadmin.engine.usage import slot_share
from gpuadmin.model import Job, Slot
from gpuadmin.render.text import safe

POOL_LABEL = "pool"
NO_POOL = "(no pool label)"
EXAMPLES = 3  # pending jobs named per reason: the listing (`:jobs reason=...`) has the rest


def _share(state: ClusterState, job: Job, slots: list[Slot]) -> float:
    return sum(slot_share(state.nodes.get(slot.node), slot, job)[0] for slot in slots)


def _pool(state: ClusterState, slot: Slot, label: str) -> str:
    node = state.nodes.get(slot.node)
    return (node.labels.get(label) if node is not None else None) or NO_POOL


def _place(slot: Slot) -> str:
    return f"{slot.node}/{slot.gpu}" + (f"/@{slot.mig_start}" if slot.mig_start is not None else "")


def _count(table: dict[str, dict[str, float]], key: str, field: str, amount: float) -> None:
    row = table.setdefault(key, {"binds": 0, "gpus_placed": 0.0, "preemptions": 0, "gpus_freed": 0.0})
    row[field] += amount


def cycle_summary(result: Any, pool_label: str = POOL_LABEL) -> dict[str, Any]:
    """The summary of a `SchedulePlan` (engine.scheduler) as data: JSON-ready, rendered by `summary_text`."""
    state: ClusterState = result.cycle.state
    per_queue: dict[str, dict[str, float]] = {}
    per_pool: dict[str, dict[str, float]] = {}
    placed = 0.0
    for change in result.changes:
        if change.op != "bind-job":
            continue
        job = state.jobs[change.name]
        gpus = _share(state, job, change.placement)
        placed += gpus
        _count(per_queue, job.queue, "binds", 1)
        _count(per_queue, job.queue, "gpus_placed", gpus)
        by_pool: dict[str, list[Slot]] = {}  # a gang may span pools: its GPUs count where they lie
        for slot in change.placement:
            by_pool.setdefault(_pool(state, slot, pool_label), []).append(slot)
        for pool, slots in by_pool.items():
            _count(per_pool, pool, "binds", 1)
            _count(per_pool, pool, "gpus_placed", _share(state, job, slots))
    preemptions = []
    for victim in result.preempted:
        job = state.jobs[victim]
        gpus = _share(state, job, job.placement)
        beneficiary = result.cycle.victims.get(victim)
        preemptions.append({"job": victim, "queue": job.queue, "gpus": round(gpus, 2),
                            "slots": [_place(s) for s in job.placement], "for": beneficiary,
                            "for_queue": state.jobs[beneficiary].queue if beneficiary in state.jobs else None})
        _count(per_queue, job.queue, "preemptions", 1)
        _count(per_queue, job.queue, "gpus_freed", gpus)
        for pool in dict.fromkeys(_pool(state, slot, pool_label) for slot in job.placement):
            _count(per_pool, pool, "preemptions", 1)
            _count(per_pool, pool, "gpus_freed", _share(state, job, [s for s in job.placement
                                                                     if _pool(state, s, pool_label) == pool]))
    explanations = result.explanations
    reasons = Counter(explanations[name].reason for name in result.pending if name in explanations)
    examples: dict[str, list[str]] = {}
    for name in result.pending:
        if name in explanations:
            listed = examples.setdefault(explanations[name].reason, [])
            if len(listed) < EXAMPLES:
                listed.append(name)
    return {
        "pool_label": pool_label,
        "binds": len(result.bound),
        "gpus_placed": round(placed, 2),
        "preemptions": preemptions,
        "per_queue": {q: _rounded(row) for q, row in sorted(per_queue.items())},
        "per_pool": {p: _rounded(row) for p, row in sorted(per_pool.items())},
        "pending": len(result.pending),
        "pending_by_reason": [{"reason": code, "jobs": n, "examples": examples[code]}
                              for code, n in reasons.most_common()],
    }


def _rounded(row: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}


def _gpus(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _table(title: str, rows: dict[str, dict[str, float]]) -> list[str]:
    if not rows:
        return []
    width = max(len(safe(name)) for name in rows)
    lines = [title]
    for name, row in rows.items():
        lines.append(f"  {safe(name):<{width}}  {int(row['binds']):>5} bind(s) {_gpus(row['gpus_placed']):>8} GPU(s)"
                     f"   {int(row['preemptions']):>3} preemption(s)"
                     + (f" freeing {_gpus(row['gpus_freed'])} GPU(s)" if row["gpus_freed"] else ""))
    return lines


def summary_text(data: dict[str, Any]) -> str:
    """The summary as the console's review and `gpuadmin schedule` show it first."""
    lines = [f"{data['binds']} bind(s) placing {_gpus(data['gpus_placed'])} GPU(s), "
             f"{len(data['preemptions'])} preemption(s), {data['pending']} job(s) left pending"]
    lines += _table("Per queue:", data["per_queue"])
    lines += _table(f"Per node pool (label {safe(data['pool_label'])}; nodes without it: {NO_POOL}):",
                    data["per_pool"])
    if data["preemptions"]:
        lines.append("Preemptions (who loses what, for whom):")
        for p in data["preemptions"]:
            whom = f"for {safe(p['for'])} ({safe(p['for_queue'])})"
            lines.append(f"  {safe(p['job'])} ({safe(p['queue'])}) loses {_gpus(p['gpus'])} GPU(s) "
                         f"[{' '.join(safe(s) for s in p['slots'])}] {whom}")
    if data["pending_by_reason"]:
        lines.append("Left pending, by reason:")
        width = max(len(item["reason"]) for item in data["pending_by_reason"])
        for item in data["pending_by_reason"]:
            more = item["jobs"] - len(item["examples"])
            names = ", ".join(safe(n) for n in item["examples"]) + (f" and {more} more" if more > 0 else "")
            lines.append(f"  {safe(item['reason']):<{width}}  {item['jobs']:>6}  {names}")
    return "\n".join(lines) + "\n"
