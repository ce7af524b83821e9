"""A Hypothesis state machine over every change op, on every sample inventory (DESIGN §10).

Each step draws changes of any op in the change union (`OPS` is read from it, so a new op fails
`test_every_op_has_a_generator` until it is generated here) with arguments drawn from the current state —
existing nodes, GPUs, VMs, device groups, jobs and queues, earlier versions of entities for `restore`, and
some names that do not exist — plans them through the real planner, and applies the allowed ones. Other
steps run a scheduling cycle and apply its plan, undo the latest plans (one at a time, or several at once
as `undo --to` does) and redo them.

After every step: planning wrote nothing; a refused plan left the state byte-identical; an allowed plan
left a state that passes every rule; and the independent checker of tests/engine/invariants.py (written
from the docs, not from the rules) finds nothing. Undo returns to the exact earlier state, redo to the
exact later one. CI runs a bounded slice; `-m slow` a long run.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pydantic import ValidationError

from gpuadmin.catalog import get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import EntityDiff, inverse, plan, released_slots
from gpuadmin.engine.scheduler import schedule
from gpuadmin.engine.state import ClusterState
from gpuadmin.errors import InputError
from gpuadmin.model import Inventory, Node
from gpuadmin.model.inventory import MAX_GPU_INDEX
from gpuadmin.service import check_state
from gpuadmin.store import load_inventory
from tests.engine import invariants

SAMPLES = Path(__file__).resolve().parents[2] / "sample-inventories"
INVENTORIES: dict[str, Inventory] = {p.stem: load_inventory(p) for p in sorted(SAMPLES.glob("*.yaml"))}

# Names no state holds: a change naming one must be refused, never crash.
UNKNOWN = "no-such-thing"


def _op_of(cls: type[Any]) -> str:
    op: str = typing.get_args(cls.model_fields["op"].annotation)[0]
    return op


OPS: dict[str, type[Any]] = {_op_of(cls): cls for cls in typing.get_args(typing.get_args(ch.Change)[0])}


def snapshot(state: ClusterState) -> str:
    """The whole state; its lists keep table order, so an undo must give back the jobs' FIFO order (and the
    queues' and nodes') too, not only their contents."""
    return json.dumps(state.to_inventory().model_dump(mode="json"), sort_keys=True)


def dumped(model: Any) -> dict[str, Any]:
    out: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return out


class Draw:
    """Draws arguments from the current state: mostly names that exist, sometimes one that does not."""

    def __init__(self, data: Any, state: ClusterState, seen: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
        self.data = data
        self.state = state
        self.seen = seen  # kind → name → every version of the entity the run has seen

    def __call__(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def one(self, items: list[Any]) -> Any:
        return self(st.sampled_from(items))

    def maybe(self) -> bool:
        return bool(self(st.booleans()))

    def node(self, *, vsphere: bool = False) -> Node | None:
        nodes = [n for n in self.state.nodes.values() if n.platform == "vsphere"] if vsphere else []
        nodes = nodes or list(self.state.nodes.values())
        chosen: Node | None = self.one([*nodes, None])
        return chosen

    def node_name(self, node: Node | None) -> str:
        return node.name if node is not None else UNKNOWN

    def gpu_index(self, node: Node | None) -> int:
        return int(self.one([*(g.index for g in node.gpus), MAX_GPU_INDEX] if node is not None else [0]))

    def vm(self, node: Node | None) -> str:
        names = [vm.name for vm in node.vms] if node is not None else []
        others = [vm.name for n in self.state.nodes.values() for vm in n.vms]
        return str(self.one(names + names + others[:3] + [UNKNOWN]))

    def job_name(self, statuses: tuple[str, ...] = ()) -> str:
        jobs = sorted(self.state.jobs)
        wanted = [n for n in jobs if self.state.jobs[n].status in statuses] if statuses else []
        return str(self.one(wanted + wanted + jobs[:5] + [UNKNOWN]))

    def queue_name(self) -> str:
        return str(self.one([*sorted(self.state.queues), UNKNOWN]))

    def fresh(self, prefix: str) -> str:
        return f"{prefix}-{self(st.integers(0, 30))}"

    def model_names(self) -> list[str]:
        return sorted({g.model for n in self.state.nodes.values() for g in n.gpus})

    def mig_profile(self) -> str:
        profiles = [p.name for m in self.model_names() if (model := get_catalog().model(m)) is not None
                    for p in model.mig_profiles]
        return str(self.one([*profiles, "9g.999gb"] if profiles else ["1g.10gb", "9g.999gb"]))

    def slot(self) -> dict[str, Any]:
        node = self.node()
        index = self.gpu_index(node)
        slot: dict[str, Any] = {"node": self.node_name(node), "gpu": index}
        gpu = node.gpu(index) if node is not None else None
        starts = [i.start for i in gpu.mig or () if i.start is not None] if gpu is not None else []
        if starts or self(st.integers(0, 9)) == 0:
            slot["mig_start"] = self.one(starts or [0, 7])
        return slot


# ---------------------------------------------------------------------------------------------
# one generator per op: a dict the change schema accepts, valid-ish or deliberately wrong for the state


def _set_mig(d: Draw) -> dict[str, Any]:
    node = d.node()
    index = d.gpu_index(node)
    gpu = node.gpu(index) if node is not None else None
    model = get_catalog().model(gpu.model) if gpu is not None else None
    profiles = list(model.mig_profiles) if model is not None and model.mig_profiles else []
    instances = []
    for _ in range(d(st.integers(1, 4))):
        if not profiles:
            instances.append({"profile": d.mig_profile()})
            continue
        p = d.one(profiles)
        instance: dict[str, Any] = {"profile": p.name}
        start = d(st.one_of(st.none(), st.sampled_from(p.starts), st.integers(0, 7)))
        if start is not None:
            instance["start"] = start
        if d(st.integers(0, 4)) == 0:
            instance["replicas"] = d(st.integers(2, 4))
        instances.append(instance)
    return {"op": "set-mig", "node": d.node_name(node), "gpu": index, "instances": instances}


def _set_mode(d: Draw) -> dict[str, Any]:
    node = d.node()
    mode = d.one(["full", "time-sliced", "vgpu", "passthrough"])
    value: dict[str, Any] = {"op": "set-mode", "node": d.node_name(node), "gpu": d.gpu_index(node), "mode": mode}
    if mode == "time-sliced" or d(st.integers(0, 9)) == 0:
        value["replicas"] = d(st.integers(1, 8))
    return value


def _set_time_slicing(d: Draw) -> dict[str, Any]:
    node = d.node()
    index = d.gpu_index(node)
    value: dict[str, Any] = {"op": "set-time-slicing", "node": d.node_name(node), "gpu": index,
                             "replicas": d(st.integers(1, 8))}
    gpu = node.gpu(index) if node is not None else None
    profiles = sorted({i.profile for i in gpu.mig or ()}) if gpu is not None else []
    if profiles or d(st.integers(0, 9)) == 0:
        value["mig_profile"] = d.one(profiles or ["1g.10gb"])
    return value


def _set_sharing(d: Draw) -> dict[str, Any]:
    value: dict[str, Any] = {"op": "set-sharing", "node": d.node_name(d.node()),
                             "fractions": d.one(["dynamic", "off"])}
    if value["fractions"] == "dynamic" and d.maybe():
        value["reserved_gib"] = d.one([0, 0.5, 4, 40, 200])
    return value


def _set_device_groups(d: Draw) -> dict[str, Any]:
    node = d.node(vsphere=True)
    groups = [dumped(g) for g in node.device_groups] if node is not None else []
    if groups and d.maybe():
        groups.pop(d(st.integers(0, len(groups) - 1)))
    if d.maybe() and node is not None and node.gpus:
        indexes = [g.index for g in node.gpus]
        size = min(d.one([2, 3, 4, 8]), len(indexes))
        start = d(st.integers(0, len(indexes) - size))
        groups.append({"name": d.fresh("dg"), "gpus": indexes[start:start + size]})
    return {"op": "set-device-groups", "node": d.node_name(node), "groups": groups}


def _vgpu_profile(d: Draw, node: Node | None, index: int) -> str:
    gpu = node.gpu(index) if node is not None else None
    model = get_catalog().model(gpu.model) if gpu is not None else None
    types = [t.name for t in model.vgpu_types] if model is not None else []
    return str(d.one([*types, "A40-12C", "NOPE-1C"]))


def _assign_vgpu(d: Draw) -> dict[str, Any]:
    node = d.node(vsphere=True)
    index = d.gpu_index(node)
    return {"op": "assign-vgpu", "node": d.node_name(node), "gpu": index, "vm": d.vm(node),
            "profile": _vgpu_profile(d, node, index)}


def _remove_vgpu(d: Draw) -> dict[str, Any]:
    held = [(n.name, g.index, v.vm, v.profile) for n in d.state.nodes.values() for g in n.gpus for v in g.vgpus or ()]
    if held and d(st.integers(0, 3)) > 0:
        node_name, index, vm, profile = d.one(held)
    else:
        node = d.node(vsphere=True)
        index = d.gpu_index(node)
        node_name, vm, profile = d.node_name(node), d.vm(node), _vgpu_profile(d, node, index)
    return {"op": "remove-vgpu", "node": node_name, "gpu": index, "vm": vm, "profile": profile}


def _attach_vm(d: Draw) -> dict[str, Any]:
    node = d.node(vsphere=True)
    value: dict[str, Any] = {"op": "attach-vm", "node": d.node_name(node), "vm": d.vm(node)}
    groups = [g.name for g in node.device_groups] if node is not None else []
    if groups and d.maybe():
        value["device_group"] = d.one([*groups, UNKNOWN])
    else:
        value["gpus"] = sorted({d.gpu_index(node) for _ in range(d(st.integers(1, 2)))})
    return value


def _detach_vm(d: Draw) -> dict[str, Any]:
    node = d.node(vsphere=True)
    vm_name = d.vm(node)
    value: dict[str, Any] = {"op": "detach-vm", "node": d.node_name(node), "vm": vm_name}
    vm = next((v for v in node.vms if v.name == vm_name), None) if node is not None else None
    how = d.one(["everything", "gpus", "device_group"])
    if how == "gpus":
        value["gpus"] = sorted(set(vm.gpus or ()) if vm is not None and vm.gpus else {d.gpu_index(node)})
    elif how == "device_group":
        value["device_group"] = vm.device_group if vm is not None and vm.device_group else UNKNOWN
    return value


def _node_op(op: str) -> Callable[[Draw], dict[str, Any]]:
    return lambda d: {"op": op, "node": d.node_name(d.node())}


def _repair_node(d: Draw) -> dict[str, Any]:
    down = [n for n in d.state.nodes.values() if n.state == "down"]
    node = d.one(down + down + [d.node()])
    return {"op": "repair-node", "node": d.node_name(node), "note": d.one(["RMA 4411: GPU 3 replaced", " "]),
            "state": d.one(["ready", "cordoned"])}


def _set_gpu_health(d: Draw) -> dict[str, Any]:
    node = d.node()
    value: dict[str, Any] = {"op": "set-gpu-health", "node": d.node_name(node), "gpu": d.gpu_index(node),
                             "health": d.one(["healthy", "unhealthy", "unhealthy"])}
    if value["health"] == "unhealthy":
        value["reason"] = d.one(["XID 79: GPU has fallen off the bus", "DBE: 1 volatile double-bit ECC error"])
    return value


def _request(d: Draw) -> dict[str, Any]:
    kind = d.one(["gpus", "gang", "mig", "fraction", "memory"])
    if kind == "gpus":
        return {"gpus": d.one([1, 1, 2, 4, 8]), **({"nvlink": True} if d.maybe() else {})}
    if kind == "gang":
        return {"gpus": 8, "nodes": 2, "nvlink": True, "rdma": d.maybe()}
    if kind == "mig":
        return {"mig": d.mig_profile()}
    if kind == "fraction":
        return {"fraction": d.one([0.25, 0.5, 0.75])}
    return {"gpu_memory_gib": d.one([10, 40, 60])}


def _submit_job(d: Draw) -> dict[str, Any]:
    request = _request(d)
    # sometimes the name of a job that is gone (cancelled): submitted again, it goes last, and an undo back past
    # both puts it where it was (the FIFO order the snapshots compare)
    gone = sorted(set(d.seen["job"]) - set(d.state.jobs))[:3]
    job: dict[str, Any] = {"name": d.one([d.fresh("hyp"), d.job_name(), *gone]), "queue": d.queue_name(),
                           "request": request, "priority": d(st.integers(0, 100)), "preemptible": d.maybe()}
    fractional = "fraction" in request or "gpu_memory_gib" in request
    isolation = d.one([None, "shared", "exclusive"] if not fractional else [None, "shared"])
    if isolation is not None:
        job["isolation"] = isolation
    vms = [vm.name for n in d.state.nodes.values() for vm in n.vms]
    if vms and request.get("nodes", 1) == 1 and "gpus" in request and d(st.integers(0, 3)) == 0:
        job["vm"] = d.one(vms)
    if d(st.integers(0, 5)) == 0:
        job["node_selector"] = {"pool": d.one(["training", "mig", "nope"])}
    return {"op": "submit-job", "job": job}


def _fitting_slots(d: Draw, name: str) -> list[dict[str, Any]]:
    """Slots that could hold this job's request: free whole GPUs, instances of its profile, shared slices."""
    job = d.state.jobs.get(name)
    if job is None:
        return [d.slot()]
    free = [(n, g) for n in d.state.nodes.values() for g in n.gpus if not d.state.holders.get((n.name, g.index))]
    request = job.request
    if request.mig is not None:
        places = [{"node": n.name, "gpu": g.index, "mig_start": i.start} for n in d.state.nodes.values()
                  for g in n.gpus for i in g.mig or () if i.profile == request.mig and i.start is not None]
        return [d.one(places)] if places else [d.slot()]
    if request.fractional:
        shared = [{"node": n.name, "gpu": g.index} for n in d.state.nodes.values() for g in n.gpus
                  if g.mode == "time-sliced" or (g.mode == "full" and n.sharing is not None)]
        shared += [{"node": n.name, "gpu": g.index, "mig_start": i.start} for n in d.state.nodes.values()
                   for g in n.gpus for i in g.mig or () if i.replicas is not None]
        return [d.one(shared)] if shared else [d.slot()]
    whole = [(n, g) for n, g in free if g.mode == "full"] or free
    if not whole:
        return [d.slot()]
    node = d.one(sorted({n.name for n, _ in whole}))
    indexes = [g.index for n, g in whole if n.name == node]
    count = min(request.gpus or 1, len(indexes))
    return [{"node": node, "gpu": i} for i in indexes[:count]]


