"""The rule framework: small named checks, each scoped to one kind of entity.

A rule is a function from (view, one touched entity) to violations. The planner collects what a plan
touches; `expand` follows the links a rule may depend on (a GPU's holders, a job's queue), so each rule
runs on exactly what could have changed — and a check costs the same on 8 GPUs as on 80,000.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from gpuadmin.catalog import get_catalog
from gpuadmin.catalog.entities import GpuModel
from gpuadmin.engine.state import GpuKey, View, job_gpu_keys
from gpuadmin.model import Gpu, Job, Node
from gpuadmin.model.inventory import GpuMode
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
class GpuSite:
    """A touched GPU as the GPU rules read it, resolved once per check (kube-scheduler hands its Filter plugins
    a resolved NodeInfo alike): a cycle's check runs ~30 GPU rules on every GPU its binds touch, and each looked
    the node, the GPU, its model and its holders up again."""

    key: GpuKey
    found: tuple[Node, Gpu] | None  # the node and GPU in the view; None where either does not exist
    before_after: tuple[Gpu, Gpu] | None  # the GPU at the base revision and in the view; None if new or gone
    model: GpuModel | None  # the view's GPU's catalog model
    holders: tuple[Job, ...]  # the running jobs holding (part of) it, by name

    @classmethod
    def resolve(cls, view: View, key: GpuKey) -> GpuSite:
        found = view.gpu_at(key)
        before = view.base_gpu(key)
        return cls(
            key,
            found,
            (before, found[1]) if found is not None and before is not None else None,
            get_catalog().model(found[1].model) if found is not None else None,
            view.holder_jobs(key),
        )


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    doc: str
    scope: Scope
    check: Callable[[View, object], Iterable[Violation]]
    # A GPU rule that judges only GPUs in these modes (in the view): `check` does not call it on the others, as
    # kube-scheduler skips a plugin whose PreFilter says Skip. The rule still returns nothing on them by itself
    # (tests/engine/rules/test_shared_lookups.py calls every rule on every GPU and compares).
    gpu_modes: frozenset[GpuMode] | None = None


RULES: dict[str, Rule] = {}


def rule(rule_id: str, doc: str, scope: Scope, gpu_modes: Iterable[GpuMode] | None = None,
         ) -> Callable[[Callable[..., Iterable[Violation]]], Callable[..., Iterable[Violation]]]:
    """Register a check under a stable id. The id is a contract: docs/rules.md and tests name it."""

    def register(fn: Callable[..., Iterable[Violation]]) -> Callable[..., Iterable[Violation]]:
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id!r} registered twice")
        if gpu_modes is not None and scope != "gpu":
            raise ValueError(f"rule {rule_id!r}: gpu_modes needs scope gpu")
        RULES[rule_id] = Rule(rule_id, doc, scope, fn, frozenset(gpu_modes) if gpu_modes is not None else None)
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


def _in_modes(sites: list[GpuSite], modes: frozenset[GpuMode]) -> list[GpuSite]:
    return [site for site in sites if site.found is not None and site.found[1].mode in modes]


def check(view: View, touched: Touched, rules: Iterable[Rule] | None = None) -> list[Violation]:
    """Run every rule on what it scopes to, in a stable order."""
    closed = expand(view, touched)
    out: list[Violation] = []
    with view.reading():  # the rules share each GPU's, slice's and holder set's lookup (View.reading)
        targets: dict[Scope, Sequence[object]] = {
            "node": sorted(n for n in closed.nodes if view.node(n) is not None),
            "gpu": (sites := [GpuSite.resolve(view, key) for key in sorted(closed.gpus)]),
            "job": sorted(j for j in closed.jobs if view.job(j) is not None),
            "queue": sorted(q for q in closed.queues if view.queue(q) is not None),
        }
        sites_in: dict[frozenset[GpuMode], list[GpuSite]] = {}  # the touched GPUs in these modes, once per check
        for r in rules if rules is not None else RULES.values():
            if r.gpu_modes is None:
                selected = targets[r.scope]
            elif r.gpu_modes in sites_in:
                selected = sites_in[r.gpu_modes]
            else:
                selected = sites_in[r.gpu_modes] = _in_modes(sites, r.gpu_modes)
            for target in selected:
                out.extend(r.check(view, target))
    return out
