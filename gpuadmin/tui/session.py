"""The console's state, kept outside the widgets: the role, the revision on screen, and the way to the service.

Every read and write goes through `gpuadmin.service`, and only on the service worker's thread
(`gpuadmin.tui.worker`): screens `ask` it with typed requests and get the answers as messages, so the
event loop never waits for the service and the service, which is not thread-safe, is never called from
two threads (no lock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gpuadmin.errors import GpuadminError
from gpuadmin.render.text import safe_lines
from gpuadmin.service import ClusterLink, Moved, NotPermitted, Service, check_action, resolve_caller
from gpuadmin.tui.draft import Draft
from gpuadmin.tui.widgets.header import LiveBadge

if TYPE_CHECKING:
    from gpuadmin.tui.worker import Request, ServiceWorker

T = TypeVar("T")


class OffServiceThread(RuntimeError):
    """A bug: the service was called from a thread other than its worker's (the UI's, most likely)."""


class Session:
    def __init__(self, service: Service) -> None:
        # read once, before the worker starts (nothing else calls the service yet): what the header shows
        self.service = service
        self.revision = service.revision()
        self.cluster = service.state.cluster if service.store is None else service.store.cluster()
        # the cluster (Kubernetes, vCenter) a bound state follows, else None (a caller who may not read sees no
        # state at all)
        self.link = service.cluster_link() if self.may("read") else None
        self.link_state = "connecting"  # its watch's state, as the last WatchStatus said (the header's badge)
        self.link_note = ""  # why it is not watched, where a setting is missing (the badge says it)
        self.worker: ServiceWorker | None = None  # attached by the app, which owns the thread
        self.draft = Draft()  # the edits not yet applied: planned and applied together

    def ask(self, request: Request[Any]) -> Request[Any]:
        """Send a request to the service worker; its answer comes back as a message on the UI thread."""
        assert self.worker is not None, "the console's service worker is not started"
        return self.worker.ask(request)

    def call(self, fn: Callable[[], T]) -> T:
        """Run one service call from code that already runs on the service worker (an edit's opener)."""
        if self.worker is not None and not self.worker.on_service_thread():
            raise OffServiceThread("the service is called only on its worker's thread")
        return fn()

    def rebind(self, opened: OpenedState) -> None:
        """Work on another state from now on (`:state DIR`): the worker already runs on `opened.service`."""
        self.service = opened.service
        self.revision = opened.revision
        self.cluster = opened.cluster
        self.link = opened.link
        self.link_state = "connecting"
        self.link_note = ""
        self.draft.clear()  # its changes were made for the state left behind

    def live_badge(self) -> LiveBadge | None:
        if self.link is None:
            return None
        return LiveBadge(self.link_state, self.link.context, insecure=self.link.insecure, note=self.link_note)

    @property
    def place(self) -> str:
        """Which state this console shows, for an operator with several open: its directory (home as `~`), or
        the name of the inventory it read into memory. Plain attributes: no call to the service."""
        store = self.service.store
        if store is not None:
            return home_short(store.state_dir)
        inventory = self.service.inventory_path  # the header's "(in memory)" says it is not a state
        return inventory.name if inventory is not None else "inventory"

    @property
    def role(self) -> str:
        return self.service.role  # decided once when the service was made: a plain attribute, no call

    @property
    def persisted(self) -> bool:
        return self.service.store is not None

    def may(self, action: str) -> bool:
        """The service's permission gate, asked without raising: what the console shows or hides."""
        try:
            check_action(self.service.role, action)
        except NotPermitted:
            return False
        return True

    @property
    def readonly(self) -> bool:
        return not self.may("apply")

    def why_readonly(self) -> str:
        """What a viewer is told when a key would change the cluster: the role, and where to see why."""
        limit = self.service.caller.decision.role
        if limit != self.role:  # lowered for this console (`tui --readonly`, `--as-role`): whoami says the other
            return (f"read-only: this console was opened as {self.role} (--readonly or --as-role); your role on "
                    f"this state is {limit} (`gpuadmin whoami`): open the console without it to make changes")
        return (f"read-only: role {self.role} may look and plan, not change the cluster (an operator may); "
                "`gpuadmin whoami` shows your role and why")


def home_short(path: Path) -> str:
    """A path as an operator types it: under the home directory as `~/...`."""
    path = path.expanduser().absolute()
    try:
        return f"~/{path.relative_to(Path.home())}"
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class OpenedState:
    """Another state, opened on the service worker, with what the header shows of it."""

    service: Service
    revision: int
    cluster: str
    link: ClusterLink | None


def open_state(current: Service, directory: str) -> OpenedState:
    """Open the state in `directory` for `:state DIR`, on the service worker. The caller is resolved again for
    that state (its roles are its own), lowered as this console's was (`--as-role`, `--readonly`). A missing
    directory, one that holds no state, or a state this user may not read raises (the console stays where it
    is); the current service is closed only once the new one reads."""
    state_dir = Path(directory).expanduser()
    lowered = current.caller.role if current.caller.role != current.caller.decision.role else None
    opened = Service(state_dir=state_dir, command=current.command, caller=resolve_caller(state_dir, lowered))
    try:
        opened.caller.require("read")
        assert opened.store is not None
        revision, cluster, link = opened.revision(), opened.store.cluster(), opened.cluster_link()
    except BaseException:
        opened.close()
        raise
    current.close()
    return OpenedState(opened, revision, cluster, link)


def poll_moved(service: Service, revision: int) -> Moved | None:
    """Whether the state moved past `revision` (the one on screen); reloads it if so (the live watch).
    Runs on the service worker."""
    moved = service.changes_since(revision)
    if moved.revision == revision:
        return None
    service.refresh()
    return moved


def error_lines(error: GpuadminError) -> str:
    """An error as the console shows it: the CLI's lines, less the program name, each escaped as on stderr (a
    lock holder's text or a file name is anyone's)."""
    return "\n".join(safe_lines(line.removeprefix("gpuadmin: ")) for line in error.lines())


__all__ = ["OffServiceThread", "OpenedState", "Session", "error_lines", "home_short", "open_state", "poll_moved"]
