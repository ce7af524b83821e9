"""Why a job is pending, with the numbers, and what would make room (DESIGN §9, scheduling-anchors §7.1-2).

Every job a cycle leaves pending gets an `Explanation`: a reason code, a sentence with the figures an
operator checks ("needs 8 GPUs, 5 free"), the figures themselves, the job's position in its queue and who is
ahead, and a remedy where one exists — the preemptions that would make room, by name, or a MIG
repartitioning found by searching the catalog's valid layouts that keep every held instance and add the
requested profile ("repartition GPU 3 on node n to 3g.40gb@0, 3g.40gb@4 (no running job affected)").

The figures describe the cluster as the cycle leaves it (after its own binds and evictions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.mig import layouts_with
from gpuadmin.engine.scheduler.cycle import Cycle
from gpuadmin.engine.scheduler.fgd import unit_need, whole_fit
from gpuadmin.engine.scheduler.filters import mig_profile_name, model_ok, node_ok, shape_unit_fits
from gpuadmin.engine.scheduler.index import NodeCap
from gpuadmin.engine.scheduler.preempt import find_eviction
from gpuadmin.engine.scheduler.shape import Shape
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Job

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

    @property
    def summary(self) -> str:
        """One line for the REASON column of `get jobs`."""
        text = self.message
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
            "summary": self.summary,
        }


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


class Explainer:
    def __init__(self, cycle: Cycle) -> None:
        self.cycle = cycle
        self.index = cycle.index
        self._shape_memo: dict[Shape, _Finding] = {}
        self._repartition: dict[tuple[str, str], str | None] = {}
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
            where = ", ".join(
                f"{s.node}/gpu/{s.gpu}" + (f"@{s.mig_start}" if s.mig_start is not None else "") for s in job.placement
            )
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
        )

    # ---------------------------------------------------------------------------------------------- findings
    def _finding(self, job: Job, remedies: bool) -> _Finding:
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
        if outcome == "refused":
            violations = cycle.refused.get(job.name, [])
            text = "; ".join(f"{v.rule}: {v.message}" for v in violations) or "a rule refused its placement"
            return _Finding("refused", f"refused by the rules: {text}", {"rules": sorted({v.rule for v in violations})})
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
            else:
                cap = lim.gpu_memory_gib or 0.0
                msg = (
                    f"queue {book.name} at {_n(book.used_gib)}/{_n(cap)} GiB of GPU memory, "
                    f"limit {_n(cap)} GiB; "
                    f"the job needs {_n(cost.gib)} GiB"
                )
                details = {"used_gib": book.used_gib, "limit_gib": cap, "needs_gib": cost.gib}
            return _Finding(
                "over-limit",
                msg,
                details,
                f"raise queue {book.name}'s limit (set-quota) or wait for its jobs to finish",
                "set-quota",
            )
        if not job.preemptible and book.nonpreemptible_over_quota(cost):
            quota = book.quota_gpus
            return _Finding(
                "nonpreemptible-over-quota",
                f"non-preemptible: queue {book.name} runs {_n(book.used_np)} non-preemptible GPUs "
                f"of a deserved quota of {_n(quota)}; the job needs {_n(cost.gpus)} more",
                {"used_nonpreemptible_gpus": book.used_np, "quota_gpus": quota, "needs_gpus": cost.gpus},
                f"raise queue {book.name}'s quota (set-quota), or make the job preemptible",
                "set-quota",
            )
        shape = cycle.shapes[job.name]
        finding = self._shape_memo.get(shape)
        if finding is None:
            finding = self._fit_finding(shape)
            self._shape_memo[shape] = finding
        if (
            remedies
            and finding.remedy is None
            and finding.reason not in ("no-such-model", "no-such-profile", "fits-now")
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
                )
        return finding

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
        for nc in nodes:
            if whole_fit(nc.whole_part(), g, shape.nvlink, shape.model)[0]:
                return _Finding("fits-now", f"fits now on {nc.name}; the next cycle binds it", details)
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
        for nc in self.index.blocked:
            if not node_ok(nc, shape):
                continue
            if shape.kind == "gpus" and whole_fit(nc.whole_part(), shape.gpus, shape.nvlink, shape.model)[0]:
                return nc
            if shape.kind == "mig" and any(
                n for (m, p), n in nc.mig.items() if model_ok(shape, m) and p == mig_profile_name(m, shape.profile)
            ):
                return nc
            if shape.kind in ("fraction", "memory") and any(shape_unit_fits(u.state(), shape) for u in nc.ts_units):
                return nc
        return None

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
            if whole_fit(nc.whole_part(), g, shape.nvlink, shape.model)[0]:
                key = nc.network or "" if shape.rdma else ""
                per_net[key] = per_net.get(key, 0) + 1
        if shape.rdma and not rdma_nodes:
            return _Finding("no-rdma", f"needs RDMA; no ready{on} node has RDMA NICs", {"rdma_nodes": 0})
        found = max(per_net.values(), default=0)
        details = {"needs_nodes": n, "gpus_per_node": g, "found_nodes": found}
        if found >= n:
            return _Finding("fits-now", "fits now; the next cycle binds it", details)
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
        exist = held = shared_free = 0
        for nc in self._ready(shape):
            for info in nc.gpus.values():
                if info.model not in models:
                    continue
                prof = mig_profile_name(info.model, shape.profile)
                for start, p in info.instances.items():
                    if p != prof:
                        continue
                    exist += 1
                    unit = info.units.get(start)
                    if unit is not None:
                        held += 1
                        shared_free += unit.replicas_left > 0
                    elif info.instance_holders.get(start):
                        held += 1
        p = mig_profile_name(models[0], shape.profile) or shape.profile
        details: dict[str, Any] = {"profile": p, "instances": exist, "held": held}
        remedy = self._repartition_remedy(shape, models)
        kind = "repartition" if remedy else None
        if exist > held:
            return _Finding("fits-now", f"a free {p} instance exists; the next cycle binds it", details)
        if shape.exclusive and shared_free:
            details["time_sliced_free"] = shared_free
            return _Finding(
                "isolation",
                f"no unshared {p} instance free; {shared_free} time-sliced {p} "
                "instances have replicas left, but the job is isolation: exclusive",
                details,
                remedy,
                kind,
            )
        blocked = self._blocked_fit(shape)
        if blocked is not None:
            details["blocked_node"] = blocked.name
            return _Finding(
                "node-cordoned",
                f"no free {p} instance on ready nodes; {blocked.name} has one but is {blocked.node.state}",
                details,
                remedy or f"uncordon {blocked.name}",
                kind or "uncordon",
            )
        if exist == 0:
            return _Finding("profile-not-carved", f"no {p} instance is carved on a ready node", details, remedy, kind)
        which = "held" if exist == 1 else ("both held" if exist == 2 else "all held")
        return _Finding(
            "profile-not-carved",
            f"no free {p} instance; {exist} exist{'s' if exist == 1 else ''}, {which}",
            details,
            remedy,
            kind,
        )

    def _repartition_remedy(self, shape: Shape, models: list[str]) -> str | None:
        key = (shape.model or "", shape.profile)
        if key in self._repartition:
            return self._repartition[key]
        catalog = get_catalog()
        found: str | None = None
        for full_pass in (False, True):
            for nc in self._ready(shape):
                for gpu in sorted(nc.gpus):
                    info = nc.gpus[gpu]
                    model = catalog.model(info.model)
                    if model is None or info.model not in models or not model.mig_capable:
                        continue
                    prof = mig_profile_name(info.model, shape.profile)
                    if prof is None:
                        continue
                    if not full_pass and info.mode == "mig":
                        keep = [
                            (p, s)
                            for s, p in info.instances.items()
                            if info.instance_holders.get(s) or (s in info.units and info.units[s].holders)
                        ]
                        layouts = layouts_with(model, [prof], keep)
                        if layouts:
                            text = ", ".join(f"{p}@{s}" for p, s in layouts[0])
                            found = f"repartition GPU {gpu} on node {nc.name} to {text} (no running job affected)"
                    elif full_pass and info.mode == "full" and info.domain is not None and not info.holders:
                        layouts = layouts_with(model, [prof])
                        if layouts:
                            text = ", ".join(f"{p}@{s}" for p, s in layouts[0])
                            found = (
                                f"repartition GPU {gpu} on node {nc.name} to {text} (enable MIG; "
                                "no running job affected)"
                            )
                    if found:
                        break
                if found:
                    break
            if found:
                break
        self._repartition[key] = found
        return found

    def _unit_finding(self, shape: Shape) -> _Finding:
        on = f" {shape.model}" if shape.model else ""
        units = [(nc, u) for nc in self._ready(shape) for u in nc.ts_units if model_ok(shape, u.model)]
        desc = shape.describe()
        if shape.exclusive:
            return _Finding("isolation", f"needs {desc}, but isolation: exclusive never shares a GPU", {})
        if not units:
            remedy = None
            for nc in self._ready(shape):
                for gpu in sorted(nc.gpus):
                    info = nc.gpus[gpu]
                    if (
                        info.mode == "full"
                        and info.domain is not None
                        and not info.holders
                        and model_ok(shape, info.model)
                    ):
                        remedy = f"set GPU {gpu} on node {nc.name} to time-sliced (no running job affected)"
                        break
                if remedy:
                    break
            return _Finding(
                "capacity",
                f"needs {desc}; no ready node has a time-sliced{on} GPU",
                {"time_sliced_units": 0},
                remedy,
                "set-mode" if remedy else None,
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
        if any(shape_unit_fits(u.state(), shape) for _, u in units):
            return _Finding("fits-now", "fits now; the next cycle binds it", details)
        blocked = self._blocked_fit(shape)
        if blocked is not None:
            return _Finding(
                "node-cordoned",
                f"needs {desc}; {blocked.name} has room but is {blocked.node.state}",
                details,
                f"uncordon {blocked.name}",
                "uncordon",
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
        cycle = self.cycle
        jobs = {
            j.name: j
            for j in cycle.state.jobs.values()
            if j.status == "running" and j.preemptible and j.name not in cycle.victims
        }
        found = find_eviction(self.index, shape, jobs, lambda v, t: True, cycle._usage_gpus)
        return [v.name for v in found.victims] if found is not None else []


def explain_pending(cycle: Cycle, names: list[str]) -> dict[str, Explanation]:
    explainer = Explainer(cycle)
    return {n: explainer.explain(n, remedies=False) for n in names}


def explain_job(cycle: Cycle, name: str, remedies: bool = True) -> Explanation:
    return Explainer(cycle).explain(name, remedies=remedies)


def explain(state: ClusterState, job_name: str, policy: str = "binpack") -> Explanation:
    """Why `job_name` is pending (or where it runs), after one dry scheduling cycle over `state`."""
    from gpuadmin.engine.scheduler.cycle import schedule

    result = schedule(state, "spread" if policy == "spread" else "binpack")
    return result.explanation(job_name)