def _bind_job(d: Draw) -> dict[str, Any]:
    name = d.job_name(("pending", "preempted"))
    fitting = d(st.integers(0, 3)) > 0
    placement = _fitting_slots(d, name) if fitting else [d.slot() for _ in range(d(st.integers(1, 3)))]
    return {"op": "bind-job", "name": name, "placement": placement}


def _preempt_job(d: Draw) -> dict[str, Any]:
    value: dict[str, Any] = {"op": "preempt-job", "name": d.job_name(("running",))}
    if d(st.integers(0, 3)) == 0:  # an admin's override of a non-preemptible job, journaled with its reason
        value |= {"override": True, "reason": "node must go to RMA"}
    return value


def _cancel_job(d: Draw) -> dict[str, Any]:
    return {"op": "cancel-job", "name": d.job_name()}


def _resources(d: Draw) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if d.maybe():
        out["gpus"] = d(st.integers(0, 64))
    if d(st.integers(0, 3)) == 0:
        out["gpu_memory_gib"] = d.one([0, 80, 640.5])
    return out


def _set_quota(d: Draw) -> dict[str, Any]:
    value: dict[str, Any] = {"op": "set-quota", "queue": d.queue_name()}
    if d.maybe():
        value["quota"] = _resources(d)
    if d.maybe():
        value["limit"] = _resources(d)
    if d(st.integers(0, 3)) == 0:
        value["over_quota_weight"] = d.one([0, 1, 2.5])
    if d(st.integers(0, 3)) == 0:
        value["priority"] = d(st.integers(-10, 1000))
    return value


