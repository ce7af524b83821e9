"""One scheduling cycle: order → filter → score → bind (in the index) → preempt → plan once.

`schedule(state, policy)` never writes: it returns a `SchedulePlan` whose `plan` went through
`planner.plan`, so the rules have judged every bind and eviction. The cycle never asks the rules per
candidate: it keeps its own free-capacity index, updates it on each bind and runs the planner once at the end
on what the binds and evictions touch. Should the planner still refuse something (a base state that already
breaks a rule on a node the cycle touched, say), the binds the violations name are dropped and the plan is
made again, so the result is always allowed; those jobs are explained as refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from gpuadmin.catalog import get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import Plan, plan
from gpuadmin.engine.rules.base import Violation, target_of
from gpuadmin.engine.scheduler.fgd import WholePart, Workload, classes_from_shapes
from gpuadmin.engine.scheduler.filters import WholePlan, mig_profile_name, node_ok, plan_gpus
from gpuadmin.engine.scheduler.index import (
    Bucket,
    CapacityIndex,
    NodeCap,
    Policy,
    TsUnit,
    UnitId,
    job_unit_need,
)
from gpuadmin.engine.scheduler.node_filters import (
    NO_NEEDS,
    NodeNeeds,
    NodeResources,
    VmSlots,
    allowed_nodes,
    needs_of,
    taints_filter,
)
from gpuadmin.engine.scheduler.order import Cost, JobOrder, QueueBook, estimate_cost, fair_shares, make_books
from gpuadmin.engine.scheduler.preempt import Eligible, find_eviction
from gpuadmin.engine.scheduler.scores import Score, Scorer
from gpuadmin.engine.scheduler.shape import Shape, shape_of
from gpuadmin.engine.scheduler.verdicts import VerdictBook, Verdicts
from gpuadmin.engine.sharing import is_fractional
from gpuadmin.engine.state import ClusterState
from gpuadmin.engine.usage import slot_share
from gpuadmin.model import Job, Slot

if TYPE_CHECKING:
    from gpuadmin.engine.scheduler.explain import Explanation

Outcome = Literal["bound", "no-fit", "over-limit", "nonpreemptible-over-quota", "unknown-queue", "preempted", "refused",
                  "other-scheduler"]
GPUADMIN_SCHEDULER = "gpuadmin"  # the schedulerName of the pods gpuadmin binds on a live cluster


def binds_itself(job: Job) -> bool:
    """Whether gpuadmin is the job's scheduler: a job of an inventory or submitted through gpuadmin (no scheduler
    named), or a pod whose schedulerName is `gpuadmin`. Another scheduler's job (KAI's, the default scheduler's) is
    planned like any other, so that explain says whether it fits and why not, but never bound."""
    return job.scheduler is None or job.scheduler == GPUADMIN_SCHEDULER
PENDING = ("pending", "preempted")
MAX_PREEMPTORS = 16  # preemptors tried per cycle (KAI bounds its reclaim/preempt queue depth alike)


@dataclass
class Step:
    """What a placement takes on one node: whole GPUs, one MIG instance or one shared unit."""

    node: NodeCap
    gpus: list[int] = field(default_factory=list)
    mig: tuple[int, int] | None = None  # (gpu, start)
    unit: TsUnit | None = None
    open_gpu: int | None = None  # a free full GPU a fraction turns into a shared one (dynamic sharing)
    vm_gpus: list[int] = field(default_factory=list)  # GPUs of the job's VM (never in the index)


@dataclass
class Choice:
    slots: list[Slot]
    steps: list[Step]


@dataclass
class SchedulePlan:
    """What one cycle decided: the changes, the checked plan, and why every other pending job waits."""

    policy: str
    changes: list[ch.Change]
    plan: Plan
    bound: list[str]
    preempted: list[str]
    pending: list[str]  # jobs left pending, in the cycle's order
    stats: dict[str, float]
    cycle: Cycle = field(repr=False)

    @cached_property
    def explanations(self) -> dict[str, Explanation]:
        """An explanation for every job left pending (computed on first use)."""
        from gpuadmin.engine.scheduler.explain import explain_pending

        return explain_pending(self.cycle, self.pending)

    @cached_property
    def verdicts(self) -> dict[str, Verdicts]:
        """The filters' verdicts on every node for each job left pending, counted per reason."""
        return {name: self.cycle.verdict(name) for name in self.pending}

    def explanation(self, job: str, remedies: bool = True) -> Explanation:
        from gpuadmin.engine.scheduler.explain import explain_job

        return explain_job(self.cycle, job, remedies=remedies)


