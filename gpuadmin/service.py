"""The one API both front ends call: load, get, describe, plan, apply, undo, schedule, explain, watch.

A `Service` works either on a state directory (SQLite, journaled, locked) or on an inventory file in
memory (`--inventory`: what-if runs; nothing is persisted). Permissions are decided here, in
`check_action`, before any lock is taken or anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gpuadmin import adapters
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import EntityDiff, Plan, inverse, plan
from gpuadmin.engine.rules import Touched, Violation, check
from gpuadmin.engine.scheduler import Explanation, SchedulePlan, explain, schedule
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Inventory, Node
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.render.describe import describe_gpu, describe_job, describe_node, describe_queue
from gpuadmin.render.rows import LISTINGS, Row, journal_row
from gpuadmin.store import (
    JournalEntry,
    LockHeld,
    StaleRevision,
    Store,
    dump_inventory,
    load_inventory,
    login_identity,
)
from gpuadmin.store.changes_io import load_changes
from gpuadmin.store.state_db import Outcome, Verdict

Role = Literal["viewer", "operator", "admin"]
Policy = Literal["binpack", "spread"]
ROLES: tuple[Role, ...] = ("viewer", "operator", "admin")

# What each action needs. Anything that writes needs at least an operator; reshaping the cluster's
# inventory or its queues needs an admin.
_ACTION_ROLE: dict[str, Role] = {
    "read": "viewer",
    "plan": "viewer",
    "apply": "operator",
    "undo": "operator",
    "schedule": "operator",
    "init": "admin",
}
_NODE_LISTINGS = ("nodes", "gpus", "groups")
_ADMIN_OPS = {"add-node", "remove-node", "add-queue", "remove-queue", "set-quota"}


class NotPermitted(Exception):
    """The role may not do this (exit 4)."""


class Conflict(Exception):
    """Stale plan or held lock (exit 3); the message names the holder or the revisions."""


class Refused(Exception):
    """The plan has violations (exit 1)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(f"plan refused: {len(plan.violations)} violation(s)")
        self.plan = plan


def check_action(role: Role, action: str, changes: Sequence[ch.Change] = ()) -> None:
    """The single permission check of both front ends."""
    need: Role = _ACTION_ROLE[action]
    if action in ("apply", "schedule") and any(c.op in _ADMIN_OPS for c in changes):
        need = "admin"
    if ROLES.index(role) < ROLES.index(need):
        raise NotPermitted(f"role {role} may not {action}" + (
            f" ({', '.join(sorted({c.op for c in changes if c.op in _ADMIN_OPS}))})"
            if need == "admin" and changes else "") + f": it needs {need}")


@dataclass
class ApplyResult:
    plan: Plan
    revision: int


def whole_state_touched(state: ClusterState) -> Touched:
    return Touched(
        nodes=set(state.nodes),
        gpus={(n.name, g.index) for n in state.nodes.values() for g in n.gpus},
        jobs=set(state.jobs),
        queues=set(state.queues),
    )


def check_state(state: ClusterState) -> list[Violation]:
    """Every rule on every entity: what `validate` and `init` run on a whole inventory."""
    return check(View(state), whole_state_touched(state))


