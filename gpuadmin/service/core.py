"""What every use case shares: the caller, the state (a state directory or an inventory in memory) and its
revision."""

from __future__ import annotations

from pathlib import Path

from gpuadmin.engine.planner import Plan, plan
from gpuadmin.engine.rules import Touched, Violation, check
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Inventory
from gpuadmin.service.caller import Caller, resolve_caller, use_case
from gpuadmin.service.errors import Refused
from gpuadmin.store import (
    Store,
    load_inventory,
)
from gpuadmin.store.roles import Role, RoleDecision
from gpuadmin.store.shared import make_shared_dir


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




class ServiceCore:
    """The caller and the state every use case works on (the facade, `Service`, is made of the use cases)."""

    lock_wait: float = 5.0  # seconds `apply` waits for another writer's lock before it gives up (exit 3)

    def __init__(self, *, state_dir: Path | None = None, inventory: Path | None = None,
                 role: Role | None = None, command: str = "gpuadmin", caller: Caller | None = None) -> None:
        """`role` can only lower the role the login identity has on the state (`roles.role_ceiling`). `caller`:
        the process's caller, when the front end resolved it already (it then is not read again)."""
        if (state_dir is None) == (inventory is None):
            raise ValueError("a Service works on a state directory or on an inventory, not both")
        self.caller: Caller = (caller or resolve_caller(state_dir)).lowered(role)
        self.command = command
        self.inventory_path = inventory
        self.store: Store | None = Store.open(state_dir) if state_dir is not None else None
        self._state: ClusterState | None = None
        self._holding: ClusterState | None = None  # nodes and the jobs holding GPUs, for node listings
        # revision, job → (code, text, remedy)
        self._reasons: tuple[int, dict[str, tuple[str, str, str]]] | None = None

    @property
    def role(self) -> Role:
        return self.caller.role

    @property
    def decision(self) -> RoleDecision:
        return self.caller.decision

    # loading ----------------------------------------------------------------------------------
    @staticmethod
    def init(state_dir: Path, inventory_path: Path, *, role: Role | None = None, force: bool = False,
             shared_group: str | None = None, others_read: bool = True, take_over: bool = False,
             caller: Caller | None = None) -> int:
        """Create a state from an inventory; refuses one that breaks a rule. Returns the revision.

        `shared_group`: a state for that group's operators (a set-group-id, group-writable directory; see
        `gpuadmin.store.shared`), which others may read unless `others_read` is off; in a directory of the
        caller's, or (`take_over`, root only) an empty one of another user's that becomes root's."""
        caller = (caller or resolve_caller(state_dir)).lowered(role)
        caller.require("init")
        inventory = load_inventory(inventory_path)
        violations = check_state(ClusterState.from_inventory(inventory))
        if violations:
            raise Refused(_standalone_plan(inventory, violations))
        if shared_group is not None:
            make_shared_dir(state_dir, shared_group, others_read=others_read, take_over=take_over)
        with Store.create(state_dir, inventory, force=force, actor=caller.identity) as store:
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

    def close(self) -> None:  # not gated: releases what this service opened
        """Close the state's SQLite connection now. Left to the garbage collector, it would close at whatever
        moment a collection runs, even inside another connection's write (tests/cli/test_cli_process.py saw
        'disk I/O error' from four processes applying in a loop)."""
        if self.store is not None:
            self.store.close()

    def revision(self) -> int:  # not gated: a number, what a live view polls
        return self.store.revision() if self.store is not None else self.state.revision

    def refresh(self) -> bool:
        """Reload if another console applied since; True when the state changed (the TUI's watch)."""
        if self.store is not None and self._state is not None and self.store.revision() != self._state.revision:
            self._state = None
            return True
        return False

    @use_case("read")
    def view(self) -> View:
        return View(self.state)

    def _holding_state(self) -> ClusterState:
        """What node and GPU listings, boards and node-label selectors read: on a state not yet loaded whole, its
        nodes and only the jobs that hold a GPU (`Store.load_holding`), not the many that wait; else the state."""
        if self._state is not None or self.store is None:
            return self.state
        if self._holding is None or self._holding.revision != self.store.revision():
            self._holding = self.store.load_holding()
        return self._holding

    @use_case("read")
    def labels_by_node(self) -> dict[str, dict[str, str]]:
        return {n.name: n.labels for n in self._holding_state().nodes.values()}



def _standalone_plan(inventory: Inventory, violations: list[Violation]) -> Plan:
    state = ClusterState.from_inventory(inventory)
    result = plan(state, [])
    result.violations = violations
    return result


