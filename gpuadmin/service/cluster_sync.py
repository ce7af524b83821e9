"""A state bound to a live cluster: create it from the cluster (`init --from-cluster`), bring the cluster's truth
in (`sync`), and show where the two differ (`diff`).

The cluster is what it is: what it already breaks of gpuadmin's rules is reported (warnings, exit 0), never refused
and never silently taken. A sync is one journal entry with origin `cluster`, made of `restore` changes from the
state to the cluster, so `journal`, `describe entry` and `undo` read it like any other; the resourceVersions read are
stored in the same commit. What the cluster does not report (a node's shape, RDMA, NVLink, dynamic sharing; a job's
owner, submission time, preemptibility, isolation, selectors) is kept from the state.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel

from gpuadmin.cluster.connect import Connection, connect, connect_bound
from gpuadmin.cluster.inventory import cluster_inventory
from gpuadmin.cluster.read import ClusterSnapshot, Finding, ReadSettings, read_cluster
from gpuadmin.cluster.vcenter import VcenterConnection, connect_vcenter, connect_vcenter_bound, read_vcenter
from gpuadmin.cluster.vcenter_inventory import CLUSTER_LABEL, placed_from_state, vcenter_inventory
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import dump, plan
from gpuadmin.engine.rules import Violation
from gpuadmin.engine.state import ClusterState
from gpuadmin.errors import Diagnostic, InputError
from gpuadmin.model import Inventory, Job, Node
from gpuadmin.model.inventory import DeviceGroup
from gpuadmin.service.caller import Caller, resolve_caller, use_case
from gpuadmin.service.core import ServiceCore, check_state
from gpuadmin.service.errors import Conflict, Stale
from gpuadmin.store import ClusterBinding, JournalEntry, LockHeld, StaleRevision, Store
from gpuadmin.store.roles import Role

SYNC_ORIGIN = "cluster"
# what the cluster does not report, kept from the state where the cluster's object leaves it unset
NODE_FACTS_KEPT = ("shape", "rdma", "nvlink", "sharing")
JOB_FACTS_KEPT = ("owner", "submitted", "isolation", "node_selector", "node_affinity", "vm")


# A vCenter's password, asked for only when the bound cluster is one: (user, server) → the password
PasswordSource = Callable[[str, str], str]


def password_from(password_file: Path | None, prompt: Callable[[str], str] | None) -> PasswordSource:
    """A vCenter's password as a front end gives it: `password_file` (its owner's only), else
    $GPUADMIN_VCENTER_PASSWORD, else `prompt`; read only when asked for (`cluster.vcenter.vcenter_password`)."""
    def source(user: str, server: str) -> str:
        from gpuadmin.cluster.vcenter import vcenter_password

        return vcenter_password(user, server, password_file, prompt)
    return source


class SessionPasswords:
    """The vCenter passwords typed into a front end that stays open (the console), by (user, server): held in this
    process's memory for its session only — never stored, journaled, logged or shown (its repr counts them). Its
    `source` gives $GPUADMIN_VCENTER_PASSWORD first, as `sync` does, else the password typed for that user and
    vCenter, else an InputError (exit 2) naming the variable."""

    def __init__(self) -> None:
        self._typed: dict[tuple[str, str], str] = {}

    def __repr__(self) -> str:
        return f"SessionPasswords({len(self._typed)} kept)"

    def keep(self, user: str, server: str, password: str) -> None:
        """Remember a password vCenter accepted (a login went through with it)."""
        self._typed[(user, server)] = password

    def source(self) -> PasswordSource:
        def source(user: str, server: str) -> str:
            from gpuadmin.cluster.vcenter import PASSWORD_VARIABLE, vcenter_password

            typed = self._typed.get((user, server))
            try:
                return vcenter_password(user, server, None, (lambda _prompt: typed) if typed else None)
            except InputError:
                raise PasswordNeeded([Diagnostic(f"no vCenter password for {user} at {server}", hint="log in "
                                                 f"when the console asks, or set {PASSWORD_VARIABLE} before "
                                                 "opening it")]) from None
        return source


class PasswordNeeded(InputError):
    """A console's work needs the bound vCenter's password and it has none (exit 2): the console asks for it."""


def vcenter_password_of(binding: ClusterBinding, password: PasswordSource | None) -> str:
    """The bound vCenter's password from `password`: an InputError (exit 2) where there is none."""
    if password is None:
        raise InputError([Diagnostic("this state is bound to a vCenter: its password is needed",
                                     hint="set GPUADMIN_VCENTER_PASSWORD or give --password-file FILE")])
    return password(binding.context, binding.server)


