"""The changing use cases: plan, apply (under the write lock), submit, saved plans, undo and redo."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import EntityDiff, Plan, inverse, plan, released_slots
from gpuadmin.engine.scheduler import explain
from gpuadmin.engine.state import SlotKey, View
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.service.caller import use_case
from gpuadmin.service.core import ServiceCore
from gpuadmin.service.errors import Conflict, NotConfirmed, Refused, Stale
from gpuadmin.service.results import (
    ApplyResult,
    ExecutionOptions,
    Intent,
    ReadyPlan,
    Remedy,
    Reversal,
    SavedPlan,
    _entry_label,
    confirmation,
)
from gpuadmin.store import (
    ClusterBinding,
    JournalEntry,
    LockHeld,
    StaleRevision,
)
from gpuadmin.store.changes_io import load_changes, located_in, parse_changes
from gpuadmin.store.identity import user_name
from gpuadmin.store.plan_files import read_plan_file, write_plan_file
from gpuadmin.store.state_db import Outcome, Verdict

if TYPE_CHECKING:
    from gpuadmin.cluster.exec_base import ExecuteSettings
    from gpuadmin.cluster.execute import Execution, PlannedStep


def execute_settings(binding: ClusterBinding) -> ExecuteSettings:
    """Where the executors write on a bound state's cluster: the GPU Operator's places stored with the binding (the
    ConfigMaps its mig-manager and device plugin read); a state bound before they were stored writes where
    `gpuadmin export` does (`ExecuteSettings`' defaults)."""
    from gpuadmin.cluster.exec_base import ExecuteSettings

    default = ExecuteSettings()
    return ExecuteSettings(
        operator_namespace=binding.operator_namespace or default.operator_namespace,
        mig_parted_configmap=binding.mig_parted_configmap or default.mig_parted_configmap,
        device_plugin_configmap=binding.device_plugin_configmap or default.device_plugin_configmap)


def planned_cluster_steps(changes: Sequence[ch.Change], binding: ClusterBinding) -> list[PlannedStep]:
    """Each change as the executors will carry it out on the binding's cluster, Kubernetes or vCenter (pure:
    nothing is read)."""
    if binding.kind == "vcenter":
        from gpuadmin.cluster.vcenter_execute import planned_vcenter_steps

        return planned_vcenter_steps(changes)
    from gpuadmin.cluster.execute import planned_steps

    return planned_steps(changes, execute_settings(binding))


class ChangeUseCases(ServiceCore):
    """The use cases that plan and change the state."""

    execution: ExecutionOptions = ExecutionOptions()  # how apply treats a bound state (the front end sets it)

    # planning ---------------------------------------------------------------------------------
    @use_case("plan")
    def load_changes(self, path: Path) -> list[ch.Change]:
        return load_changes(path)

    @use_case("plan")
    def read_changes(self, data: bytes, file: str) -> list[ch.Change]:
        """A change file's changes from its bytes (`apply -f -` reads standard input); a bad one is named by
        `file` with its line:column."""
        return parse_changes(data, file)

    @staticmethod
    def build_changes(items: Sequence[dict[str, Any]]) -> list[ch.Change]:
        """Change ops from plain data, as a change file holds them (`{"op": "cordon", "node": ...}`): what
        the console's actions build. Bad fields are an InputError naming them."""
        from pydantic import ValidationError

        try:
            return ch.CHANGE_LIST.validate_python(list(items), strict=False)
        except ValidationError as exc:
            raise InputError([Diagnostic(f"{'.'.join(str(p) for p in e['loc'])}: {_bound_message(e)}")
                              for e in exc.errors()]) from exc

    @use_case("plan")
    def plan(self, changes: Sequence[ch.Change], released: Mapping[str, frozenset[SlotKey]] | None = None, *,
             source: Path | None = None) -> Plan:
        """`released`: only for an undo or redo, the slots the entries it reverts released (`released_slots`).
        `source`: the change file the changes come from, so that a change found bad names its line:column."""
        try:
            return plan(self.state, self._stamped(changes), released)
        except InputError as bad:
            raise (located_in(bad, source) if source is not None else bad) from None

    def _stamped(self, changes: Sequence[ch.Change]) -> list[ch.Change]:
        """A submitted job without `owner` or `submitted` gets the submitter's login identity (the journal's
        actor) and the time, and so does a GPU fenced without `by` or `since`: who and when are facts of the
        submission, not of the planner (which is pure).
        A stamped change is kept as stamped: a saved plan applies with the same owner and time."""
        out: list[ch.Change] = []
        for change in changes:
            if isinstance(change, ch.SubmitJob) and (change.job.owner is None or change.job.submitted is None):
                job = change.job.model_copy(update={
                    "owner": change.job.owner or self.caller.identity.name,
                    "submitted": change.job.submitted or datetime.now(UTC).replace(microsecond=0),
                })
                change = change.model_copy(update={"job": job})
            if isinstance(change, ch.SetGpuHealth) and change.health == "unhealthy" and (
                    change.by is None or change.since is None):
                change = change.model_copy(update={  # who fenced the GPU and when, as a submission's
                    "by": change.by or self.caller.identity.name,
                    "since": change.since or datetime.now(UTC).replace(microsecond=0),
                })
            out.append(change)
        return out

    def apply(self, the_plan: Plan, *, expected_hash: str | None = None,
              intent: Intent | None = None) -> ApplyResult:
        """Persist an allowed plan. Re-checks against the current revision under the write lock."""
        self.caller.require("apply", the_plan.changes, the_plan.diff)
        if self.store is None:
            if not the_plan.allowed:
                raise Refused(the_plan)
            self.state.commit(the_plan.view)
            return ApplyResult(the_plan, self.state.revision)
        try:
            with self.store.write_lock(self.caller.identity, self.command, timeout=self.lock_wait):
                current = self.store.revision()
                rebased = current != the_plan.base_revision
                if rebased:
                    self._rebase_or_refuse(the_plan, current, expected_hash, intent)
                if self._state is None or self._state.revision != current:
                    self._state = None
                fresh = plan(self.state, the_plan.changes, the_plan.released)
                self.caller.require("apply", fresh.changes, fresh.diff)
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
                binding = self.store.binding()
                if binding is not None and binding.kind == "kubernetes" and not self.execution.model_only:
                    return self._execute(fresh, binding, intent)
                on_vcenter = binding is not None and binding.kind == "vcenter" and not self.execution.model_only
                unexecuted = _vsphere_unexecuted(fresh) if on_vcenter else []
                if binding is not None and on_vcenter and not unexecuted:
                    return self._execute_vcenter(fresh, binding, intent)
                # --model-only, or a vCenter plan with an op gpuadmin does not carry out there (docs/vsphere.md):
                # the state alone changes, and the entry says why
                note = "" if binding is None else "model only: nothing was executed on the cluster" + (
                    f" (gpuadmin does not carry out {', '.join(unexecuted)} on a vCenter)" if unexecuted else "")
                return self._commit(fresh, self._entry(fresh, "allowed", "applied", note, intent))
        except LockHeld as held:
            message = f"{held} (waited {self.lock_wait:g} s for it; --wait SECONDS waits longer)"
            self._record(the_plan, "lock-held", message, intent)
            raise Conflict(message) from held

    def _commit(self, the_plan: Plan, entry: JournalEntry,
                cluster_versions: Mapping[tuple[str, str], str] | None = None,
                steps: tuple[Any, ...] = ()) -> ApplyResult:
        assert self.store is not None
        try:
            revision = self.store.commit(the_plan.base_revision, the_plan.view, entry, cluster_versions)
        except StaleRevision as stale:
            raise Stale(str(stale)) from stale
        self.state.commit(the_plan.view)
        return ApplyResult(the_plan, revision, steps)

    def _execute(self, fresh: Plan, binding: ClusterBinding, intent: Intent | None) -> ApplyResult:
        """Carry an allowed plan out on the bound cluster, through its control plane, then journal what really
        happened: executed (the state takes the whole plan), partial (the state takes the changes the cluster now
        holds, then the failure is raised) or failed (nothing changes; the failure is raised). The steps go into the
        entry either way. Called under the write lock: nobody else changes the state while the cluster is."""
        from gpuadmin.cluster.connect import connect_bound
        from gpuadmin.cluster.execute import execute

        assert self.store is not None
        connection = connect_bound(binding, self.execution.kubeconfig)
        run = execute(connection, fresh.changes, View(self.state), fresh.view, self.store.cluster_versions(),
                      timeout=self.execution.timeout_s, settings=execute_settings(binding))
        return self._journal_execution(fresh, run, intent, run.versions)

    def _execute_vcenter(self, fresh: Plan, binding: ClusterBinding, intent: Intent | None) -> ApplyResult:
        """`_execute` on a vCenter: the plan's changes as vCenter tasks (gpuadmin/cluster/vcenter_execute.py),
        journaled the same way. The password comes from `execution.password` and is kept in memory only."""
        from gpuadmin.cluster.vcenter import connect_vcenter_bound, vcenter_password
        from gpuadmin.cluster.vcenter_execute import execute_vcenter

        password = self.execution.password or vcenter_password
        connection = connect_vcenter_bound(binding, password(binding.context, binding.server))
        try:
            run = execute_vcenter(connection, fresh.changes, View(self.state), fresh.view,
                                 timeout=self.execution.timeout_s)
        finally:
            connection.close()
        # the VMs' changeVersions stay the synced ones: the next sync reads them again
        return self._journal_execution(fresh, run, intent, None)

    def _journal_execution(self, fresh: Plan, run: Execution, intent: Intent | None,
                           versions: Mapping[tuple[str, str], str] | None) -> ApplyResult:
        """Journal an execution and commit what the cluster now holds (with `versions`, the cluster's object
        versions as the execution left them; None keeps the synced ones)."""
        assert self.store is not None
        steps = [step.as_journal() for step in run.steps]
        if run.outcome == "executed":
            entry = self._entry(fresh, "allowed", "executed", "", intent)
            entry.execution = steps
            return self._commit(fresh, entry, versions, run.steps)
        assert run.error is not None
        if run.outcome == "partial":
            held = [change for change, step in zip(fresh.changes, run.steps, strict=True)
                    if step.status in ("executed", "already", "state-only")]
            held += run.failed_step.held if run.failed_step is not None else ()  # e.g. the cordon of a drain
            part = plan(self.state, held, fresh.released)
            entry = self._entry(part, "allowed", "partial", str(run.error), intent)
            entry.execution = steps
            self._commit(part, entry, versions, run.steps)
        else:
            entry = self._entry(fresh, "allowed", "failed", str(run.error), intent)
            entry.execution = steps
            self.store.record(entry)
        raise run.error

    @use_case("read")
    def cluster_steps(self, the_plan: Plan) -> list[PlannedStep] | None:
        """What applying the plan will do on the bound cluster, change by change: the API calls of each change's
        executor (`gpuadmin.cluster.execute.EXECUTORS`), or why it is gpuadmin's state only. None where apply
        executes nothing (a state of files, `--model-only`): the plan's node commands say what to run there."""
        binding = self.store.binding() if self.store is not None else None
        if binding is None or self.execution.model_only:
            return None
        return planned_cluster_steps(the_plan.changes, binding)

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
        self.caller.require("apply", the_plan.changes, the_plan.diff)
        if not the_plan.allowed:
            self._record(the_plan, "refused", f"{len(the_plan.violations)} violation(s)", intent)
            raise Refused(the_plan)
        if the_plan.empty:
            return None
        wanted = confirmation(the_plan)
        if not wanted.accepts(wanted.token if confirmed is True else (confirmed or "")):
            raise NotConfirmed(f"type '{wanted.shown}' to apply this plan" if wanted.destructive
                               else "the plan was not confirmed")
        return self.apply(the_plan, expected_hash=expected_hash, intent=intent)

    @use_case("plan")
    def save_plan(self, the_plan: Plan, path: Path, *, force: bool = False) -> None:
        """The file `plan --save` writes and `apply --plan` reads: the plan, who made it and on which state.
        Created as a new file only; `force` replaces an existing path (never writing through it)."""
        me = self.caller.identity
        data = {**the_plan.to_json(), "author": {"uid": me.uid, "name": me.name}, "lineage": self._lineage()}
        write_plan_file(path, data, force=force)

    def _lineage(self) -> str | None:
        return self.store.lineage() if self.store is not None else None

    @use_case("plan")
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
                         foreign=saved.author_uid != self.caller.identity.uid)

    def _entry(self, the_plan: Plan, verdict: Verdict, outcome: Outcome, message: str,
               intent: Intent | None = None) -> JournalEntry:
        plan_json = the_plan.to_json()
        if intent is not None:  # what an undo or redo walks: the journal is its own history
            plan_json["intent"] = intent
        return JournalEntry.new(self.command, the_plan.base_revision, verdict=verdict, outcome=outcome,
                                plan=plan_json, diff=[d.to_json() for d in the_plan.diff], message=message,
                                actor=self.caller.identity)

    def _record(self, the_plan: Plan, outcome: Outcome, message: str, intent: Intent | None = None) -> None:
        if self.store is not None:
            verdict: Verdict = "allowed" if the_plan.allowed else "refused"
            self.store.record(self._entry(the_plan, verdict, outcome, message, intent))

    @use_case("plan")
    def undo(self, to_revision: int | None = None) -> Reversal:
        """The inverse of the latest change not yet undone (successive undos walk back through history), or
        of every applied entry after `to_revision`."""
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

    @use_case("plan")
    def undo_to_entry(self, entry_id: int) -> Reversal:
        """`undo --to` the revision a journal entry made (the console's undo back to the selected entry): the
        inverse of every change still in effect after it. An entry that made no revision, or that is undone
        already, is an InputError saying why."""
        done, undone, _ = self._history()
        assert self.store is not None  # _history refuses an in-memory inventory
        entry = next((e for e in self.store.journal() if e.id == entry_id), None)
        if entry is None:
            raise InputError([Diagnostic(f"no journal entry {entry_id}")])
        if entry.revision is None:
            raise InputError([Diagnostic(
                f"entry {entry_id} was {entry.outcome}: it changed nothing, so there is no revision to go back to",
                hint="select an applied entry")])
        if any(e.id == entry_id for e in undone):
            raise InputError([Diagnostic(f"entry {entry_id} is undone already: its revision is not in effect",
                                         hint="redo brings it back; or select an entry still in effect")])
        if not any(e.revision is not None and e.revision > entry.revision for e in done):
            raise InputError([Diagnostic(f"nothing to undo after entry {entry_id} (revision {entry.revision}): "
                                         "no change in effect came after it",
                                         hint="select an earlier entry; undo (ctrl+z) undoes the latest")])
        return self.undo(entry.revision)

    @use_case("plan")
    def plan_remedy(self, job: str) -> Remedy:
        """Act on `explain`'s remedy: its change ops (checked by explain: the rules allow them and the next cycle
        binds the job) planned on the current state, to be reviewed and applied like any change."""
        if job not in self.state.jobs:
            raise InputError([Diagnostic(f"job {job!r} not found")])
        found = explain(self.state, job)
        if not found.remedy_changes:
            return Remedy(found, None)
        return Remedy(found, self.plan(self.build_changes(found.remedy_changes)))

    @use_case("plan")
    def redo(self) -> Reversal:
        """Apply again the change the latest undo reverted (until a new change is made)."""
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
            if entry.revision is None or entry.id is None:
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


def _vsphere_unexecuted(the_plan: Plan) -> list[str]:
    """The plan's ops that gpuadmin does not carry out on a vCenter (imported here: the vSphere executors load only
    for a vCenter-bound state)."""
    from gpuadmin.cluster.vcenter_execute import vsphere_unexecuted

    return vsphere_unexecuted(the_plan.changes)


def _what(the_plan: Plan) -> list[tuple[str, str, Any]]:
    """What a plan does, whatever revision it was made at: each entity it changes and what it becomes."""
    return sorted((d.kind, d.name, json.dumps(d.after, sort_keys=True)) for d in the_plan.diff)




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


_BOUND_WORDS = {"greater_than_equal": ("ge", "at least"), "less_than_equal": ("le", "at most"),
                "greater_than": ("gt", "greater than"), "less_than": ("lt", "less than")}


def _bound_message(error: Any) -> str:
    """A number past its bound in the words a change file's error uses (`must be at least 1, got 0`), not
    pydantic's; any other error as pydantic says it."""
    if error["type"] in _BOUND_WORDS:
        key, words = _BOUND_WORDS[error["type"]]
        return f"must be {words} {(error.get('ctx') or {}).get(key)}, got {error.get('input')}"
    return str(error["msg"])
