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
                      are schedulable);
* fenced GPUs      — a GPU fenced as unhealthy (`set-gpu-health`) is offered by none of them (the index skips
                      it); a node short of room because of such GPUs fails with code `unhealthy`;
* `gpu_status`      — all of the above on one node at once, as kube-scheduler's `Filter` answers: a `Status`
                      that fits, or says why not with a stable code and the reason an operator reads. The
                      cycle's verdicts (`verdicts.py`) and every "why not" of `explain` come from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.scheduler.fgd import EPS_SHARE, UnitState, WholePart, unit_fits, unit_need, usable_memory
from gpuadmin.engine.scheduler.index import GpuInfo, NodeCap, Policy
from gpuadmin.engine.scheduler.shape import Shape


@dataclass(frozen=True, slots=True)
class Status:
    """A filter's verdict on one node (kube-scheduler's `framework.Status`): it fits, or a stable `code` and
    the `reason` an operator reads ("fewer than 8 free GPUs"); node summaries count nodes per reason."""

    code: str = "fits"
    reason: str = ""

    @property
    def fits(self) -> bool:
        return self.code == "fits"


FITS = Status()

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


def open_gpu_fits(nc: NodeCap, shape: Shape) -> bool:
    """Whether a fraction could open a free full GPU of this node (dynamic sharing): `Scorer.open`'s test."""
    if nc.reserve is None or shape.exclusive or shape.kind not in ("fraction", "memory"):
        return False
    return any(
        gpus and model_ok(shape, dom[0])
        and unit_need(shape.fraction, shape.gib, usable_memory(dom[0], nc.reserve)) <= 1 + EPS_SHARE
        for dom, gpus in nc.domains.items()
    )


# The failures that say what the node's GPUs lack as such (no RDMA, no GPU of the model, no such MIG profile, a
# share for an exclusive job): fenced GPUs are never their cause.
_NOT_CAPACITY = frozenset({"no-rdma", "no-model", "no-profile", "isolation"})
# One reason for every such node, so that a summary counts them together ("0/4 nodes fit: 4 with GPUs fenced as
# unhealthy"); which GPUs and why is the GPU's own (`describe gpu`, rule placement.gpu-healthy).
UNHEALTHY = Status("unhealthy", "with GPUs fenced as unhealthy")


def gpu_status(nc: NodeCap, shape: Shape) -> Status:
    """Whether this node's GPUs (as the index holds them now) can host the shape, whatever the node's state:
    the filters above, in the order the cycle applies them, each failure with its own code and reason. A node
    that falls short because GPUs of the shape's model are fenced as unhealthy says so (code `unhealthy`)."""
    status = _capacity_status(nc, shape)
    if status.fits or status.code in _NOT_CAPACITY:
        return status
    fenced = [i for i in nc.gpus.values() if i.unhealthy is not None and model_ok(shape, i.model)]
    if fenced and _fence_explains(nc, shape, fenced):
        return UNHEALTHY
    return status


def _fence_explains(nc: NodeCap, shape: Shape, fenced: list[GpuInfo]) -> bool:
    """Whether healthy GPUs in place of the fenced ones could make room: for whole GPUs, the free ones and the
    fenced full-mode ones are enough in number; a MIG instance or a share could be on any fenced GPU."""
    if shape.kind != "gpus":
        return True
    return nc.free_whole(shape.model) + sum(1 for i in fenced if i.mode == "full") >= shape.gpus


def _capacity_status(nc: NodeCap, shape: Shape) -> Status:
    if not node_ok(nc, shape):
        return Status("no-rdma", "no RDMA")
    infos = [i for i in nc.gpus.values() if model_ok(shape, i.model)]
    if not infos:
        return Status("no-model", f"no {shape.model} GPUs" if shape.model else "no GPUs")
    if shape.kind == "gpus":
        return _whole_status(nc, shape, infos)
    if shape.kind == "mig":
        return _mig_status(nc, shape, infos)
    return _unit_status(nc, shape)


def _whole_status(nc: NodeCap, shape: Shape, infos: list[GpuInfo]) -> Status:
    g = shape.gpus
    if len(infos) < g:
        return Status("too-few-gpus", f"fewer than {g} GPUs")
    if whole_plans(nc.whole_part(), shape, "binpack"):
        return FITS
    if not any(i.domain is not None for i in infos):
        modes = "/".join(sorted({i.mode for i in infos}))
        job = "is exclusive" if shape.isolation == "exclusive" else "takes whole GPUs"
        return Status("mode", f"{modes} only (job {job})")
    if shape.nvlink and g >= 2 and nc.free_whole(shape.model) >= g:
        return Status("nvlink", f"no free NVLink domain of {g}")
    shared = sum(1 for i in infos if i.units.get(None) is not None and i.units[None].dynamic)
    return Status("capacity", f"fewer than {g} free GPUs" + (f" ({shared} shared by fractions)" if shared else ""))


def _mig_status(nc: NodeCap, shape: Shape, infos: list[GpuInfo]) -> Status:
    profiles = {p for i in infos if (p := mig_profile_name(i.model, shape.profile)) is not None}
    if not profiles:
        return Status("no-profile", f"no {shape.profile} profile on its GPU models")
    if not any(p in profiles for i in infos for p in i.instances.values()):
        return Status("not-carved", f"no {shape.profile} instance carved")
    if any(nc.mig.get((i.model, p)) for i in infos for p in profiles):
        return FITS
    units = [u for u in nc.ts_units if u.profile in profiles and not u.closed]
    if shape.shared and any(shape_unit_fits(u.state(), shape) for u in units):
        return FITS
    if shape.exclusive and any(u.replicas_left > 0 for u in units):
        return Status("isolation", f"only time-sliced {shape.profile} instances left (job is exclusive)")
    return Status("held", f"no free {shape.profile} instance (all held)")


def _unit_status(nc: NodeCap, shape: Shape) -> Status:
    if shape.exclusive:
        return Status("isolation", "job is exclusive (a share of a GPU never is)")
    if open_gpu_fits(nc, shape):
        return FITS
    units = [u for u in nc.ts_units if model_ok(shape, u.model) and not u.closed]
    if not units:
        return Status("no-shared-gpu", "no time-sliced GPU" if nc.reserve is None else "no free or shared GPU")
    if any(shape_unit_fits(u.state(), shape) for u in units):
        return FITS
    if not any(u.replicas_left > 0 for u in units):
        return Status("no-replica", "no replica left")
    return Status("share", "too little share left")
