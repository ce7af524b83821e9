"""What a state bound to a cluster was last synced from, kept as translations, so that a change of a few objects is
brought in without listing and translating the whole cluster again (the console's sync of its watch's changes).

A `ClusterMirror` holds each watched object's translation (the same functions `read_cluster` uses), by kind and
key, with the resourceVersion it was translated from. `refresh(cache)` compares it with the watch's cache (the
whole current object set, in memory): an object whose resourceVersion differs is translated again, and one whose
translation moved (the resourceVersion alone does not count) seeds the part of the cluster to place again.

Placement is where an object's change reaches others: a running pod holds slots of its node, handed out in name
order (`cluster_inventory`), so a change on a node can move the slots of every pod on it, and a gang spans nodes.
The part placed again is closed under that: the seeds' pod groups (a PodGroup, gpuadmin's job annotation, or the
pod alone), every node a running pod of them runs on, every pod running on those nodes, and every unit of pods
that comes out under a job name in play (a pod named like another's PodGroup). Slot bookkeeping never crosses
such a part, so `cluster_inventory` run on it alone gives its jobs exactly what it gives them run on everything:
tests/kube/test_cluster_changes.py holds the two equal.

Pure: nothing here talks to the cluster or the state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuadmin.adapters.kube_cluster import ClusterNode, ClusterPod
from gpuadmin.cluster.inventory import _unit_name, _units
from gpuadmin.cluster.read import (
    ClusterSnapshot,
    Finding,
    PodGroupRead,
    ReadSettings,
    _check_node_configs,
    _read_node,
    _read_pod,
    _read_pod_group,
    _read_queue,
)
from gpuadmin.cluster.watch import resource_version
from gpuadmin.model import Queue

Obj = Mapping[str, Any]
Translation = ClusterNode | ClusterPod | Queue | PodGroupRead
VersionKey = tuple[str, str]
KINDS = ("node", "pod", "queue", "podgroup")  # the watch's kinds (`gpuadmin.cluster.watch.WATCHED`)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One object as last translated: None when skipped (a finding says why) or a pod that asks for no GPU."""

    version: str | None  # the resourceVersion translated; None: unknown, translate the cached object again
    value: Translation | None
    findings: tuple[Finding, ...] = ()


@dataclass
class Delta:
    """What changed since the mirror's last refresh, and the part of the cluster to place again."""

    snapshot: ClusterSnapshot  # that part's nodes and pods (pods in list order), with every queue and PodGroup
    nodes: set[str]  # the nodes whose entities are made again (removed where the snapshot has none)
    jobs: set[str]  # the job names made again: what the part's units are named now and were named before
    queues: set[str]  # the KAI Queues that changed
    versions: dict[VersionKey, str] = field(default_factory=dict)  # resourceVersions to store (`Store`'s keys)
    dropped_versions: set[VersionKey] = field(default_factory=set)  # and those to forget
    findings: list[Finding] = field(default_factory=list)  # of the objects translated again


def group_key(pod: ClusterPod) -> str:
    """The pods `cluster_inventory` may make one job of share this: their PodGroup, else the job gpuadmin submitted
    them for, else the pod alone (`_units`' grouping, in its order of precedence)."""
    if pod.pod_group is not None:
        return f"{pod.namespace}/{pod.pod_group}"
    return pod.gpuadmin_job or f"{pod.namespace}/{pod.name}"


def _list_order(key: str, entry: _Entry) -> tuple[str, str]:
    """A list's order, as `read_cluster` receives the pods: by namespace, then name."""
    value = entry.value
    return (value.namespace, value.name) if isinstance(value, ClusterPod) else ("", key)


