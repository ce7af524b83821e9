"""The live link of a state bound to a cluster — a Kubernetes cluster or a vCenter: its watch, and each batch of
changes brought in.

`watch_cluster` connects to the bound cluster and starts its watch, on the watch's own threads: for Kubernetes the
state's context (refused when it now points at another API server) and `gpuadmin.cluster.watch` (list + watch of
nodes, pods and KAI queues); for a vCenter a login with the bound user (the password as `sync` takes it, kept in
memory for the watch's re-logins, never stored) and `gpuadmin.cluster.vcenter_watch` (the property collector's
`WaitForUpdatesEx`). The callbacks run on those threads, never on the caller's: the console posts each to its UI
thread and hands every batch back to its service worker, which calls `sync_watched` — one sync, journaled as one
entry with origin `cluster`, so a view re-reads the state the way it does after any apply.

For Kubernetes the first sync of a feed is a full one (`sync`: it lists the cluster, PodGroups and the GPU
Operator's ConfigMaps too) and keeps what it translated (a `ClusterMirror`); each later one brings in only what
changed between that and the watch's cache (`sync_changes`), until the watch lists a collection again (a `410
Gone`, a CRD installed) or another writer moves the state: then a full sync again. For a vCenter every sync is a
full read through the watch's session (`VcenterFeed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuadmin.cluster.connect import Connection
from gpuadmin.cluster.mirror import ClusterMirror
from gpuadmin.cluster.vcenter import PASSWORD_VARIABLE, connect_vcenter_bound
from gpuadmin.cluster.vcenter_watch import VcenterWatch
from gpuadmin.cluster.watch import Batch, ClusterWatch, HttpTransport, WatchStatus
from gpuadmin.errors import ExitCode, GpuadminError, InputError
from gpuadmin.service.caller import use_case
from gpuadmin.service.cluster_changes import ClusterChanges
from gpuadmin.service.cluster_sync import (
    PasswordSource,
    read_from,
    read_settings,
    read_vcenter_through,
    vcenter_password_of,
)
from gpuadmin.service.errors import Stale
from gpuadmin.service.results import Moved
from gpuadmin.store import ClusterBinding


@dataclass(frozen=True)
class ClusterLink:
    """What the console's header says of a bound state: the kubeconfig context and API server it was bound to (a
    vCenter: the user and the vCenter, and whether its certificate goes unverified); and the binding, for its
    review of a plan to say what apply executes there (`planned_cluster_steps`)."""

    context: str
    server: str
    binding: ClusterBinding

    @property
    def kind(self) -> str:
        return self.binding.kind

    @property
    def insecure(self) -> bool:
        return self.binding.insecure


class Unwatched(GpuadminError):
    """The bound cluster cannot be watched as things are (exit 2: a setting is missing); the message says why in a
    few words, for the console's badge: `no vCenter password: set GPUADMIN_VCENTER_PASSWORD`."""

    exit_code = ExitCode.BAD_INPUT


