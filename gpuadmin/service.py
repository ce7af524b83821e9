"""The one API both front ends call: load, get, describe, plan, apply, undo, schedule, explain, watch.

A `Service` works either on a state directory (SQLite, journaled, locked) or on an inventory file in
memory (`--inventory`: what-if runs; nothing is persisted). Permissions are decided here, in
`check_action`, before any lock is taken or anything is written. The role is who you are (the login identity
and its groups, through the roles file: `gpuadmin.store.roles`); a role asked for can only lower it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuadmin.catalog import get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.mig import free_starts
from gpuadmin.engine.planner import EntityDiff, Plan, inverse, plan, released_slots
from gpuadmin.engine.rules import Touched, Violation, check
from gpuadmin.engine.scheduler import Explanation, SchedulePlan, explain, schedule
from gpuadmin.engine.state import ClusterState, SlotKey, View
from gpuadmin.errors import ExitCode, GpuadminError
from gpuadmin.model import Inventory, Node
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.inventory import DEFAULT_RESERVED_GIB, MAX_GPU_INDEX, MAX_SEQ, decimal_at_most
from gpuadmin.render.board import node_board
from gpuadmin.render.describe import describe_entry, describe_gpu, describe_job, describe_node, describe_queue
from gpuadmin.render.overview import cluster_overview
from gpuadmin.render.plan import violation_lines
from gpuadmin.render.rows import JOURNAL, LISTINGS, Listing, Row, age_text, journal_row
from gpuadmin.render.selector import Selector, Term, check_keys, parse_selector
from gpuadmin.store import (
    JournalEntry,
    LockHeld,
    StaleRevision,
    Store,
    dump_inventory,
    inventory_data,
    load_inventory,
    load_model_file,
    login_identity,
)
from gpuadmin.store.changes_io import load_changes, located_in
from gpuadmin.store.identity import user_name
from gpuadmin.store.plan_files import read_plan_file, write_plan_file
from gpuadmin.store.roles import ROLES, Role, RoleDecision, lower, role_ceiling
from gpuadmin.store.shared import make_shared_dir
from gpuadmin.store.state_db import Outcome, Verdict

Policy = Literal["binpack", "spread"]

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
_REASONS_KEY, _OVERVIEW_KEY = "why-pending", "overview"  # keys of the per-revision cache
# NVIDIA's mig-parted default config (Apache-2.0), shipped for the named layouts the MIG form offers
MIG_PARTED_DEFAULTS = Path(__file__).resolve().parent / "samples" / "mig-parted-config-default.yaml"
_ADMIN_OPS = {"add-node", "remove-node", "add-queue", "remove-queue", "set-quota", "repair-node"}
# What a plan may only do with an admin, whichever op does it (`restore`, which undo and import are made of,
# can do any of them): add or remove a node, change a queue, or change a node's inventory facts.
_NODE_FACTS = ("platform", "orchestrator", "shape", "cpus", "memory_gib", "rdma", "labels", "nvlink", "vsphere")
_GPU_FACTS = ("index", "model", "not_in_catalog")


class NotPermitted(GpuadminError):
    """The role may not do this (exit 4)."""

    exit_code = ExitCode.NOT_PERMITTED
    label = "not permitted"


class Conflict(GpuadminError):
    """Stale plan or held lock (exit 3); the message names the holder or the revisions."""

    exit_code = ExitCode.CONFLICT
    label = "conflict"


class Stale(Conflict):
    """The plan was made on a state that has since moved under it (exit 3): plan again. A front end can
    re-plan and show it again; a held lock (plain `Conflict`) is a different matter."""


class Refused(GpuadminError):
    """The plan has violations (exit 1)."""

    exit_code = ExitCode.REFUSED
    label = "refused"

    def __init__(self, plan: Plan) -> None:
        super().__init__(f"plan refused: {len(plan.violations)} violation(s)")
        self.plan = plan

    def lines(self) -> list[str]:
        return ["gpuadmin: refused by the rules:", *violation_lines(self.plan.to_json()["violations"])]


class NotConfirmed(GpuadminError):
    """The operator did not give the confirmation a plan asks for (exit 130: nothing was done)."""

    exit_code = ExitCode.INTERRUPTED
    label = "not applied"


def check_action(role: Role, action: str, changes: Sequence[ch.Change] = (),
                 diff: Sequence[EntityDiff] = ()) -> None:
    """The single permission check of both front ends: `changes` are the plan's ops, `diff` what it does."""
    need: Role = _ACTION_ROLE[action]
    reasons = admin_reasons(changes, diff) if action in ("apply", "schedule") else []
    if reasons:
        need = "admin"
    if ROLES.index(role) < ROLES.index(need):
        raise NotPermitted(f"role {role} may not {action}" + (f" ({', '.join(reasons)})" if reasons else "")
                           + f": it needs {need}")