@dataclass
class ClusterRead:
    """One read of the cluster, as gpuadmin's entities, with what was found on the way."""

    binding: ClusterBinding
    versions: dict[tuple[str, str], str]  # each object's version as read (resourceVersion, changeVersion)
    inventory: Inventory
    findings: list[Finding]
    passed_over: int = 0  # pods asking for no GPU; VMs holding none
    snapshot: ClusterSnapshot | None = None  # a Kubernetes read's listing (the console's mirror starts from it)
    # a vCenter's: host → the VMs whose device group (or none) it told (`VcenterInventory.groups_known`)
    groups_known: dict[str, frozenset[str]] = field(default_factory=dict)
    # a vCenter's: host → its VMs whose vGPUs no GPU names (`VcenterInventory.unplaced`), placed by the state's
    unplaced: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)


@dataclass
class InitFromCluster:
    revision: int
    binding: ClusterBinding
    counts: dict[str, int]
    findings: list[Finding]
    warnings: list[Violation]  # the rules the cluster already breaks

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, **_binding_json(self.binding), "counts": self.counts,
                "findings": [f.to_json() for f in self.findings],
                "warnings": [_violation_json(v) for v in self.warnings]}


@dataclass(frozen=True)
class Drift:
    """One field where the state and the cluster differ; an entity only one side has is one row (field "")."""

    kind: str
    name: str
    field: str
    state: Any
    cluster: Any

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "field": self.field, "state": self.state,
                "cluster": self.cluster}


@dataclass
class ClusterDiff:
    binding: ClusterBinding
    drift: list[Drift]
    findings: list[Finding]

    def to_json(self) -> dict[str, Any]:
        return {**_binding_json(self.binding), "drift": [d.to_json() for d in self.drift],
                "findings": [f.to_json() for f in self.findings]}


@dataclass
class SyncResult:
    binding: ClusterBinding
    revision: int
    entry: int | None  # the journal entry; None when the state already matched the cluster
    changed: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, name, add|modify|remove)
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {**_binding_json(self.binding), "revision": self.revision, "entry": self.entry,
                "changed": [{"kind": k, "name": n, "action": a} for k, n, a in self.changed],
                "findings": [f.to_json() for f in self.findings],
                "warnings": [_violation_json(v) for v in self.warnings]}


def _binding_json(binding: ClusterBinding) -> dict[str, Any]:
    """A Kubernetes binding as before (context, server); a vCenter's also says its kind and whether its TLS
    certificate goes unverified."""
    if binding.kind == "kubernetes":
        return {"context": binding.context, "server": binding.server}
    return {"kind": binding.kind, "context": binding.context, "server": binding.server,
            "insecure": binding.insecure}


def _violation_json(violation: Violation) -> dict[str, str]:
    return {"rule": violation.rule, "target": violation.target, "message": violation.message}


def read_from(connection: Connection, settings: ReadSettings | None = None,
              previous: dict[str, Job] | None = None) -> ClusterRead:
    """The cluster behind `connection`, read and made gpuadmin's entities."""
    return made_from(connection, read_cluster(connection.client, settings), previous)