class ClusterMirror:
    """The translations a bound state was synced from; `revision`: the state's revision they match (None once a
    refresh was not followed by a commit: the next sync must be a full one)."""

    def __init__(self, settings: ReadSettings, configmaps: ClusterSnapshot, listings: int,
                 revision: int | None) -> None:
        self.settings = settings
        self._configmaps = configmaps  # the GPU Operator ConfigMaps of the last full read (the watch has none)
        self.listings = listings  # the watch's `listings()` when the full read was made: another means a relist
        self.revision = revision
        self._entries: dict[str, dict[str, _Entry]] = {kind: {} for kind in KINDS}
        self._by_group: dict[str, set[str]] = {}  # group key → pod keys
        self._by_node: dict[str, set[str]] = {}  # node → keys of the pods running there
        self._by_name: dict[str, set[str]] = {}  # a pod's job name → pod keys

    @classmethod
    def of_snapshot(cls, snapshot: ClusterSnapshot, settings: ReadSettings, listings: int,
                    revision: int) -> ClusterMirror:
        """The mirror of what a full sync read. What it did not translate (a pod asking for no GPU, an object
        skipped) is not in it: the first refresh translates those once, and finds that nothing moved."""
        configmaps = ClusterSnapshot(mig_parted=snapshot.mig_parted, device_plugin=snapshot.device_plugin,
                                     configmap_names=snapshot.configmap_names)
        mirror = cls(settings, configmaps, listings, revision)
        for node in snapshot.nodes:
            mirror._entries["node"][node.node.name] = _Entry(node.resource_version, node)
        for pod in snapshot.pods:
            mirror._put_pod(f"{pod.namespace}/{pod.name}", _Entry(pod.resource_version, pod))
        for queue in snapshot.queues:
            mirror._entries["queue"][queue.name] = _Entry(snapshot.versions.get(("queue", queue.name)), queue)
        for key, group in snapshot.pod_groups.items():
            mirror._entries["podgroup"][key] = _Entry(None, group)  # a snapshot keeps no PodGroup's version
        return mirror

    def refresh(self, cache: Mapping[str, Mapping[str, Obj]]) -> Delta:
        """Bring the mirror to the watch's cache (kind → key → object, every watched kind) and say what moved."""
        self.revision = None  # valid again once the state is committed to match (`ClusterChanges`)
        changed = {kind: self._changed(kind, cache.get(kind, {})) for kind in KINDS}
        delta = Delta(ClusterSnapshot(), set(), set(), set())
        seeds = _Seeds()
        for key, entry in changed["node"].items():
            if self._moved("node", key, entry):
                seeds.nodes.add(key)
            self._set("node", key, entry)
            node = entry.value
            self._version(delta, ("node", key), node.resource_version if isinstance(node, ClusterNode) else None)
        self._node_findings(changed["node"], delta)
        for key, entry in changed["queue"].items():
            if self._moved("queue", key, entry):
                delta.queues.add(key)
            self._set("queue", key, entry)
            self._version(delta, ("queue", key), entry.version if entry.value is not None else None)
        for key, entry in changed["podgroup"].items():
            if self._moved("podgroup", key, entry):
                seeds.groups.add(key)
                seeds.names.add(key)
            self._set("podgroup", key, entry)
        self._pods_changed(changed["pod"], seeds, delta)
        for kind in KINDS:
            delta.findings += [f for entry in changed[kind].values() for f in entry.findings]
        self._place_again(seeds, delta)
        return delta

    # --- the diff against the cache ------------------------------------------------------------------------------

    def _changed(self, kind: str, objects: Mapping[str, Obj]) -> dict[str, _Entry]:
        """The entries of the objects whose resourceVersion moved, translated again; a deleted one's is empty."""
        known = self._entries[kind]
        out: dict[str, _Entry] = {}
        for key, obj in objects.items():
            version = resource_version(obj)
            entry = known.get(key)
            if entry is None or version is None or entry.version != version:
                out[key] = _translate(kind, obj, version)
        out.update({key: _DELETED for key in known.keys() - objects.keys()})
        return out

    def _moved(self, kind: str, key: str, entry: _Entry) -> bool:
        """Whether the object's translation differs, its resourceVersion aside (a status heartbeat moves that)."""
        before = self._entries[kind].get(key)
        return _unversioned(before.value if before else None) != _unversioned(entry.value)

    def _pods_changed(self, changed: Mapping[str, _Entry], seeds: _Seeds, delta: Delta) -> None:
        befores = {key: before.value for key in changed if (before := self._entries["pod"].get(key)) is not None}
        moved = [key for key, entry in changed.items() if self._moved("pod", key, entry)]
        # the names the groups the moved pods leave or join were read under, all taken before any pod moves: a
        # name that no unit gives any more (a gang a new pod splits into one job per pod) is a job to remove
        groups = {group_key(pod) for key in moved for pod in (befores.get(key), changed[key].value)
                  if isinstance(pod, ClusterPod)}
        for group in groups:
            seeds.names |= self._unit_names(self._by_group.get(group, set()))
        for key in moved:
            seeds.pod(befores.get(key))
            seeds.pod(changed[key].value)
        job_names = {pod.job_name for pod in (*befores.values(), *(e.value for e in changed.values()))
                     if isinstance(pod, ClusterPod)}
        for key, entry in changed.items():
            self._put_pod(key, entry)
        for job_name in job_names:
            self._pod_version(delta, job_name)

    def _set(self, kind: str, key: str, entry: _Entry) -> None:
        if entry is _DELETED:
            self._entries[kind].pop(key, None)
        else:
            self._entries[kind][key] = entry

    def _put_pod(self, key: str, entry: _Entry) -> None:
        before = self._entries["pod"].get(key)
        if before is not None and isinstance(before.value, ClusterPod):
            for index, at in self._indexed(before.value):
                index[at].discard(key)
                if not index[at]:
                    del index[at]
        self._set("pod", key, entry)
        if isinstance(entry.value, ClusterPod):
            for index, at in self._indexed(entry.value):
                index.setdefault(at, set()).add(key)

    def _indexed(self, pod: ClusterPod) -> list[tuple[dict[str, set[str]], str]]:
        places = [(self._by_group, group_key(pod)), (self._by_name, pod.job_name)]
        if pod.status == "running" and pod.node:
            places.append((self._by_node, pod.node))
        return places

    # --- resourceVersions, as `read_cluster` records them --------------------------------------------------------

    @staticmethod
    def _version(delta: Delta, key: VersionKey, version: str | None) -> None:
        """A translated object's version is stored; a deleted or skipped one's forgotten (as a full read does)."""
        if version:
            delta.versions[key] = version
        else:
            delta.dropped_versions.add(key)

    def _pod_version(self, delta: Delta, job_name: str) -> None:
        """A pod's version is filed under its job name, which the pods of one gpuadmin job share: the last of them
        in list order that has one, as a full read leaves it."""
        versions = [pod.resource_version for pod in self._pods(self._by_name.get(job_name, ()))
                    if pod.resource_version]
        self._version(delta, ("pod", job_name), versions[-1] if versions else None)

    def _node_findings(self, changed: Mapping[str, _Entry], delta: Delta) -> None:
        """What a full read finds of a node naming a config its ConfigMap lacks, for the nodes translated again."""
        nodes = [entry.value for entry in changed.values() if isinstance(entry.value, ClusterNode)]
        if nodes:
            scratch = dataclasses.replace(self._configmaps, nodes=nodes, findings=[])
            _check_node_configs(scratch, self.settings)
            delta.findings += scratch.findings

    # --- the part to place again ---------------------------------------------------------------------------------

    def _unit_names(self, keys: Iterable[str]) -> set[str]:
        """The job names `cluster_inventory` gives these pods (one pod group's, in list order)."""
        pods = self._pods(keys)
        return {_unit_name(unit) for unit in _units(pods, [])} if pods else set()

    def _pods(self, keys: Iterable[str]) -> list[ClusterPod]:
        entries = sorted(((key, self._entries["pod"][key]) for key in keys), key=lambda item: _list_order(*item))
        return [entry.value for _, entry in entries if isinstance(entry.value, ClusterPod)]

    def _place_again(self, seeds: _Seeds, delta: Delta) -> None:
        """Close the seeds over groups, nodes and job names, and make the snapshot of that part."""
        groups: set[str] = set()
        nodes: set[str] = set()
        names: set[str] = set()
        pending = [*(("group", g) for g in seeds.groups), *(("node", n) for n in seeds.nodes),
                   *(("name", n) for n in seeds.names)]
        while pending:
            what, at = pending.pop()
            if what == "group" and at not in groups:
                groups.add(at)
                members = self._by_group.get(at, set())
                for key in members:
                    pod = self._entries["pod"][key].value
                    if isinstance(pod, ClusterPod) and pod.status == "running" and pod.node:
                        pending.append(("node", pod.node))
                pending += [("name", name) for name in self._unit_names(members)]
            elif what == "node" and at not in nodes:
                nodes.add(at)
                pending += [("group", self._group_of(key)) for key in self._by_node.get(at, ())]
            elif what == "name" and at not in names:
                names.add(at)
                if at in self._by_group:
                    pending.append(("group", at))
                pending += [("group", self._group_of(key)) for key in self._by_name.get(at, ())]
        keys = [key for group in groups for key in self._by_group.get(group, ())]
        read = [self._entries["node"][n].value for n in sorted(nodes) if n in self._entries["node"]]
        delta.snapshot = ClusterSnapshot(
            nodes=[node for node in read if isinstance(node, ClusterNode)],
            pods=self._pods(keys),
            queues=[e.value for e in self._entries["queue"].values() if isinstance(e.value, Queue)],
            pod_groups={k: e.value for k, e in self._entries["podgroup"].items() if isinstance(e.value, PodGroupRead)})
        delta.nodes = nodes
        delta.jobs = names

    def _group_of(self, key: str) -> str:
        pod = self._entries["pod"][key].value
        assert isinstance(pod, ClusterPod)  # only translated pods are indexed
        return group_key(pod)


