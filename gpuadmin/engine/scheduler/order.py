"""Queue-order plugin: which pending job the cycle tries next.

The order (docs/scheduling.md, "Ordering"):

1. job priority, higher first; then queue priority, higher first;
2. fair share across queues: a job that keeps its queue within its *deserved* quota goes before one that
   borrows; among equals, the queue with the lowest dominant-resource saturation goes first —
   `max(used_gpus / fair_gpus, used_mem / fair_mem)` (DRF over GPUs and GPU memory), where the *fair share*
   is the deserved quota (capped by demand) plus the over-quota capacity divided by `over_quota_weight`
   within the highest queue-priority bucket first (KAI's two phases);
3. FIFO within a queue (inventory order).

Saturation changes as jobs bind, so the order is dynamic: a heap of queue heads, re-keyed when the head's
queue binds a job.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.rules.nodes import EPSILON
from gpuadmin.engine.scheduler.index import compute_share
from gpuadmin.engine.scheduler.shape import Shape
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Job, Queue

HALF_EPS = EPSILON / 2


@dataclass(slots=True)
class Cost:
    """GPU-equivalents and GiB a job adds to its queue's usage (a lower bound before placement)."""

    gpus: float
    gib: float


@dataclass
class QueueBook:
    queue: Queue
    used_gpus: float = 0.0
    used_gib: float = 0.0
    used_np: float = 0.0  # non-preemptible GPU-equivalents
    demand_gpus: float = 0.0
    demand_gib: float = 0.0
    fair_gpus: float = 0.0
    fair_gib: float = 0.0
    pending: list[Job] = field(default_factory=list)
    head: int = 0
    version: int = 0

    @property
    def name(self) -> str:
        return self.queue.name

    @property
    def quota_gpus(self) -> float:
        return float(self.queue.quota.gpus or 0)

    @property
    def quota_gib(self) -> float | None:
        return self.queue.quota.gpu_memory_gib

    def within_quota(self, cost: Cost) -> bool:
        q = self.queue.quota
        if q.gpus is None and q.gpu_memory_gib is None:
            return False
        if q.gpus is not None and self.used_gpus + cost.gpus > q.gpus + HALF_EPS:
            return False
        return not (q.gpu_memory_gib is not None and self.used_gib + cost.gib > q.gpu_memory_gib + HALF_EPS)

    def over_limit(self, cost: Cost) -> bool:
        lim = self.queue.limit
        if lim is None:
            return False
        if lim.gpus is not None and self.used_gpus + cost.gpus > lim.gpus + HALF_EPS:
            return True
        return lim.gpu_memory_gib is not None and self.used_gib + cost.gib > lim.gpu_memory_gib + HALF_EPS

    def nonpreemptible_over_quota(self, cost: Cost) -> bool:
        q = self.queue.quota
        if q.gpus is None and q.gpu_memory_gib is not None:
            return False  # a memory-only quota: the rule does not judge GPU-equivalents
        return self.used_np + cost.gpus > (q.gpus or 0) + HALF_EPS

    def saturation(self) -> float:
        shares = []
        for used, fair in ((self.used_gpus, self.fair_gpus), (self.used_gib, self.fair_gib)):
            if fair > 0:
                shares.append(used / fair)
            elif used > 0:
                shares.append(1e9)
        return max(shares, default=0.0)


def estimate_cost(shape: Shape, typical_gib: float) -> Cost:
    """A lower bound of what the job will count for quota (the exact figure follows the chosen slices)."""
    catalog = get_catalog()
    model = catalog.model(shape.model) if shape.model else None
    mem = model.memory_mib / 1024 if model is not None else typical_gib
    if shape.kind == "gpus":
        n = shape.gpus * shape.nodes
        return Cost(float(n), n * mem)
    if shape.kind == "mig":
        models = (
            [model]
            if model is not None
            else [m for m in catalog.gpu_models.values() if m.mig_profile(shape.profile) is not None]
        )
        shares = [compute_share(m, shape.profile) for m in models if m is not None]
        share = min(shares, default=0.0)
        gibs = []
        for m in models:
            prof = m.mig_profile(shape.profile) if m is not None else None
            if m is not None and prof is not None:
                gibs.append(
                    prof.memory_gib
                    if prof.memory_gib is not None
                    else m.memory_mib / 1024 * prof.memory_slices / max(1, m.memory_slices)
                )
        return Cost(share, min(gibs, default=0.0))
    if shape.kind == "fraction":
        return Cost(shape.fraction, shape.fraction * mem)
    return Cost(min(1.0, shape.gib / mem) if mem > 0 else 0.0, shape.gib)


