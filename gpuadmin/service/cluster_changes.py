"""The console's sync of what its watch saw change: only the objects that changed are translated, placed and
restored, from the watch's cache (no list of the whole cluster).

`sync_changes` is `sync` (service/cluster_sync.py) narrowed to what moved: the same translation, the same placement
(`cluster_inventory`, run on the part of the cluster the change reaches: `gpuadmin.cluster.mirror`), the same target
(the facts the cluster does not report kept from the state), the same restores in the same order, one journal entry
with origin `cluster`, the rules run on it (what the cluster breaks comes back as warnings, never refused); and only
the changed objects' resourceVersions stored or forgotten, in the same commit. It needs the translations the state
was last synced from (a `ClusterMirror`, made by a full sync) and the state still at that sync's revision: where
another writer moved the state meanwhile, it refuses (`Stale`) and the caller syncs in full.

tests/kube/test_cluster_changes.py holds it equal to `sync` over random sequences of changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from gpuadmin.cluster.inventory import cluster_inventory
from gpuadmin.cluster.mirror import ClusterMirror, Delta
from gpuadmin.engine.planner import plan
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Job, Queue
from gpuadmin.service.cluster_sync import SYNC_ORIGIN, ClusterUseCases, Entities, SyncResult, _kube_target, _restores
from gpuadmin.service.errors import Stale
from gpuadmin.store import ClusterBinding, ClusterVersionChanges, JournalEntry, StaleRevision, Store


class ClusterChanges(ClusterUseCases):
    """The incremental sync of a bound state (beside `sync` and `cluster_diff`)."""

    def sync_changes(self, cache: Mapping[str, Mapping[str, Mapping[str, Any]]], mirror: ClusterMirror) -> SyncResult:
        """Bring in what changed between `mirror` (what the state was last synced from) and `cache` (the watch's
        objects: kind → NAME or NAMESPACE/NAME → object, every watched kind). One journal entry (origin `cluster`),
        none when nothing gpuadmin models moved; `mirror` follows the cache. Needs the role an apply needs, as `sync`.
        Raises `Stale` where the state is no longer at the mirror's revision (and after a failed commit): sync in
        full then, and make a new mirror."""
        self.caller.require("apply")
        store, binding = self._bound()
        return self._locked(store, lambda: self._commit_changes(store, binding, cache, mirror))

    def _commit_changes(self, store: Store, binding: ClusterBinding,
                        cache: Mapping[str, Mapping[str, Mapping[str, Any]]], mirror: ClusterMirror) -> SyncResult:
        current = store.revision()
        if mirror.revision != current:
            raise Stale(f"the state is at revision {current}, not the one its cluster's changes follow "
                        f"({mirror.revision}): sync it in full")
        if self._state is None or self._state.revision != current:
            self._state = None
        state = self.state
        delta = mirror.refresh(cache)
        made = cluster_inventory(delta.snapshot, binding.context, state.jobs)
        target = _kube_target(state, made.inventory)
        in_play, target["queue"] = _queues(state, delta, target)
        scope = {"node": delta.nodes, "job": delta.jobs, "queue": in_play}
        # the part's own count of a queue's jobs is not the cluster's: that finding is a full sync's
        findings = delta.findings + [f for f in made.findings if f.kind != "queue"]
        versions = ClusterVersionChanges(delta.versions, delta.dropped_versions)
        changes = _restores(state, target, scope)
        if not changes:
            if delta.versions or delta.dropped_versions:
                store.update_cluster_versions(versions)
            mirror.revision = current
            return SyncResult(binding, current, None, [], findings, [])
        synced = plan(state, changes)
        plan_json = synced.to_json()
        plan_json["findings"] = [f.to_json() for f in findings]
        message = (f"sync of the changes watched on cluster {binding.context} ({binding.server}): "
                   f"{len(synced.diff)} entit{'y' if len(synced.diff) == 1 else 'ies'} changed, "
                   f"{len(synced.violations)} rule warning(s), {len(findings)} finding(s)")
        entry = JournalEntry.new(self.command, synced.base_revision, verdict="allowed", outcome="applied",
                                 plan=plan_json, diff=[d.to_json() for d in synced.diff], message=message,
                                 actor=self.caller.identity, origin=SYNC_ORIGIN)
        try:
            revision = store.commit(synced.base_revision, synced.view, entry, cluster_versions=versions)
        except StaleRevision as stale:
            raise Stale(str(stale)) from stale
        state.commit(synced.view)
        mirror.revision = revision
        return SyncResult(binding, revision, entry.id, [(d.kind, d.name, d.action) for d in synced.diff],
                          findings, list(synced.violations))


def _queues(state: ClusterState, delta: Delta, target: Entities) -> tuple[set[str], dict[str, BaseModel]]:
    """The queues in play — the KAI Queues that changed, and those the jobs made again named before and name now
    (a queue no KAI Queue defines comes and goes with its jobs) — and what a full sync makes of them: a KAI Queue
    as read; else, while any job names it, a queue without quota (`cluster_inventory`'s rule, over the whole state:
    the jobs not made again, and those made)."""
    made = [job for job in target["job"].values() if isinstance(job, Job)]
    in_play = delta.queues | {state.jobs[name].queue for name in delta.jobs if name in state.jobs}
    in_play |= {job.queue for job in made}
    named = {job.queue for name, job in state.jobs.items() if name not in delta.jobs and job.queue in in_play}
    named |= {job.queue for job in made}
    kai = {queue.name: queue for queue in delta.snapshot.queues}
    wanted: dict[str, BaseModel] = {}
    for name in sorted(in_play):
        if name in kai:
            wanted[name] = kai[name]
        elif name in named:
            wanted[name] = Queue(name=name)
    return in_play, wanted


__all__ = ["ClusterChanges"]