def _add_queue(d: Draw) -> dict[str, Any]:
    queue: dict[str, Any] = {"name": d.one([d.fresh("hyp-q"), d.queue_name()]), "quota": _resources(d)}
    if d.maybe():
        queue["limit"] = _resources(d)
    return {"op": "add-queue", "queue": queue}


def _remove_queue(d: Draw) -> dict[str, Any]:
    return {"op": "remove-queue", "name": d.queue_name()}


def _add_node(d: Draw) -> dict[str, Any]:
    """A copy of a node this run has seen (its GPUs, VMs, groups as they were), under a new name or a taken one."""
    versions = [v for vs in d.seen["node"].values() for v in vs]
    node = dict(d.one(versions))
    node["name"] = d.one([d.fresh("hyp-node"), node["name"]])
    node["state"] = d.one(["ready", "ready", "cordoned", "down"])
    return {"op": "add-node", "node": node}


def _remove_node(d: Draw) -> dict[str, Any]:
    return {"op": "remove-node", "name": d.node_name(d.node())}


def _restore(d: Draw) -> dict[str, Any]:
    """Put an entity back as the run saw it once, remove it, or forge one (a job running where it never ran,
    a down node brought back to ready) — what a hand-written restore may say."""
    kind = d.one(["node", "job", "queue"])
    names = sorted(d.seen[kind])
    name = d.one([*names, UNKNOWN])
    value: dict[str, Any] | None = d.one([*d.seen[kind].get(name, []), None])
    how = d.one(["as-seen", "as-seen", "forged", "renamed"])
    if how == "forged" and kind == "job" and value is not None:
        value = {**value, "status": "running", "placement": [d.slot() for _ in range(d(st.integers(1, 2)))]}
    elif how == "forged" and kind == "node" and value is not None:
        value = {**value, "state": "ready"}
    elif how == "renamed" and value is not None:
        value = {**value, "name": d.fresh("renamed")}
    out: dict[str, Any] = {"op": "restore", "kind": kind, "name": name}
    if value is not None:
        out[kind] = value
    if d(st.integers(0, 3)) == 0:
        out["seq"] = d(st.integers(1, 60))
    return out