def fair_shares(books: dict[str, QueueBook], capacity_gpus: float, capacity_gib: float) -> None:
    """KAI's two-phase fair share per resource: deserved (capped by demand), then the surplus by
    over-quota weight, highest queue-priority bucket first, never above demand or limit."""
    for resource in ("gpus", "gib"):
        cap = capacity_gpus if resource == "gpus" else capacity_gib
        alloc: dict[str, float] = {}
        room: dict[str, float] = {}
        for name, b in books.items():
            demand = b.demand_gpus if resource == "gpus" else b.demand_gib
            deserved = b.quota_gpus if resource == "gpus" else (b.quota_gib or 0.0)
            lim = b.queue.limit
            cap_q = None if lim is None else (lim.gpus if resource == "gpus" else lim.gpu_memory_gib)
            top = demand if cap_q is None else min(demand, float(cap_q))
            alloc[name] = min(deserved, top)
            room[name] = max(0.0, top - alloc[name])
        left = max(0.0, cap - sum(alloc.values()))
        for prio in sorted({b.queue.priority for b in books.values()}, reverse=True):
            members = [n for n, b in books.items() if b.queue.priority == prio]
            for _ in range(len(members) + 1):
                hungry = [n for n in members if room[n] > 1e-12 and books[n].queue.over_quota_weight > 0]
                if left <= 1e-12 or not hungry:
                    break
                weights = sum(books[n].queue.over_quota_weight for n in hungry)
                given = 0.0
                for n in hungry:
                    give = min(room[n], left * books[n].queue.over_quota_weight / weights)
                    alloc[n] += give
                    room[n] -= give
                    given += give
                left -= given
                if given <= 1e-12:
                    break
        for name, b in books.items():
            if resource == "gpus":
                b.fair_gpus = alloc[name]
            else:
                b.fair_gib = alloc[name]


def make_books(state: ClusterState) -> dict[str, QueueBook]:
    books: dict[str, QueueBook] = {}
    for q in state.queues.values():
        used = state.queue_usage.get(q.name)
        b = QueueBook(q)
        if used is not None:
            b.used_gpus, b.used_gib, b.used_np = used.gpus, used.gpu_memory_gib, used.nonpreemptible_gpus
        b.demand_gpus, b.demand_gib = b.used_gpus, b.used_gib
        books[q.name] = b
    return books


class JobOrder:
    """The dynamic order: pop the next job; re-key its queue after a bind."""

    def __init__(self, books: dict[str, QueueBook], costs: dict[str, Cost], fifo: dict[str, int]) -> None:
        self.books = books
        self.costs = costs
        self.fifo = fifo
        self.heap: list[tuple[tuple[float, float, int, float, int], str, int]] = []
        for b in books.values():
            b.pending.sort(key=lambda j: (-j.priority, fifo[j.name]))
            self._push(b)

    def key(self, b: QueueBook, job: Job) -> tuple[float, float, int, float, int]:
        tier = 0 if b.within_quota(self.costs[job.name]) else 1
        return (
            -float(job.priority),
            -float(b.queue.priority),
            tier,
            round(b.saturation(), 12),
            self.fifo[job.name],
        )

    def _push(self, b: QueueBook) -> None:
        if b.head < len(b.pending):
            b.version += 1
            heapq.heappush(self.heap, (self.key(b, b.pending[b.head]), b.name, b.version))

    def pop(self) -> Job | None:
        while self.heap:
            _, name, version = heapq.heappop(self.heap)
            b = self.books[name]
            if version != b.version or b.head >= len(b.pending):
                continue
            job = b.pending[b.head]
            b.head += 1
            return job
        return None

    def advance(self, queue: str) -> None:
        """After trying the queue's head (bound or not), queue its next job with a fresh key."""
        self._push(self.books[queue])
