"""The console's side of a state bound to a cluster (Kubernetes or a vCenter): its watch, its badge, and each batch
synced in.

The watch runs on its own threads (`Service.watch_cluster`, started on the service worker: connecting may run the
kubeconfig's exec plugin, or log in to the vCenter with $GPUADMIN_VCENTER_PASSWORD, else with the password typed
into the console's login (`PasswordScreen`, asked once where there is none: a wrong one is said there and asked
again, up to `LOGIN_TRIES`; the service worker keeps the one vCenter accepted, in memory only, for the watch's
re-logins and for applies). What it reports reaches the UI thread as messages; each batch of changes
goes back to the service worker as one sync through the watch's own connection (`Service.sync_watched`: one journal
entry, origin `cluster`; no reconnect, no exec plugin, no login, per batch; for Kubernetes, after the feed's first,
full, sync only what changed, from the watch's cache; for a vCenter a full read) and the views re-read what it
moved, as after any apply — the row changes within a second of the event (the watch's 150 ms window, the sync, the
view's read; a vCenter's simulator adds its own 250 ms tick). While a sync runs, the batches that arrive make one
more sync after it: a burst of events never queues a sync per event behind the worker. The badge in the header
says the watch's state (`LIVE`, `RECONNECTING`, `CLUSTER DOWN`, with the context's name — a vCenter's user);
going down is said once, with why; a vCenter without a password (its login skipped with Esc, or refused
`LOGIN_TRIES` times) is `NOT WATCHED`, and the badge says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from gpuadmin.errors import GpuadminError
from gpuadmin.render.text import safe
from gpuadmin.service import (
    ClusterBatch,
    Feed,
    LoginRefused,
    Moved,
    PasswordSource,
    Service,
    Unwatched,
    WatchStatus,
)
from gpuadmin.tui.screens.password import PasswordScreen
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


LOGIN_TRIES = 3  # wrong passwords typed before the console goes on without one (a lockout policy may count them)


@dataclass
class _Login:
    """The vCenter login asked for the watch of `generation`: its screen, why the watch lacked a password (the
    badge's note if none is given), the refused tries so far, and, asked by an apply, what to do once logged in
    (apply again) or not."""

    generation: int
    screen: PasswordScreen
    note: str
    refused: int = 0
    then: Callable[[], None] | None = None
    without: Callable[[], None] | None = None


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
        self._login: _Login | None = None  # the vCenter login on screen, while it is
        self._no_password = ""  # why the watch did not start (no password): the badge's note when not logged in

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
        generation = self._generation
        # $GPUADMIN_VCENTER_PASSWORD, else a password this console was given for that user and vCenter (read on the
        # service worker, which keeps them)
        watch = self._watch_with(generation, self._app.service_worker.passwords.source())
        session.ask(Request(f"connecting to cluster {session.link.context}", watch,
                            lambda feed: self._watching(generation, feed),
                            failed=lambda error: self._connect_failed(generation, error), cancellable=False))

    def _watch_with(self, generation: int, password: PasswordSource) -> Callable[[Service], Feed | None]:
        """The service worker's call that starts the watch of `generation`, logging in to a vCenter with
        `password`; its callbacks post to the UI thread."""
        app = self._app

        def batch_arrived(_batch: ClusterBatch) -> None:  # on the watch's thread: post_message is thread-safe
            app.post_message(ClusterBatchArrived(generation))

        def status_changed(status: WatchStatus) -> None:
            app.post_message(ClusterStatusChanged(generation, status))

        def watch(service: Service) -> Feed | None:
            return service.watch_cluster(batch_arrived, status_changed, password=password)
        return watch

    def stop(self) -> None:
        """Stop the watch (the console closes, or switches state); a batch not yet synced is dropped: the next
        watch lists again."""
        self._generation += 1
        self._again = False
        self._login = None  # its screen goes with the state's (`:state DIR` pops them)
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
        link = self._app.session.link
        if isinstance(error, Unwatched):  # nothing went wrong: no password; a vCenter's is asked for, once
            self._no_password = str(error)
            if link is not None and link.kind == "vcenter" and self._login is None:
                self._ask(_Login(generation, PasswordScreen(link.context, link.server), str(error)))
                return
            self._show_state("unwatched", note=str(error))
            return
        self._show_state("down")
        self._app.notify(error_lines(error), title="cluster watch", severity="error", markup=False)

    def ask_login(self, then: Callable[[], None], without: Callable[[], None]) -> bool:
        """An apply on the vCenter found no password (Esc at the first login, or three refused): ask again — once
        logged in the watch starts and `then` runs (the apply again); Esc or three refusals run `without`. False
        where no login can be asked (not a vCenter, a viewer's console, a login already on screen)."""
        link = self._app.session.link
        if link is None or link.kind != "vcenter" or self._app.session.readonly or self._login is not None:
            return False
        self._ask(_Login(self._generation, PasswordScreen(link.context, link.server), self._no_password,
                         then=then, without=without))
        return True

    def _ask(self, login: _Login) -> None:
        self._login = login
        self._app.push_screen(login.screen)

    def log_in(self, password: str) -> None:
        """The login's password was typed: start the watch with it on the service worker, which keeps it once
        vCenter accepted it (for the watch's re-logins and for applies; in memory only)."""
        login, link = self._login, self._app.session.link
        if login is None or link is None or login.generation != self._generation:
            return
        generation, passwords = login.generation, self._app.service_worker.passwords
        self._show_state("connecting")  # before the request: the watch's first status may come before its answer
        watch = self._watch_with(generation, lambda _user, _server: password)

        def log_in(service: Service) -> Feed | None:
            feed = watch(service)  # LoginRefused: a wrong user or password
            passwords.keep(link.context, link.server, password)
            return feed

        self._app.session.ask(Request(f"logging in to vCenter {link.server}", log_in,
                                      lambda feed: self._logged_in(generation, feed),
                                      failed=lambda error: self._login_failed(generation, error),
                                      cancellable=False))

    def login_skipped(self) -> None:
        """Esc at the login: the console goes on without a password; the badge says why it does not watch."""
        login, self._login = self._login, None
        if login is not None and login.generation == self._generation:
            self._show_state("unwatched", note=login.note)
            if login.without is not None:
                login.without()

    def _logged_in(self, generation: int, feed: Feed | None) -> None:
        login = self._close_login(generation)
        self._watching(generation, feed)
        if login is not None and login.then is not None and generation == self._generation:
            login.then()

    def _login_failed(self, generation: int, error: GpuadminError) -> None:
        login = self._login
        if login is None or generation != self._generation:
            return
        if not isinstance(error, LoginRefused):  # vCenter gone, its certificate refused: as a watch that fails
            self._close_login(generation)
            self._connect_failed(generation, error)
            if login.without is not None:
                login.without()
            return
        login.refused += 1
        if login.refused < LOGIN_TRIES:
            login.screen.refused(f"vCenter refused the login: wrong user or password (try {login.refused} of "
                                 f"{LOGIN_TRIES}). Type it again, or Esc to go on without.")
            return
        self._close_login(generation)
        self._show_state("unwatched", note=f"login refused {LOGIN_TRIES} times; {login.note}")
        if login.without is not None:
            login.without()

    def _close_login(self, generation: int) -> _Login | None:
        login, self._login = self._login, None
        if login is not None and login.generation == generation and login.screen.is_attached:
            login.screen.dismiss(None)
        return login

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
