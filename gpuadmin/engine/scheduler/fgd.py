"""The FGD fragmentation measure (Weng et al., USENIX ATC'23; hkust-adsl/kubernetes-scheduler-simulator
`pkg/utils/frag.go`, `NodeGpuShareFragAmount`), adapted to whole GPUs, NVLink domains, MIG instances and
time-sliced replicas.

Definition (docs/scheduling.md, "Fragmentation"). Let M be the *workload*: typical task classes t with
popularity p_t (Σ p_t = 1), taken from the request shapes of the pending jobs. For a node n let
`idle(n)` be its idle GPU capacity in GPU units: a free full-mode GPU counts 1, a free MIG instance its
compute share (3g of 7 = 3/7), a time-sliced GPU its unreserved share (1 − fractions − GiB/memory; a MIG
instance that is time-sliced, its compute share times that). For a task t:

* `usable(n, t)` is the idle capacity on units t can run on: free full GPUs of t's model (for an NVLink task
  of g ≥ 2 GPUs only those in NVLink domains with ≥ g free GPUs); free instances of t's MIG profile; shared
  units with a replica left and at least t's share unreserved;
* `fits(n, t)` says whether t can be placed on n at all (some domain, instance or unit suffices);
* the *fragment* of n for t is `idle(n) − usable(n, t)` when t fits and `idle(n)` when it does not —
  exactly the paper's rule: if the task cannot fit, all idle GPU capacity is fragment; if it fits, the
  capacity on units that cannot host it is.

The fragmentation of n is `F(n) = Σ_t p_t · fragment(n, t)` (expected GPUs the workload cannot use), and of
the cluster the sum over schedulable nodes — "fragmented GPUs". The scheduler places each job where
`ΔF = F(n after) − F(n before)` is smallest (the steepest descent of fragmentation).

Because idle capacity adds over a node's parts (whole GPUs, MIG instances, shared units) and each task only
uses units of one part, `F(n) = idle(n) − Σ_parts C(part)` with the *credit* `C(part) = Σ_t p_t ·
usable(part, t) · [fits(part, t)]` over the tasks of that part. A placement changes one part, so
`ΔF = Δidle − ΔC(part)`: the credit of a part is memoised by the part's value, which makes a candidate's
score a dictionary lookup.

Dynamic sharing (engine/sharing.py). On a node whose full GPUs fractions may share, a free GPU is usable by
the whole-GPU tasks *and* by every fractional task whose need fits the GPU's memory less the reserved slice —
the paper's setting, where any GPU can host any task. Its whole part therefore also credits the share
classes (`whole_credit(part, reserve)`), and a fraction that opens a free GPU changes two parts at once: the
whole part loses the GPU and the shared part gains a unit with `1 − need` unreserved.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from gpuadmin.catalog import get_catalog

EPS_SHARE = 1e-12  # slack when comparing shares (the rules allow 1e-9)
TOP_CLASSES = 16  # task classes kept in a workload (the most popular); see docs/scheduling.md §3
# Replicas left on a dynamically shared GPU (Run:ai-style fractions on a full GPU): no replica count limits
# it, only its compute share and memory, so this stands for "unbounded" and is never decremented.
DYNAMIC_REPLICAS = 1 << 20

# Parts of a node's free capacity, as hashable values:
WholePart = tuple[tuple[str, int], ...]  # (model, free full GPUs) per NVLink domain with ≥ 1 free, sorted
MigPart = tuple[tuple[str, str, int, float], ...]  # (model, profile, free instances, compute share), sorted
# (model, unit memory GiB, unreserved share, replicas left, weight, MIG profile or "") per shared unit, sorted
UnitState = tuple[str, float, float, int, float, str]
TsPart = tuple[UnitState, ...]

ClassKind = Literal["gpus", "mig", "share"]


@dataclass(frozen=True, slots=True)
class TaskClass:
    """A typical task of the workload: `share` is a GPU fraction, `gib` a memory request (gib/memory)."""

    kind: ClassKind
    weight: float
    gpus: int = 0
    nvlink: bool = False
    profile: str = ""
    share: float = 0.0
    gib: float = 0.0
    model: str | None = None


def _model_ok(want: str | None, have: str) -> bool:
    return want is None or want == have


def unit_need(share: float, gib: float, memory_gib: float) -> float:
    """The share of a shared unit a request reserves (GiB over the unit's memory)."""
    if gib > 0:
        return gib / memory_gib if memory_gib > 0 else float("inf")
    return share


@lru_cache(maxsize=256)
def usable_memory(model: str, reserve: float) -> float:
    """GiB fractions may take on a dynamically shared GPU of this model (engine/sharing.usable_gib)."""
    found = get_catalog().model(model)
    return max(0.0, found.memory_mib / 1024 - reserve) if found is not None else 0.0


def unit_fits(state: UnitState, kind: str, share: float, gib: float, model: str | None, profile: str = "") -> bool:
    m, mem, residual, replicas, _, unit_profile = state
    if replicas < 1 or not _model_ok(model, m):
        return False
    if kind == "mig":  # a shared MIG job takes a replica of an instance of its profile
        return unit_profile == profile
    return unit_need(share, gib, mem) <= residual + EPS_SHARE


def whole_fit(part: WholePart, gpus: int, nvlink: bool, model: str | None) -> tuple[bool, int]:
    """(fits, usable GPUs) of a whole-GPU task on one node's whole part."""
    counts = [c for m, c in part if _model_ok(model, m)]
    if nvlink and gpus >= 2:
        good = [c for c in counts if c >= gpus]
        return bool(good), sum(good)
    total = sum(counts)
    return total >= gpus, total


class Workload:
    """The task classes and the memoised credits of node parts."""

    def __init__(self, classes: Iterable[TaskClass]) -> None:
        self.classes = tuple(classes)
        total = sum(c.weight for c in self.classes)
        if total > 0:
            self.classes = tuple(
                TaskClass(c.kind, c.weight / total, c.gpus, c.nvlink, c.profile, c.share, c.gib, c.model)
                for c in self.classes
            )
        self.whole_classes = tuple(c for c in self.classes if c.kind == "gpus")
        self.mig_classes = tuple(c for c in self.classes if c.kind == "mig")
        self.share_classes = tuple(c for c in self.classes if c.kind == "share")
        self.total_weight = sum(c.weight for c in self.classes)
        self._whole: dict[tuple[WholePart, float | None], float] = {}
        self._mig: dict[MigPart, float] = {}
        self._ts: dict[TsPart, float] = {}

    # credits ---------------------------------------------------------------------------------------------
    def whole_credit(self, part: WholePart, reserve: float | None = None) -> float:
        """Credit of a node's free full GPUs: whole-GPU tasks, and with a dynamic-sharing `reserve` (GiB kept
        per shared GPU) also the fractional tasks that fit a free GPU."""
        key = (part, reserve)
        found = self._whole.get(key)
        if found is None:
            found = 0.0
            for t in self.whole_classes:
                fits, usable = whole_fit(part, t.gpus, t.nvlink, t.model)
                if fits:
                    found += t.weight * usable
            if reserve is not None:
                for t in self.share_classes:
                    for m, c in part:
                        need = unit_need(t.share, t.gib, usable_memory(m, reserve))
                        if _model_ok(t.model, m) and need <= 1 + EPS_SHARE:
                            found += t.weight * c
            self._whole[key] = found
        return found

    def mig_credit(self, part: MigPart) -> float:
        found = self._mig.get(part)
        if found is None:
            found = 0.0
            for t in self.mig_classes:
                usable = sum(n * s for m, p, n, s in part if p == t.profile and _model_ok(t.model, m) and n > 0)
                found += t.weight * usable
            self._mig[part] = found
        return found

    def ts_credit(self, part: TsPart) -> float:
        found = self._ts.get(part)
        if found is None:
            found = 0.0
            for t in self.share_classes:
                usable = sum(u[2] * u[4] for u in part if unit_fits(u, "share", t.share, t.gib, t.model))
                found += t.weight * usable
            self._ts[part] = found
        return found

    # idle and fragmentation ------------------------------------------------------------------------------
    @staticmethod
    def whole_idle(part: WholePart) -> float:
        return float(sum(c for _, c in part))

    @staticmethod
    def mig_idle(part: MigPart) -> float:
        return sum(n * s for _, _, n, s in part)

    @staticmethod
    def ts_idle(part: TsPart) -> float:
        return sum(u[2] * u[4] for u in part)

    def node_fragmentation(
        self, whole: WholePart, mig: MigPart, ts: TsPart, reserve: float | None = None
    ) -> float:
        """F(n) = Σ_t p_t · fragment(n, t) = W·idle(n) − Σ credits."""
        idle = self.whole_idle(whole) + self.mig_idle(mig) + self.ts_idle(ts)
        return (
            self.total_weight * idle
            - self.whole_credit(whole, reserve)
            - self.mig_credit(mig)
            - self.ts_credit(ts)
        )

    def delta_whole(self, before: WholePart, after: WholePart, reserve: float | None = None) -> float:
        d_idle = self.whole_idle(after) - self.whole_idle(before)
        return self.total_weight * d_idle - (self.whole_credit(after, reserve) - self.whole_credit(before, reserve))

    def delta_mig(self, before: MigPart, after: MigPart) -> float:
        d_idle = self.mig_idle(after) - self.mig_idle(before)
        return self.total_weight * d_idle - (self.mig_credit(after) - self.mig_credit(before))

    def delta_ts(self, before: TsPart, after: TsPart) -> float:
        d_idle = self.ts_idle(after) - self.ts_idle(before)
        return self.total_weight * d_idle - (self.ts_credit(after) - self.ts_credit(before))


def classes_from_shapes(shapes: Iterable[TaskClass], top: int = TOP_CLASSES) -> list[TaskClass]:
    """Merge equal classes (adding weights) and keep the `top` most popular (the workload's typical tasks)."""
    weights: dict[TaskClass, float] = {}
    for c in shapes:
        key = TaskClass(c.kind, 0.0, c.gpus, c.nvlink, c.profile, c.share, c.gib, c.model)
        weights[key] = weights.get(key, 0.0) + c.weight
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], repr(kv[0])))[:top]
    return [TaskClass(k.kind, w, k.gpus, k.nvlink, k.profile, k.share, k.gib, k.model) for k, w in ranked]
