"""The cluster state the engine reasons about, and the copy-on-write view a plan is computed on.

`ClusterState` indexes an inventory by name and keeps who holds which GPU, so that a rule can ask
"who runs on node n, GPU g" without scanning every job. `View` overlays a plan's edits on a state
without copying it: its cost follows what a change touches, not the size of the cluster.
Models are treated as immutable values; an edit puts a new copy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar, cast

from gpuadmin.engine.usage import ZERO, Usage, job_usage
from gpuadmin.model import Gpu, Inventory, Job, Node, Queue

if TYPE_CHECKING:  # the evacuation planner reads and writes views: its moves are only carried here
    from gpuadmin.engine.evacuation import VmMove

EntityKind = Literal["node", "job", "queue"]
GpuKey = tuple[str, int]  # (node name, GPU index)
SlotKey = tuple[str, int, int | None]  # (node name, GPU index, MIG start): one slot a job holds
_T = TypeVar("_T")


def job_gpu_keys(job: Job) -> set[GpuKey]:
    return {(slot.node, slot.gpu) for slot in job.placement} if job.status == "running" else set()


@dataclass
class ClusterState:
    """A committed revision: the inventory by name, plus who holds each GPU."""

    cluster: str
    revision: int = 0
    nodes: dict[str, Node] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    queues: dict[str, Queue] = field(default_factory=dict)
    holders: dict[GpuKey, set[str]] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)  # running jobs, by job
    queue_usage: dict[str, Usage] = field(default_factory=dict)
    # Position of each entity in its table (FIFO order of jobs), so that undoing a removal puts an
    # entity back exactly where it was.
    seqs: dict[EntityKind, dict[str, int]] = field(
        default_factory=lambda: {"node": {}, "job": {}, "queue": {}})

    @classmethod
    def from_inventory(cls, inv: Inventory, revision: int = 0) -> ClusterState:
        state = cls(
            cluster=inv.cluster,
            revision=revision,
            nodes={n.name: n for n in inv.nodes},
            jobs={j.name: j for j in inv.jobs},
            queues={q.name: q for q in inv.queues},
        )
        for job in inv.jobs:
            state._index(job)
        for kind, names in (("node", state.nodes), ("job", state.jobs), ("queue", state.queues)):
            state.seqs[kind] = {name: seq for seq, name in enumerate(names, start=1)}  # type: ignore[index]
        return state

    def seq_of(self, kind: EntityKind, name: str) -> int | None:
        return self.seqs[kind].get(name)

    def _index(self, job: Job) -> None:
        for key in job_gpu_keys(job):
            self.holders.setdefault(key, set()).add(job.name)
        if job.status == "running":
            used = job_usage(job, self.nodes.get)
            self.usage[job.name] = used
            self.queue_usage[job.queue] = self.queue_usage.get(job.queue, ZERO) + used

    def _unindex(self, job: Job) -> None:
        for key in job_gpu_keys(job):
            self.holders[key].discard(job.name)
        used = self.usage.pop(job.name, None)
        if used is not None:
            self.queue_usage[job.queue] = self.queue_usage.get(job.queue, ZERO) - used

    def to_inventory(self) -> Inventory:
        return Inventory(
            version=1,
            cluster=self.cluster,
            queues=list(self.queues.values()),
            nodes=list(self.nodes.values()),
            jobs=list(self.jobs.values()),
        )

    def commit(self, view: View) -> None:
        """Fold a view's edits into this state in place (after the store has written them)."""
        self._commit_table("node", self.nodes, view.node_edits, view)
        self._commit_table("queue", self.queues, view.queue_edits, view)
        for name, job in view.job_edits.items():
            old = self.jobs.get(name)
            if old is not None:
                self._unindex(old)
            if job is not None:
                self._index(job)
        self._commit_table("job", self.jobs, view.job_edits, view)
        self.revision += 1

    def _commit_table(self, kind: EntityKind, table: dict[str, _T], edits: dict[str, _T | None],
                      view: View) -> None:
        """Removals first (they free positions), then the entities a restore puts at a position, whether they
        are new or already elsewhere, then the new ones at the end: the order `StateDB.commit` writes in."""
        seqs = self.seqs[kind]
        for name, value in edits.items():
            if value is None:
                table.pop(name, None)
                seqs.pop(name, None)
        placed = False
        for name, value in edits.items():
            at = view.seq_edits.get((kind, name))
            if value is not None and at is not None:
                placed = placed or seqs.get(name) != at
                seqs[name] = at
                table[name] = value
        top: int | None = None  # the table's last position, found once per commit that adds an entity
        for name, value in edits.items():
            if value is None or (kind, name) in view.seq_edits:
                continue
            if name not in table:
                if top is None:
                    top = max(seqs.values(), default=0)
                top += 1
                seqs[name] = top
            table[name] = value
        if placed:  # the table iterates in position order (FIFO for jobs)
            ordered = sorted(table.items(), key=lambda item: seqs[item[0]])
            table.clear()
            table.update(ordered)


