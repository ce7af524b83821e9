"""Who is calling, resolved once, and the one permission gate every use case passes.

The role is who you are (the login identity and its groups, through the roles file: `gpuadmin.store.roles`);
a role asked for can only lower it. A process resolves its `Caller` once (the CLI's context, the console's
service) and every use case reads it: the identity that stamps a submitted job, takes the write lock and
signs the journal entry is the one whose role was checked.

Each public use case of the service declares what it is (`@use_case("read")`, ...); `check_action` decides,
before any lock is taken or anything is written, from the use case's least role and, for an apply, from what
the plan's ops (their records in `engine.ops`) and its diff do.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from gpuadmin.engine import changes as ch
from gpuadmin.engine.ops import OPS
from gpuadmin.engine.planner import EntityDiff
from gpuadmin.service.errors import NotPermitted
from gpuadmin.store import Identity, login_identity, origin
from gpuadmin.store.roles import ROLES, Role, RoleDecision, group_names, lower, role_ceiling
from gpuadmin.store.shared import DB_NAME, is_shared

if TYPE_CHECKING:
    from gpuadmin.service.core import ServiceCore

UseCase = Literal["read", "plan", "apply", "undo", "schedule", "init", "configure"]
# What each use case needs. Anything that writes needs at least an operator; reshaping the cluster's
# inventory or its queues needs an admin (the ops' records say which).
USE_CASE_ROLE: dict[str, Role] = {
    "read": "viewer",
    "plan": "viewer",
    "apply": "operator",
    "undo": "operator",
    "schedule": "operator",
    "init": "admin",
    "configure": "admin",  # the state's settings (`config set`): where every operator's gpuadmin reads telemetry
}
# What a plan may only do with an admin, whichever op does it (`restore`, which undo and import are made of,
# can do any of them): add or remove a node, change a queue, or change a node's inventory facts.
_NODE_FACTS = ("platform", "orchestrator", "shape", "cpus", "memory_gib", "rdma", "labels", "nvlink", "vsphere")
_GPU_FACTS = ("index", "model", "not_in_catalog")


@dataclass(frozen=True)
class Caller:
    """The login identity of this process, the role its identity has on the state (and why), and the role it
    acts with (never above the other)."""

    identity: Identity
    decision: RoleDecision
    role: Role

    def lowered(self, requested: Role | None) -> Caller:
        """Acting with at most `requested` (`--as-role`, `tui --readonly`) as well; asking for more changes nothing."""
        return dataclasses.replace(self, role=lower(self.role, requested))

    def require(self, use_case: UseCase, changes: Sequence[ch.Change] = (), diff: Sequence[EntityDiff] = ()) -> None:
        check_action(self.role, use_case, changes, diff)


def resolve_caller(state_dir: Path | None, requested: Role | None = None) -> Caller:
    """Who calls, on the state in `state_dir` (None: an inventory in memory): read from the system once."""
    identity = login_identity()
    decision = role_ceiling(identity, state_dir)
    return Caller(identity, decision, lower(decision.role, requested))


def check_action(role: Role, action: str, changes: Sequence[ch.Change] = (),
                 diff: Sequence[EntityDiff] = ()) -> None:
    """The single permission check of both front ends: `changes` are the plan's ops, `diff` what it does."""
    need: Role = USE_CASE_ROLE[action]
    reasons = admin_reasons(changes, diff) if action in ("apply", "schedule") else []
    if reasons:
        need = "admin"
    if ROLES.index(role) < ROLES.index(need):
        raise NotPermitted(f"role {role} may not {action}" + (f" ({', '.join(reasons)})" if reasons else "")
                           + f": it needs {need}")


def admin_reasons(changes: Sequence[ch.Change], diff: Sequence[EntityDiff] = ()) -> list[str]:
    """Why a plan needs an admin: its admin ops, else what its diff does to nodes and queues (empty: it doesn't)."""
    ops: list[str] = sorted({c.op for c in changes if OPS[c.op].role == "admin"})
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


Method = TypeVar("Method", bound=Callable[..., Any])


def use_case(name: UseCase) -> Callable[[Method], Method]:
    """Declare a service method as a use case: the caller's role is checked before it runs. A use case that
    judges what a plan does (apply, a schedule that writes) checks the plan itself, inside."""
    def declare(method: Method) -> Method:
        @functools.wraps(method)
        def gated(self: ServiceCore, /, *args: Any, **kwargs: Any) -> Any:
            self.caller.require(name)
            return method(self, *args, **kwargs)

        gated.use_case = name  # type: ignore[attr-defined]  # what tests/test_service_gates.py reads
        return cast("Method", gated)

    return declare


def whoami(caller: Caller, *, state_dir: Path | None, inventory: Path | None) -> dict[str, Any]:
    """Who gpuadmin takes the caller for, where from, and the role it has on the state — and why."""
    who = caller.identity
    data: dict[str, Any] = {
        "user": who.name, "uid": who.uid, "identity_source": who.source,
        "groups": sorted(group_names(who)),
        "origin": origin() or "local",
        "role": caller.role, "role_limit": caller.decision.role, "why": caller.decision.why,
        "roles_from": caller.decision.source,
    }
    if inventory is not None:
        data["inventory"] = str(inventory)
    elif state_dir is not None:
        db = state_dir / DB_NAME
        data["state"] = str(state_dir)
        data["shared"] = is_shared(state_dir)
        data["access"] = ("read-write" if os.access(db, os.W_OK) else "read-only" if os.access(db, os.R_OK)
                          else "none") if db.exists() else "no state yet"
    return data