GENERATORS: dict[str, Callable[[Draw], dict[str, Any]]] = {
    "set-mig": _set_mig,
    "set-mode": _set_mode,
    "set-time-slicing": _set_time_slicing,
    "set-sharing": _set_sharing,
    "set-device-groups": _set_device_groups,
    "assign-vgpu": _assign_vgpu,
    "remove-vgpu": _remove_vgpu,
    "attach-vm": _attach_vm,
    "detach-vm": _detach_vm,
    "cordon": _node_op("cordon"),
    "uncordon": _node_op("uncordon"),
    "drain": _node_op("drain"),
    "evacuate-host": _node_op("evacuate-host"),
    "repair-node": _repair_node,
    "set-gpu-health": _set_gpu_health,
    "submit-job": _submit_job,
    "cancel-job": _cancel_job,
    "bind-job": _bind_job,
    "preempt-job": _preempt_job,
    "set-quota": _set_quota,
    "add-queue": _add_queue,
    "remove-queue": _remove_queue,
    "add-node": _add_node,
    "remove-node": _remove_node,
    "restore": _restore,
}


@dataclass(frozen=True)
class Applied:
    """One applied plan: the states on either side, and its diff (what undo inverts)."""

    before: str
    after: str
    diff: list[EntityDiff]


def _reversed(diff: list[EntityDiff]) -> list[EntityDiff]:
    """As `Service.redo`: the entry's `after`, put back where the entry left it."""
    return [EntityDiff(d.kind, d.name, d.after, d.before, d.moved_to if d.moved_to is not None else d.seq)
            for d in diff]