class Cycle:
    def __init__(
        self,
        state: ClusterState,
        policy: Policy = "binpack",
        max_preemptors: int = MAX_PREEMPTORS,
        workload: Workload | None = None,
    ) -> None:
        if policy not in ("binpack", "spread"):
            raise ValueError(f"unknown policy {policy!r} (binpack or spread)")
        self.state = state
        self.policy: Policy = policy
        self.max_preemptors = max_preemptors
        t0 = time.perf_counter()
        self.index = CapacityIndex(state, policy)
        self.index_s = time.perf_counter() - t0
        self.books: dict[str, QueueBook] = make_books(state)
        self.shapes: dict[str, Shape] = {}
        self.sid: dict[Shape, int] = {}  # shape → a small id (memo keys)
        self.memory: dict[str, float] = {}  # model → GiB
        self.costs: dict[str, Cost] = {}
        self.fifo: dict[str, int] = {}
        self.outcome: dict[str, Outcome] = {}
        self.order: list[str] = []  # the order jobs were tried in
        self.binds: dict[str, list[Slot]] = {}
        self.bind_cost: dict[str, Cost] = {}
        self.victims: dict[str, str] = {}  # evicted job → the job it made room for
        self.failed: set[Shape] = set()
        # node-level filters (node_filters): jobs with node needs, the CPUs/memory left, the VMs' free GPUs
        self.needs: dict[str, NodeNeeds] = {}
        self.failed_needs: set[tuple[Shape, NodeNeeds]] = set()
        self.label_memo: dict[NodeNeeds, set[int]] = {}
        self.resources = NodeResources(state)
        self.vms = VmSlots(state)
        self.refused: dict[str, list[Violation]] = {}
        self._pool: tuple[dict[str, Job], dict[int, set[str]]] | None = None
        self.verdict_book: VerdictBook | None = None  # the filters' verdicts, once the cycle is done
        self.target = workload  # a given FGD target workload; None: learned from the state in `_collect`
        self.workload = Workload(())
        self.scorer = Scorer(self.workload, policy)

    # -------------------------------------------------------------------------------------------- setup
    def _collect(self) -> None:
        catalog = get_catalog()
        memory: dict[str, float] = {}
        for name in self.index.models_present:
            model = catalog.model(name)
            if model is not None:
                memory[name] = model.memory_mib / 1024
        self.memory = memory
        mems = [memory[info.model] for nc in self.index.nodes for info in nc.gpus.values() if info.model in memory]
        typical = sum(mems) / len(mems) if mems else 80.0
        weights: dict[Shape, float] = {}
        cost_of: dict[Shape, Cost] = {}
        books = self.books
        shape_by_request: dict[tuple[object, ...], Shape] = {}  # jobs asking alike share one shape (and its cost)
        taints = taints_filter(self.state)  # a schedulable node is tainted: every job's tolerations are checked
        for i, job in enumerate(self.state.jobs.values()):
            if job.status not in PENDING:
                continue
            self.fifo[job.name] = i
            shape = _memo_shape(shape_by_request, job)
            self.shapes[job.name] = shape
            needs = needs_of(job, taints)
            if needs:
                self.needs[job.name] = needs
            cost = cost_of.get(shape)
            if cost is None:
                cost = cost_of[shape] = estimate_cost(shape, typical)
                self.sid[shape] = len(self.sid)
            self.costs[job.name] = cost
            book = books.get(job.queue)
            if book is None:
                self.outcome[job.name] = "unknown-queue"
                continue
            book.pending.append(job)
            book.demand_gpus += cost.gpus
            book.demand_gib += cost.gib
            weights[shape] = weights.get(shape, 0.0) + shape.nodes
        fair_shares(books, float(len(mems)), sum(mems))
        # The FGD target workload (the paper's "typical tasks", taken from history): the request shapes of the
        # pending jobs and of the running ones, a gang once per node, so that a cycle with few pending jobs
        # still scores against the cluster's task mix rather than against its own handful of requests.
        for job in self.state.jobs.values():
            if job.status != "running":
                continue
            found = _memo_shape(shape_by_request, job)
            weights[found] = weights.get(found, 0.0) + found.nodes
        if self.target is not None:
            self.workload = self.target
        else:
            self.workload = Workload(classes_from_shapes(s.task_class(w) for s, w in weights.items()))
        self.scorer = Scorer(self.workload, self.policy)

    # -------------------------------------------------------------------------------------------- placement
    def place(self, job: Job, shape: Shape, restrict: set[int] | None = None) -> Choice | None:
        needs = self.needs.get(job.name, NO_NEEDS)
        if needs:
            return self.place_with_needs(shape, needs, restrict)
        return self.place_shape(shape, restrict)

    def place_shape(self, shape: Shape, restrict: set[int] | None = None) -> Choice | None:
        if shape.kind == "gpus" and shape.nodes > 1:
            return self._place_gang(shape, restrict)
        if shape.kind == "gpus":
            return self._place_whole(shape, restrict)
        if shape.kind == "mig":
            found = self._place_mig(shape, restrict)
            if found is not None or not shape.shared:
                return found
        return self._place_unit(shape, restrict)

    def place_with_needs(self, shape: Shape, needs: NodeNeeds, restrict: set[int] | None) -> Choice | None:
        """Placement for a job with node-level needs: inside its VM, or on the nodes that pass the filters."""
        if needs.vm is not None:
            return self._place_in_vm(shape, needs, restrict)
        allowed = allowed_nodes(self.index, needs, self.resources, self.label_memo)
        return self.place_shape(shape, allowed if restrict is None else restrict & allowed)

    def _place_in_vm(self, shape: Shape, needs: NodeNeeds, restrict: set[int] | None) -> Choice | None:
        assert needs.vm is not None
        host = self.vms.host.get(needs.vm)
        nc = self.index.by_name.get(host) if host is not None else None
        if nc is None or nc.idx < 0 or (restrict is not None and nc.idx not in restrict):
            return None  # the host is not schedulable (cordoned, draining, down) or not where we may look
        if self.resources.shortfall(nc.name, needs) is not None:
            return None
        gpus = self.vms.pick(needs.vm, shape.gpus)
        if gpus is None:
            return None
        return Choice([Slot(node=nc.name, gpu=g) for g in gpus], [Step(nc, vm_gpus=gpus)])

    def _pick(self, members: set[int], top: int | None, shape: Shape, restrict: set[int] | None) -> int | None:
        if restrict is None and not shape.rdma:
            return top
        nodes = self.index.nodes
        ok = [i for i in members if (restrict is None or i in restrict) and node_ok(nodes[i], shape)]
        return min(ok) if ok else None

    def _place_whole(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        sid = self.sid[shape]
        best: tuple[Score, int, WholePlan] | None = None
        for (part, has_rdma, reserve), bucket in self.index.whole.items():
            if shape.rdma and not has_rdma:
                continue
            scored = self.scorer.whole(sid, shape, part, reserve)
            if scored is None:
                continue
            idx = self._pick(bucket.members, bucket.top(), shape, restrict)
            if idx is None:
                continue
            if best is None or (scored[0], idx) < best[:2]:
                best = (scored[0], idx, scored[1])
        if best is None:
            return None
        nc = self.index.nodes[best[1]]
        gpus = plan_gpus(nc, best[2])
        return Choice([Slot(node=nc.name, gpu=g) for g in gpus], [Step(nc, gpus=gpus)])

    def _place_gang(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        groups: list[tuple[str, list[tuple[tuple[WholePart, float | None], Bucket[int]]]]] = []
        if shape.rdma:
            for net in sorted(self.index.whole_net):
                groups.append((net, list(self.index.whole_net[net].items())))
        else:
            groups.append(("", [((k[0], k[2]), b) for k, b in self.index.whole.items()]))
        best: tuple[tuple[float, float, str], list[tuple[int, WholePlan]]] | None = None
        sid = self.sid[shape]
        for net, parts in groups:
            cands: list[tuple[Score, Bucket[int], WholePlan]] = []
            for (part, reserve), bucket in parts:
                scored = self.scorer.whole(sid, shape, part, reserve)
                if scored is not None:
                    cands.append((scored[0], bucket, scored[1]))
            if sum(len(c[1]) for c in cands) < shape.nodes:
                continue
            cands.sort(key=lambda c: c[0])
            chosen: list[tuple[int, WholePlan]] = []
            delta = tie = 0.0
            for score, bucket, wplan in cands:
                left = shape.nodes - len(chosen)
                members = [i for i in bucket.members if restrict is None or i in restrict]
                for idx in sorted(members)[:left]:
                    chosen.append((idx, wplan))
                    delta += score[0]
                    tie += score[1]
                if len(chosen) == shape.nodes:
                    break
            if len(chosen) < shape.nodes:
                continue
            key = (round(delta, 9), tie, net)
            if best is None or key < best[0]:
                best = (key, chosen)
        if best is None:
            return None
        slots: list[Slot] = []
        steps: list[Step] = []
        for idx, wplan in best[1]:
            nc = self.index.nodes[idx]
            gpus = plan_gpus(nc, wplan)
            slots += [Slot(node=nc.name, gpu=g) for g in gpus]
            steps.append(Step(nc, gpus=gpus))
        return Choice(slots, steps)

    def _place_mig(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        models = [shape.model] if shape.model else sorted(self.index.models_present)
        best: tuple[Score, int, int, int] | None = None
        for model in models:
            if model is None:
                continue
            prof = mig_profile_name(model, shape.profile)
            if prof is None:
                continue
            if restrict is None and not shape.rdma:
                top = self.index.mig_top(model, prof)
                tops = [top] if top is not None else []
            else:
                tops = [
                    (nc, g, s)
                    for nc in self.index.nodes
                    if (restrict is None or nc.idx in restrict) and node_ok(nc, shape)
                    for g, s in sorted(nc.mig.get((model, prof), ()))
                ][:1]
            for nc, gpu, start in tops:
                score = self.scorer.mig(nc.mig_part(), model, prof)
                cand = (score, nc.idx, gpu, start)
                if best is None or cand < best:
                    best = cand
        if best is None:
            return None
        nc = self.index.nodes[best[1]]
        return Choice([Slot(node=nc.name, gpu=best[2], mig_start=best[3])], [Step(nc, mig=(best[2], best[3]))])

    def _place_unit(self, shape: Shape, restrict: set[int] | None) -> Choice | None:
        if shape.exclusive:
            return None
        index = self.index
        row = self.scorer.ts_row(self.sid[shape], shape, index.states)
        best: tuple[Score, UnitId] | None = None
        buckets = index.ts
        for score, state_id in row:
            if best is not None and score > best[0]:
                break
            bucket = buckets.get(state_id)
            if bucket is None:
                continue
            if restrict is None and not shape.rdma:
                uid = bucket.top()
            else:
                ok = [
                    u
                    for u in bucket.members
                    if (restrict is None or u[0] in restrict) and node_ok(index.nodes[u[0]], shape)
                ]
                uid = min(ok) if ok else None
            if uid is not None and (best is None or (score, uid) < best):
                best = (score, uid)
        opened = self._open_shared(shape, restrict)
        if opened is not None and (best is None or opened[0] < best[0]):  # a tie joins a GPU already shared
            nc = index.nodes[opened[1]]
            gpu = plan_gpus(nc, ((opened[2][0], opened[2][1], 1),))[0]
            return Choice([Slot(node=nc.name, gpu=gpu)], [Step(nc, open_gpu=gpu)])
        if best is None:
            return None
        nc, unit = index.unit(best[1])
        return Choice([Slot(node=nc.name, gpu=unit.gpu, mig_start=unit.mig_start)], [Step(nc, unit=unit)])

    def _open_shared(self, shape: Shape, restrict: set[int] | None) -> tuple[Score, int, tuple[str, int]] | None:
        """The best free full GPU of a dynamic-sharing node for a fraction to open: (score, node, domain)."""
        if shape.kind == "mig":
            return None
        sid = self.sid[shape]
        best: tuple[Score, int, tuple[str, int]] | None = None
        for (part, has_rdma, reserve), bucket in self.index.whole.items():
            if reserve is None or (shape.rdma and not has_rdma):
                continue
            scored = self.scorer.open(sid, shape, part, reserve)
            if scored is None:
                continue
            idx = self._pick(bucket.members, bucket.top(), shape, restrict)
            if idx is not None and (best is None or (scored[0], idx) < best[:2]):
                best = (scored[0], idx, scored[1])
        return best

    # -------------------------------------------------------------------------------------------- binding
    def exact_cost(self, job: Job, slots: list[Slot]) -> Cost:
        """What the job will count for quota, exactly as `engine/usage.py` counts it."""
        gpus = gib = 0.0
        for slot in slots:
            nc = self.index.by_name.get(slot.node)
            info = nc.gpus.get(slot.gpu) if nc is not None else None
            whole = slot.mig_start is None and info is not None and info.mode == "full" and not is_fractional(job)
            if whole and info is not None and info.model in self.memory:
                share, mem = 1.0, self.memory[info.model]  # a whole GPU: usage.slot_share's last case
            else:
                share, mem = slot_share(self.state.nodes.get(slot.node), slot, job)
            gpus += share
            gib += mem
        return Cost(gpus, gib)

    def _quota_block(self, job: Job, book: QueueBook, cost: Cost) -> Outcome | None:
        if book.over_limit(cost):
            return "over-limit"
        if not job.preemptible and book.nonpreemptible_over_quota(cost):
            return "nonpreemptible-over-quota"
        return None

    def _commit(self, job: Job, choice: Choice, cost: Cost) -> None:
        for step in choice.steps:
            if step.vm_gpus:
                assert job.vm is not None
                self.vms.take(job.vm, step.vm_gpus)
            elif step.gpus:
                self.index.take_whole(step.node, step.gpus, job.name)
            elif step.mig is not None:
                self.index.take_mig(step.node, step.mig[0], step.mig[1], job.name)
            elif step.unit is not None:
                self.index.take_unit(step.node, step.unit, job.name, job_unit_need(job, step.unit))
            elif step.open_gpu is not None:
                unit = self.index.open_shared(step.node, step.open_gpu)
                self.index.take_unit(step.node, unit, job.name, job_unit_need(job, unit))
        if job.request.cpus or job.request.memory_gib:
            self.resources.take(job, {s.node for s in choice.slots})
        book = self.books[job.queue]
        book.used_gpus += cost.gpus
        book.used_gib += cost.gib
        if not job.preemptible:
            book.used_np += cost.gpus
        self.binds[job.name] = choice.slots
        self.bind_cost[job.name] = cost
        self.outcome[job.name] = "bound"

    def try_bind(self, job: Job, restrict: set[int] | None = None) -> Outcome:
        shape = self.shapes[job.name]
        book = self.books[job.queue]
        blocked = self._quota_block(job, book, self.costs[job.name])
        if blocked is not None:
            return blocked
        needs = self.needs.get(job.name, NO_NEEDS)
        if restrict is None and (shape in self.failed or (needs and (shape, needs) in self.failed_needs)):
            return "no-fit"  # capacity only shrinks while jobs bind: what failed fails again
        choice = self.place(job, shape, restrict)
        if choice is None:
            if restrict is None:
                if needs:
                    self.failed_needs.add((shape, needs))
                else:
                    self.failed.add(shape)
            return "no-fit"
        cost = self.exact_cost(job, choice.slots)
        blocked = self._quota_block(job, book, cost)
        if blocked is not None:
            return blocked
        self._commit(job, choice, cost)
        return "bound"

    # -------------------------------------------------------------------------------------------- preemption
    def _victim_pool(self) -> tuple[dict[str, Job], dict[int, set[str]]]:
        """Running preemptible jobs (the only possible victims), and which of them run on each node."""
        if self._pool is None:
            jobs: dict[str, Job] = {}
            on_node: dict[int, set[str]] = {}
            by_name = self.index.by_name
            for j in self.state.jobs.values():
                if j.status != "running" or not j.preemptible or j.vm is not None:
                    continue  # a job in a VM holds GPUs no other job can use: evicting it frees nothing
                jobs[j.name] = j
                for slot in j.placement:
                    nc = by_name.get(slot.node)
                    if nc is not None and nc.idx >= 0:
                        on_node.setdefault(nc.idx, set()).add(j.name)
            self._pool = (jobs, on_node)
        return self._pool

    def _eligible_for(self, job: Job) -> Eligible:
        book = self.books[job.queue]
        reclaim = book.within_quota(self.costs[job.name])
        usage = self.state.usage
        victims = self.victims

        def eligible(victim: Job, tentative: dict[str, float]) -> bool:
            if victim.name in victims:
                return False
            if victim.queue == job.queue:
                return victim.priority < job.priority
            if not reclaim:
                return False
            vb = self.books.get(victim.queue)
            if vb is None:
                return False
            used = usage.get(victim.name)
            taken = tentative.get(victim.queue, 0.0) + (used.gpus if used is not None else 0.0)
            return vb.used_gpus - taken >= vb.quota_gpus - 1e-9

        return eligible

    def _usage_gpus(self, job: Job) -> float:
        used = self.state.usage.get(job.name)
        return used.gpus if used is not None else 0.0

    def try_preempt(self, job: Job) -> bool:
        shape = self.shapes[job.name]
        needs = self.needs.get(job.name, NO_NEEDS)
        if needs.vm is not None:
            return False  # inside a VM only its own jobs run, and they are never victims
        eligible = self._eligible_for(job)
        jobs, on_node = self._victim_pool()
        nodes = [nc for nc in self.index.nodes if any(eligible(jobs[n], {}) for n in on_node.get(nc.idx, ()))]
        if not nodes:
            return False
        if shape.nodes > 1:  # a gang also takes nodes that are free already
            nodes = self.index.nodes
        if needs.labelled:
            nodes = [nc for nc in nodes if needs.labels_match(nc.node)]
        found = find_eviction(self.index, shape, jobs, eligible, self._usage_gpus, nodes)
        if found is None:
            return False
        tentative: dict[str, float] = {}
        for v in found.victims:  # the union of a gang's victims is checked as a whole
            if not eligible(v, tentative):
                return False
            tentative[v.queue] = tentative.get(v.queue, 0.0) + self._usage_gpus(v)
        for v in found.victims:
            self.index.release(v)
            self.resources.give_back(v, {s.node for s in v.placement})
            self._unbook(v)
        outcome = self.try_bind(job, restrict=set(found.nodes))
        if outcome != "bound":
            for v in found.victims:
                self.index.hold(v)
                self.resources.take(v, {s.node for s in v.placement})
                self._book(v)
            return False
        for v in found.victims:
            self.victims[v.name] = job.name
            self.outcome[v.name] = "preempted"
        self.failed.clear()  # capacity was released
        self.failed_needs.clear()
        return True

    def _unbook(self, job: Job) -> None:
        used = self.state.usage.get(job.name)
        book = self.books.get(job.queue)
        if used is None or book is None:
            return
        book.used_gpus -= used.gpus
        book.used_gib -= used.gpu_memory_gib
        book.used_np -= used.nonpreemptible_gpus

    def _book(self, job: Job) -> None:
        used = self.state.usage.get(job.name)
        book = self.books.get(job.queue)
        if used is None or book is None:
            return
        book.used_gpus += used.gpus
        book.used_gib += used.gpu_memory_gib
        book.used_np += used.nonpreemptible_gpus

    # -------------------------------------------------------------------------------------------- run
    def run(self) -> SchedulePlan:
        t0 = time.perf_counter()
        self._collect()
        order = JobOrder(self.books, self.costs, self.fifo)
        t1 = time.perf_counter()
        while True:
            job = order.pop()
            if job is None:
                break
            self.order.append(job.name)
            self.outcome[job.name] = self.try_bind(job)
            order.advance(job.queue)
        t2 = time.perf_counter()
        tried = 0
        tried_shapes: set[tuple[Shape, str, int]] = set()
        for name in list(self.order):
            if tried >= self.max_preemptors:
                break
            job = self.state.jobs[name]
            if self.outcome.get(name) != "no-fit" or not binds_itself(job):
                continue  # gpuadmin never evicts on behalf of another scheduler's job: explain names the remedy
            if self.failed and self.shapes[name] not in self.failed and self.try_bind(job) == "bound":
                continue
            key = (self.shapes[name], job.queue, job.priority)
            if key in tried_shapes:
                continue
            tried_shapes.add(key)
            tried += 1
            if self.try_preempt(job):
                self.outcome[name] = "bound"
        if self.victims:  # evictions released capacity: give the jobs that did not fit one more try
            self.failed.clear()
            self.failed_needs.clear()
            for name in self.order:
                if self.outcome.get(name) == "no-fit":
                    self.outcome[name] = self.try_bind(self.state.jobs[name])
        t3 = time.perf_counter()
        result = self._plan()
        t4 = time.perf_counter()
        result.stats.update(
            {
                "setup_s": t1 - t0 + self.index_s,
                "allocate_s": t2 - t1,
                "preempt_s": t3 - t2,
                "plan_s": t4 - t3,
                "total_s": t4 - t0 + self.index_s,
                "tried": float(len(self.order)),
                "shapes": float(len(self.sid)),
            }
        )
        return result

    def _changes(self) -> list[ch.Change]:
        out: list[ch.Change] = [ch.PreemptJob(op="preempt-job", name=v) for v in self.victims]
        out += [ch.BindJob(op="bind-job", name=n, placement=s) for n, s in self.binds.items()]
        return out

    def verdict(self, name: str) -> Verdicts:
        """The filters' verdicts on every node for a pending job, as the cycle leaves the cluster."""
        if self.verdict_book is None:
            self.verdict_book = VerdictBook(self.index, self.resources, self.vms)
        return self.verdict_book.of(self.shapes[name], self.needs.get(name, NO_NEEDS))

    def _plan(self) -> SchedulePlan:
        self._drop_other_schedulers()
        changes = self._changes()
        result = plan(self.state, changes)
        for _ in range(len(self.binds) + 1):
            if result.allowed or not self.binds:
                break
            self._drop_refused(result.violations)
            changes = self._changes()
            result = plan(self.state, changes)
        bound = list(self.binds)
        pending = [n for n in self.order if n not in self.binds]
        pending += [n for n, o in self.outcome.items() if o == "unknown-queue"]
        return SchedulePlan(
            self.policy,
            changes,
            result,
            bound,
            list(self.victims),
            pending,
            {"binds": float(len(bound)), "evictions": float(len(self.victims))},
            self,
        )

    def _drop_other_schedulers(self) -> None:
        """Another scheduler's jobs take part in the cycle (they hold the room that scheduler would give them) but
        are not bound by gpuadmin: their binds, and the evictions made for them, are dropped."""
        for name in [n for n in self.binds if not binds_itself(self.state.jobs[n])]:
            self.binds.pop(name)
            self.outcome[name] = "other-scheduler"
        self._forget_victims_of_dropped()

    def _drop_refused(self, violations: list[Violation]) -> None:
        drop: set[str] = set()
        for v in violations:
            kind, name, _ = target_of(v.target)
            if kind == "job" and name in self.binds:
                drop.add(name)
            elif kind in ("node", "gpu"):
                drop |= {n for n, slots in self.binds.items() if any(s.node == name for s in slots)}
            elif kind == "queue":
                drop |= {n for n in self.binds if self.state.jobs[n].queue == name}
        if not drop:  # a violation we cannot attribute: bind nothing rather than something refused
            drop = set(self.binds)
        for name in drop:
            self.binds.pop(name, None)
            self.outcome[name] = "refused"
            self.refused[name] = [v for v in violations if name in v.target or name in v.message]
        self._forget_victims_of_dropped()

    def _forget_victims_of_dropped(self) -> None:
        beneficiaries = set(self.binds)
        for victim, beneficiary in list(self.victims.items()):
            if beneficiary not in beneficiaries:
                del self.victims[victim]
                self.outcome.pop(victim, None)


def schedule(
    state: ClusterState, policy: Literal["binpack", "spread"] = "binpack", workload: Workload | None = None
) -> SchedulePlan:
    """Plan one scheduling cycle over `state`'s pending jobs. Pure: the state is not changed.

    `workload` is the FGD target workload; by default it is learned from the pending and running jobs."""
    return Cycle(state, policy, workload=workload).run()


def _memo_shape(memo: dict[tuple[object, ...], Shape], job: Job) -> Shape:
    """`shape_of(job)`, computed once per distinct request: 10,000 pending jobs ask in ~180 ways. The key is every
    field `shape_of` reads."""
    req = job.request
    key = (req.gpus, req.mig, req.fraction, req.gpu_memory_gib, req.model, req.nodes, req.nvlink, req.rdma,
           job.isolation)
    found = memo.get(key)
    if found is None:
        found = memo[key] = shape_of(job)
    return found