_DELETED = _Entry(None, None)  # what a deleted object's entry becomes (a translated one's has a version, maybe "")


@dataclass
class _Seeds:
    """Where what moved starts the part to place again."""

    groups: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)

    def pod(self, pod: Translation | None) -> None:
        if isinstance(pod, ClusterPod):
            self.groups.add(group_key(pod))
            self.names.add(pod.job_name)
            if pod.status == "running" and pod.node:
                self.nodes.add(pod.node)  # the slots it held or holds: its node's others may move


def _unversioned(value: Translation | None) -> object:
    if isinstance(value, ClusterNode | ClusterPod):
        return dataclasses.replace(value, resource_version=None)
    return value


_READERS: dict[str, tuple[str, Callable[[Obj, ClusterSnapshot], None]]] = {
    "node": ("nodes", lambda item, into: _read_node(item, 0, into)),
    "pod": ("pods", lambda item, into: _read_pod(item, 0, into)),
    "queue": ("queues", lambda item, into: _read_queue(item, 0, into)),
    "podgroup": ("pod_groups", lambda item, into: _read_pod_group(item, into)),
}


def _translate(kind: str, obj: Obj, version: str | None) -> _Entry:
    """One object, translated as `read_cluster` translates it (a finding locates what it skips)."""
    where, read = _READERS[kind]
    scratch = ClusterSnapshot()
    read(obj, scratch)
    made: Any = getattr(scratch, where)
    value = next(iter(made.values() if isinstance(made, dict) else made), None)
    return _Entry(version or "", value, tuple(scratch.findings))


__all__ = ["KINDS", "ClusterMirror", "Delta", "group_key"]