def made_from(connection: Connection, snapshot: ClusterSnapshot, previous: dict[str, Job] | None) -> ClusterRead:
    """A Kubernetes listing made gpuadmin's entities (the jobs `previous` holds keep what pods do not say)."""
    made = cluster_inventory(snapshot, connection.context, previous)
    return ClusterRead(connection.binding(), snapshot.versions, made.inventory, made.findings, snapshot.other_pods,
                       snapshot)


def read_vcenter_from(connection: VcenterConnection) -> ClusterRead:
    """The vCenter behind `connection`, read and made gpuadmin's entities (docs/vsphere.md); its session is
    closed afterwards."""
    try:
        return read_vcenter_through(connection)
    finally:
        connection.close()


def read_vcenter_through(connection: VcenterConnection) -> ClusterRead:
    """The vCenter behind `connection`, read and made gpuadmin's entities; the session stays open (the console's
    watch's, reused by each of its syncs)."""
    snapshot = read_vcenter(connection)
    made = vcenter_inventory(snapshot, urlsplit(connection.server).hostname or connection.server)
    return ClusterRead(connection.binding(), snapshot.versions, made.inventory, made.findings, made.other_vms,
                       groups_known=made.groups_known, unplaced=made.unplaced)


def init_from_vcenter(state_dir: Path, *, server: str, user: str, password: str, insecure: bool = False,
                      force: bool = False, role: Role | None = None,
                      caller: Caller | None = None) -> InitFromCluster:
    """Create a state from a vCenter's GPU hosts and VMs and bind it there (user, address, `insecure`; never the
    password). What the estate breaks of the rules comes back as warnings: the state is created all the same."""
    caller = (caller or resolve_caller(state_dir)).lowered(role)
    caller.require("init")
    read = read_vcenter_from(connect_vcenter(server, user, password, insecure=insecure))
    for node in read.inventory.nodes:  # no state yet: every VM whose vGPUs no GPU names is reported, on none
        read.findings += placed_from_state(node, None, read.unplaced.get(node.name, {}))[1]
    warnings = check_state(ClusterState.from_inventory(read.inventory))
    with Store.create(state_dir, read.inventory, force=force, actor=caller.identity,
                      command="gpuadmin init --from-cluster vcenter") as store:
        store.bind(read.binding)
        store.set_cluster_versions(read.versions)
        revision = store.revision()
    nodes = read.inventory.nodes
    counts = {"hosts": len(nodes), "gpus": sum(len(n.gpus) for n in nodes), "vms": sum(len(n.vms) for n in nodes),
              "other_vms": read.passed_over}
    return InitFromCluster(revision, read.binding, counts, read.findings, warnings)


def read_beside(connect_to: Callable[[], Connection], settings: ReadSettings | None,
                load: Callable[[], ClusterState]) -> tuple[ClusterRead, ClusterState]:
    """The cluster read as `read_from` reads it, with the state `load` gives as the previous jobs; the connection
    and the listing run in a thread of their own while `load` runs in this one. The listing is mostly waiting for
    the API server's pages, the load (validating the stored rows, indexing them) is gpuadmin's own CPU: in turn,
    a 1,024-node state's load waited for nothing but was waited for (bench/bench_cluster_sync.py). When both fail,
    the read's failure is the one raised, as when the read came first. The thread is a daemon: Ctrl-C here ends
    the command without waiting for an API server that does not answer."""
    answer: queue.SimpleQueue[tuple[Connection, ClusterSnapshot] | BaseException] = queue.SimpleQueue()

    def listed() -> None:
        try:
            connection = connect_to()
            answer.put((connection, read_cluster(connection.client, settings)))
        except BaseException as failure:  # raised in the caller's thread, by `_answered`
            answer.put(failure)

    threading.Thread(target=listed, name="gpuadmin-cluster-read", daemon=True).start()
    try:
        state = load()
    except Exception:
        _answered(answer)  # raises the read's own failure, if it had one
        raise
    connection, snapshot = _answered(answer)
    return made_from(connection, snapshot, dict(state.jobs)), state


