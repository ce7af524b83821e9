"""Preemption plugins: reclaim between queues and priority preemption inside a queue (KAI's reclaim and
preempt actions).

A victim is a running, preemptible job (never a non-preemptible one, never one bound in this cycle) that is

* *reclaimable*: the preemptor's queue stays within its deserved quota with the job, and the victim's queue
  is over its own deserved quota by at least the victim's usage (in-quota work is never reclaimed); or
* *preemptable*: in the preemptor's own queue, with a strictly lower priority.

The search is node-local and greedy in the victim's size: on each candidate node (each NVLink domain, MIG
instance or shared unit) the victims that free the most of what the job needs go first, which reaches the
need with the fewest victims; the node needing the fewest victims wins (then the lowest victim priority).
Gangs take, on one RDMA network, the N nodes that need the fewest victims.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuadmin.engine.scheduler.filters import mig_profile_name, model_ok, node_ok, shape_unit_fits
from gpuadmin.engine.scheduler.index import CapacityIndex, NodeCap, TsUnit
from gpuadmin.engine.scheduler.shape import Shape
from gpuadmin.model import Job

# eligible(victim, tentative GPU-equivalents already taken from each queue) -> bool
Eligible = Callable[[Job, dict[str, float]], bool]
UsageOf = Callable[[Job], float]


@dataclass
class Eviction:
    victims: list[Job]
    nodes: list[int]  # where the preemptor fits once the victims are gone


def _greedy(
    candidates: dict[str, int], need: int, jobs: dict[str, Job], eligible: Eligible, usage: UsageOf
) -> list[Job] | None:
    """Fewest victims whose gains add up to `need` (largest gain first, then lowest priority)."""
    if need <= 0:
        return []
    order = sorted(candidates, key=lambda n: (-candidates[n], jobs[n].priority, n))
    chosen: list[Job] = []
    tentative: dict[str, float] = {}
    got = 0
    for name in order:
        victim = jobs[name]
        if not eligible(victim, tentative):
            continue
        chosen.append(victim)
        tentative[victim.queue] = tentative.get(victim.queue, 0.0) + usage(victim)
        got += candidates[name]
        if got >= need:
            return chosen
    return None


def _whole_victims(
    nc: NodeCap, shape: Shape, jobs: dict[str, Job], eligible: Eligible, usage: UsageOf
) -> list[Job] | None:
    g = shape.gpus
    per_domain: dict[tuple[str, int, str], dict[str, int]] = {}
    for info in nc.gpus.values():
        if info.domain is None or not model_ok(shape, info.domain[0]) or len(info.holders) != 1:
            continue
        (holder,) = info.holders
        if holder in jobs:
            gains = per_domain.setdefault(info.domain, {})
            gains[holder] = gains.get(holder, 0) + 1
    free = {d: len(v) for d, v in nc.domains.items() if model_ok(shape, d[0])}
    if shape.nvlink and g >= 2:
        best: list[Job] | None = None
        for dom in sorted(set(free) | set(per_domain)):
            found = _greedy(per_domain.get(dom, {}), g - free.get(dom, 0), jobs, eligible, usage)
            if found is not None and (best is None or len(found) < len(best)):
                best = found
        return best
    merged: dict[str, int] = {}
    for gains in per_domain.values():
        for name, n in gains.items():
            merged[name] = merged.get(name, 0) + n
    return _greedy(merged, g - sum(free.values()), jobs, eligible, usage)


def _mig_victims(nc: NodeCap, shape: Shape, jobs: dict[str, Job], eligible: Eligible) -> list[Job] | None:
    best: list[Job] | None = None
    for gpu in sorted(nc.gpus):
        info = nc.gpus[gpu]
        if not model_ok(shape, info.model):
            continue
        prof = mig_profile_name(info.model, shape.profile)
        for start, profile in sorted(info.instances.items()):
            if profile != prof or start in info.units:
                continue
            owners = info.instance_holders.get(start, set())
            if not owners or not all(o in jobs for o in owners):
                continue
            victims = sorted((jobs[o] for o in owners), key=lambda j: (j.priority, j.name))
            tentative: dict[str, float] = {}
            if all(eligible(v, tentative) for v in victims) and (
                best is None
                or (len(victims), max(v.priority for v in victims)) < (len(best), max(v.priority for v in best))
            ):
                best = victims
    return best


def _unit_victims(
    unit: TsUnit, need: float, jobs: dict[str, Job], eligible: Eligible, usage: UsageOf
) -> list[Job] | None:
    holders = {n: s for n, s in unit.holders.items() if n in jobs}
    order = sorted(holders, key=lambda n: (-holders[n], jobs[n].priority, n))
    residual, replicas = unit.residual, unit.replicas_left
    chosen: list[Job] = []
    tentative: dict[str, float] = {}
    for name in order:
        if residual + 1e-12 >= need and replicas >= 1:
            break
        victim = jobs[name]
        if not eligible(victim, tentative):
            continue
        chosen.append(victim)
        tentative[victim.queue] = tentative.get(victim.queue, 0.0) + usage(victim)
        residual += holders[name]
        replicas += 1
    return chosen if residual + 1e-12 >= need and replicas >= 1 else None


def _ts_victims(
    nc: NodeCap, shape: Shape, jobs: dict[str, Job], eligible: Eligible, usage: UsageOf
) -> list[Job] | None:
    best: list[Job] | None = None
    for unit in nc.ts_units:
        full = (
            unit.model,
            unit.state()[1],
            1.0,
            max(1, unit.replicas_left + len(unit.holders)),
            unit.state()[4],
            unit.profile,
        )
        if not shape_unit_fits(full, shape):
            continue
        need = (
            0.0
            if shape.kind == "mig"
            else (shape.fraction if shape.kind == "fraction" else shape.gib / unit.memory_gib)
        )
        found = _unit_victims(unit, need, jobs, eligible, usage)
        if found is not None and (best is None or len(found) < len(best)):
            best = found
    return best


def node_victims(
    nc: NodeCap, shape: Shape, jobs: dict[str, Job], eligible: Eligible, usage: UsageOf
) -> list[Job] | None:
    """The fewest victims on one node that make room for one node's part of the shape; None if none do."""
    if not node_ok(nc, shape):
        return None
    if shape.kind == "gpus":
        return _whole_victims(nc, shape, jobs, eligible, usage)
    found = None
    if shape.kind == "mig":
        found = _mig_victims(nc, shape, jobs, eligible)
        if found is not None or not shape.shared:
            return found
    return _ts_victims(nc, shape, jobs, eligible, usage)


