"""What the use cases return: applied plans, confirmations, listings, reversals, saved plans."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuadmin.engine import changes as ch
from gpuadmin.engine.ops import spec_of
from gpuadmin.engine.planner import Plan
from gpuadmin.engine.scheduler import Explanation
from gpuadmin.render.rows import Listing, Row
from gpuadmin.render.text import safe
from gpuadmin.store import (
    JournalEntry,
)


@dataclass
class ApplyResult:
    plan: Plan
    revision: int
    # on a state bound to a cluster: each change as carried out there (`gpuadmin.cluster.execute.Step`s)
    steps: tuple[Any, ...] = ()


@dataclass(frozen=True)
class ExecutionOptions:
    """How `apply` treats a state bound to a live cluster: the kubeconfig that reaches it (None: $KUBECONFIG, else
    ~/.kube/config; the context is the binding's), how long a step may wait (a PodDisruptionBudget, the
    mig-manager, a vCenter task), `model_only`: change gpuadmin's state alone (a what-if), executing nothing, and
    `password`: a vCenter's password for (user, server) (None: $GPUADMIN_VCENTER_PASSWORD only)."""

    kubeconfig: Path | None = None
    timeout_s: float = 300.0
    model_only: bool = False
    password: Callable[[str, str], str] | None = None


@dataclass(frozen=True)
class Confirmation:
    """What applying a plan asks of an operator: a yes, or for a destructive plan the name it hits, typed."""

    destructive: bool
    token: str
    prompt: str

    @property
    def shown(self) -> str:
        """The token as both front ends draw it (`safe`: an ESC as `\\x1b`, U+200B as `\\u200b`): what an
        operator reads is what they can type, since the raw control byte cannot be typed at a prompt."""
        return safe(self.token)

    def accepts(self, answer: str) -> bool:
        answer = answer.strip()
        if self.destructive:
            # the drawn form, or the raw name from a script that holds it (`--confirm` through a pipe)
            return answer in (self.shown, self.token)
        return answer.lower() in ("y", "yes")


def confirmation(the_plan: Plan) -> Confirmation:
    if the_plan.destructive:
        what = []
        if the_plan.effects.evicted:
            what.append(f"evicts {len(the_plan.effects.evicted)} running job(s)")
        removed = sum(1 for d in the_plan.diff if d.action == "remove")
        if removed:
            what.append(f"removes {removed}")
        what += [f"runs {op}" for op in sorted({c.op for c in the_plan.changes if spec_of(c).destructive})]
        if the_plan.vgpus_lost:
            what.append(f"takes {the_plan.vgpus_lost} vGPU(s) from their VMs")
        token = the_plan.confirmation_token
        return Confirmation(True, token, f"This plan {', '.join(what)}. Type '{safe(token)}' to apply: ")
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


@dataclass(frozen=True)
class Remedy:
    """A pending job's remedy to act on: why it waits (with the remedy in words), and the remedy's change ops
    planned on the current state — None where explain found no remedy that planning can check."""

    explanation: Explanation
    plan: Plan | None


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


