"""Filter plugins: which slices of a node can host a shape (kube-scheduler's Filter, KAI's predicates).

Each filter is a pure function of a node part (see `fgd`) or a `NodeCap` and a `Shape`:

* `whole_plans`     — full-mode, unheld GPUs of the model; an NVLink request of g ≥ 2 GPUs inside one NVLink
                      domain (one device group on vSphere hosts with groups);
* `mig_candidates`  — free (unheld, not time-sliced) instances of the profile; a shared MIG job may also take
                      a replica of a time-sliced instance of its profile;
* `unit_fits`       — time-sliced GPUs and MIG instances with a replica left and the share unreserved, and
                      full GPUs fractions already share on a dynamic-sharing node (share and memory left);
                      never for `isolation: exclusive` jobs; a fraction may also open a free full GPU of a
                      dynamic-sharing node that its need fits (`Scorer.open`);
* `node_ok`         — RDMA where the request needs it (node state is filtered by the index: only ready nodes
                      are schedulable).
"""

from __future__ import annotations

from functools import lru_cache

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.scheduler.fgd import UnitState, WholePart, unit_fits
from gpuadmin.engine.scheduler.index import NodeCap, Policy
from gpuadmin.engine.scheduler.shape import Shape

# A whole-GPU plan: take `take` GPUs from a domain of (model, free count); several steps without NVLink.
WholeStep = tuple[str, int, int]
WholePlan = tuple[WholeStep, ...]


def model_ok(shape: Shape, model: str) -> bool:
    return shape.model is None or shape.model == model


def whole_plans(part: WholePart, shape: Shape, policy: Policy) -> list[WholePlan]:
    """The distinct ways to take `shape.gpus` whole GPUs from a node with this whole part."""
    g = shape.gpus
    eligible = [(m, c) for m, c in part if model_ok(shape, m)]
    if shape.nvlink and g >= 2:
        return [((m, c, g),) for m, c in sorted(set(eligible)) if c >= g]
    if sum(c for _, c in eligible) < g:
        return []
    # best fit inside the node: drain the smallest domains first (binpack), the largest first (spread)
    order = sorted(eligible, key=lambda mc: (mc[1], mc[0]), reverse=policy == "spread")
    steps: list[WholeStep] = []
    left = g
    for m, c in order:
        take = min(c, left)
        steps.append((m, c, take))
        left -= take
        if left == 0:
            break
    return [tuple(steps)]


def apply_plan(part: WholePart, plan: WholePlan) -> WholePart:
    items = list(part)
    for m, c, take in plan:
        items.remove((m, c))
        if c - take:
            items.append((m, c - take))
    return tuple(sorted(items))


def plan_gpus(nc: NodeCap, plan: WholePlan) -> list[int]:
    """The GPU indexes a plan takes on this node: the lowest of the first matching domains."""
    out: list[int] = []
    used: set[tuple[str, int, str]] = set()
    for m, c, take in plan:
        for dom in sorted(nc.domains):
            gpus = nc.domains[dom]
            if dom not in used and dom[0] == m and len(gpus) == c:
                used.add(dom)
                out.extend(sorted(gpus)[:take])
                break
    return out


def node_ok(nc: NodeCap, shape: Shape) -> bool:
    return not shape.rdma or nc.network is not None


@lru_cache(maxsize=4096)
def mig_profile_name(model: str, profile: str) -> str | None:
    """The catalog spelling of `profile` on `model`, or None where the model has no such profile."""
    found = get_catalog().model(model)
    prof = found.mig_profile(profile) if found is not None else None
    return prof.name if prof is not None else None


def shape_unit_fits(state: UnitState, shape: Shape) -> bool:
    if shape.exclusive:
        return False
    if shape.kind == "mig":
        if not shape.shared:
            return False
        prof = mig_profile_name(state[0], shape.profile)
        return prof is not None and unit_fits(state, "mig", 0.0, 0.0, shape.model, prof)
    if shape.kind in ("gpus",):
        return False
    return unit_fits(state, "share", shape.fraction, shape.gib, shape.model)
