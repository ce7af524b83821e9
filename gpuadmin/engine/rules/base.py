"""The rule framework: small named checks, each scoped to one kind of entity.

A rule is a function from (view, one touched entity) to violations. The planner collects what a plan
touches; `expand` follows the links a rule may depend on (a GPU's holders, a job's queue), so each rule
runs on exactly what could have changed — and a check costs the same on 8 GPUs as on 80,000.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from gpuadmin.engine.state import GpuKey, View, job_gpu_keys
from gpuadmin.model.places import gpu_place

Scope = Literal["node", "gpu", "job", "queue"]


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    target: str  # e.g. node/gpu-h100-01/gpu/1, job/llm-pretrain, queue/research
    message: str
    hint: str | None = None


def node_target(node: str) -> str:
    return f"node/{node}"


def gpu_target(node: str, gpu: int) -> str:
    """A GPU is addressed by its place, `NODE/GPU`, the one notation of listings, diffs and input."""
    return gpu_place(node, gpu)


def target_of(target: str) -> tuple[str, str, int | None]:
    """(kind, name, gpu index) of a violation target: `job/NAME`, `node/NAME`, `queue/NAME`, or a GPU's
    place `NODE/GPU` (kind "gpu", name the node)."""
    kind, _, name = target.partition("/")
    if kind in ("job", "node", "queue") and name:
        return kind, name, None
    node, _, index = target.rpartition("/")
    if node and index.isdigit():
        return "gpu", node, int(index)
    return "", target, None


def job_target(job: str) -> str:
    return f"job/{job}"


def queue_target(queue: str) -> str:
    return f"queue/{queue}"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    doc: str
    scope: Scope
    check: Callable[[View, object], Iterable[Violation]]


RULES: dict[str, Rule] = {}


def rule(rule_id: str, doc: str, scope: Scope) -> Callable[[Callable[..., Iterable[Violation]]],
                                                            Callable[..., Iterable[Violation]]]:
    """Register a check under a stable id. The id is a contract: docs/rules.md and tests name it."""

    def register(fn: Callable[..., Iterable[Violation]]) -> Callable[..., Iterable[Violation]]:
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id!r} registered twice")
        RULES[rule_id] = Rule(rule_id, doc, scope, fn)
        return fn

    return register


@dataclass
class Touched:
    nodes: set[str] = field(default_factory=set)
    gpus: set[GpuKey] = field(default_factory=set)
    jobs: set[str] = field(default_factory=set)
    queues: set[str] = field(default_factory=set)


def expand(view: View, touched: Touched) -> Touched:
    """Close `touched` over the links rules depend on: GPU → its node and holders; job → its queue and
    the GPUs it holds, before and after the edits; a removed queue → the jobs that still name it."""
    out = Touched(set(touched.nodes), set(touched.gpus), set(touched.jobs), set(touched.queues))
    for name in touched.jobs:
        for job in (view.job(name), view.base.jobs.get(name)):
            if job is not None:
                out.queues.add(job.queue)
                out.gpus |= job_gpu_keys(job)
    for key in list(out.gpus):
        out.nodes.add(key[0])
        out.jobs |= view.holders(*key)
    # a queue that is gone (remove-queue, or a restore that removes it) is checked through the jobs naming it
    gone = {name for name in touched.queues if view.queue(name) is None}
    if gone:
        out.jobs |= {job.name for job in view.jobs() if job.queue in gone}
    for name in out.jobs - touched.jobs:
        job = view.job(name)
        if job is not None:
            out.queues.add(job.queue)
    return out


def check(view: View, touched: Touched, rules: Iterable[Rule] | None = None) -> list[Violation]:
    """Run every rule on what it scopes to, in a stable order."""
    closed = expand(view, touched)
    targets: dict[Scope, Sequence[object]] = {
        "node": sorted(n for n in closed.nodes if view.node(n) is not None),
        "gpu": sorted(closed.gpus),
        "job": sorted(j for j in closed.jobs if view.job(j) is not None),
        "queue": sorted(q for q in closed.queues if view.queue(q) is not None),
    }
    out: list[Violation] = []
    for r in rules if rules is not None else RULES.values():
        for target in targets[r.scope]:
            out.extend(r.check(view, target))
    return out