def _first_befores(entries: list[Applied]) -> list[EntityDiff]:
    """As `undo --to`: each entity's `before` in the earliest of these entries is what it was before all."""
    first: dict[tuple[str, str], EntityDiff] = {}
    for entry in entries:
        for d in entry.diff:
            first.setdefault((d.kind, d.name), d)
    return list(first.values())


class ClusterMachine(RuleBasedStateMachine):
    state: ClusterState

    def __init__(self) -> None:
        super().__init__()
        self.done: list[Applied] = []  # applied plans in effect, oldest first (undo takes the last)
        self.undone: list[Applied] = []  # undone plans that redo brings back, the latest last
        self.seen: dict[str, dict[str, list[dict[str, Any]]]] = {"node": {}, "job": {}, "queue": {}}

    @initialize(sample=st.sampled_from(sorted(INVENTORIES)))
    def load(self, sample: str) -> None:
        self.state = ClusterState.from_inventory(INVENTORIES[sample])
        event(f"sample {sample}")
        assert check_state(self.state) == []
        self._remember()

    def _remember(self) -> None:
        """Keep every version of every entity, for restores that put back an old one."""
        for kind, table in (("node", self.state.nodes), ("job", self.state.jobs), ("queue", self.state.queues)):
            for name, entity in table.items():
                versions = self.seen[kind].setdefault(name, [])
                value = dumped(entity)
                if value not in versions:
                    versions.append(value)

    def _forward(self, changes: list[ch.Change], label: str) -> None:
        before_inventory = self.state.to_inventory()
        before = snapshot(self.state)
        try:
            result = plan(self.state, changes)
        except InputError as bad:  # bad input (exit 2): a restore into a position another entity holds
            assert snapshot(self.state) == before, "refusing bad input must change nothing"
            event(f"{label}: bad input")
            assert bad.diagnostics
            return
        assert snapshot(self.state) == before, "planning must never write"
        if not result.allowed:
            event(f"{label}: refused")
            return  # nothing is applied: the state is byte-identical (asserted above)
        event(f"{label}: allowed" + (" (no-op)" if result.empty else ""))
        self.state.commit(result.view)
        after_inventory = self.state.to_inventory()
        problems = invariants.step_problems(before_inventory, after_inventory, changes)
        assert not problems, self._report(problems, changes)
        violations = check_state(self.state)
        assert violations == [], self._report([str(v) for v in violations], changes,
                                              "an allowed plan led to a state that breaks a rule")
        self.done.append(Applied(before, snapshot(self.state), result.diff))
        self.undone.clear()
        self._remember()

    @staticmethod
    def _report(problems: list[str], changes: list[ch.Change], what: str = "an invariant broke") -> str:
        applied = json.dumps([c.model_dump(mode="json", exclude_none=True) for c in changes])
        return f"{what} after {applied}:\n  " + "\n  ".join(problems)

    def _draw_change(self, data: Any, op: str) -> ch.Change | None:
        """The drawn change, or None for a restore whose name differs from its entity's: the change schema
        refuses that (bad input, exit 2) before anything is planned."""
        value = GENERATORS[op](Draw(data, self.state, self.seen))
        try:
            return ch.CHANGE_LIST.validate_python([value])[0]
        except ValidationError:
            entity = value.get(value.get("kind", ""))
            if op != "restore" or entity is None or entity["name"] == value["name"]:
                raise
            event("restore of another name: refused by the schema")
            return None

    @rule(data=st.data(), op=st.sampled_from(sorted(OPS)), more=st.sampled_from([0, 0, 0, 1, 2]))
    def change(self, data: Any, op: str, more: int) -> None:
        """One plan of a change, sometimes with one or two more (a preempt before a repartition, a bind after a
        submit)."""
        ops = [op, *(data.draw(st.sampled_from(sorted(OPS))) for _ in range(more))]
        drawn = [c for c in (self._draw_change(data, op) for op in ops) if c is not None]
        if drawn:
            self._forward(drawn, ops[0] if len(ops) == 1 else "several")

    @rule(policy=st.sampled_from(["binpack", "spread"]))
    def schedule_cycle(self, policy: str) -> None:
        """The scheduler's own placements pass through plan → check → apply like an operator's."""
        cycle = schedule(self.state, policy)  # type: ignore[arg-type]
        if cycle.plan.allowed and not cycle.plan.empty:
            self._forward(cycle.changes, "schedule")
        else:
            event("schedule: nothing to apply")

    @precondition(lambda self: bool(self.done or self.undone))
    @rule(data=st.data())
    def history(self, data: Any) -> None:
        """Undo the latest plan, undo several at once (`undo --to REVISION`), or redo the latest undone one."""
        moves = ["undo"] * bool(self.done) + ["undo several"] * (len(self.done) >= 2) + ["redo"] * bool(self.undone)
        move = data.draw(st.sampled_from(moves))
        if move == "redo":
            entry = self.undone[-1]
            if self._reverse(_reversed(entry.diff), entry.after, move):
                self.done.append(self.undone.pop())
            else:
                self.undone.clear()
            return
        count = data.draw(st.integers(2, len(self.done))) if move == "undo several" else 1
        entries = self.done[-count:]
        if not self._reverse(_first_befores(entries), entries[0].before, move):
            self.done.clear()  # history cannot be walked back past a refused undo
        elif count == 1:
            self.undone.append(self.done.pop())
        else:
            del self.done[-count:]
            self.undone.clear()  # `undo --to` reverts several entries; redo brings back single entries only

    def _reverse(self, diff: list[EntityDiff], expected: str, label: str) -> bool:
        """Undo or redo; True when it went back to exactly the expected state. The one refusal allowed is the
        documented one (docs/rules.md `placement.non-preemptible-kept`): it would stop or move a running
        non-preemptible job (an undone bind, a redone override); the state is then unchanged."""
        before = snapshot(self.state)
        result = plan(self.state, inverse(diff), released_slots(diff))  # as Service.undo and redo plan it
        if not result.allowed:
            rules = {v.rule for v in result.violations}
            assert rules == {"placement.non-preemptible-kept"}, f"{label} refused: {result.violations}"
            assert snapshot(self.state) == before
            event(f"{label}: refused, it would stop a non-preemptible job")
            return False
        self.state.commit(result.view)
        assert snapshot(self.state) == expected, f"{label} did not return to the exact earlier state"
        event(label)
        return True

    @invariant()
    def holds(self) -> None:
        problems = invariants.state_problems(self.state.to_inventory())
        assert not problems, "an invariant broke:\n  " + "\n  ".join(problems)