def admin_reasons(changes: Sequence[ch.Change], diff: Sequence[EntityDiff] = ()) -> list[str]:
    """Why a plan needs an admin: its admin ops, else what its diff does to nodes and queues (empty: it doesn't)."""
    ops: list[str] = sorted({c.op for c in changes if c.op in _ADMIN_OPS})
    if any(isinstance(c, ch.PreemptJob) and c.override for c in changes):
        ops.append("preempt-job with override (of a non-preemptible job)")
    if ops:
        return ops
    verb = {"add": "adds", "remove": "removes", "modify": "changes"}
    reasons: list[str] = []
    for d in diff:
        if d.kind == "queue":
            reasons.append(f"{verb[d.action]} queue {d.name}")
        elif d.kind == "node" and d.action != "modify":
            reasons.append(f"{verb[d.action]} node {d.name}")
        elif d.kind == "node" and _facts(d.before) != _facts(d.after):
            reasons.append(f"changes the inventory facts of node {d.name}")
        elif d.kind == "node" and _down(d.before) and not _down(d.after):
            reasons.append(f"brings node {d.name} back from down (what repair-node does)")
    return reasons[:3] + ([f"and {len(reasons) - 3} more"] if len(reasons) > 3 else [])


def _down(node: dict[str, Any] | None) -> bool:
    return node is not None and node.get("state") == "down"


def _facts(node: dict[str, Any] | None) -> tuple[Any, ...]:
    if node is None:
        return ()
    gpus = [tuple(g.get(k) for k in _GPU_FACTS) for g in node.get("gpus") or ()]
    return (*(node.get(k) for k in _NODE_FACTS), gpus)


@dataclass
class ApplyResult:
    plan: Plan
    revision: int


@dataclass(frozen=True)
class Confirmation:
    """What applying a plan asks of an operator: a yes, or for a destructive plan the name it hits, typed."""

    destructive: bool
    token: str
    prompt: str

    def accepts(self, answer: str) -> bool:
        answer = answer.strip()
        if self.destructive:
            return answer == self.token
        return answer.lower() in ("y", "yes")


def confirmation(the_plan: Plan) -> Confirmation:
    if the_plan.destructive:
        what = []
        if the_plan.effects.evicted:
            what.append(f"evicts {len(the_plan.effects.evicted)} running job(s)")
        removed = sum(1 for d in the_plan.diff if d.action == "remove")
        if removed:
            what.append(f"removes {removed}")
        if any(c.op == "drain" for c in the_plan.changes):
            what.append("drains")
        if the_plan.vgpus_lost:
            what.append(f"takes {the_plan.vgpus_lost} vGPU(s) from their VMs")
        token = the_plan.confirmation_token
        return Confirmation(True, token, f"This plan {', '.join(what)}. Type {token!r} to apply: ")
    return Confirmation(False, "yes", "Apply this plan? [y/N] ")


@dataclass(frozen=True)
class Table:
    """A listing as both front ends get it: its columns, its rows (pure data) and the revision read."""

    kind: str
    listing: Listing
    revision: int
    rows: list[Row]
    # each row's full object (nodes, jobs, queues) when asked for: made per row as it is written, so 100,000
    # of them are never all in memory at once
    spec_of: Callable[[Row], Any] | None = None

    def columns(self, wide: bool = False) -> tuple[str, ...]:
        return self.listing.columns + (self.listing.wide if wide else ())


@dataclass(frozen=True)
class Moved:
    """What changed since a revision a live view last showed: the new revision and the entities touched."""

    revision: int
    touched: set[tuple[str, str]] = field(default_factory=set)


Intent = dict[str, Any]  # journaled with an undo or redo: {"undoes": [entry ids]} or {"redoes": entry id}


@dataclass(frozen=True)
class Reversal:
    """An undo or redo: its plan, the intent the journal records, and what it reverts, in words."""

    plan: Plan
    intent: Intent
    description: str


def _entry_label(entry: JournalEntry) -> str:
    ops = [c.get("op", "?") for c in (entry.plan or {}).get("changes", [])]
    what = ", ".join(sorted(set(ops))) or "change"
    return f"entry {entry.id} (revision {entry.revision}: {what} by {entry.actor})"


@dataclass(frozen=True)
class SavedPlan:
    """What a plan file holds (`plan --save`): its changes, their hash, the revision and the state (lineage) it
    was made on, and who made it (the file's owner, which its recorded author must agree with)."""

    changes: list[ch.Change]
    hash: str
    base_revision: int
    lineage: str | None  # None: made on an inventory in memory (`--inventory`)
    author_uid: int
    author: str