def _answered(answer: queue.SimpleQueue[tuple[Connection, ClusterSnapshot] | BaseException],
              ) -> tuple[Connection, ClusterSnapshot]:
    got = answer.get()
    if isinstance(got, BaseException):
        raise got
    return got


def read_settings(binding: ClusterBinding) -> ReadSettings:
    """Where a bound state's sync and diff read the GPU Operator's configs: the places stored with the binding; a
    state bound before they were stored looks them up as `init` does (the ClusterPolicy's names, else the
    defaults)."""
    return ReadSettings(namespace=binding.operator_namespace or ReadSettings.namespace,
                        mig_parted_configmap=binding.mig_parted_configmap,
                        device_plugin_configmap=binding.device_plugin_configmap)


def init_from_cluster(state_dir: Path, *, kubeconfig: Path | None = None, context: str | None = None,
                      force: bool = False, role: Role | None = None, caller: Caller | None = None,
                      settings: ReadSettings | None = None) -> InitFromCluster:
    """Create a state from the live cluster and bind it there (context and API server, never a credential). What
    the cluster breaks of the rules comes back as warnings: the state is created all the same."""
    caller = (caller or resolve_caller(state_dir)).lowered(role)
    caller.require("init")
    settings = settings or ReadSettings()
    connection = connect(kubeconfig, context)
    snapshot = read_cluster(connection.client, settings)
    read = made_from(connection, snapshot, None)
    # where the GPU Operator keeps its configs, as given or found (the ClusterPolicy's names): stored with the
    # binding, so that every later sync, diff and execution looks at these, not at what its options say then
    mig_parted, device_plugin = snapshot.configmap_names
    read.binding = replace(read.binding, operator_namespace=settings.namespace, mig_parted_configmap=mig_parted,
                           device_plugin_configmap=device_plugin)
    warnings = check_state(ClusterState.from_inventory(read.inventory))
    with Store.create(state_dir, read.inventory, force=force, actor=caller.identity,
                      command="gpuadmin init --from-cluster kubernetes") as store:
        store.bind(read.binding)
        store.set_cluster_versions(read.versions)
        revision = store.revision()
    counts = {"nodes": len(read.inventory.nodes), "jobs": len(read.inventory.jobs),
              "queues": len(read.inventory.queues), "other_pods": read.passed_over}
    return InitFromCluster(revision, read.binding, counts, read.findings, warnings)