class ClusterFeed:
    """A running watch of the bound cluster; `stop()` ends its threads (at once: its streams are shut down)."""

    def __init__(self, watch: ClusterWatch, link: ClusterLink, connection: Connection) -> None:
        self._watch = watch
        self.link = link
        self.connection = connection  # the watch's own, reused by each sync of its batches (no reconnect per batch)
        self.mirror: ClusterMirror | None = None  # what the last sync brought in; None: the next sync is a full one

    def listings(self) -> int | None:
        return self._watch.listings()

    def objects(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The watch's cache: every watched kind's objects, by NAME or NAMESPACE/NAME."""
        return {kind: self._watch.objects(kind) for kind in self._watch.watchers}

    @property
    def status(self) -> WatchStatus:
        return self._watch.status

    def stop(self) -> None:
        self._watch.stop(timeout_s=2.0)


class VcenterFeed:
    """A running watch of the bound vCenter; `stop()` cancels its wait and logs its session out."""

    def __init__(self, watch: VcenterWatch, link: ClusterLink) -> None:
        self._watch = watch
        self.link = link

    @property
    def connection(self) -> Any:
        """The watch's session (a new one after each reconnect), which each sync of its batches reads through."""
        return self._watch.connection

    @property
    def status(self) -> WatchStatus:
        return self._watch.status

    def stop(self) -> None:
        self._watch.stop(timeout_s=2.0)


Feed = ClusterFeed | VcenterFeed


class ClusterLive(ClusterChanges):
    """The watch of a bound state's cluster, and the sync of what it reports (beside `sync` and `cluster_diff`)."""

    @use_case("read")
    def cluster_link(self) -> ClusterLink | None:
        """The cluster this state is bound to, or None (a state made from files, an inventory in memory)."""
        binding = self.store.binding() if self.store is not None else None
        return ClusterLink(binding.context, binding.server, binding) if binding is not None else None

    @use_case("read")
    def watch_cluster(self, on_batch: Callable[[Batch], None], on_status: Callable[[WatchStatus], None],
                      kubeconfig: Path | None = None, password: PasswordSource | None = None) -> Feed | None:
        """Start watching the bound cluster (None for an unbound state). Connecting reads the kubeconfig and may
        run its exec plugin, or logs in to the vCenter with `password`'s password (`Unwatched` where it gives
        none): call it where a wait is no harm (the console's service worker). The callbacks run on the watch's
        threads."""
        from gpuadmin.cluster.connect import connect_bound

        binding = self.store.binding() if self.store is not None else None
        if binding is None:
            return None
        link = ClusterLink(binding.context, binding.server, binding)
        if binding.kind == "vcenter":
            try:
                secret = vcenter_password_of(binding, password)
            except InputError:
                raise Unwatched(f"no vCenter password: set {PASSWORD_VARIABLE}") from None

            def login() -> Any:
                return connect_vcenter_bound(binding, secret)

            return VcenterFeed(VcenterWatch(login(), login, on_batch, on_status).start(), link)
        connection = connect_bound(binding, kubeconfig)
        watch = ClusterWatch(HttpTransport.of_client(connection.client), on_batch, on_status).start()
        return ClusterFeed(watch, link, connection)

    def sync_watched(self, feed: Feed | None = None) -> Moved | None:
        """Bring the cluster's truth in after the watch reported changes: one journal entry, origin `cluster`, none
        when the state already matches; it needs the role an apply needs, and says so. With `feed`: only what
        changed in its watch's cache since the feed's last sync (`sync_changes`), else — the feed's first sync,
        after the watch listed again, after another writer moved the state — a full sync through the watch's
        connection (no reconnect per batch) that the next ones follow; a vCenter's feed: a full read through its
        watch's session (`_sync_vcenter_feed`). Without: `sync`. What moved, for the views to re-read, or None."""
        before = self.revision()
        if feed is None:
            self.sync()
        elif isinstance(feed, VcenterFeed):
            self._sync_vcenter_feed(feed)
        else:
            self._sync_feed(feed)
        if self.store is None:
            return None
        revision, touched = self.store.changed_since(before)
        return Moved(revision, touched) if revision != before else None

    def _sync_feed(self, feed: ClusterFeed) -> None:
        listings, mirror = feed.listings(), feed.mirror
        feed.mirror = None  # given back only by a sync that went through
        if mirror is not None and listings == mirror.listings:
            try:
                self.sync_changes(feed.objects(), mirror)
            except Stale:
                pass  # another writer moved the state since: in full, below
            else:
                feed.mirror = mirror
                return
        self.caller.require("apply")
        store, binding = self._bound()
        settings = read_settings(binding)
        read = read_from(feed.connection, settings, dict(self.state.jobs))
        result = self._locked(store, lambda: self._commit_sync(store, read))
        if listings is not None and read.snapshot is not None:  # every collection listed (read_from's listing
            # always is): the cache can be followed from here
            feed.mirror = ClusterMirror.of_snapshot(read.snapshot, settings, listings, result.revision)


    def _sync_vcenter_feed(self, feed: VcenterFeed) -> None:
        """The whole vCenter read again through the watch's session (no login per batch), whatever the batch
        said changed: a vCenter's GPU estate is tens of hosts, read in well under a second
        (bench/bench_vcenter_watch.py), and one translation of vCenter's data (`vcenter_inventory`) stays the only
        one. One journal entry, none when the state already matches (`_commit_sync`)."""
        self.caller.require("apply")
        store, _ = self._bound()
        read = read_vcenter_through(feed.connection)
        self._locked(store, lambda: self._commit_sync(store, read))


__all__ = ["ClusterFeed", "ClusterLink", "ClusterLive", "Feed", "Unwatched", "VcenterFeed"]
