"""The console's state, kept outside the widgets: the service, the role, the revision on screen.

Every read and write goes through `gpuadmin.service`; this object serialises those calls (the service is
not thread-safe, and the console reads in worker threads) and tells the views when another console or a
script has moved the state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from gpuadmin.errors import GpuadminError
from gpuadmin.render.text import safe_lines
from gpuadmin.service import Moved, NotPermitted, Service, Table, check_action

T = TypeVar("T")


class Session:
    def __init__(self, service: Service) -> None:
        self.service = service
        self._lock = threading.RLock()
        self.revision = self.call(service.revision)
        self.cluster = self.call(lambda: service.state.cluster if service.store is None
                                 else service.store.cluster())

    def call(self, fn: Callable[[], T]) -> T:
        """Run one service call under the console's lock (from the UI thread or a worker)."""
        with self._lock:
            return fn()

    @property
    def role(self) -> str:
        return self.service.role

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

    def table(self, kind: str, *, reasons: bool) -> Table:
        return self.call(lambda: self.service.get(kind, reasons=reasons))

    def poll(self) -> Moved | None:
        """Whether the state moved past the revision on screen; reloads it if so (the live watch)."""
        with self._lock:
            moved = self.service.changes_since(self.revision)
            if moved.revision == self.revision:
                return None
            self.service.refresh()
            self.revision = moved.revision
            return moved

    def describe(self, kind: str, name: str) -> dict[str, Any]:
        return self.call(lambda: self.service.describe(kind, name))


def error_lines(error: GpuadminError) -> str:
    """An error as the console shows it: the CLI's lines, less the program name, each escaped as on stderr (a
    lock holder's text or a file name is anyone's)."""
    return "\n".join(safe_lines(line.removeprefix("gpuadmin: ")) for line in error.lines())


__all__ = ["Session", "error_lines"]