class Service:
    def __init__(self, *, state_dir: Path | None = None, inventory: Path | None = None,
                 role: Role = "admin", command: str = "gpuadmin") -> None:
        if (state_dir is None) == (inventory is None):
            raise ValueError("a Service works on a state directory or on an inventory, not both")
        self.role = role
        self.command = command
        self.inventory_path = inventory
        self.store: Store | None = Store.open(state_dir) if state_dir is not None else None
        self._state: ClusterState | None = None
        self._nodes_state: ClusterState | None = None  # nodes and holders only, for node listings

    # loading ----------------------------------------------------------------------------------
    @staticmethod
    def init(state_dir: Path, inventory_path: Path, *, role: Role = "admin", force: bool = False) -> int:
        """Create a state from an inventory; refuses one that breaks a rule. Returns the revision."""
        check_action(role, "init")
        inventory = load_inventory(inventory_path)
        violations = check_state(ClusterState.from_inventory(inventory))
        if violations:
            raise Refused(_standalone_plan(inventory, violations))
        return Store.create(state_dir, inventory, force=force).revision()

    @property
    def state(self) -> ClusterState:
        if self._state is None:
            if self.store is not None:
                self._state = self.store.load()
            else:
                assert self.inventory_path is not None
                self._state = ClusterState.from_inventory(load_inventory(self.inventory_path))
        return self._state

    def revision(self) -> int:
        return self.store.revision() if self.store is not None else self.state.revision

    def refresh(self) -> bool:
        """Reload if another console applied since; True when the state changed (the TUI's watch)."""
        if self.store is not None and self._state is not None and self.store.revision() != self._state.revision:
            self._state = None
            return True
        return False

    # planning ---------------------------------------------------------------------------------
    def load_changes(self, path: Path) -> list[ch.Change]:
        return load_changes(path)

    def plan(self, changes: Sequence[ch.Change]) -> Plan:
        check_action(self.role, "plan")
        return plan(self.state, changes)

    def apply(self, the_plan: Plan, *, expected_hash: str | None = None) -> ApplyResult:
        """Persist an allowed plan. Re-checks against the current revision under the write lock."""
        check_action(self.role, "apply", the_plan.changes)
        if self.store is None:
            if not the_plan.allowed:
                raise Refused(the_plan)
            self.state.commit(the_plan.view)
            return ApplyResult(the_plan, self.state.revision)
        try:
            with self.store.write_lock(login_identity(), self.command):
                current = self.store.revision()
                if current != the_plan.base_revision:
                    self._record(the_plan, "stale", f"plan is for revision {the_plan.base_revision}, "
                                 f"state is at {current}")
                    raise Conflict(f"stale plan: it was made at revision {the_plan.base_revision}, the state "
                                   f"is now at revision {current}; plan again")
                if self._state is None or self._state.revision != current:
                    self._state = None
                fresh = plan(self.state, the_plan.changes)
                if expected_hash is not None and fresh.hash != expected_hash:
                    self._record(fresh, "stale", "saved plan no longer matches")
                    raise Conflict("the saved plan no longer matches what these changes do now; plan again")
                if not fresh.allowed:
                    self._record(fresh, "refused", f"{len(fresh.violations)} violation(s)")
                    raise Refused(fresh)
                entry = self._entry(fresh, "allowed", "applied", "")
                try:
                    revision = self.store.commit(fresh.base_revision, fresh.view, entry)
                except StaleRevision as stale:
                    raise Conflict(str(stale)) from stale
                self.state.commit(fresh.view)
                return ApplyResult(fresh, revision)
        except LockHeld as held:
            self._record(the_plan, "lock-held", str(held))
            raise Conflict(str(held)) from held

    def _entry(self, the_plan: Plan, verdict: Verdict, outcome: Outcome, message: str) -> JournalEntry:
        return JournalEntry.new(self.command, the_plan.base_revision, verdict=verdict, outcome=outcome,
                                plan=the_plan.to_json(), diff=[d.to_json() for d in the_plan.diff],
                                message=message)

    def _record(self, the_plan: Plan, outcome: Outcome, message: str) -> None:
        if self.store is not None:
            verdict: Verdict = "allowed" if the_plan.allowed else "refused"
            self.store.record(self._entry(the_plan, verdict, outcome, message))

    def record_refusal(self, the_plan: Plan) -> None:
        """Journal a plan that was refused by the rules at `apply` time."""
        self._record(the_plan, "refused", f"{len(the_plan.violations)} violation(s)")

    def undo_plan(self, to_revision: int | None = None) -> Plan:
        """The inverse of the last applied entry, or of every entry after `to_revision`."""
        check_action(self.role, "plan")
        if self.store is None:
            raise InputError([Diagnostic("undo needs a state directory (--state), not --inventory")])
        entries = [e for e in self.store.journal() if e.outcome == "applied" and e.revision is not None]
        if to_revision is None:
            undone = entries[-1:]
        else:
            undone = [e for e in entries if e.revision is not None and e.revision > to_revision]
        if not undone:
            raise InputError([Diagnostic("nothing to undo" + (
                f" after revision {to_revision}" if to_revision is not None else ""))])
        # The earliest entry's `before` of each entity is what it was at `to_revision`.
        first_before: dict[tuple[str, str], EntityDiff] = {}
        for entry in undone:
            for raw in entry.diff or ():
                key = (raw["kind"], raw["name"])
                first_before.setdefault(key, EntityDiff(raw["kind"], raw["name"], raw["before"], raw["after"],
                                                       raw.get("seq")))
        return self.plan(inverse(first_before.values()))

    # reading ----------------------------------------------------------------------------------
    def journal(self, limit: int | None = None) -> list[JournalEntry]:
        check_action(self.role, "read")
        return self.store.journal(limit) if self.store is not None else []

    def view(self) -> View:
        return View(self.state)

    def get(self, kind: str, *, reasons: bool = True) -> tuple[list[Row], list[Any]]:
        """The rows of a listing, and each row's full object where it has one (nodes, jobs, queues).

        Job rows carry the REASON a pending job waits, from a dry-run cycle, unless `reasons` is off."""
        check_action(self.role, "read")
        if kind == "journal":
            entries = self.journal()
            return [journal_row(e) for e in entries], [None] * len(entries)
        view = View(self._nodes_only_state()) if kind in _NODE_LISTINGS else self.view()
        make_rows = LISTINGS[kind].rows
        assert make_rows is not None
        rows = list(make_rows(view))
        if kind == "jobs" and reasons:
            why = self.pending_reasons()
            for row in rows:
                row["REASON"] = why.get(row["NAME"], "-")
        tables: dict[str, Any] = {"nodes": view.node, "jobs": view.job, "queues": view.queue}
        lookup = tables.get(kind)
        if lookup is None:
            return rows, [None] * len(rows)
        specs = []
        for row in rows:
            entity = lookup(row["NAME"])
            specs.append(entity.model_dump(mode="json", exclude_none=True) if entity is not None else None)
        return rows, specs

    def _nodes_only_state(self) -> ClusterState:
        """Nodes and who holds each GPU, without parsing every job: enough for the node and GPU listings."""
        if self._state is not None or self.store is None:
            return self.state
        if self._nodes_state is None or self._nodes_state.revision != self.store.revision():
            nodes = self.store.load_nodes()
            self._nodes_state = ClusterState(cluster=self.store.cluster(), revision=self.store.revision(),
                                             nodes={n.name: n for n in nodes}, holders=self.store.load_holders())
        return self._nodes_state

    def labels_by_node(self) -> dict[str, dict[str, str]]:
        return {n.name: n.labels for n in self._nodes_only_state().nodes.values()}

    def describe(self, kind: str, name: str) -> dict[str, Any]:
        check_action(self.role, "read")
        view = self.view()
        if kind == "node":
            node = view.node(name)
            if node is not None:
                return describe_node(view, node)
        elif kind == "gpu":
            node_name, _, index = name.rpartition("/")
            node = view.node(node_name)
            gpu = node.gpu(int(index)) if node is not None and index.isdigit() else None
            if node is not None and gpu is not None:
                return describe_gpu(view, node, gpu)
        elif kind == "job":
            job = view.job(name)
            if job is not None:
                return describe_job(view, job)
        elif kind == "queue":
            queue = view.queue(name)
            if queue is not None:
                return describe_queue(view, queue)
        hint = " (write a GPU as NODE/INDEX, e.g. gpu-h100-01/3)" if kind == "gpu" else ""
        raise InputError([Diagnostic(f"{kind} {name!r} not found{hint}")])

    # scheduling ---------------------------------------------------------------------------------
    def schedule(self, policy: Policy = "binpack") -> SchedulePlan:
        """One scheduling cycle as a plan (bind-job / preempt-job changes); nothing is written."""
        check_action(self.role, "plan")
        return schedule(self.state, policy)

    def explain(self, job: str, policy: Policy = "binpack") -> Explanation:
        check_action(self.role, "read")
        if job not in self.state.jobs:
            raise InputError([Diagnostic(f"job {job!r} not found")])
        return explain(self.state, job, policy)

    def pending_reasons(self) -> dict[str, str]:
        """Job → the one-line reason it waits (the REASON column), from a dry-run cycle."""
        if not any(j.status in ("pending", "preempted") for j in self.state.jobs.values()):
            return {}
        cycle = self.schedule()
        reasons = {name: e.summary for name, e in cycle.explanations.items()}
        reasons.update({name: "schedulable: the next cycle places it" for name in cycle.bound})
        return reasons

    # importing and exporting --------------------------------------------------------------------
    def import_changes(self, nodes: Sequence[Node]) -> list[ch.Change]:
        """Imported nodes as changes: `add-node` for a new one, `restore` (replace) for a known one."""
        check_action(self.role, "read")
        out: list[ch.Change] = []
        for node in nodes:
            if self.state.nodes.get(node.name) is None:
                out.append(ch.AddNode(op="add-node", node=node))
            else:
                out.append(ch.Restore(op="restore", kind="node", name=node.name, node=node))
        return out

    def export(self, kind: str, **options: Any) -> Any:
        """What `gpuadmin export KIND` prints: plain data (dicts and lists), or YAML text for `inventory`."""
        check_action(self.role, "read")
        nodes = list(self.state.nodes.values())
        if kind == "inventory":
            return dump_inventory(self.state.to_inventory())
        if kind == "mig-parted":
            return adapters.export_mig_parted(nodes)
        if kind == "device-plugin":
            return adapters.export_device_plugin(nodes, warnings=options.get("warnings"))
        if kind == "labels":
            return adapters.export_labels(nodes)
        if kind == "pods":
            return adapters.export_pods(list(self.state.jobs.values()), nodes, warnings=options.get("warnings"),
                                        queue_system=options.get("queue_system", "none"))
        if kind == "queues":
            return adapters.export_queues(list(self.state.queues.values()), fmt=options.get("fmt", "all"))
        raise InputError([Diagnostic(f"unknown export {kind!r}")])


def _standalone_plan(inventory: Inventory, violations: list[Violation]) -> Plan:
    state = ClusterState.from_inventory(inventory)
    result = plan(state, [])
    result.violations = violations
    return result


def plan_from_json(path: Path) -> tuple[list[ch.Change], str, int]:
    """A saved plan: its changes, hash and base revision (apply re-plans them and compares)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        changes = ch.CHANGE_LIST.validate_python(data["changes"], strict=False)
        return changes, str(data["hash"]), int(data["base_revision"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError([Diagnostic(f"not a saved gpuadmin plan: {exc}", file=str(path))]) from exc


__all__ = ["ApplyResult", "Conflict", "NotPermitted", "Refused", "Role", "Service", "check_action"]
