"""The one thread that calls the service (Harlequin's layering: the UI never touches the engine).

The service is not thread-safe and some of its calls take seconds on a large state (a scheduling dry run
for the why-pending reasons, an explanation, an apply that waits for another writer's state lock). So no
screen calls it: a screen sends a typed `Request` — what to do, named for the progress line — and the one
`ServiceWorker` thread runs requests in order and posts each outcome back to the app as a `ServiceAnswer`
message, which the app hands to the request's `then` (or `failed`) on the UI thread. The event loop never
waits for the service, so every key is answered at once; only one thread ever calls the service, so
nothing needs a lock.

Cancelling a request (Esc on long work, or a newer request with the same `key`, as a view's re-read
supersedes the one before) drops it if it has not started, and discards its answer if it has: a call
into the engine cannot be interrupted half-way. A request that changes the state (`cancellable=False`)
is dropped only before it starts; once started it finishes and its outcome is shown.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.message import Message

from gpuadmin.errors import GpuadminError
from gpuadmin.service import SessionPasswords

if TYPE_CHECKING:
    from textual.app import App
    from textual.message_pump import MessagePump

    from gpuadmin.service import Service

T = TypeVar("T")
_numbers = itertools.count(1)


def _ignore_failure(error: GpuadminError) -> None:
    """A background request's failure that nobody waits for (the live watch: the next poll tries again)."""


@dataclass(eq=False)
class Request(Generic[T]):
    """One call to make on the service's thread, and what to do with its answer on the UI thread."""

    label: str  # what the progress line says while it runs: "describing job train-7"
    call: Callable[[Service], T]  # runs on the service's thread, the only one that calls the service
    then: Callable[[T], None]  # the answer, on the UI thread
    failed: Callable[[GpuadminError], None] = _ignore_failure  # a refusal or bad input, on the UI thread
    owner: MessagePump | None = None  # the screen that asked: gone (closed) means the answer is not wanted
    key: str | None = None  # a newer request with the same key supersedes this one
    cancellable: bool = True  # False for a write: once started it runs to its end
    number: int = field(default_factory=lambda: next(_numbers))
    started: bool = False
    cancelled: bool = False

    def cancel(self) -> bool:
        """Drop the request, or discard its answer if it has started; False for a started write."""
        if self.started and not self.cancellable:
            return False
        self.cancelled = True
        return True


class ServiceAnswer(Message):
    """A request's outcome, posted to the app from the service's thread."""

    def __init__(self, request: Request[Any], value: Any = None, error: GpuadminError | None = None,
                 crash: Exception | None = None) -> None:
        super().__init__()
        self.request = request
        self.value = value
        self.error = error
        self.crash = crash  # a bug, not a refusal: the app raises it, so it ends the console as any bug does


class ServiceWorker:
    """Owns the service: a daemon thread running requests in the order they came.

    It also holds the vCenter passwords typed into the console (`passwords`, read and written on its thread only):
    the service it runs on — the first, and each one `:state DIR` opens — takes them for its applies
    (`ExecutionOptions.password`), and the console's watch logs in with them; they live as long as the console."""

    def __init__(self, service: Service, app: App[Any]) -> None:
        self.passwords = SessionPasswords()
        self._service = service
        self.service = service
        self._app = app
        self._queue: queue.SimpleQueue[Request[Any] | None] = queue.SimpleQueue()
        self._keyed: dict[str, Request[Any]] = {}
        self.pending = 0  # asked and not yet answered on the UI thread (UI thread only)
        self._thread = threading.Thread(target=self._run, name="gpuadmin-service", daemon=True)

    @property
    def service(self) -> Service:
        return self._service

    @service.setter
    def service(self, service: Service) -> None:
        service.execution = replace(service.execution, password=self.passwords.source())
        self._service = service

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ends the thread after the request it runs (daemon: a long call does not hold up the exit)."""
        self._queue.put(None)

    @property
    def idle(self) -> bool:
        return self.pending == 0

    def on_service_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def ask(self, request: Request[Any]) -> Request[Any]:
        """Queue a request (from the UI thread); a queued or running one with the same key is cancelled."""
        if request.key is not None:
            earlier = self._keyed.get(request.key)
            if earlier is not None:
                earlier.cancel()
            self._keyed[request.key] = request
        self.pending += 1
        self._queue.put(request)
        return request

    def answered(self, request: Request[Any]) -> bool:
        """Book an answer arriving on the UI thread; whether it is still wanted."""
        self.pending -= 1
        if request.key is not None and self._keyed.get(request.key) is request:
            del self._keyed[request.key]
        owner = request.owner
        return not request.cancelled and (owner is None or owner.is_attached)

    def _run(self) -> None:
        while (request := self._queue.get()) is not None:
            if request.cancelled:
                self._app.post_message(ServiceAnswer(request))
                continue
            request.started = True
            try:
                answer = ServiceAnswer(request, value=request.call(self.service))
            except GpuadminError as error:
                answer = ServiceAnswer(request, error=error)
            except Exception as crash:  # a bug: handed to the UI thread, which raises it
                answer = ServiceAnswer(request, crash=crash)
            self._app.post_message(answer)


__all__ = ["Request", "ServiceAnswer", "ServiceWorker"]