@dataclass(frozen=True)
class ReadyPlan:
    """A saved plan re-planned on the current state, with the hash it must still have and whose it is."""

    plan: Plan
    hash: str
    author: str
    author_uid: int
    foreign: bool  # another user made it: the front end says so, with its diff, before applying it


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
    lock_wait: float = 5.0  # seconds `apply` waits for another writer's lock before it gives up (exit 3)

    def __init__(self, *, state_dir: Path | None = None, inventory: Path | None = None,
                 role: Role | None = None, command: str = "gpuadmin") -> None:
        """`role` can only lower the role the login identity has on the state (`roles.role_ceiling`)."""
        if (state_dir is None) == (inventory is None):
            raise ValueError("a Service works on a state directory or on an inventory, not both")
        self.decision: RoleDecision = role_ceiling(login_identity(), state_dir)
        self.role: Role = lower(self.decision.role, role)
        self.command = command
        self.inventory_path = inventory
        self.store: Store | None = Store.open(state_dir) if state_dir is not None else None
        self._state: ClusterState | None = None
        self._holding: ClusterState | None = None  # nodes and the jobs holding GPUs, for node listings
        self._reasons: tuple[int, dict[str, tuple[str, str]]] | None = None  # revision, job → (code, text)

    # loading ----------------------------------------------------------------------------------
    @staticmethod
    def init(state_dir: Path, inventory_path: Path, *, role: Role | None = None, force: bool = False,
             shared_group: str | None = None, others_read: bool = True, take_over: bool = False) -> int:
        """Create a state from an inventory; refuses one that breaks a rule. Returns the revision.

        `shared_group`: a state for that group's operators (a set-group-id, group-writable directory; see
        `gpuadmin.store.shared`), which others may read unless `others_read` is off; in a directory of the
        caller's, or (`take_over`, root only) an empty one of another user's that becomes root's."""
        check_action(lower(role_ceiling(login_identity(), state_dir).role, role), "init")
        inventory = load_inventory(inventory_path)
        violations = check_state(ClusterState.from_inventory(inventory))
        if violations:
            raise Refused(_standalone_plan(inventory, violations))
        if shared_group is not None:
            make_shared_dir(state_dir, shared_group, others_read=others_read, take_over=take_over)
        with Store.create(state_dir, inventory, force=force) as store:
            return store.revision()

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

    @staticmethod
    def build_changes(items: Sequence[dict[str, Any]]) -> list[ch.Change]:
        """Change ops from plain data, as a change file holds them (`{"op": "cordon", "node": ...}`): what
        the console's actions build. Bad fields are an InputError naming them."""
        from pydantic import ValidationError

        try:
            return ch.CHANGE_LIST.validate_python(list(items), strict=False)
        except ValidationError as exc:
            raise InputError([Diagnostic(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}")
                              for e in exc.errors()]) from exc

    def plan(self, changes: Sequence[ch.Change], released: Mapping[str, frozenset[SlotKey]] | None = None, *,
             source: Path | None = None) -> Plan:
        """`released`: only for an undo or redo, the slots the entries it reverts released (`released_slots`).
        `source`: the change file the changes come from, so that a change found bad names its line:column."""
        check_action(self.role, "plan")
        try:
            return plan(self.state, self._stamped(changes), released)
        except InputError as bad:
            raise (located_in(bad, source) if source is not None else bad) from None

    def _stamped(self, changes: Sequence[ch.Change]) -> list[ch.Change]:
        """A submitted job without `owner` or `submitted` gets the submitter's login identity (the journal's
        actor) and the time: who and when are facts of the submission, not of the planner (which is pure).
        A stamped change is kept as stamped: a saved plan applies with the same owner and time."""
        out: list[ch.Change] = []
        for change in changes:
            if isinstance(change, ch.SubmitJob) and (change.job.owner is None or change.job.submitted is None):
                job = change.job.model_copy(update={
                    "owner": change.job.owner or login_identity().name,
                    "submitted": change.job.submitted or datetime.now(UTC).replace(microsecond=0),
                })
                change = change.model_copy(update={"job": job})
            out.append(change)
        return out

    def apply(self, the_plan: Plan, *, expected_hash: str | None = None,
              intent: Intent | None = None) -> ApplyResult:
        """Persist an allowed plan. Re-checks against the current revision under the write lock."""
        check_action(self.role, "apply", the_plan.changes, the_plan.diff)
        if self.store is None:
            if not the_plan.allowed:
                raise Refused(the_plan)
            self.state.commit(the_plan.view)
            return ApplyResult(the_plan, self.state.revision)
        try:
            with self.store.write_lock(login_identity(), self.command, timeout=self.lock_wait):
                current = self.store.revision()
                rebased = current != the_plan.base_revision
                if rebased:
                    self._rebase_or_refuse(the_plan, current, expected_hash, intent)
                if self._state is None or self._state.revision != current:
                    self._state = None
                fresh = plan(self.state, the_plan.changes, the_plan.released)
                check_action(self.role, "apply", fresh.changes, fresh.diff)
                if rebased and _what(fresh) != _what(the_plan):
                    message = (f"stale plan: it was made at revision {the_plan.base_revision}; at revision "
                               f"{current} the same changes do something else; plan again")
                    self._record(fresh, "stale", message, intent)
                    raise Stale(message)
                if expected_hash is not None and fresh.hash != expected_hash:
                    self._record(fresh, "stale", "saved plan no longer matches", intent)
                    raise Stale("the saved plan no longer matches what these changes do now; plan again")
                if not fresh.allowed:
                    self._record(fresh, "refused", f"{len(fresh.violations)} violation(s)", intent)
                    raise Refused(fresh)
                entry = self._entry(fresh, "allowed", "applied", "", intent)
                try:
                    revision = self.store.commit(fresh.base_revision, fresh.view, entry)
                except StaleRevision as stale:
                    raise Stale(str(stale)) from stale
                self.state.commit(fresh.view)
                return ApplyResult(fresh, revision)
        except LockHeld as held:
            message = f"{held} (waited {self.lock_wait:g} s for it; --wait SECONDS waits longer)"
            self._record(the_plan, "lock-held", message, intent)
            raise Conflict(message) from held

    def _rebase_or_refuse(self, the_plan: Plan, current: int, expected_hash: str | None,
                          intent: Intent | None) -> None:
        """A plan whose base revision moved may still apply: when nothing it changes was changed since (the
        caller then re-plans it on the current state, the rules re-checked). A saved plan (`expected_hash`)
        or one whose entities another apply changed is stale (exit 3)."""
        assert self.store is not None
        _, moved = self.store.changed_since(the_plan.base_revision)
        clash = sorted({(d.kind, d.name) for d in the_plan.diff} & moved)
        if expected_hash is None and not clash:
            return
        why = (f"; since then {', '.join(f'{k}/{n}' for k, n in clash[:3])}"
               f"{f' and {len(clash) - 3} more' if len(clash) > 3 else ''} changed" if clash else "")
        message = (f"stale plan: it was made at revision {the_plan.base_revision}, the state is now at revision "
                   f"{current}{why}; plan again")
        self._record(the_plan, "stale", message, intent)
        raise Stale(message)

    def submit(self, the_plan: Plan, *, confirmed: bool | str = False, expected_hash: str | None = None,
               intent: Intent | None = None) -> ApplyResult | None:
        """The workflow both front ends share after showing a plan: refuse (journaled) a plan with
        violations, skip an empty one (None), require the confirmation (True for a plain plan, the typed
        token for a destructive one), then apply under the lock."""
        check_action(self.role, "apply", the_plan.changes, the_plan.diff)
        if not the_plan.allowed:
            self._record(the_plan, "refused", f"{len(the_plan.violations)} violation(s)", intent)
            raise Refused(the_plan)
        if the_plan.empty:
            return None
        wanted = confirmation(the_plan)
        if not wanted.accepts(wanted.token if confirmed is True else (confirmed or "")):
            raise NotConfirmed(f"type {wanted.token!r} to apply this plan" if wanted.destructive
                               else "the plan was not confirmed")
        return self.apply(the_plan, expected_hash=expected_hash, intent=intent)

    def save_plan(self, the_plan: Plan, path: Path, *, force: bool = False) -> None:
        """The file `plan --save` writes and `apply --plan` reads: the plan, who made it and on which state.
        Created as a new file only; `force` replaces an existing path (never writing through it)."""
        me = login_identity()
        data = {**the_plan.to_json(), "author": {"uid": me.uid, "name": me.name}, "lineage": self._lineage()}
        write_plan_file(path, data, force=force)

    def _lineage(self) -> str | None:
        return self.store.lineage() if self.store is not None else None

    def plan_saved(self, path: Path) -> ReadyPlan:
        """A saved plan re-planned on the current state, with the hash it must still have. A plan of another
        state (or of this one before `init --force` replaced it) is refused (exit 2); one saved at another
        revision is stale: journaled and refused (exit 3), as a stale `apply -f` is."""
        saved = read_saved_plan(path)
        if saved.lineage != self._lineage():
            raise InputError([Diagnostic(
                "this plan was made on another state (or on this one before `init --force` replaced it), not on "
                f"{self.store.state_dir if self.store is not None else 'this inventory'}", file=str(path),
                hint="plan the changes again on this state")])
        fresh = self.plan(saved.changes)
        current = self.revision()
        if saved.base_revision != current:
            message = (f"stale plan: it was made at revision {saved.base_revision}, the state is now at revision "
                       f"{current}; plan again")
            self._record(fresh, "stale", message)
            raise Stale(message)
        return ReadyPlan(fresh, saved.hash, saved.author, saved.author_uid,
                         foreign=saved.author_uid != login_identity().uid)

    def _entry(self, the_plan: Plan, verdict: Verdict, outcome: Outcome, message: str,
               intent: Intent | None = None) -> JournalEntry:
        plan_json = the_plan.to_json()
        if intent is not None:  # what an undo or redo walks: the journal is its own history
            plan_json["intent"] = intent
        return JournalEntry.new(self.command, the_plan.base_revision, verdict=verdict, outcome=outcome,
                                plan=plan_json, diff=[d.to_json() for d in the_plan.diff], message=message)

    def _record(self, the_plan: Plan, outcome: Outcome, message: str, intent: Intent | None = None) -> None:
        if self.store is not None:
            verdict: Verdict = "allowed" if the_plan.allowed else "refused"
            self.store.record(self._entry(the_plan, verdict, outcome, message, intent))

    def undo(self, to_revision: int | None = None) -> Reversal:
        """The inverse of the latest change not yet undone (successive undos walk back through history), or
        of every applied entry after `to_revision`."""
        check_action(self.role, "plan")
        done, _, barrier = self._history()
        if to_revision is not None and barrier is not None and barrier.revision is not None \
                and to_revision < barrier.revision:
            raise InputError([Diagnostic(
                f"cannot undo back to revision {to_revision}: an init replaced the whole state at revision "
                f"{barrier.revision} (entry {barrier.id}), and undo never goes back past one (the earliest is "
                f"--to {barrier.revision})")])
        if to_revision is None:
            undone = done[-1:]
        else:
            undone = [e for e in done if e.revision is not None and e.revision > to_revision]
        if not undone:
            raise InputError([Diagnostic("nothing to undo" + (
                f" after revision {to_revision}" if to_revision is not None else ""))])
        # The earliest entry's `before` of each entity is what it was before all of them.
        first_before: dict[tuple[str, str], EntityDiff] = {}
        for entry in undone:
            for raw in entry.diff or ():
                key = (raw["kind"], raw["name"])
                first_before.setdefault(key, EntityDiff(raw["kind"], raw["name"], raw["before"], raw["after"],
                                                       raw.get("seq")))
        ids = [e.id for e in undone if e.id is not None]
        diffs = list(first_before.values())
        return Reversal(self.plan(inverse(diffs), released_slots(diffs)), {"undoes": ids},
                        "undo " + ", ".join(_entry_label(e) for e in reversed(undone)))

    def redo(self) -> Reversal:
        """Apply again the change the latest undo reverted (until a new change is made)."""
        check_action(self.role, "plan")
        _, undone, _ = self._history()
        if not undone:
            raise InputError([Diagnostic("nothing to redo")])
        entry = undone[-1]
        again = [EntityDiff(raw["kind"], raw["name"], raw["after"], raw["before"], raw.get("moved_to", raw.get("seq")))
                 for raw in entry.diff or ()]
        assert entry.id is not None
        return Reversal(self.plan(inverse(again), released_slots(again)), {"redoes": entry.id},
                        f"redo {_entry_label(entry)}")

    def _history(self) -> tuple[list[JournalEntry], list[JournalEntry], JournalEntry | None]:
        """The applied changes in effect (oldest first), those undone that redo may bring back (the latest
        last), read from the journal's undo and redo intents, and the latest init.

        An init (the state's creation, or `init --force` replacing every row with another inventory) is a
        barrier: what came before it belongs to a state that no longer exists, and inverting it would put that
        state's entities back into this one. Init entries are the applied entries with no diff (`commit`
        always records one)."""
        if self.store is None:
            raise InputError([Diagnostic("undo and redo need a state directory (--state), not --inventory")])
        done: list[JournalEntry] = []
        undone: list[JournalEntry] = []
        barrier: JournalEntry | None = None
        for entry in self.store.journal():
            if entry.outcome != "applied" or entry.id is None:
                continue
            intent = (entry.plan or {}).get("intent") or {}
            if entry.diff is None:
                done, undone, barrier = [], [], entry
            elif "undoes" in intent:
                gone = set(intent["undoes"])
                undone += [e for e in done if e.id in gone]
                done = [e for e in done if e.id not in gone]
            elif "redoes" in intent:
                undone = [e for e in undone if e.id != intent["redoes"]]
                done.append(entry)
            else:
                done.append(entry)
                undone = []
        done = [e for e in done if e.diff]  # an entry that changed nothing has nothing to invert
        return done, undone, barrier

    # reading ----------------------------------------------------------------------------------
    def journal(self, limit: int | None = None) -> list[JournalEntry]:
        check_action(self.role, "read")
        return self.store.journal(limit) if self.store is not None else []

    def view(self) -> View:
        return View(self.state)

    def get(self, kind: str, *, name: str | None = None, selector: str | None = None, reasons: bool = True,
            specs: bool = False, now: datetime | None = None) -> Table:
        """One listing: its rows (only `name`'s, or those `selector` picks), read at one revision.

        Job rows carry the REASON a pending job waits (computed once per revision) unless `reasons` is off,
        and their AGE at `now` (the front end's clock; the current time where not given);
        `specs` adds each row's full object (nodes, jobs, queues) for JSON and YAML output."""
        check_action(self.role, "read")
        listing = JOURNAL if kind == "journal" else LISTINGS.get(kind)
        if listing is None:
            raise InputError([Diagnostic(f"unknown listing {kind!r}; known: {', '.join([*LISTINGS, 'journal'])}")])
        if kind == "journal":
            revision = self.revision()
            rows = [journal_row(e) for e in self.journal()]
            view = None
        else:
            view = View(self._holding_state()) if kind in _NODE_LISTINGS else self.view()
            revision = view.revision
            make_rows = listing.rows
            assert make_rows is not None
            rows = list(make_rows(view))
            if kind == "jobs":
                why = self.pending_reasons() if reasons else {}
                requests: dict[str, str] = {}  # 100,000 rows repeat a few dozen request texts: keep one each
                clock = now or datetime.now(UTC)
                for row in rows:
                    row["REASON"] = why.get(row["NAME"], "-")
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

    def changes_since(self, revision: int) -> Moved:
        """Has the state moved past `revision`, and what did it touch: a live view's cheap check."""
        if self.store is None:
            return Moved(self.state.revision)
        current, touched = self.store.changed_since(revision)
        return Moved(current, touched)

    def _holding_state(self) -> ClusterState:
        """What node and GPU listings, boards and node-label selectors read: on a state not yet loaded whole, its
        nodes and only the jobs that hold a GPU (`Store.load_holding`), not the many that wait; else the state."""
        if self._state is not None or self.store is None:
            return self.state
        if self._holding is None or self._holding.revision != self.store.revision():
            self._holding = self.store.load_holding()
        return self._holding

    def labels_by_node(self) -> dict[str, dict[str, str]]:
        return {n.name: n.labels for n in self._holding_state().nodes.values()}

    def describe(self, kind: str, name: str, now: datetime | None = None) -> dict[str, Any]:
        check_action(self.role, "read")
        view = self.view()
        if kind == "node":
            node = view.node(name)
            if node is not None:
                return describe_node(view, node)
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
                found = describe_job(view, job)
                found["summary"]["age"] = age_text(found["summary"]["submitted"], now or datetime.now(UTC))
                return found
        elif kind == "queue":
            queue = view.queue(name)
            if queue is not None:
                return describe_queue(view, queue)
        elif kind == "entry":
            entry_id = decimal_at_most(name, MAX_SEQ)
            entry = self.store.entry(entry_id) if self.store is not None and entry_id is not None else None
            if entry is not None:
                return describe_entry(entry)
        hint = " (write a GPU as NODE/INDEX, e.g. gpu-h100-01/3)" if kind == "gpu" else ""
        raise InputError([Diagnostic(f"{kind} {name!r} not found{hint}")])

    def node_board(self, name: str) -> dict[str, Any]:
        """A node as the console draws it (its GPUs' slices and holders, device groups, NVLink, NICs)."""
        check_action(self.role, "read")
        view = self.view()
        node = view.node(name)
        if node is None:
            raise InputError([Diagnostic(f"node {name!r} not found")])
        return node_board(view, node)

    def boards(self) -> list[dict[str, Any]]:
        """Every node's board, for the topology view."""
        check_action(self.role, "read")
        view = View(self._holding_state())
        return [node_board(view, node) for node in view.nodes()]

    def overview(self, *, reasons: bool = True) -> dict[str, Any]:
        """The first screen: GPUs by mode and use, nodes by state, jobs by status (and pending jobs by
        reason unless `reasons` is off: they may need a scheduling cycle), queues over quota. Kept in the
        state's cache per revision, so a console opens on it with one read instead of loading the state."""
        check_action(self.role, "read")
        revision = self.revision()
        cached = self.store.derived(_OVERVIEW_KEY, revision) if self.store is not None else None
        if cached is not None and (cached["pending_by_reason"] is not None or not reasons):
            return dict(cached)
        data = cluster_overview(self.view(), self.pending_reason_codes() if reasons else None)
        if self.store is not None and self.state.revision == revision:
            self.store.save_derived(_OVERVIEW_KEY, revision, data)
        return data

    # what the console's edit forms offer ---------------------------------------------------------
    def mig_form(self, node_name: str, gpu_index: int) -> dict[str, Any]:
        """A GPU's MIG choices: its model's profiles, its current layout, and the named layouts (NVIDIA's
        mig-parted default config: all-1g.10gb, all-balanced, ...) that the model supports."""
        check_action(self.role, "read")
        node, gpu, model = self._mig_capable(node_name, gpu_index)
        return {
            "node": node.name, "gpu": gpu.index, "model": model.name,
            "memory_slices": model.memory_slices, "compute_slices": model.compute_slices,
            "profiles": [{"name": p.name, "memory_slices": p.memory_slices, "compute_slices": p.compute_slices,
                          "max_instances": p.max_instances} for p in model.mig_profiles],
            "current": [[i.profile, i.start] for i in gpu.mig or () if i.start is not None]
            if gpu.mode == "mig" else [],
            "named": named_mig_layouts(model.name),
        }

    def mig_free_starts(self, node_name: str, gpu_index: int, layout: Sequence[tuple[str, int]],
                        profile: str) -> list[int]:
        """Where one more `profile` instance fits beside `layout` on this GPU: what the form offers next."""
        check_action(self.role, "read")
        _, _, model = self._mig_capable(node_name, gpu_index)
        return free_starts(model, [(p, int(start)) for p, start in layout], profile)

    def _mig_capable(self, node_name: str, gpu_index: int) -> tuple[Node, Any, Any]:
        node = self.state.nodes.get(node_name)
        gpu = node.gpu(gpu_index) if node is not None else None
        if node is None or gpu is None:
            raise InputError([Diagnostic(f"GPU {node_name}/{gpu_index} not found")])
        model = get_catalog().model(gpu.model)
        if model is None or not model.mig_capable:
            raise InputError([Diagnostic(f"{gpu.model} does not support MIG")])
        return node, gpu, model

    def choices(self, node_name: str | None = None) -> dict[str, Any]:
        """The names a form offers to pick from: queues, and on a node its VMs, device groups, GPUs, the
        vGPU types of its boards and its dynamic sharing (None: off) with the inventory's default reserve, which the
        sharing form starts from."""
        check_action(self.role, "read")
        catalog = get_catalog()
        out: dict[str, Any] = {"queues": sorted(self.state.queues), "shapes": sorted(catalog.shapes),
                               "models": sorted(catalog.gpu_models)}
        node = self.state.nodes.get(node_name) if node_name else None
        if node is not None:
            out["vms"] = [vm.name for vm in node.vms]
            out["device_groups"] = [g.name for g in node.device_groups]
            out["gpus"] = [g.index for g in node.gpus]
            types: dict[str, list[str]] = {}
            for gpu in node.gpus:
                model = catalog.model(gpu.model)
                if model is not None:
                    types.setdefault(gpu.model, [v.name for v in model.vgpu_types])
            out["vgpu_types"] = types
            out["sharing"] = None if node.sharing is None else node.sharing.model_dump(mode="json")
            out["reserved_gib_default"] = DEFAULT_RESERVED_GIB
        return out

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
        return {job: summary for job, (_, summary) in self._why_pending().items()}

    def pending_reason_codes(self) -> dict[str, str]:
        """Job → the stable code of why it waits (capacity, over-limit, ...; `schedulable`)."""
        return {job: code for job, (code, _) in self._why_pending().items()}

    def reasons_ready(self) -> bool:
        """Whether this revision's reasons are at hand without running a cycle (the console asks before it
        shows them, and computes them in the background otherwise)."""
        revision = self.revision()
        if self._reasons is not None and self._reasons[0] == revision:
            return True
        return self.store is not None and self.store.derived(_REASONS_KEY, revision) is not None

    def _why_pending(self) -> dict[str, tuple[str, str]]:
        """Computed once per revision: kept in memory, and in the state's cache so the next process reads it."""
        revision = self.revision()
        if self._reasons is not None and self._reasons[0] == revision:
            return self._reasons[1]
        cached = self.store.derived(_REASONS_KEY, revision) if self.store is not None else None
        if cached is not None:
            # stored as the distinct reasons and each job's index into them: ~100,000 pending jobs share a
            # few hundred reasons, and this form loads in a fraction of the memory
            distinct = [(str(code), str(summary)) for code, summary in cached["distinct"]]
            why = {job: distinct[i] for job, i in cached["by_job"].items()}
        else:
            why = self._compute_reasons()
            if self.store is not None and self.state.revision == revision:
                index: dict[tuple[str, str], int] = {}
                by_job = {job: index.setdefault(reason, len(index)) for job, reason in why.items()}
                self.store.save_derived(_REASONS_KEY, revision, {"distinct": list(index), "by_job": by_job})
        self._reasons = (revision, why)
        return why

    def _compute_reasons(self) -> dict[str, tuple[str, str]]:
        if not any(j.status in ("pending", "preempted") for j in self.state.jobs.values()):
            return {}
        cycle = self.schedule()
        distinct: dict[tuple[str, str], tuple[str, str]] = {}  # one tuple per distinct reason, not per job
        reasons = {name: distinct.setdefault((e.reason, e.summary), (e.reason, e.summary))
                   for name, e in cycle.explanations.items()}
        schedulable = ("schedulable", "schedulable: the next cycle places it")
        reasons.update({name: schedulable for name in cycle.bound})
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
        """What `gpuadmin export KIND` prints: plain data (dicts and lists), or YAML text for `inventory` (its
        plain data with `fmt="json"`)."""
        from gpuadmin import adapters  # the exporters load when used: every other command starts faster

        check_action(self.role, "read")
        nodes = list(self.state.nodes.values())
        if kind == "inventory":
            inventory = self.state.to_inventory()
            return inventory_data(inventory) if options.get("fmt") == "json" else dump_inventory(inventory)
        if kind == "mig-parted":
            return adapters.export_mig_parted(nodes, warnings=options.get("warnings"))
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


