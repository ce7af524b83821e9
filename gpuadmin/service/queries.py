"""The reading use cases: listings, descriptions, boards, the overview, the journal, scheduling dry-runs and
why jobs wait."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from gpuadmin.engine.scheduler import Explanation, SchedulePlan, explain, schedule
from gpuadmin.engine.state import View
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.inventory import MAX_GPU_INDEX, MAX_SEQ, decimal_at_most
from gpuadmin.render.board import node_board
from gpuadmin.render.describe import (
    describe_entry,
    describe_gpu,
    describe_job,
    describe_node,
    describe_queue,
    history,
)
from gpuadmin.render.overview import cluster_overview
from gpuadmin.render.rows import JOURNAL, LISTINGS, Listing, Row, age_text, journal_row
from gpuadmin.render.selector import Selector, Term, check_keys, parse_selector
from gpuadmin.service.caller import use_case
from gpuadmin.service.core import ServiceCore
from gpuadmin.service.results import Moved, Table
from gpuadmin.store import (
    JournalEntry,
)

Policy = Literal["binpack", "spread"]
_NODE_LISTINGS = ("nodes", "gpus", "groups")
# keys of the per-revision cache; why-pending/2 holds each reason's remedy too (a cache of the earlier form,
# code and text only, is never read as this one)
_REASONS_KEY, _OVERVIEW_KEY = "why-pending/2", "overview"
_NOT_WAITING = ("-", "-", "-")  # REASON, MESSAGE, REMEDY of a job no cycle explains


class Queries(ServiceCore):
    """The reading use cases (a viewer may do all of them)."""

    # reading ----------------------------------------------------------------------------------
    @use_case("read")
    def journal(self, limit: int | None = None) -> list[JournalEntry]:
        return self.store.journal(limit) if self.store is not None else []

    @use_case("read")
    def get(self, kind: str, *, name: str | None = None, selector: str | None = None, reasons: bool = True,
            specs: bool = False, now: datetime | None = None) -> Table:
        """One listing: its rows (only `name`'s, or those `selector` picks), read at one revision.

        Job rows carry why a pending job waits (computed once per revision) unless `reasons` is off: REASON its
        stable code (`over-limit`, `capacity`, ... `schedulable`), MESSAGE the sentence with figures and remedy,
        REMEDY the remedy alone;
        and their AGE at `now` (the front end's clock; the current time where not given);
        `specs` adds each row's full object (nodes, jobs, queues) for JSON and YAML output."""
        listing = JOURNAL if kind == "journal" else LISTINGS.get(kind)
        if listing is None:
            raise InputError([Diagnostic(f"unknown listing {kind!r}; known: {', '.join([*LISTINGS, 'journal'])}")])
        executions: dict[int | None, list[dict[str, Any]]] = {}  # a journal entry's steps on the cluster, by its ID
        if kind == "journal":
            revision = self.revision()
            entries = self.journal()
            rows = [journal_row(e) for e in entries]
            executions = {e.id: e.execution for e in entries if e.execution}
            view = None
        else:
            view = View(self._holding_state()) if kind in _NODE_LISTINGS else self.view()
            revision = view.revision
            make_rows = listing.rows
            assert make_rows is not None
            rows = list(make_rows(view))
            if kind == "jobs":
                why = self._why_pending() if reasons else {}
                requests: dict[str, str] = {}  # 100,000 rows repeat a few dozen request texts: keep one each
                clock = now or datetime.now(UTC)
                for row in rows:
                    row["REASON"], row["MESSAGE"], row["REMEDY"] = why.get(row["NAME"], _NOT_WAITING)
                    row["REQUEST"] = requests.setdefault(row["REQUEST"], row["REQUEST"])
                    row["AGE"] = age_text(row["SUBMITTED"], clock)
        if name is not None:
            rows = [r for r in rows if str(r.get(listing.key)) == name]
            if not rows:
                raise InputError([Diagnostic(f"{listing.kind} {name!r} not found")])
        if selector:
            rows = self._select(kind, listing, rows, parse_selector(selector))
        spec_of: Callable[[Row], Any] | None = None
        if specs:
            tables: dict[str, Any] = {} if view is None else {"nodes": view.node, "jobs": view.job,
                                                             "queues": view.queue}
            lookup = tables.get(kind)

            def spec_of(row: Row) -> Any:
                if view is None:  # a journal entry: the steps a change executed on the cluster made
                    steps = executions.get(row["ID"])
                    return {"execution": steps} if steps else None
                entity = lookup(row["NAME"]) if lookup is not None else None
                return entity.model_dump(mode="json", exclude_none=True) if entity is not None else None

        return Table(kind, listing, revision, rows, spec_of)

    def _select(self, kind: str, listing: Listing, rows: list[Row], terms: tuple[Term, ...]) -> list[Row]:
        """Rows a selector picks: node labels on listings of node things, else the row's columns."""
        labels = self.labels_by_node() if kind in (*_NODE_LISTINGS, "slices") else {}
        columns = {*listing.columns, *listing.wide, *(rows[0] if rows else ())}
        check_keys(terms, columns, {key for node_labels in labels.values() for key in node_labels})
        selector = Selector(terms)
        return [r for r in rows if selector.matches(r, labels.get(str(r.get("NODE", r.get("NAME"))), {}))]

    @use_case("read")
    def changes_since(self, revision: int) -> Moved:
        """Has the state moved past `revision`, and what did it touch: a live view's cheap check."""
        if self.store is None:
            return Moved(self.state.revision)
        current, touched = self.store.changed_since(revision)
        return Moved(current, touched)

    @use_case("read")
    def describe(self, kind: str, name: str, now: datetime | None = None) -> dict[str, Any]:
        """One entity described; a node, job or queue with its history from the journal (`events`, newest
        first, bounded), a pending job with why it waits (`pending`: the explanation, as `explain` gives it)."""
        view = self.view()
        clock = now or datetime.now(UTC)
        found: dict[str, Any] | None = None
        if kind == "node":
            node = view.node(name)
            found = describe_node(view, node) if node is not None else None
        elif kind == "gpu":
            node_name, _, index = name.rpartition("/")
            node = view.node(node_name)
            gpu_index = decimal_at_most(index, MAX_GPU_INDEX)
            gpu = node.gpu(gpu_index) if node is not None and gpu_index is not None else None
            if node is not None and gpu is not None:
                return describe_gpu(view, node, gpu)
        elif kind == "job":
            job = view.job(name)
            if job is not None:
                waits = job.status in ("pending", "preempted")
                found = describe_job(view, job, self.explain(name).to_json() if waits else None)
                found["summary"]["age"] = age_text(found["summary"]["submitted"], clock)
        elif kind == "queue":
            queue = view.queue(name)
            found = describe_queue(view, queue) if queue is not None else None
        elif kind == "entry":
            entry_id = decimal_at_most(name, MAX_SEQ)
            entry = self.store.entry(entry_id) if self.store is not None and entry_id is not None else None
            if entry is not None:
                return describe_entry(entry)
        if found is not None:
            touching = self.store.touching(kind, name) if self.store is not None else []
            found["events"] = history(touching, kind, name, clock)
            return found
        hint = " (write a GPU as NODE/INDEX, e.g. gpu-h100-01/3)" if kind == "gpu" else ""
        raise InputError([Diagnostic(f"{kind} {name!r} not found{hint}")])

    @use_case("read")
    def node_board(self, name: str) -> dict[str, Any]:
        """A node as the console draws it (its GPUs' slices and holders, device groups, NVLink, NICs)."""
        view = self.view()
        node = view.node(name)
        if node is None:
            raise InputError([Diagnostic(f"node {name!r} not found")])
        return node_board(view, node)

    @use_case("read")
    def boards(self) -> list[dict[str, Any]]:
        """Every node's board, for the topology view."""
        view = View(self._holding_state())
        return [node_board(view, node) for node in view.nodes()]

    @use_case("read")
    def overview(self, *, reasons: bool = True) -> dict[str, Any]:
        """The first screen: GPUs by mode and use, nodes by state, jobs by status (and pending jobs by
        reason unless `reasons` is off: they may need a scheduling cycle), queues over quota. Kept in the
        state's cache per revision, so a console opens on it with one read instead of loading the state."""
        revision = self.revision()
        cached = self.store.derived(_OVERVIEW_KEY, revision) if self.store is not None else None
        if cached is not None and (cached["pending_by_reason"] is not None or not reasons):
            return dict(cached)
        data = cluster_overview(self.view(), self.pending_reason_codes() if reasons else None)
        if self.store is not None and self.state.revision == revision:
            self.store.save_derived(_OVERVIEW_KEY, revision, data)
        return data

    # scheduling ---------------------------------------------------------------------------------
    @use_case("plan")
    def schedule(self, policy: Policy = "binpack") -> SchedulePlan:
        """One scheduling cycle as a plan (bind-job / preempt-job changes); nothing is written."""
        return schedule(self.state, policy)

    @use_case("read")
    def explain(self, job: str, policy: Policy = "binpack") -> Explanation:
        if job not in self.state.jobs:
            raise InputError([Diagnostic(f"job {job!r} not found")])
        return explain(self.state, job, policy)

    @use_case("read")
    def pending_reasons(self) -> dict[str, str]:
        """Job → the one-line reason it waits (the MESSAGE column), from a dry-run cycle."""
        return {job: summary for job, (_, summary, _) in self._why_pending().items()}

    @use_case("read")
    def pending_reason_codes(self) -> dict[str, str]:
        """Job → the stable code of why it waits (capacity, over-limit, ...; `schedulable`)."""
        return {job: code for job, (code, _, _) in self._why_pending().items()}

    @use_case("read")
    def reasons_ready(self) -> bool:
        """Whether this revision's reasons are at hand without running a cycle (the console asks before it
        shows them, and computes them in the background otherwise)."""
        revision = self.revision()
        if self._reasons is not None and self._reasons[0] == revision:
            return True
        return self.store is not None and self.store.derived(_REASONS_KEY, revision) is not None

    def _why_pending(self) -> dict[str, tuple[str, str, str]]:
        """Computed once per revision: kept in memory, and in the state's cache so the next process reads it."""
        revision = self.revision()
        if self._reasons is not None and self._reasons[0] == revision:
            return self._reasons[1]
        cached = self.store.derived(_REASONS_KEY, revision) if self.store is not None else None
        if cached is not None:
            # stored as the distinct reasons and each job's index into them: ~100,000 pending jobs share a
            # few hundred reasons, and this form loads in a fraction of the memory
            distinct = [(str(code), str(summary), str(remedy)) for code, summary, remedy in cached["distinct"]]
            why = {job: distinct[i] for job, i in cached["by_job"].items()}
        else:
            why = self._compute_reasons()
            if self.store is not None and self.state.revision == revision:
                index: dict[tuple[str, str, str], int] = {}
                by_job = {job: index.setdefault(reason, len(index)) for job, reason in why.items()}
                self.store.save_derived(_REASONS_KEY, revision, {"distinct": list(index), "by_job": by_job})
        self._reasons = (revision, why)
        return why

    def _compute_reasons(self) -> dict[str, tuple[str, str, str]]:
        """Job → (the reason's code, its one-line summary, its remedy or "-")."""
        if not any(j.status in ("pending", "preempted") for j in self.state.jobs.values()):
            return {}
        cycle = self.schedule()
        distinct: dict[tuple[str, str, str], tuple[str, str, str]] = {}  # one tuple per distinct reason, not per job
        reasons = {}
        for name, e in cycle.explanations.items():
            why = (e.reason, e.summary, e.remedy or "-")
            reasons[name] = distinct.setdefault(why, why)
        schedulable = ("schedulable", "schedulable: the next cycle places it", "-")
        reasons.update({name: schedulable for name in cycle.bound})
        return reasons