class ClusterUseCases(ServiceCore):
    """sync and diff of a state bound to a cluster."""

    def _bound(self) -> tuple[Store, ClusterBinding]:
        binding = self.store.binding() if self.store is not None else None
        if self.store is None or binding is None:
            raise InputError([Diagnostic(
                "this state is not bound to a cluster", hint="create one that is: gpuadmin init --from-cluster "
                "kubernetes [--kubeconfig FILE] [--context NAME]")])
        return self.store, binding

    def _read_bound(self, binding: ClusterBinding, kubeconfig: Path | None, password: PasswordSource | None,
                    connection: Connection | None = None,
                    ) -> tuple[ClusterRead, ClusterState]:
        """The bound cluster, read, and the state: a Kubernetes cluster through its context (listed while the
        state loads: `read_beside`), a vCenter with its user and the password `password` gives (asked for only
        here, never stored)."""
        if binding.kind == "vcenter":
            return read_vcenter_from(connect_vcenter_bound(binding, vcenter_password_of(binding, password))), \
                self.state
        return read_beside(lambda: connection or connect_bound(binding, kubeconfig), read_settings(binding),
                           lambda: self.state)

    @use_case("read")
    def cluster_diff(self, kubeconfig: Path | None = None, password: PasswordSource | None = None) -> ClusterDiff:
        """Where the state and its cluster differ, field by field; nothing is written."""
        _, binding = self._bound()
        read, state = self._read_bound(binding, kubeconfig, password)
        target, findings = _target(state, read, binding)
        return ClusterDiff(binding, _drift(state, target), [*read.findings, *findings])

    def sync(self, kubeconfig: Path | None = None, connection: Connection | None = None,
             password: PasswordSource | None = None) -> SyncResult:
        """Bring the cluster's truth into the state: one journal entry (origin `cluster`) of the restores from the
        state to the cluster, and the resourceVersions read, in one commit; none when nothing differs. Needs an
        operator (it writes the state); what it writes is the cluster's, not the caller's choice, so the ops'
        admin gate does not apply. `connection`: one already open to the bound cluster (the console's watch's), so a
        sync per batch does not reconnect (on OKE, run the exec plugin) every time."""
        self.caller.require("apply")
        store, binding = self._bound()
        read, _ = self._read_bound(binding, kubeconfig, password, connection)
        return self._locked(store, lambda: self._commit_sync(store, read))

    def _locked(self, store: Store, write: Callable[[], _R]) -> _R:
        """`write` under the state's write lock, waited for as an apply waits (`Conflict` when it stays held)."""
        try:
            with store.write_lock(self.caller.identity, self.command, timeout=self.lock_wait):
                return write()
        except LockHeld as held:
            raise Conflict(f"{held} (waited {self.lock_wait:g} s for it)") from held

    def _commit_sync(self, store: Store, read: ClusterRead) -> SyncResult:
        current = store.revision()
        if self._state is None or self._state.revision != current:
            self._state = None
        state = self.state
        target, placement_findings = _target(state, read, read.binding)
        read = replace(read, findings=[*read.findings, *placement_findings])
        changes = _restores(state, target)
        if not changes:
            store.set_cluster_versions(read.versions)
            return SyncResult(read.binding, current, None, [], read.findings, [])
        synced = plan(state, changes)
        plan_json = synced.to_json()
        message = (f"sync from cluster {read.binding.context} ({read.binding.server}): {len(synced.diff)} "
                   f"entit{'y' if len(synced.diff) == 1 else 'ies'} changed, {len(synced.violations)} rule "
                   f"warning(s), {len(read.findings)} finding(s)")
        plan_json["findings"] = [f.to_json() for f in read.findings]
        entry = JournalEntry.new(self.command, synced.base_revision, verdict="allowed", outcome="applied",
                                 plan=plan_json, diff=[d.to_json() for d in synced.diff], message=message,
                                 actor=self.caller.identity, origin=SYNC_ORIGIN)
        try:
            revision = store.commit(synced.base_revision, synced.view, entry,
                                    cluster_versions=read.versions)
        except StaleRevision as stale:
            raise Stale(str(stale)) from stale
        state.commit(synced.view)
        return SyncResult(read.binding, revision, entry.id, [(d.kind, d.name, d.action) for d in synced.diff],
                          read.findings, list(synced.violations))


Entities = dict[str, dict[str, BaseModel]]
_M = TypeVar("_M", bound=BaseModel)
_R = TypeVar("_R")


def _target(state: ClusterState, read: ClusterRead, binding: ClusterBinding) -> tuple[Entities, list[Finding]]:
    """What the state becomes, and the findings of making it (a vCenter's: `placed_from_state`)."""
    return _vcenter_target(state, read) if binding.kind == "vcenter" else (_kube_target(state, read.inventory), [])


def _vcenter_target(state: ClusterState, read: ClusterRead) -> tuple[Entities, list[Finding]]:
    """What a vCenter-bound state becomes: the vCenter's hosts, with what vCenter does not report kept from the
    state's own (`NODE_FACTS_KEPT`; the labels besides `vsphere.cluster`; each VM's device group where vCenter does
    not tell it, and the device groups no VM holds: `_merged_groups`; the GPUs of a VM whose vGPUs no GPU names, a
    powered-off one: `placed_from_state`); the queues and jobs are gpuadmin's own (vCenter has none) and stay as
    they are."""
    nodes: dict[str, BaseModel] = {}
    findings: list[Finding] = []
    for node in read.inventory.nodes:
        before = state.nodes.get(node.name)
        placed, found = placed_from_state(node, before, read.unplaced.get(node.name, {}))
        findings += found
        nodes[node.name] = _kept_vsphere(_kept(placed, before, NODE_FACTS_KEPT), before,
                                         read.groups_known.get(node.name, frozenset()))
    return {"queue": dict(state.queues), "node": nodes, "job": dict(state.jobs)}, findings