@dataclass
class CheckReads:
    """The lookups the rules share while a view is frozen (`View.reading`), by GPU."""

    gpus: dict[GpuKey, tuple[Node, Gpu] | None] = field(default_factory=dict)
    base_gpus: dict[GpuKey, Gpu | None] = field(default_factory=dict)
    holder_jobs: dict[GpuKey, tuple[Job, ...]] = field(default_factory=dict)
    derived: dict[tuple[str, Hashable], object] = field(default_factory=dict)  # see `View.shared`


class View:
    """A copy-on-write overlay of edits on a `ClusterState`; reads fall through to the base.

    `None` in an edit table means "removed". `touched` records what the edits reach, so that the
    rules check exactly that.
    """

    def __init__(self, base: ClusterState) -> None:
        self.base = base
        self.node_edits: dict[str, Node | None] = {}
        self.job_edits: dict[str, Job | None] = {}
        self.queue_edits: dict[str, Queue | None] = {}
        self._holder_edits: dict[GpuKey, set[str]] = {}
        self._usage_edits: dict[str, Usage | None] = {}
        self.seq_edits: dict[tuple[EntityKind, str], int] = {}  # positions restored by undo
        # The slots, by job, that the journal entries an undo (or redo) reverts released: given back, they are
        # not new placements. Everything else a restore places is judged like a bind-job.
        self.released: dict[str, frozenset[SlotKey]] = {}
        # Non-preemptible jobs an admin's preempt-job evicts with `override` (journaled with its reason).
        self.overridden: set[str] = set()
        # vGPUs the plan takes away explicitly (remove-vgpu, or a restore that writes the GPU without them), by
        # GPU: (VM, profile) → how many. Any other vGPU a VM loses is a violation (vgpu.not-dropped).
        self.vgpus_removed: dict[GpuKey, Counter[tuple[str, str]]] = {}
        self._queue_usage_edits: dict[str, Usage] = {}
        # The VM moves each evacuated host's plan makes (evacuate-host, drain on vSphere), by host: the rules
        # vsphere.evacuation-room and vsphere.stun-time judge them, and the plan's review shows them.
        self.evacuations: dict[str, list[VmMove]] = {}
        self._reads: CheckReads | None = None  # set only while the rules read a frozen view (`reading`)

    @property
    def cluster(self) -> str:
        return self.base.cluster

    @property
    def revision(self) -> int:
        return self.base.revision

    # reads ------------------------------------------------------------------------------------
    def node(self, name: str) -> Node | None:
        if name in self.node_edits:
            return self.node_edits[name]
        return self.base.nodes.get(name)

    def job(self, name: str) -> Job | None:
        if name in self.job_edits:
            return self.job_edits[name]
        return self.base.jobs.get(name)

    def queue(self, name: str) -> Queue | None:
        if name in self.queue_edits:
            return self.queue_edits[name]
        return self.base.queues.get(name)

    def holders(self, node: str, gpu: int) -> set[str]:
        """Names of the running jobs that hold (part of) this GPU."""
        key = (node, gpu)
        if key in self._holder_edits:
            return self._holder_edits[key]
        return self.base.holders.get(key, set())

    def job_usage(self, name: str) -> Usage:
        if name in self._usage_edits:
            return self._usage_edits[name] or ZERO
        return self.base.usage.get(name, ZERO)

    def queue_usage(self, name: str) -> Usage:
        """What the queue's running jobs use now, borrowed quota included."""
        if name in self._queue_usage_edits:
            return self._queue_usage_edits[name]
        return self.base.queue_usage.get(name, ZERO)

    def nodes(self) -> Iterator[Node]:
        for name, node in self.base.nodes.items():
            edited: Node | None = self.node_edits.get(name, node)
            if edited is not None:
                yield edited
        for name, added in self.node_edits.items():
            if name not in self.base.nodes and added is not None:
                yield added

    def jobs(self) -> Iterator[Job]:
        """All jobs in submission order (FIFO): the base's order, then jobs this view added."""
        for name, job in self.base.jobs.items():
            edited: Job | None = self.job_edits.get(name, job)
            if edited is not None:
                yield edited
        for name, added in self.job_edits.items():
            if name not in self.base.jobs and added is not None:
                yield added

    def queues(self) -> Iterator[Queue]:
        for name, queue in self.base.queues.items():
            edited: Queue | None = self.queue_edits.get(name, queue)
            if edited is not None:
                yield edited
        for name, added in self.queue_edits.items():
            if name not in self.base.queues and added is not None:
                yield added

    def gpu_at(self, key: GpuKey) -> tuple[Node, Gpu] | None:
        """The node and GPU a key names in the view, or None where either does not exist."""
        reads = self._reads
        if reads is not None and key in reads.gpus:
            return reads.gpus[key]
        node = self.node(key[0])
        gpu = node.gpu(key[1]) if node is not None else None
        found = (node, gpu) if node is not None and gpu is not None else None
        if reads is not None:
            reads.gpus[key] = found
        return found

    def base_gpu(self, key: GpuKey) -> Gpu | None:
        """The GPU a key names at the view's base revision (before the plan), or None."""
        reads = self._reads
        if reads is not None and key in reads.base_gpus:
            return reads.base_gpus[key]
        node = self.base.nodes.get(key[0])
        gpu = node.gpu(key[1]) if node is not None else None
        if reads is not None:
            reads.base_gpus[key] = gpu
        return gpu

    def holder_jobs(self, key: GpuKey) -> tuple[Job, ...]:
        """The running jobs holding (part of) a GPU, by name (stable order)."""
        reads = self._reads
        if reads is not None and key in reads.holder_jobs:
            return reads.holder_jobs[key]
        found = tuple(job for job in map(self.job, sorted(self.holders(*key)))
                      if job is not None and job.status == "running")
        if reads is not None:
            reads.holder_jobs[key] = found
        return found

    def shared(self, kind: str, key: Hashable, compute: Callable[[], _T]) -> _T:
        """`compute()`, shared by every rule that asks for the same (kind, key) while the view is frozen (as
        kube-scheduler's CycleState shares what one plugin computed); computed afresh outside `reading`.
        `kind` names one derivation and always the same result type, which is what makes the cast safe."""
        reads = self._reads
        if reads is None:
            return compute()
        slot = (kind, key)
        if slot in reads.derived:
            return cast(_T, reads.derived[slot])
        value = reads.derived[slot] = compute()
        return value

    @contextmanager
    def reading(self) -> Iterator[View]:
        """Freeze the view while the rules read it: each GPU, base GPU and GPU's holders is looked up once and
        shared by every rule that asks (a cycle's check asks ~30 times per touched GPU). An edit inside
        raises, so a shared lookup can never be stale."""
        if self._reads is not None:  # nested: the outer freeze already shares the lookups
            yield self
            return
        self._reads = CheckReads()
        try:
            yield self
        finally:
            self._reads = None

    def _writable(self) -> None:
        if self._reads is not None:
            raise RuntimeError("a view is edited while the rules read it (View.reading)")

    def seq_of(self, kind: EntityKind, name: str) -> int | None:
        """The entity's position in its table (None for one this view added without a position)."""
        if (kind, name) in self.seq_edits:
            return self.seq_edits[(kind, name)]
        return self.base.seq_of(kind, name)

    # writes -----------------------------------------------------------------------------------
    def put_at(self, kind: EntityKind, name: str, seq: int) -> None:
        """Put a (re-)added entity back at this position in its table instead of at the end."""
        self._writable()
        self.seq_edits[(kind, name)] = seq

    def put_node(self, name: str, node: Node | None) -> None:
        self._writable()
        self.node_edits[name] = node

    def remove_vgpus(self, key: GpuKey, vgpus: Iterable[tuple[str, str]]) -> None:
        """Record vGPUs (VM, profile) this plan removes on purpose."""
        self._writable()
        self.vgpus_removed.setdefault(key, Counter()).update(vgpus)

    def put_queue(self, name: str, queue: Queue | None) -> None:
        self._writable()
        self.queue_edits[name] = queue

    def put_job(self, name: str, job: Job | None) -> None:
        self._writable()
        old = self.job(name)
        if old is not None:
            for key in job_gpu_keys(old):
                self._edit_holders(key).discard(name)
            old_usage = self.job_usage(name)
            self._queue_usage_edits[old.queue] = self.queue_usage(old.queue) - old_usage
        self.job_edits[name] = job
        self._usage_edits[name] = None
        if job is not None:
            for key in job_gpu_keys(job):
                self._edit_holders(key).add(name)
            if job.status == "running":
                used = job_usage(job, self.node)
                self._usage_edits[name] = used
                self._queue_usage_edits[job.queue] = self.queue_usage(job.queue) + used

    def _edit_holders(self, key: GpuKey) -> set[str]:
        if key not in self._holder_edits:
            self._holder_edits[key] = set(self.base.holders.get(key, set()))
        return self._holder_edits[key]
