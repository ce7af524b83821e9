"""The console's side of a state bound to a cluster (Kubernetes or a vCenter): its watch, its badge, and each batch
synced in.

The watch runs on its own threads (`Service.watch_cluster`, started on the service worker: connecting may run the
kubeconfig's exec plugin, or log in to the vCenter with $GPUADMIN_VCENTER_PASSWORD — the console asks for no
password: its terminal is the console's). What it reports reaches the UI thread as messages; each batch of changes
goes back to the service worker as one sync through the watch's own connection (`Service.sync_watched`: one journal
entry, origin `cluster`; no reconnect, no exec plugin, no login, per batch; for Kubernetes, after the feed's first,
full, sync only what changed, from the watch's cache; for a vCenter a full read) and the views re-read what it
moved, as after any apply — the row changes within a second of the event (the watch's 150 ms window, the sync, the
view's read; a vCenter's simulator adds its own 250 ms tick). While a sync runs, the batches that arrive make one
more sync after it: a burst of events never queues a sync per event behind the worker. The badge in the header
says the watch's state (`LIVE`, `RECONNECTING`, `CLUSTER DOWN`, with the context's name — a vCenter's user);
going down is said once, with why; a vCenter without a password is `NOT WATCHED`, and the badge says why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.message import Message

from gpuadmin.errors import GpuadminError
from gpuadmin.render.text import safe
from gpuadmin.service import ClusterBatch, Feed, Moved, Service, Unwatched, WatchStatus, password_from
from gpuadmin.tui.session import error_lines
from gpuadmin.tui.worker import Request

if TYPE_CHECKING:
    from gpuadmin.tui.app import GpuadminApp


class ClusterBatchArrived(Message):
    """The cluster changed (a batch of the watch's changes), posted from the watch's thread."""

    def __init__(self, generation: int) -> None:
        super().__init__()
        self.generation = generation


class ClusterStatusChanged(Message):
    """The watch's new state, posted from the watch's thread."""

    def __init__(self, generation: int, status: WatchStatus) -> None:
        super().__init__()
        self.generation = generation
        self.status = status


class ClusterLinkKeeper:
    """Starts, follows and stops the watch of the bound state the console shows (none for an unbound one)."""

    def __init__(self, app: GpuadminApp, moved: Callable[[Moved], None]) -> None:
        self._app = app
        self._moved = moved  # the app's: the views re-read what a sync moved
        self._feed: Feed | None = None
        self._generation = 0  # a state switch starts a new watch: the old one's late messages are dropped
        self._syncing: Request[Any] | None = None
        self._again = False  # a batch arrived while a sync ran: one more sync once it is done
        self._said: str | None = None  # the last failure said, not repeated for every batch

    def start(self) -> None:
        session = self._app.session
        if session.link is None:
            return
        if session.readonly:
            # a sync writes the state, an operator's work: a viewer's console shows what operators' syncs bring in
            # (the twice-a-second revision check), and its badge says it does not watch the cluster itself
            self._show_state("unwatched")
            return
        self._generation += 1
        generation, app = self._generation, self._app

        def batch_arrived(_batch: ClusterBatch) -> None:  # on the watch's thread: post_message is thread-safe
            app.post_message(ClusterBatchArrived(generation))

        def status_changed(status: WatchStatus) -> None:
            app.post_message(ClusterStatusChanged(generation, status))

        def watch(service: Service) -> Feed | None:
            # a vCenter's password as `sync` takes it, less the file and the prompt the console has no room for
            return service.watch_cluster(batch_arrived, status_changed, password=password_from(None, None))

        session.ask(Request(f"connecting to cluster {session.link.context}", watch,
                            lambda feed: self._watching(generation, feed),
                            failed=lambda error: self._connect_failed(generation, error), cancellable=False))

    def stop(self) -> None:
        """Stop the watch (the console closes, or switches state); a batch not yet synced is dropped: the next
        watch lists again."""
        self._generation += 1
        self._again = False
        if self._feed is not None:
            self._feed.stop()
            self._feed = None

    def _watching(self, generation: int, feed: Feed | None) -> None:
        if feed is not None and generation != self._generation:
            feed.stop()  # the console moved on while it connected
            return
        self._feed = feed

    def _connect_failed(self, generation: int, error: GpuadminError) -> None:
        if generation != self._generation:
            return
        if isinstance(error, Unwatched):  # nothing went wrong: a setting is missing, and the badge names it
            self._show_state("unwatched", note=str(error))
            return
        self._show_state("down")
        self._app.notify(error_lines(error), title="cluster watch", severity="error", markup=False)

    def status_changed(self, message: ClusterStatusChanged) -> None:
        if message.generation != self._generation:
            return
        status = message.status
        if status.state == "down" and self._app.session.link_state != "down":
            self._app.notify(f"the cluster watch is down: {safe(status.detail)}", title="cluster watch",
                             severity="warning", markup=False)
        self._show_state(status.state)

    def batch_arrived(self, message: ClusterBatchArrived) -> None:
        if message.generation != self._generation:
            return
        if self._syncing is not None:
            self._again = True
            return
        self._sync()

    def _sync(self) -> None:
        generation, feed = self._generation, self._feed
        self._syncing = self._app.session.ask(Request(
            "syncing from the cluster", lambda service: service.sync_watched(feed),
            lambda moved: self._synced(generation, moved), failed=lambda error: self._sync_failed(generation, error),
            cancellable=False))

    def _synced(self, generation: int, moved: Moved | None) -> None:
        self._syncing = None
        self._said = None
        if moved is not None and generation == self._generation:
            self._moved(moved)
        self._next()

    def _sync_failed(self, generation: int, error: GpuadminError) -> None:
        self._syncing = None
        text = error_lines(error)
        if generation == self._generation and text != self._said:
            self._said = text
            self._app.notify(text, title="cluster sync", severity="error", markup=False)
        self._next()

    def _next(self) -> None:
        if self._again:
            self._again = False
            self._sync()

    def _show_state(self, state: str, note: str = "") -> None:
        self._app.session.link_state = state
        self._app.session.link_note = note
        self._app.refresh_header()


__all__ = ["ClusterBatchArrived", "ClusterLinkKeeper", "ClusterStatusChanged"]