def _merged_groups(node: Node, before: Node, known: frozenset[str]) -> tuple[list[DeviceGroup], dict[str, str]]:
    """The host's device groups: each one a VM holds on vCenter, under the state's name for a group of the same GPUs
    (a group is its GPUs: vSphere has no name of its own for one), then the state's others that overlap none of
    them — vSphere names GPUs only for a group a VM holds. And the name each VM whose group vCenter told now holds
    ("" for none)."""
    unmatched = {g.name: g for g in before.device_groups}
    renamed: dict[str, str] = {}
    for group in node.device_groups:
        name = next((g.name for g in unmatched.values() if sorted(g.gpus) == group.gpus), group.name)
        unmatched.pop(name, None)
        renamed[group.name] = name
    read = [g.model_copy(update={"name": renamed[g.name]}) for g in node.device_groups]
    used = {i for g in read for i in g.gpus}
    names = {g.name for g in read}
    kept = [g for g in unmatched.values() if not used & set(g.gpus) and g.name not in names]
    order = {g.name: i for i, g in enumerate(before.device_groups)}
    groups = sorted([*read, *kept], key=lambda g: order.get(g.name, len(order)))
    told = {vm.name: renamed[vm.device_group] if vm.device_group is not None else "" for vm in node.vms
            if vm.name in known}
    return groups, told


def _kept_vsphere(node: Node, before: Node | None, known: frozenset[str]) -> Node:
    if before is None:
        return node
    labels = {**{k: v for k, v in before.labels.items() if k != CLUSTER_LABEL}, **node.labels}
    groups, told = _merged_groups(node, before, known)
    update: dict[str, Any] = {"labels": labels, "device_groups": groups}
    if node.vsphere is not None and before.vsphere is not None:
        # vCenter has no tolerated stun time of gpuadmin's; a vMotion link speed vCenter does not give (a finding
        # says why) is kept as the state has it, an operator's own
        kept = {"tolerated_stun_s": before.vsphere.tolerated_stun_s}
        if node.vsphere.vmotion_gbps is None:
            kept["vmotion_gbps"] = before.vsphere.vmotion_gbps
        update["vsphere"] = node.vsphere.model_copy(update=kept)
    held = {vm.name: vm.device_group for vm in before.vms if vm.device_group in {g.name for g in groups}}
    tolerated = {vm.name: vm.tolerated_stun_s for vm in before.vms}  # gpuadmin's own: vCenter has none
    vms = [vm.model_copy(update={"device_group": (told[vm.name] or None) if vm.name in told else held.get(vm.name),
                                 "tolerated_stun_s": tolerated.get(vm.name)}) for vm in node.vms]
    # vCenter lists a host's VMs in no order of gpuadmin's: the state's order is kept (an evacuation appends the VMs
    # it moves in), the host's new VMs after them, so an order is never drift
    order = {vm.name: i for i, vm in enumerate(before.vms)}
    update["vms"] = sorted(vms, key=lambda vm: order.get(vm.name, len(order)))
    if before.state == "draining" and node.state == "cordoned":
        update["state"] = "draining"  # vCenter's maintenance mode is both: the state says which gpuadmin planned
    return node.model_copy(update=update)