_COMMON: dict[str, Any] = {"deadline": None, "suppress_health_check": list(HealthCheck)}

def test_cluster_machine() -> None:
    """The CI slice: a few hundred steps over the three samples, the same ones every run."""
    run_state_machine_as_test(ClusterMachine, settings=settings(
        max_examples=15, stateful_step_count=15, derandomize=True, database=None, **_COMMON))


@pytest.mark.slow  # twice the CI slice's runs (its former size); the long run below goes further still
def test_cluster_machine_30() -> None:
    run_state_machine_as_test(ClusterMachine, settings=settings(
        max_examples=30, stateful_step_count=15, derandomize=True, database=None, **_COMMON))


@pytest.mark.slow  # the long stress run: 1,500 runs of 40 steps
def test_cluster_machine_long() -> None:
    run_state_machine_as_test(ClusterMachine, settings=settings(
        max_examples=1_500, stateful_step_count=40, **_COMMON))


@pytest.mark.parametrize("op", sorted(OPS))
@settings(max_examples=3, derandomize=True, database=None, **_COMMON)
@given(sample=st.sampled_from(sorted(INVENTORIES)), data=st.data())
def test_every_op_from_a_sample(op: str, sample: str, data: Any) -> None:
    """Whatever the machine's draws, CI plans every op from the start state of the samples, with every check of
    a step."""
    machine = ClusterMachine()
    machine.load(sample)
    machine.change(data, op, more=0)
    machine.holds()
    machine.teardown()


def test_every_op_has_a_generator() -> None:
    """A new op in the change union fails here until the machine generates it."""
    assert set(GENERATORS) == set(OPS)
    assert len(OPS) == len(typing.get_args(typing.get_args(ch.Change)[0]))