def _rank(victims: list[Job]) -> tuple[int, int]:
    return len(victims), max((v.priority for v in victims), default=-(1 << 62))


def find_eviction(
    index: CapacityIndex,
    shape: Shape,
    jobs: dict[str, Job],
    eligible: Eligible,
    usage: UsageOf,
    nodes: list[NodeCap] | None = None,
) -> Eviction | None:
    """The cheapest eviction that makes room for the shape, or None. `jobs` are the candidate victims;
    `nodes` (default: every schedulable node) where to look."""
    if not jobs:
        return None
    candidates = index.nodes if nodes is None else nodes
    if shape.nodes == 1:
        return _single_node_eviction(candidates, shape, jobs, eligible, usage)
    best_gang: tuple[tuple[int, int, str], Eviction] | None = None
    for net, members in sorted(_gang_groups(candidates, shape).items()):
        found = _gang_eviction(members, shape, jobs, eligible, usage)
        if found is None:
            continue
        gkey = (*_rank(found.victims), net)
        if best_gang is None or gkey < best_gang[0]:
            best_gang = (gkey, found)
    return best_gang[1] if best_gang is not None else None


def _single_node_eviction(
    candidates: list[NodeCap], shape: Shape, jobs: dict[str, Job], eligible: Eligible, usage: UsageOf
) -> Eviction | None:
    """The node whose eviction is cheapest (fewest victims, then the lowest top priority, then the index)."""
    best: tuple[tuple[int, int, int], Eviction] | None = None
    for nc in candidates:
        found = node_victims(nc, shape, jobs, eligible, usage)
        if found is None or not found:
            continue
        nkey = (*_rank(found), nc.idx)
        if best is None or nkey < best[0]:
            best = (nkey, Eviction(found, [nc.idx]))
    return best[1] if best is not None else None


def _gang_groups(candidates: list[NodeCap], shape: Shape) -> dict[str, list[NodeCap]]:
    """The nodes a gang may span together: one RDMA network each (nodes without RDMA left out), or all
    of them under "" when the gang does not ask for RDMA."""
    groups: dict[str, list[NodeCap]] = {}
    for nc in candidates:
        if shape.rdma:
            if nc.network is not None:
                groups.setdefault(nc.network, []).append(nc)
        else:
            groups.setdefault("", []).append(nc)
    return groups


def _gang_eviction(
    members: list[NodeCap], shape: Shape, jobs: dict[str, Job], eligible: Eligible, usage: UsageOf
) -> Eviction | None:
    """The gang's cheapest nodes in one group and the union of their victims; None when too few nodes can
    be freed, or when the chosen ones need no eviction at all."""
    per_node: list[tuple[tuple[int, int, int], NodeCap, list[Job]]] = []
    for nc in members:
        found = node_victims(nc, shape, jobs, eligible, usage)
        if found is not None:
            per_node.append(((*_rank(found), nc.idx), nc, found))
    if len(per_node) < shape.nodes:
        return None
    per_node.sort(key=lambda t: t[0])
    chosen = per_node[: shape.nodes]
    union: dict[str, Job] = {}
    for _, _, found in chosen:
        for v in found:
            union[v.name] = v
    if not union:
        return None
    victims = sorted(union.values(), key=lambda j: j.name)
    return Eviction(victims, [nc.idx for _, nc, _ in chosen])