def _what(the_plan: Plan) -> list[tuple[str, str, Any]]:
    """What a plan does, whatever revision it was made at: each entity it changes and what it becomes."""
    return sorted((d.kind, d.name, json.dumps(d.after, sort_keys=True)) for d in the_plan.diff)


def _standalone_plan(inventory: Inventory, violations: list[Violation]) -> Plan:
    state = ClusterState.from_inventory(inventory)
    result = plan(state, [])
    result.violations = violations
    return result


@functools.cache
def named_mig_layouts(model_name: str) -> dict[str, list[list[Any]]]:
    """NVIDIA's mig-parted default configs that give a GPU of this model a MIG layout, placed."""
    from gpuadmin import adapters

    model = get_catalog().model(model_name)
    if model is None:
        return {}
    spec = adapters.read_mig_parted(MIG_PARTED_DEFAULTS)
    out: dict[str, list[list[Any]]] = {}
    for config in spec.configs:
        try:
            layout = adapters.layouts_for_model(spec, config, model).get(0)
        except InputError:  # a config for another family (its profiles do not exist on this model)
            continue
        if layout:
            out[config] = [[i.profile, i.start] for i in layout]
    return out


class _Author(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    uid: int = Field(ge=0, lt=2**32)
    name: str = Field(min_length=1, max_length=256)


class _PlanFileHeader(BaseModel):
    """What `apply --plan` takes from a plan file besides its changes; strict: `base_revision: 0.9` or `true`
    is an error, not revision 0 or 1. The rest of the file (violations, diff, effects) is for people to read:
    the plan is always made again from its changes."""

    model_config = ConfigDict(strict=True, extra="ignore")

    base_revision: int = Field(ge=0, lt=2**63)
    hash: str = Field(pattern=r"^[0-9a-f]{16,128}$")
    changes: list[dict[str, Any]]
    author: _Author
    lineage: str | None = Field(pattern=r"^[0-9a-f]{32}$")


def read_saved_plan(path: Path) -> SavedPlan:
    """A saved plan's changes, hash, base revision, state and author (apply re-plans the changes and compares).
    Its author must be the file's owner (or root wrote the file): a file says what anyone wrote into it, its
    owner is the kernel's word."""
    saved = read_plan_file(path)
    name = str(path)
    try:
        header = _PlanFileHeader.model_validate(saved.data)
    except ValidationError as exc:
        raise _bad_plan(name, exc, ()) from None
    try:
        changes = ch.CHANGE_LIST.validate_python(header.changes, strict=False)
    except ValidationError as exc:
        raise _bad_plan(name, exc, ("changes",)) from None
    if header.author.uid != saved.owner_uid and saved.owner_uid != 0:
        raise InputError([Diagnostic(
            f"refusing the saved plan: it says {header.author.name} (uid {header.author.uid}) made it, but the file "
            f"belongs to {user_name(saved.owner_uid)} (uid {saved.owner_uid})", file=name,
            hint="apply only plans whose file belongs to their author; plan the changes again")])
    return SavedPlan(changes, header.hash, header.base_revision, header.lineage, header.author.uid,
                     user_name(header.author.uid))


def _bad_plan(name: str, exc: ValidationError, prefix: tuple[str, ...]) -> InputError:
    first = exc.errors()[0]
    path = tuple(p for p in (*prefix, *first["loc"]) if isinstance(p, (str, int)))
    return InputError([Diagnostic(f"not a saved gpuadmin plan: {first['msg']}", path, file=name)])


__all__ = [
    "ApplyResult", "Confirmation", "Conflict", "Moved", "NotConfirmed", "NotPermitted", "Plan", "ReadyPlan", "Refused",
    "Reversal",
    "Role", "SavedPlan", "SchedulePlan", "Service", "Stale", "Table", "check_action", "confirmation",
    "load_model_file",  # the located YAML reader, for the console's settings files
    "read_saved_plan",
]
