"""The live link of a state bound to a Kubernetes cluster: its watch, and each batch of changes brought in.

`watch_cluster` connects to the bound cluster (the state's context, refused when it now points at another API
server) and starts the cluster watch (`gpuadmin.cluster.watch`: list + watch of nodes, pods and KAI queues on its
own threads). Its callbacks run on those threads, never on the caller's: the console posts each to its UI thread
and hands every batch back to its service worker, which calls `sync_watched` — one sync, journaled as one entry
with origin `cluster`, so a view re-reads the state the way it does after any apply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuadmin.cluster.connect import Connection
from gpuadmin.cluster.watch import Batch, ClusterWatch, HttpTransport, WatchStatus
from gpuadmin.service.caller import use_case
from gpuadmin.service.cluster_sync import ClusterUseCases
from gpuadmin.service.results import Moved
from gpuadmin.store import ClusterBinding


@dataclass(frozen=True)
class ClusterLink:
    """What the console's header says of a bound state: the kubeconfig context and API server it was bound to;
    and the binding, for its review of a plan to say what apply executes there (`planned_cluster_steps`)."""

    context: str
    server: str
    binding: ClusterBinding


class ClusterFeed:
    """A running watch of the bound cluster; `stop()` ends its threads (at once: its streams are shut down)."""

    def __init__(self, watch: ClusterWatch, link: ClusterLink, connection: Connection) -> None:
        self._watch = watch
        self.link = link
        self.connection = connection  # the watch's own, reused by each sync of its batches (no reconnect per batch)

    @property
    def status(self) -> WatchStatus:
        return self._watch.status

    def stop(self) -> None:
        self._watch.stop(timeout_s=2.0)


class ClusterLive(ClusterUseCases):
    """The watch of a bound state's cluster, and the sync of what it reports (beside `sync` and `cluster_diff`)."""

    @use_case("read")
    def cluster_link(self) -> ClusterLink | None:
        """The cluster this state is bound to, or None (a state made from files, an inventory in memory)."""
        binding = self.store.binding() if self.store is not None else None
        return ClusterLink(binding.context, binding.server, binding) if binding is not None else None

    @use_case("read")
    def watch_cluster(self, on_batch: Callable[[Batch], None], on_status: Callable[[WatchStatus], None],
                      kubeconfig: Path | None = None) -> ClusterFeed | None:
        """Start watching the bound cluster (None for an unbound state). Connecting reads the kubeconfig and may
        run its exec plugin: call it where a wait is no harm (the console's service worker). The callbacks run on
        the watch's threads."""
        from gpuadmin.cluster.connect import connect_bound

        binding = self.store.binding() if self.store is not None else None
        if binding is None:
            return None
        connection = connect_bound(binding, kubeconfig)
        watch = ClusterWatch(HttpTransport.of_client(connection.client), on_batch, on_status).start()
        return ClusterFeed(watch, ClusterLink(binding.context, binding.server, binding), connection)

    def sync_watched(self, feed: ClusterFeed | None = None) -> Moved | None:
        """Bring the cluster's truth in after the watch reported changes: the sync's own use case (`sync`: one
        journal entry, origin `cluster`, none when the state already matches; it needs the role an apply needs,
        and says so). The watch says when; the sync reads the cluster itself, so what the watch does not follow
        (PodGroups, the GPU Operator's ConfigMaps) comes in too. Through `feed`'s connection when given: the watch's,
        so a batch does not reconnect. What moved, for the views to re-read, or None."""
        before = self.revision()
        self.sync(connection=feed.connection if feed is not None else None)
        if self.store is None:
            return None
        revision, touched = self.store.changed_since(before)
        return Moved(revision, touched) if revision != before else None


__all__ = ["ClusterFeed", "ClusterLink", "ClusterLive"]