def _kube_target(state: ClusterState, cluster: Inventory) -> Entities:
    """What the state becomes: the cluster's entities, with the facts the cluster does not report kept from the
    state's own (`NODE_FACTS_KEPT`, `JOB_FACTS_KEPT`)."""
    nodes: dict[str, BaseModel] = {}
    for node in cluster.nodes:
        before = state.nodes.get(node.name)
        nodes[node.name] = _kept(node, before, NODE_FACTS_KEPT)
    jobs: dict[str, BaseModel] = {}
    for job in cluster.jobs:
        before_job = state.jobs.get(job.name)
        kept = _kept(job, before_job, JOB_FACTS_KEPT)
        if before_job is not None and not before_job.preemptible:
            kept = kept.model_copy(update={"preemptible": False})  # no pod says it; the state's word stands
        jobs[job.name] = kept
    return {"queue": {q.name: q for q in cluster.queues}, "node": nodes, "job": jobs}


def _kept(model: _M, before: _M | None, facts: tuple[str, ...]) -> _M:
    if before is None:
        return model
    update = {f: getattr(before, f) for f in facts if getattr(model, f) is None and getattr(before, f) is not None}
    return model.model_copy(update=update) if update else model


def _current(state: ClusterState) -> Entities:
    return {"queue": dict(state.queues), "node": dict(state.nodes), "job": dict(state.jobs)}


def _restores(state: ClusterState, target: Entities,
              scope: Mapping[str, Collection[str]] | None = None) -> list[ch.Change]:
    """The restores that make the state the target: jobs removed first (they free slots and queues), then queues,
    nodes and jobs put in, then nodes and queues removed. `scope`: the names of each kind the target speaks for
    (an incremental sync's, `cluster_changes`); the state's others stay as they are."""
    current = _current(state)
    puts: dict[str, list[ch.Change]] = {"queue": [], "node": [], "job": []}
    removes: dict[str, list[ch.Change]] = {"queue": [], "node": [], "job": []}
    for kind in ("queue", "node", "job"):
        have, want = current[kind], target[kind]
        if scope is not None:
            have = {name: have[name] for name in scope[kind] if name in have}
        for name in sorted(want):
            if name not in have or dump(have[name]) != dump(want[name]):
                puts[kind].append(ch.Restore.model_validate({"op": "restore", "kind": kind, "name": name,
                                                             kind: want[name]}))
        removes[kind] = [ch.Restore(op="restore", kind=kind, name=name) for name in sorted(set(have) - set(want))]
    return [*removes["job"], *puts["queue"], *puts["node"], *puts["job"], *removes["node"], *removes["queue"]]


def _drift(state: ClusterState, target: Entities) -> list[Drift]:
    out: list[Drift] = []
    current = _current(state)
    for kind in ("node", "job", "queue"):
        have, want = current[kind], target[kind]
        for name in sorted(set(have) | set(want)):
            before, after = dump(have.get(name)), dump(want.get(name))
            if before is None or after is None:
                out.append(Drift(kind, name, "", "present" if before is not None else None,
                                 "present" if after is not None else None))
                continue
            out += [Drift(kind, name, path, was, now) for path, was, now in _field_drift("", before, after)]
    return out


def _field_drift(path: str, before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """The innermost fields that differ: into mappings key by key (a label that changed is `labels[foo]`, not the
    whole map) and into lists of the same length item by item (`gpus[3].mode`); anything else is one row."""
    if _canonical(before) == _canonical(after):
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        return [row for key in sorted(set(before) | set(after))
                for row in _field_drift(_member(path, key), before.get(key), after.get(key))]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [row for i, (was, now) in enumerate(zip(before, after, strict=True))
                for row in _field_drift(f"{path}[{i}]", was, now)]
    return [(path, before, after)]


def _member(path: str, key: str) -> str:
    """`labels[nvidia.com/mig.config]` for a key a dot would misread, else `path.key`."""
    if any(c in key for c in "./[] "):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


__all__ = ["ClusterDiff", "ClusterUseCases", "Drift", "InitFromCluster", "PasswordSource", "SyncResult",
           "init_from_cluster", "init_from_vcenter", "password_from", "read_settings"]
