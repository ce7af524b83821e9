"""Why a job is pending, with the numbers, and what would make room (DESIGN §9, scheduling-anchors §7.1-2).

Every job a cycle leaves pending gets an `Explanation`: a reason code, a sentence with the figures an
operator checks ("needs 8 GPUs, 5 free"), the figures themselves, the job's position in its queue and who is
ahead, and a remedy where one exists — the preemptions that would make room, by name, or a MIG
repartitioning found by searching the catalog's valid layouts that keep every held instance and add the
requested profile ("repartition GPU 3 on node n to 3g.40gb@0, 3g.40gb@4 (no running job affected)").

The figures describe the cluster as the cycle leaves it (after its own binds and evictions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.rules.device_groups import nvlink_domain
from gpuadmin.engine.scheduler.cycle import Cycle
from gpuadmin.engine.scheduler.fgd import unit_need
from gpuadmin.engine.scheduler.filters import gpu_status, mig_profile_name, model_ok, node_ok
from gpuadmin.engine.scheduler.index import NodeCap
from gpuadmin.engine.scheduler.node_filters import NO_NEEDS, UNTOLERATED_TAINT, NodeNeeds
from gpuadmin.engine.scheduler.preempt import find_eviction
from gpuadmin.engine.scheduler.repartition import repartition_remedy
from gpuadmin.engine.scheduler.shape import Shape
from gpuadmin.engine.scheduler.verdicts import Verdicts
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Job
from gpuadmin.model.places import slice_place

AHEAD_SHOWN = 5


@dataclass(frozen=True)
class Explanation:
    job: str
    queue: str
    status: str  # pending | running | completed | schedulable
    reason: str  # a stable code, e.g. over-limit, capacity, fragmentation, profile-not-carved
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    remedy: str | None = None
    remedy_kind: str | None = None  # preempt | repartition | set-mode | set-quota | None
    victims: tuple[str, ...] = ()
    queue_position: int | None = None  # 1-based, among the queue's pending jobs in the cycle's order
    cluster_position: int | None = None
    ahead: tuple[str, ...] = ()  # the first jobs ahead in the same queue
    ahead_count: int = 0
    nodes: str | None = None  # kube-scheduler's summary: "0/12 nodes fit: 9 cordoned, 2 time-sliced only, ..."
    as_of: str = "now"  # "now", or what the cycle did first when the figures are the cluster as it leaves it
    remedy_changes: tuple[dict[str, Any], ...] = ()  # the change ops of the remedy, checked by planning them

    @property
    def summary(self) -> str:
        """One line for the MESSAGE column of `get jobs`: the node summary, the nearest miss, the remedy."""
        text = f"{self.nodes}; {self.message}" if self.nodes else self.message
        if self.remedy:
            text += f"; remedy: {self.remedy}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "queue": self.queue,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "details": self.details,
            "remedy": self.remedy,
            "remedy_kind": self.remedy_kind,
            "victims": list(self.victims),
            "queue_position": self.queue_position,
            "cluster_position": self.cluster_position,
            "ahead": list(self.ahead),
            "ahead_count": self.ahead_count,
            "nodes": self.nodes,
            "as_of": self.as_of,
            "remedy_changes": list(self.remedy_changes),
            "summary": self.summary,
        }


def _place(state: ClusterState, node_name: str, gpu_index: int, start: int | None) -> str:
    node = state.nodes.get(node_name)
    gpu = node.gpu(gpu_index) if node is not None else None
    found = [i.profile for i in (gpu.mig or ()) if i.start == start] if gpu is not None and start is not None else []
    return slice_place(node_name, gpu_index, start, found[0] if found else None)


def _n(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if abs(x - round(x)) > 1e-9 else str(round(x))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass
class _Finding:
    reason: str
    message: str
    details: dict[str, Any]
    remedy: str | None = None
    remedy_kind: str | None = None
    changes: tuple[dict[str, Any], ...] = ()  # the remedy as change ops (empty: a remedy no plan can check)


class Explainer:
    def __init__(self, cycle: Cycle) -> None:
        self.cycle = cycle
        self.index = cycle.index
        self._shape_memo: dict[Shape, _Finding] = {}
        self._repartition: dict[tuple[str, str], tuple[str, tuple[dict[str, Any], ...]] | None] = {}
        self._never_memo: dict[Shape, _Finding | None] = {}
        self._caps: list[tuple[tuple[Any, ...], int]] | None = None
        bound, evicted = len(cycle.binds), len(cycle.victims)
        self.as_of = "now" if not (bound or evicted) else (
            "the cluster as this cycle leaves it, after it "
            + " and ".join(w for w in (f"binds {_plural(bound, 'job')}" if bound else "",
                                       f"preempts {_plural(evicted, 'job')}" if evicted else "") if w)
            + ", not as it is now")
        self._positions: dict[str, tuple[int, int, list[str]]] = {}
        per_queue: dict[str, list[str]] = {}
        pending = [n for n in cycle.order if n not in cycle.binds]
        for pos, name in enumerate(pending, start=1):
            queue = cycle.state.jobs[name].queue
            ahead = per_queue.setdefault(queue, [])
            self._positions[name] = (len(ahead) + 1, pos, ahead[:AHEAD_SHOWN])
            ahead.append(name)

    # ---------------------------------------------------------------------------------------------- entry
    def explain(self, name: str, remedies: bool = True) -> Explanation:
        cycle = self.cycle
        job = cycle.state.jobs.get(name)
        if job is None:
            raise KeyError(f"job {name!r} does not exist")
        if job.status == "running":
            where = ", ".join(_place(cycle.state, s.node, s.gpu, s.mig_start) for s in job.placement)
            return Explanation(name, job.queue, "running", "running", f"running on {where}")
        if job.status == "completed":
            return Explanation(name, job.queue, "completed", "completed", "completed")
        if name in cycle.binds:
            slots = cycle.binds[name]
            victims = tuple(v for v, b in cycle.victims.items() if b == name)
            where = ", ".join(sorted({s.node for s in slots}))
            text = f"this cycle binds it on {where}"
            if victims:
                text += f" after preempting {', '.join(victims)}"
            return Explanation(
                name,
                job.queue,
                "schedulable",
                "bound",
                text,
                {"nodes": sorted({s.node for s in slots})},
                victims=victims,
            )
        finding = self._finding(job, remedies)
        qpos, cpos, ahead = self._positions.get(name, (None, None, []))
        ahead_count = (qpos - 1) if qpos is not None else 0
        named: tuple[str, ...] = tuple(finding.details.get("victims", ()))
        nodes = None
        if name in cycle.shapes and finding.reason not in ("unknown-queue", "refused"):
            nodes = cycle.verdict(name).summary
        return Explanation(
            name,
            job.queue,
            "pending",
            finding.reason,
            finding.message,
            finding.details,
            finding.remedy,
            finding.remedy_kind,
            named,
            qpos,
            cpos,
            tuple(ahead),
            ahead_count,
            nodes,
            self.as_of,
            finding.changes,
        )

    # ---------------------------------------------------------------------------------------------- findings
    def _settled_finding(self, job: Job) -> _Finding | None:
        """What the cycle's outcome alone says of a job: its queue does not exist, another scheduler places it,
        or the rules refused its placement; None when its capacity and queue must be looked at."""
        cycle = self.cycle
        outcome = cycle.outcome.get(job.name)
        if outcome == "unknown-queue" or job.queue not in cycle.books:
            return _Finding(
                "unknown-queue",
                f"queue {job.queue} does not exist",
                {"queue": job.queue},
                "submit the job to an existing queue, or add the queue",
                "add-queue",
            )
        if outcome == "other-scheduler":
            return _Finding(
                "other-scheduler",
                f"scheduled by {job.scheduler}, not gpuadmin: it fits now ({cycle.verdict(job.name).summary}), and "
                f"gpuadmin reads it, explains it and never binds it; {job.scheduler} places it",
                {"scheduler": job.scheduler},
            )
        if outcome == "refused":
            violations = cycle.refused.get(job.name, [])
            text = "; ".join(f"{v.rule}: {v.message}" for v in violations) or "a rule refused its placement"
            return _Finding("refused", f"refused by the rules: {text}", {"rules": sorted({v.rule for v in violations})})
        return None

    def _finding(self, job: Job, remedies: bool) -> _Finding:
        cycle = self.cycle
        settled = self._settled_finding(job)
        if settled is not None:
            return settled
        shape = cycle.shapes[job.name]
        never = self._never_fits(shape)
        if never is not None:
            return never
        book = cycle.books[job.queue]
        cost = cycle.costs[job.name]
        lim = book.queue.limit
        if book.over_limit(cost) and lim is not None:
            if lim.gpus is not None and book.used_gpus + cost.gpus > lim.gpus + 1e-9:
                msg = (
                    f"queue {book.name} at {_n(book.used_gpus)}/{_n(lim.gpus)} GPUs, limit {_n(lim.gpus)}; "
                    f"the job needs {_n(cost.gpus)}"
                )
                details = {"used_gpus": book.used_gpus, "limit_gpus": lim.gpus, "needs_gpus": cost.gpus}
                can_wait = cost.gpus <= lim.gpus + 1e-9
                raised = lim.model_copy(update={"gpus": math.ceil(book.used_gpus + cost.gpus - 1e-9)})
                to = f" to {raised.gpus} GPUs"
            else:
                cap = lim.gpu_memory_gib or 0.0
                msg = (
                    f"queue {book.name} at {_n(book.used_gib)}/{_n(cap)} GiB of GPU memory, "
                    f"limit {_n(cap)} GiB; "
                    f"the job needs {_n(cost.gib)} GiB"
                )
                details = {"used_gib": book.used_gib, "limit_gib": cap, "needs_gib": cost.gib}
                can_wait = cost.gib <= cap + 1e-9
                raised = lim.model_copy(update={"gpu_memory_gib": math.ceil(book.used_gib + cost.gib - 1e-9)})
                to = f" to {_n(raised.gpu_memory_gib or 0)} GiB"
            if not can_wait:  # waiting cannot help: the job alone is over the limit
                msg += ", more than the limit itself: it cannot run until the limit is raised"
            if not self._room(job):  # no node has room now: a higher limit alone would not place it
                msg += "; no node has room for it now either"
                return _Finding("over-limit", msg, details,
                                "wait for its queue's running jobs to finish" if can_wait else None,
                                "wait" if can_wait else None)
            return _Finding(
                "over-limit",
                msg,
                details,
                f"raise queue {book.name}'s limit{to} (set-quota)"
                + (", or wait for its running jobs to finish" if can_wait else ""),
                "set-quota",
                ({"op": "set-quota", "queue": book.name, "limit": raised.model_dump(exclude_none=True)},),
            )
        if not job.preemptible and book.nonpreemptible_over_quota(cost):
            quota = book.quota_gpus
            if not self._room(job):
                return _Finding(
                    "nonpreemptible-over-quota",
                    f"non-preemptible: queue {book.name} runs {_n(book.used_np)} non-preemptible GPUs "
                    f"of a deserved quota of {_n(quota)}; the job needs {_n(cost.gpus)} more; no node has room "
                    "for it now either",
                    {"used_nonpreemptible_gpus": book.used_np, "quota_gpus": quota, "needs_gpus": cost.gpus},
                )
            new_quota = book.queue.quota.model_copy(
                update={"gpus": math.ceil(book.used_np + cost.gpus - 1e-9)})
            return _Finding(
                "nonpreemptible-over-quota",
                f"non-preemptible: queue {book.name} runs {_n(book.used_np)} non-preemptible GPUs "
                f"of a deserved quota of {_n(quota)}; the job needs {_n(cost.gpus)} more",
                {"used_nonpreemptible_gpus": book.used_np, "quota_gpus": quota, "needs_gpus": cost.gpus},
                f"raise queue {book.name}'s quota to {new_quota.gpus} GPUs (set-quota), or make the job "
                "preemptible",
                "set-quota",
                ({"op": "set-quota", "queue": book.name, "quota": new_quota.model_dump(exclude_none=True)},),
            )
        needs = cycle.needs.get(job.name, NO_NEEDS)
        if needs:
            found = self._needs_finding(job, shape, needs)
            if found is not None:
                return found
        finding = self._shape_memo.get(shape)
        if finding is None:
            finding = self._fit_finding(shape)
            self._shape_memo[shape] = finding
        finding = self._with_fenced(job, finding)
        if (
            remedies
            and needs.vm is None  # inside a VM only its own jobs run, and they are never victims
            and finding.remedy is None
            and finding.reason not in ("no-such-model", "no-such-profile")
        ):
            victims = self._preemption_remedy(job, shape)
            if victims:
                names = ", ".join(victims)
                return _Finding(
                    finding.reason,
                    finding.message,
                    {**finding.details, "victims": victims},
                    f"preempting {names} would make room (preempt-job)",
                    "preempt",
                    tuple({"op": "preempt-job", "name": v} for v in victims),
                )
        return finding

    def _with_fenced(self, job: Job, finding: _Finding) -> _Finding:
        """The finding, saying too how many nodes the filters found short because of GPUs fenced as unhealthy
        (their `unhealthy` verdicts: read, never worked out again here)."""
        fenced = self.cycle.verdict(job.name).count("unhealthy")
        if not fenced:
            return finding
        return replace(
            finding,
            message=f"{finding.message}; {_plural(fenced, 'node')} would have room but for GPUs fenced as "
                    "unhealthy",
            details={**finding.details, "nodes_short_by_fenced_gpus": fenced})

    # ---------------------------------------------------------------------------------------------- never
    def _never_fits(self, shape: Shape) -> _Finding | None:
        """A request no node of the cluster could ever host as it is built (whatever runs, whatever its
        state or its GPUs' modes): no amount of waiting helps. Memoised per shape."""
        if shape.kind != "gpus":
            return None
        if shape in self._never_memo:
            return self._never_memo[shape]
        found = self._never_fits_uncached(shape)
        self._never_memo[shape] = found
        return found

    def _never_fits_uncached(self, shape: Shape) -> _Finding | None:
        on = f" {shape.model}" if shape.model else ""
        g, n = shape.gpus, shape.nodes
        best = 0
        per_net: dict[str, int] = {}
        for (network, per_model, per_domain), many in self._capacities():
            if shape.rdma and network is None:
                continue
            if shape.nvlink and g >= 2:
                most = max((c for (m, _), c in per_domain if model_ok(shape, m)), default=0)
            else:
                most = sum(c for m, c in per_model if model_ok(shape, m))
            best = max(best, most)
            if most >= g:
                net = (network or "") if shape.rdma else ""
                per_net[net] = per_net.get(net, 0) + many
        found = max(per_net.values(), default=0)
        if found >= n or best == 0:  # best 0: no such model or no RDMA node, said by its own reason
            return None
        where = "NVLink domain" if shape.nvlink and g >= 2 else "node"
        if best < g:
            message = (f"no {where} has {g}{on} GPUs (the largest has {best}): it can never run as requested; "
                       f"resubmit it asking for at most {best} per {where}")
        else:
            message = (f"needs {n} nodes with {g}{on} GPUs{' on one RDMA network' if shape.rdma else ''}; "
                       f"the cluster has {found}: it can never run as requested")
        return _Finding("unsatisfiable", message, {"needs_gpus": g, "needs_nodes": n, "largest": best,
                                                   "nodes_big_enough": found})

    def _capacities(self) -> list[tuple[tuple[Any, ...], int]]:
        """Each node's GPUs by model and by (model, NVLink domain), whatever their state or mode, grouped:
        what no waiting changes (computed once per cycle)."""
        if self._caps is None:
            caps: dict[tuple[Any, ...], int] = {}
            for nc in (*self.index.nodes, *self.index.blocked):
                per_model: dict[str, int] = {}
                per_domain: dict[tuple[str, int], int] = {}
                for gpu in nc.node.gpus:
                    info = nc.gpus.get(gpu.index)
                    if info is None:
                        continue
                    per_model[info.model] = per_model.get(info.model, 0) + 1
                    key = (info.model, nvlink_domain(nc.node, gpu.index))
                    per_domain[key] = per_domain.get(key, 0) + 1
                cap = (nc.network, tuple(sorted(per_model.items())), tuple(sorted(per_domain.items())))
                caps[cap] = caps.get(cap, 0) + 1
            self._caps = list(caps.items())
        return self._caps

    def _needs_finding(self, job: Job, shape: Shape, needs: NodeNeeds) -> _Finding | None:
        """The reason when the node-level filters alone keep the job off every node that has room for its
        GPUs, read from the cycle's verdicts; None where some node passes them (the GPU findings then say the
        rest)."""
        cycle = self.cycle
        verdicts = cycle.verdict(job.name)
        asks = {"cpus": needs.cpus, "memory_gib": needs.memory_gib}
        if needs.vm is not None:
            host = cycle.vms.host.get(needs.vm)
            nc = self.index.by_name.get(host) if host is not None else None
            if nc is None:
                return _Finding("vm-not-found", f"VM {needs.vm} is on no node", {"vm": needs.vm})
            if nc.node.state != "ready":
                return _Finding(f"node-{nc.node.state}", f"VM {needs.vm} runs on {nc.name}, which is "
                                f"{nc.node.state}", {"vm": needs.vm, "node": nc.name},
                                f"uncordon {nc.name}" if nc.node.state == "cordoned" else None)
            why = next((st for st, _ in verdicts.misfits if st.code != "vm-host"), None)
            if why is None:
                return None
            free = len(cycle.vms.free.get(needs.vm, ()))
            return _Finding("node-resources" if why.code == "node-resources" else "vm-capacity",
                            f"needs {_plural(shape.gpus, 'GPU')} in VM {needs.vm} on {nc.name}: {why.reason} "
                            f"({free} of the VM's {cycle.vms.total.get(needs.vm, 0)} GPUs free)",
                            {"vm": needs.vm, "node": nc.name, "free_vm_gpus": free, **asks})
        ready = self.index.nodes
        unlabelled, short = verdicts.count("node-selector"), verdicts.count("node-resources")
        tainted = verdicts.count(UNTOLERATED_TAINT)
        if tainted and (unlabelled + short + tainted == len(ready) or any(gpu_status(nc, shape).fits
                                                                         for nc in ready)):
            return self._taint_finding(verdicts, len(ready), tainted == len(ready))
        if unlabelled == len(ready):
            return _Finding("node-selector", f"no ready node matches its node selector/affinity "
                            f"({len(ready)} ready)", {"ready_nodes": len(ready)},
                            "label a node to match, or change the job's node_selector / node_affinity")
        if unlabelled + short == len(ready):
            labelled = [nc.name for nc in ready if not needs.labelled or needs.labels_match(nc.node)]
            most_cpus = max((cycle.resources.cpus.get(name) or 0.0 for name in labelled), default=0.0)
            most_mem = max((cycle.resources.memory.get(name) or 0.0 for name in labelled), default=0.0)
            return _Finding("node-resources", f"needs {_n(needs.cpus)} CPUs and {_n(needs.memory_gib)} GiB of "
                            f"memory on a node; of the {len(labelled)} ready nodes it may use, the most free are "
                            f"{_n(most_cpus)} CPUs and {_n(most_mem)} GiB",
                            {**asks, "most_free_cpus": most_cpus, "most_free_memory_gib": most_mem})
        if any(gpu_status(nc, shape).fits for nc in ready):
            passing = len(ready) - unlabelled - short
            return _Finding("node-selector", f"GPUs are free only on nodes its node selector/affinity or its "
                            f"CPU and memory request rule out ({passing} of {len(ready)} ready nodes pass "
                            "them)", {**asks, "nodes_passing": passing})
        return None

    def _taint_finding(self, verdicts: Verdicts, ready: int, every: bool) -> _Finding:
        """The taint filter keeps the job off the ready nodes that have room for it (`every`: off every ready
        node): the taints, as the filter named them in its verdicts (read, never worked out again here)."""
        taints = [(status.reason, n) for status, n in verdicts.misfits if status.code == UNTOLERATED_TAINT]
        said = "; ".join(f"{_plural(n, 'node')}: {reason}" for reason, n in taints)
        message = (f"every ready node has a taint it does not tolerate ({said})" if every else
                   f"GPUs are free only on nodes its node-level filters rule out; of {_plural(ready, 'ready node')}, "
                   f"{_plural(sum(n for _, n in taints), 'node')} have a taint it does not tolerate ({said})")
        return _Finding(UNTOLERATED_TAINT, message,
                        {"ready_nodes": ready, "untolerated_taints": {reason: n for reason, n in taints}},
                        "give the job a toleration of the taint (its pods' spec.tolerations), or take the taint off a "
                        "node (kubectl taint nodes NODE KEY-)")

    def _room(self, job: Job) -> bool:
        """Whether enough nodes pass the filters now for a quota change alone to let the job run."""
        return self.cycle.verdict(job.name).fit >= self.cycle.shapes[job.name].nodes

    def _models(self, shape: Shape) -> list[str]:
        return [shape.model] if shape.model else sorted(self.index.models_present)

    def _fit_finding(self, shape: Shape) -> _Finding:
        catalog = get_catalog()
        if shape.model is not None:
            if catalog.model(shape.model) is None:
                return _Finding(
                    "no-such-model",
                    f"model {shape.model} is not in the catalog",
                    {"model": shape.model},
                    "request a catalog model (gpuadmin describe)",
                )
            if shape.model not in self.index.models_present:
                return _Finding("no-such-model", f"no node has {shape.model} GPUs", {"model": shape.model})
        if shape.kind == "gpus":
            return self._gang_finding(shape) if shape.nodes > 1 else self._whole_finding(shape)
        if shape.kind == "mig":
            return self._mig_finding(shape)
        return self._unit_finding(shape)

    def _ready(self, shape: Shape) -> list[NodeCap]:
        return [nc for nc in self.index.nodes if node_ok(nc, shape)]

    def _whole_finding(self, shape: Shape) -> _Finding:
        g = shape.gpus
        on = f" {shape.model}" if shape.model else ""
        if shape.rdma and not any(
            nc.network is not None and any(model_ok(shape, i.model) for i in nc.gpus.values())
            for nc in self.index.nodes
        ):
            return _Finding("no-rdma", f"needs RDMA; no ready{on} node has RDMA NICs", {"rdma_nodes": 0})
        nodes = self._ready(shape)
        free = sum(nc.free_whole(shape.model) for nc in nodes)
        details: dict[str, Any] = {"needs_gpus": g, "free_gpus": free}
        if free < g:
            blocked = self._blocked_fit(shape)
            if blocked is not None:
                details["blocked_node"] = blocked.name
                return _Finding(
                    "node-cordoned",
                    f"needs {g}{on} GPUs, {free} free on ready nodes; it would fit on {blocked.name}, "
                    f"which is {blocked.node.state}",
                    details,
                    f"uncordon {blocked.name}",
                    "uncordon",
                    ({"op": "uncordon", "node": blocked.name},),
                )
            shared = sum(
                1
                for nc in nodes
                for u in nc.ts_units
                if u.mig_start is None and not u.holders and model_ok(shape, u.model)
            )
            if free + shared >= g and shared:
                details["idle_time_sliced_gpus"] = shared
                return _Finding(
                    "isolation",
                    f"needs {_plural(g, f'whole{on} GPU')}, {free} free; {_plural(shared, 'more idle GPU')} "
                    f"{'is' if shared == 1 else 'are'} time-sliced (shared), which whole-GPU jobs do "
                    "not take",
                    details,
                )
            return _Finding("capacity", f"needs {g}{on} GPU{'s' if g != 1 else ''}, {free} free", details)
        if shape.nvlink and g >= 2:
            best = max(
                (c for nc in nodes for d, gl in nc.domains.items() if model_ok(shape, d[0]) for c in [len(gl)]),
                default=0,
            )
            details["max_in_one_domain"] = best
            return _Finding("fragmentation", f"{free}{on} GPUs free, at most {best} in one NVLink domain", details)
        best = max((nc.free_whole(shape.model) for nc in nodes), default=0)
        details["max_on_one_node"] = best
        return _Finding("fragmentation", f"{free}{on} GPUs free, at most {best} on one node", details)

    def _blocked_fit(self, shape: Shape) -> NodeCap | None:
        """A cordoned node whose GPUs pass the filters. Never a down node (only a repair brings one back), nor a
        draining one (it is being emptied on purpose)."""
        return next((nc for nc in self.index.blocked if nc.node.state == "cordoned" and gpu_status(nc, shape).fits),
                    None)

    def _gang_finding(self, shape: Shape) -> _Finding:
        g, n = shape.gpus, shape.nodes
        on = f" {shape.model}" if shape.model else ""
        per_net: dict[str, int] = {}
        rdma_nodes = 0
        for nc in self.index.nodes:
            if shape.rdma and nc.network is None:
                continue
            has_model = any(model_ok(shape, i.model) for i in nc.gpus.values())
            rdma_nodes += has_model
            if gpu_status(nc, shape).fits:
                key = nc.network or "" if shape.rdma else ""
                per_net[key] = per_net.get(key, 0) + 1
        if shape.rdma and not rdma_nodes:
            return _Finding("no-rdma", f"needs RDMA; no ready{on} node has RDMA NICs", {"rdma_nodes": 0})
        found = max(per_net.values(), default=0)
        details = {"needs_nodes": n, "gpus_per_node": g, "found_nodes": found}
        kind = "RDMA nodes" if shape.rdma else "nodes"
        where = " on one network" if shape.rdma else ""
        return _Finding("gang-incomplete", f"needs {n} {kind} with {g} free{on} GPUs{where}, {found} found", details)

    def _mig_finding(self, shape: Shape) -> _Finding:
        models = [m for m in self._models(shape) if mig_profile_name(m, shape.profile) is not None]
        if not models:
            where = shape.model or "GPU model in the cluster"
            return _Finding(
                "no-such-profile", f"no {where} has a MIG profile {shape.profile}", {"profile": shape.profile}
            )
        exist = free = shared_free = 0  # instances carved, offered whole (none: the filters found no node)
        for nc in self._ready(shape):
            for model in models:
                free += len(nc.mig.get((model, mig_profile_name(model, shape.profile) or ""), ()))
            for info in nc.gpus.values():
                prof = mig_profile_name(info.model, shape.profile) if info.model in models else None
                exist += sum(1 for p in info.instances.values() if p == prof)
                shared_free += sum(1 for u in info.units.values() if u.profile == prof and u.replicas_left > 0)
        held = exist - free
        p = mig_profile_name(models[0], shape.profile) or shape.profile
        details: dict[str, Any] = {"profile": p, "instances": exist, "held": held}
        key = (shape.model or "", shape.profile)
        if key not in self._repartition:
            self._repartition[key] = repartition_remedy(self._ready(shape), models, shape.profile)
        remedy, changes = self._repartition[key] or (None, ())
        kind = "repartition" if changes else None  # no changes: the search stopped at its cap
        if shape.exclusive and shared_free:
            details["time_sliced_free"] = shared_free
            return _Finding(
                "isolation",
                f"no unshared {p} instance free; {shared_free} time-sliced {p} "
                "instances have replicas left, but the job is exclusive",
                details,
                remedy,
                kind,
                changes,
            )
        blocked = self._blocked_fit(shape)
        if blocked is not None:
            details["blocked_node"] = blocked.name
            return _Finding(
                "node-cordoned",
                f"no free {p} instance on ready nodes; {blocked.name} has one but is {blocked.node.state}",
                details,
                remedy if changes else f"uncordon {blocked.name}",
                kind or "uncordon",
                changes or ({"op": "uncordon", "node": blocked.name},),
            )
        if exist == 0:
            return _Finding("profile-not-carved", f"no {p} instance is carved on a ready node", details, remedy, kind,
                            changes)
        which = "held" if exist == 1 else ("both held" if exist == 2 else "all held")
        return _Finding(
            "profile-not-carved",
            f"no free {p} instance; {exist} exist{'s' if exist == 1 else ''}, {which}",
            details,
            remedy,
            kind,
            changes,
        )

    def _unit_finding(self, shape: Shape) -> _Finding:
        on = f" {shape.model}" if shape.model else ""
        units = [(nc, u) for nc in self._ready(shape) for u in nc.ts_units if model_ok(shape, u.model)]
        desc = shape.describe()
        if shape.exclusive:
            return _Finding("isolation", f"needs {desc}, but isolation: exclusive never shares a GPU", {})
        if not units:
            remedy = None
            changes: tuple[dict[str, Any], ...] = ()
            for nc in self._ready(shape):
                for gpu in sorted(nc.gpus):
                    info = nc.gpus[gpu]
                    if (
                        info.mode == "full"
                        and info.domain is not None
                        and not info.holders
                        and model_ok(shape, info.model)
                    ):
                        remedy = f"set {nc.name}/{gpu} to time-sliced, 4 replicas (no running job affected)"
                        changes = ({"op": "set-mode", "node": nc.name, "gpu": gpu, "mode": "time-sliced",
                                    "replicas": 4},)
                        break
                if remedy:
                    break
            return _Finding(
                "capacity",
                f"needs {desc}; no ready node has a time-sliced{on} GPU",
                {"time_sliced_units": 0},
                remedy,
                "set-mode" if remedy else None,
                changes,
            )
        with_replica = [(nc, u) for nc, u in units if u.replicas_left > 0]
        largest = max((u.residual for _, u in with_replica), default=0.0)
        need = max((unit_need(shape.fraction, shape.gib, u.memory_gib) for _, u in units), default=0.0)
        details = {
            "time_sliced_units": len(units),
            "with_replica_left": len(with_replica),
            "largest_free_share": round(largest, 6),
            "needs_share": round(need, 6),
        }
        blocked = self._blocked_fit(shape)
        if blocked is not None:
            return _Finding(
                "node-cordoned",
                f"needs {desc}; {blocked.name} has room but is {blocked.node.state}",
                details,
                f"uncordon {blocked.name}",
                "uncordon",
                ({"op": "uncordon", "node": blocked.name},),
            )
        if not with_replica:
            return _Finding(
                "capacity",
                f"needs {desc}; all replicas of the {len(units)} time-sliced{on} GPUs are taken",
                details,
            )
        return _Finding(
            "capacity",
            f"needs {desc}; the largest unreserved share is {largest:.3g} ({len(units)} time-sliced{on} GPUs)",
            details,
        )

    def _preemption_remedy(self, job: Job, shape: Shape) -> list[str]:
        """The running jobs an operator could preempt to make room: any preemptible one (an operator is not
        bound by the scheduler's priority and reclaim rules), but only on nodes the job's labels allow, as
        try_preempt — evicting a job elsewhere would free nothing it can use."""
        cycle = self.cycle
        jobs = {
            j.name: j
            for j in cycle.state.jobs.values()
            if j.status == "running" and j.preemptible and j.name not in cycle.victims
        }
        needs = cycle.needs.get(job.name, NO_NEEDS)
        nodes = [nc for nc in self.index.nodes if needs.labels_match(nc.node)] if needs.labelled else None
        found = find_eviction(self.index, shape, jobs, _any_victim, cycle._usage_gpus, nodes)
        return [v.name for v in found.victims] if found is not None else []


def _any_victim(_victim: Job, _tentative: dict[str, float]) -> bool:
    return True


def explain_pending(cycle: Cycle, names: list[str]) -> dict[str, Explanation]:
    explainer = Explainer(cycle)
    return {n: explainer.explain(n, remedies=False) for n in names}


def explain_job(cycle: Cycle, name: str, remedies: bool = True) -> Explanation:
    return Explainer(cycle).explain(name, remedies=remedies)


def explain(state: ClusterState, job_name: str, policy: str = "binpack", check_remedy: bool = True) -> Explanation:
    """Why `job_name` is pending (or where it runs), after one dry scheduling cycle over `state`.

    A remedy is offered only when planning it works: its changes are planned on a copy of the state (the
    rules must allow them) and a cycle on the result must bind the job; otherwise it is dropped and
    `details.remedy_rejected` says why."""
    from gpuadmin.engine.scheduler.cycle import schedule

    pol: Literal["binpack", "spread"] = "spread" if policy == "spread" else "binpack"
    result = schedule(state, pol)
    found = result.explanation(job_name)
    if not check_remedy or found.status != "pending" or not found.remedy:
        return found
    why = _remedy_fails(state, job_name, found.remedy_changes, pol) if found.remedy_changes else None
    if found.remedy_changes and why is None:
        return replace(found, details={**found.details, "remedy_checked": "planned: the rules allow it and a "
                                       "cycle after it binds the job"})
    if not found.remedy_changes and found.remedy_kind in (None, "wait"):
        return found
    return replace(found, remedy=None, remedy_kind=None, remedy_changes=(), victims=(),
                   details={**{k: v for k, v in found.details.items() if k != "victims"},
                            "remedy_rejected": f"{found.remedy}: {why or 'no change to check'}"})


def _remedy_fails(state: ClusterState, job_name: str, changes: tuple[dict[str, Any], ...],
                  policy: Literal["binpack", "spread"]) -> str | None:
    """Why planning a remedy does not make the job fit (None: it does)."""
    from gpuadmin.engine import changes as ch
    from gpuadmin.engine.planner import plan
    from gpuadmin.engine.scheduler.cycle import schedule

    copy = ClusterState.from_inventory(state.to_inventory(), revision=state.revision)
    the_plan = plan(copy, ch.CHANGE_LIST.validate_python(list(changes), strict=False))
    if not the_plan.allowed:
        return "refused by " + ", ".join(sorted({v.rule for v in the_plan.violations}))
    copy.commit(the_plan.view)
    # the job alone: other pending jobs (and those the remedy evicts) aside — they would compete for the room
    # the remedy makes, and the question is whether it makes room for this job
    inventory = copy.to_inventory()
    alone = [j for j in inventory.jobs if j.name == job_name or j.status not in ("pending", "preempted")]
    after = schedule(ClusterState.from_inventory(inventory.model_copy(update={"jobs": alone})), policy)
    if job_name not in after.bound:
        return "the job still does not fit after it"
    return None
