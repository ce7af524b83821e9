"""Score plugins: among the slices that pass the filters, which one to take.

The primary score is FGD's: the fragmentation increase ΔF of the node (see `fgd`), lower is better. Ties —
common, since many nodes look alike — go to the policy: `binpack` prefers the candidate that leaves the
least idle capacity behind (fill partly used nodes and GPUs first), `spread` the one that leaves the most.
The last tie-break is the node's position in the inventory, so the same input gives the same plan.

Scores are memoised by (shape, part value): nodes with equal parts score equally, so a cycle scores each
distinct part once per shape.
"""

from __future__ import annotations

import bisect

from gpuadmin.engine.scheduler.fgd import (
    DYNAMIC_REPLICAS,
    EPS_SHARE,
    MigPart,
    UnitState,
    WholePart,
    Workload,
    unit_need,
    usable_memory,
)
from gpuadmin.engine.scheduler.filters import WholePlan, apply_plan, model_ok, shape_unit_fits, whole_plans
from gpuadmin.engine.scheduler.index import Policy
from gpuadmin.engine.scheduler.shape import Shape

Score = tuple[float, float]  # (ΔF, policy tie-break); lower is better


class Scorer:
    def __init__(self, workload: Workload, policy: Policy) -> None:
        self.workload = workload
        self.policy = policy
        self._whole: dict[int, dict[tuple[WholePart, float | None], tuple[Score, WholePlan] | None]] = {}
        self._open: dict[tuple[int, WholePart, float], tuple[Score, tuple[str, int]] | None] = {}
        self._ts_rows: dict[int, list[tuple[Score, int]]] = {}  # shape id → (score, state id), best first
        self._ts_upto: dict[int, int] = {}

    def _tie(self, idle_after: float) -> float:
        return idle_after if self.policy == "binpack" else -idle_after

    def whole(
        self, sid: int, shape: Shape, part: WholePart, reserve: float | None = None
    ) -> tuple[Score, WholePlan] | None:
        """The best way to take the shape's GPUs from a node with this whole part, and its score (`reserve`:
        the node's dynamic-sharing reserve, whose free GPUs fractions could also use)."""
        memo = self._whole.get(sid)
        if memo is None:
            memo = self._whole[sid] = {}
        key = (part, reserve)
        if key in memo:
            return memo[key]
        best: tuple[Score, WholePlan] | None = None
        for plan in whole_plans(part, shape, self.policy):
            after = apply_plan(part, plan)
            delta = round(self.workload.delta_whole(part, after, reserve), 9)
            score = (delta, self._tie(Workload.whole_idle(after)))
            if best is None or score < best[0]:
                best = (score, plan)
        memo[key] = best
        return best

    def open(self, sid: int, shape: Shape, part: WholePart, reserve: float) -> tuple[Score, tuple[str, int]] | None:
        """A fraction opening a free full GPU of a dynamic-sharing node: the best domain (model, free count) to
        take it from, and the score — the whole part loses the GPU, the shared part gains a unit with
        `1 − need` unreserved."""
        key = (sid, part, reserve)
        if key in self._open:
            return self._open[key]
        best: tuple[Score, tuple[str, int]] | None = None
        for m, c in sorted(set(part)):
            if shape.exclusive or not model_ok(shape, m):
                continue
            usable = usable_memory(m, reserve)
            need = unit_need(shape.fraction, shape.gib, usable)
            if need > 1 + EPS_SHARE:
                continue
            residual = round(1.0 - need, 9)
            unit: UnitState = (m, round(usable, 9), residual, DYNAMIC_REPLICAS, 1.0, "")
            after = apply_plan(part, ((m, c, 1),))
            delta = self.workload.delta_whole(part, after, reserve) + self.workload.delta_ts((), (unit,))
            score = (round(delta, 9), self._tie(residual))
            if best is None or score < best[0]:
                best = (score, (m, c))
        self._open[key] = best
        return best

    def mig(self, before: MigPart, model: str, profile: str) -> Score:
        """Taking one free instance of (model, profile) from a node with this MIG part."""
        after: list[tuple[str, str, int, float]] = []
        for m, p, n, s in before:
            if m == model and p == profile:
                n -= 1
            after.append((m, p, n, s))
        after_part: MigPart = tuple(sorted(e for e in after if e[2] > 0))
        before_part: MigPart = tuple(e for e in before if e[2] > 0)
        delta = round(self.workload.delta_mig(before_part, after_part), 9)
        return delta, self._tie(Workload.mig_idle(after_part))

    def ts(self, shape: Shape, state: UnitState) -> Score | None:
        """Taking a replica (and the shape's share) of a shared unit in this state.

        The credit of a node's shared part adds up over its units (a unit's unreserved share counts for
        every task it fits), so the score depends on the unit alone."""
        if not shape_unit_fits(state, shape):
            return None
        need = 0.0 if shape.kind == "mig" else unit_need(shape.fraction, shape.gib, state[1])
        residual = round(state[2] - need, 9)
        replicas = state[3] if state[3] == DYNAMIC_REPLICAS else state[3] - 1
        new: UnitState = (state[0], state[1], residual, replicas, state[4], state[5])
        delta = round(self.workload.delta_ts((state,), (new,)), 9)
        # the tie-break looks at the unit itself: best fit leaves the least share on it (binpack)
        return delta, self._tie(residual * state[4])

    def ts_row(self, sid: int, shape: Shape, states: list[UnitState]) -> list[tuple[Score, int]]:
        """The unit states the shape fits, best score first (new states are scored as they appear)."""
        row = self._ts_rows.get(sid)
        if row is None:
            row = self._ts_rows[sid] = []
        upto = self._ts_upto.get(sid, 0)
        for state_id in range(upto, len(states)):
            score = self.ts(shape, states[state_id])
            if score is not None:
                bisect.insort(row, (score, state_id))
        self._ts_upto[sid] = len(states)
        return row
