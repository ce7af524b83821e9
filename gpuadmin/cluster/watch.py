"""List + watch of the cluster's nodes, pods, KAI queues and PodGroups: a cache of the objects, and their changes
in batches.

The protocol is the one every Kubernetes controller follows (client-go's reflector): list a collection, note the
list's `resourceVersion`, then watch from it (`?watch=1&resourceVersion=RV&allowWatchBookmarks=true`), moving the
resourceVersion on with every event and every BOOKMARK. When the server has forgotten that resourceVersion (etcd
compaction) it answers `410 Gone` — as an ERROR event in the stream or as the response's status — and the watcher
lists again: the new list is compared with the cache, so what changed meanwhile, deletions included, comes out as
changes and nothing is lost. A dropped connection or a refused connect is retried from the same resourceVersion
after an exponential backoff (capped, jittered, reset once the server answers again); the caller sees the watch
`live`, `reconnecting` or `down` through `on_status`.

Changes are coalesced: the first change opens a window of `window_s` (150 ms), and what arrives in it goes to
`on_batch` as one `Batch`, the last state of each object (an object created and deleted inside the window comes
out deleted). `on_batch` runs on the watch's own thread; a caller that wants a queue passes `queue.put`.

Threads, not asyncio: the console's model is a service worker thread that alone calls the service
(`gpuadmin.tui.worker`) beside Textual's event loop, and the CLI is synchronous. Each watched collection holds one
blocking HTTP stream on a daemon thread, and one more thread delivers the batches; none of them calls the service.
`stop()` shuts the streams' sockets down, so it returns at once instead of waiting for the next event.

Why not lightkube's `Client.watch` (lightkube is the client gpuadmin uses, pyproject.toml): it sends no
`allowWatchBookmarks` (no bookmarks: after a quiet hour the resourceVersion it resumes from is compacted away), on
`410 Gone` it drops the resourceVersion and watches "from now" without listing again (a deletion in the gap is
lost and the cache goes wrong silently), and a blocking stream cannot be ended from another thread. So the watch
uses lightkube's lower level: its kubeconfig handling and its HTTP client (`lightkube.config.client_adapter`:
TLS verification, tokens, exec plugins, exactly as every other cluster call), and speaks the list and watch
requests itself.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Obj = dict[str, Any]
WatchState = Literal["connecting", "live", "reconnecting", "down"]
# worst first: the whole watch is as bad as its worst collection
_SEVERITY: dict[WatchState, int] = {"down": 3, "reconnecting": 2, "connecting": 1, "live": 0}
LIST_PAGE = 500  # items a list page asks for: what kubectl and client-go ask
BATCH_WINDOW_S = 0.15  # a batch gathers what arrives within this of its first change (the console's 1 s budget)
# the server ends a watch after timeoutSeconds and the watcher watches again (client-go picks 5-10 minutes, spread
# so that a fleet of clients does not reconnect at once); the read timeout covers a server that went silent
WATCH_TIMEOUT_S = (300, 600)
READ_MARGIN_S = 60.0
SHORT_WATCH_S = 1.0  # a watch that ends sooner, having sent nothing, is a failure (client-go's "very short watch")
DOWN_AFTER_FAILURES = 5  # consecutive failures (about 8 s of backoff) before the watch says down, not reconnecting


@dataclass(frozen=True)
class Watched:
    """A collection the watch follows; `kind` is the key `Store.cluster_versions` files its objects under."""

    kind: str
    path: str  # the collection's URL path, all namespaces
    namespaced: bool


NODES = Watched("node", "/api/v1/nodes", namespaced=False)
PODS = Watched("pod", "/api/v1/pods", namespaced=True)
QUEUES = Watched("queue", "/apis/scheduling.run.ai/v2/queues", namespaced=False)  # KAI's Queue (cluster-scoped)
# KAI's PodGroup: a gang's queue is its PodGroup's, so the console's incremental sync places gangs as `sync` does
PODGROUPS = Watched("podgroup", "/apis/scheduling.run.ai/v2alpha2/podgroups", namespaced=True)
WATCHED = (NODES, PODS, QUEUES, PODGROUPS)


def object_key(watched: Watched, obj: Mapping[str, Any]) -> str | None:
    """NAME, or NAMESPACE/NAME for a namespaced object; None for an object without a usable name (hostile input:
    it is left out of the cache, and whoever translates the objects reports it)."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    if not watched.namespaced:
        return name
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else None


def resource_version(obj: Mapping[str, Any]) -> str | None:
    metadata = obj.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    return version if isinstance(version, str) and version else None


@dataclass(frozen=True)
class Change:
    """An object's state after a change: `obj` is None when it was deleted."""

    kind: str
    key: str
    obj: Obj | None


@dataclass(frozen=True)
class Batch:
    """The changes of one window, one per object (its last state), in the order of each object's last change."""

    changes: tuple[Change, ...]


@dataclass(frozen=True)
class WatchStatus:
    state: WatchState
    detail: str = ""  # why it is not live, and when it tries again: "pods: connection refused; retry in 1.8 s"


# --- failures ------------------------------------------------------------------------------------------------------

class WatchFailure(Exception):
    """A list or watch that failed and will be tried again after the backoff; `refused` when retrying cannot help
    by itself (401, 403: the credentials or RBAC must change), so the watch says down at once."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.refused = refused


class Gone(Exception):
    """410: the resourceVersion is older than what the server keeps; list again."""


class Absent(Exception):
    """404 on the collection: the server does not serve it (a custom resource whose CRD is not installed)."""


# --- backoff -------------------------------------------------------------------------------------------------------

@dataclass
class Backoff:
    """Exponential backoff with "equal jitter": the n-th delay lies in [c/2, c], c = min(cap, initial * factor**n).
    Never zero (a dead server is not hammered), spread (a fleet of consoles does not reconnect in step), capped."""

    initial_s: float = 0.25
    cap_s: float = 30.0
    factor: float = 2.0
    jitter: Callable[[], float] = random.random
    failures: int = 0

    def next_delay(self) -> float:
        ceiling = min(self.cap_s, self.initial_s * self.factor ** min(self.failures, 64))
        self.failures += 1
        return ceiling / 2 + self.jitter() * ceiling / 2

    def reset(self) -> None:
        self.failures = 0


# --- the wire ------------------------------------------------------------------------------------------------------

class Transport(Protocol):
    """What the watchers need of an API server: a list page and a watch stream (HttpTransport; a test may fake)."""

    def list_page(self, watched: Watched, cont: str | None) -> Obj: ...

    def stream(self, watched: Watched, since: str) -> AbstractContextManager[Iterator[Obj]]:
        """The watch's events (dicts), one a line, while the context lasts."""

    def interrupt(self) -> None:
        """End every open stream now (from another thread)."""


class HttpTransport:
    """Lists and watches over lightkube's HTTP client for a kubeconfig context (TLS and credentials as lightkube
    handles them: nothing here reads, logs or stores a credential)."""

    def __init__(self, config: Any, connect_timeout_s: float = 10.0) -> None:
        """`config`: a lightkube `SingleConfig` (`Connection.client.config`, or `KubeConfig.get()`)."""
        import httpx2
        from lightkube.config import client_adapter

        timeout = httpx2.Timeout(connect_timeout_s, read=WATCH_TIMEOUT_S[1] + READ_MARGIN_S)
        self._http = client_adapter.Client(config, client_adapter.ConnectionParams(timeout=timeout))
        self._open: set[Any] = set()
        self._lock = threading.Lock()

    @classmethod
    def of_client(cls, client: Any) -> HttpTransport:
        """The transport for a lightkube `Client` (a `Connection`'s): same context, same credentials."""
        return cls(client.config)

    def list_page(self, watched: Watched, cont: str | None) -> Obj:
        params = {"limit": str(LIST_PAGE), **({"continue": cont} if cont else {})}
        with self._failures(watched, "list"):
            response = self._http.get(watched.path, params=params)
            _raise_for_status(response.status_code, response.content, watched, "list")
            listing = json.loads(response.content)
        if not isinstance(listing, dict) or not isinstance(listing.get("items", []), list):
            raise WatchFailure(f"{watched.kind}s: the list is not a Kubernetes list")
        return listing

    @contextmanager
    def stream(self, watched: Watched, since: str) -> Iterator[Iterator[Obj]]:
        params = {"watch": "1", "resourceVersion": since, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(random.randint(*WATCH_TIMEOUT_S))}
        with self._failures(watched, "watch"):
            request = self._http.build_request("GET", watched.path, params=params)
            response = self._http.send(request, stream=True)
            with self._lock:
                self._open.add(response)
            try:
                if response.status_code != 200:
                    _raise_for_status(response.status_code, response.read(), watched, "watch")
                yield (_event(line, watched) for line in response.iter_lines() if line)
            finally:
                with self._lock:
                    self._open.discard(response)
                response.close()

    def interrupt(self) -> None:
        """Shut the sockets of the open streams down: a read blocked in another thread returns at once (closing
        the response alone does not wake it)."""
        with self._lock:
            responses = list(self._open)
        for response in responses:
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with suppress(OSError):  # already closed by the server: nothing to wake
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._http.close()

    @contextmanager
    def _failures(self, watched: Watched, doing: str) -> Iterator[None]:
        """httpx's transport errors (refused, reset, timed out, TLS) and undecodable JSON as a WatchFailure."""
        import httpx2

        try:
            yield
        except (httpx2.TransportError, httpx2.StreamError) as exc:
            raise WatchFailure(f"{watched.kind}s: {doing}: {_transport_reason(exc)}") from exc
        except ValueError as exc:  # json.JSONDecodeError
            raise WatchFailure(f"{watched.kind}s: {doing}: the server's answer is not JSON") from exc


def _transport_reason(exc: Exception) -> str:
    """A transport error in words, without the URL's query (nothing secret is in it, but it is noise)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def _status_message(body: bytes) -> str:
    try:
        status = json.loads(body)
    except ValueError:
        return ""
    message = status.get("message") if isinstance(status, dict) else None
    return message[:300] if isinstance(message, str) else ""


def _raise_for_status(code: int, body: bytes, watched: Watched, doing: str) -> None:
    if code == 200:
        return
    if code == 410:
        raise Gone()
    if code == 404:
        raise Absent()
    message = _status_message(body) or f"HTTP {code}"
    refused = code in (401, 403)
    raise WatchFailure(f"{watched.kind}s: {doing}: {code} {message}", refused=refused)


def _event(line: bytes | str, watched: Watched) -> Obj:
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise WatchFailure(f"{watched.kind}s: watch: an event is not JSON") from exc
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise WatchFailure(f"{watched.kind}s: watch: an event is not a watch event")
    return event


# --- one collection ------------------------------------------------------------------------------------------------

class CollectionWatcher:
    """One collection's list + watch loop, on its own thread: its cache, its resourceVersion, its state."""

    def __init__(self, watched: Watched, transport: Transport, emit: Callable[[list[Change]], None],
                 report: Callable[[Watched, WatchStatus], None], stopping: threading.Event,
                 backoff: Backoff) -> None:
        self.watched = watched
        self._transport = transport
        self._emit = emit
        self._report = report
        self._stopping = stopping
        self._backoff = backoff
        self._cache: dict[str, Obj] = {}
        self._lock = threading.Lock()
        self.resource_version: str | None = None  # None: list (again) before watching
        self.lists = 0  # the first, then one after each 410
        self.absent = False  # the server does not serve the collection (404): its cache is rightly empty

    def objects(self) -> dict[str, Obj]:
        with self._lock:
            return dict(self._cache)

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
            except Gone:
                self.resource_version = None  # list again at once: the server is there, only our version is old
            except Absent:
                self._absent()
            except WatchFailure as failure:
                self._retry_later(failure)

    def _retry_later(self, failure: WatchFailure) -> None:
        delay = self._backoff.next_delay()
        down = failure.refused or self._backoff.failures >= DOWN_AFTER_FAILURES
        self._report(self.watched, WatchStatus("down" if down else "reconnecting",
                                               f"{failure.message}; retry in {delay:.1f} s"))
        self._stopping.wait(delay)

    def _list(self) -> None:
        items: list[Obj] = []
        cont: str | None = None
        while True:
            page = self._transport.list_page(self.watched, cont)
            items += [item for item in page.get("items") or [] if isinstance(item, dict)]
            metadata = page.get("metadata")
            metadata = metadata if isinstance(metadata, dict) else {}
            cont = metadata.get("continue") or None
            if cont is None:
                break
        version = metadata.get("resourceVersion")
        if not isinstance(version, str) or not version:
            raise WatchFailure(f"{self.watched.kind}s: list: the list has no resourceVersion")
        self.lists += 1
        self.absent = False
        self._replace(items)
        self.resource_version = version
        self._backoff.reset()

    def _absent(self) -> None:
        """The server does not serve the collection (404: KAI's Queue CRD is not installed): no such objects, and
        a look again after the longest backoff, in case it is installed meanwhile."""
        self._replace([])
        self.resource_version = None
        self.absent = True
        self._report(self.watched, WatchStatus("live", f"{self.watched.kind}s: not served by this cluster"))
        self._stopping.wait(self._backoff.cap_s)

    def _replace(self, items: list[Obj]) -> None:
        """The cache becomes the list; what differs from the cache before (new, changed, gone) is emitted."""
        listed = {key: item for item in items if (key := object_key(self.watched, item)) is not None}
        with self._lock:
            before, self._cache = self._cache, listed
        changes = [Change(self.watched.kind, key, item) for key, item in listed.items()
                   if key not in before or resource_version(before[key]) != resource_version(item)]
        changes += [Change(self.watched.kind, key, None) for key in before if key not in listed]
        if changes:
            self._emit(changes)

    def _watch(self) -> None:
        assert self.resource_version is not None
        opened, answered = time.monotonic(), False
        with self._transport.stream(self.watched, self.resource_version) as events:
            self._report(self.watched, WatchStatus("live"))
            for event in events:
                answered = True
                self._backoff.reset()  # the server answers: the next failure starts the backoff afresh
                self._apply(event)
                if self._stopping.is_set():
                    return
        if not answered and time.monotonic() - opened < SHORT_WATCH_S and not self._stopping.is_set():
            # a server going away ends its watches at once, again and again: backed off, as client-go does
            raise WatchFailure(f"{self.watched.kind}s: watch: ended at once, without an event")

    def _apply(self, event: Obj) -> None:
        kind, obj = event.get("type"), event["object"]
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone()
            raise WatchFailure(f"{self.watched.kind}s: watch: {obj.get('code')} {str(obj.get('message', ''))[:300]}")
        # every event moves the watch on, a BOOKMARK too: it carries only a resourceVersion, saying that nothing
        # this watch selects changed up to there, so a quiet collection's watch can resume after a compaction
        self.resource_version = resource_version(obj) or self.resource_version
        key = object_key(self.watched, obj)
        if kind not in ("ADDED", "MODIFIED", "DELETED") or key is None:
            return  # a bookmark, or an object gpuadmin cannot place (the sync's list reports it)
        with self._lock:
            if kind == "DELETED":
                self._cache.pop(key, None)
            else:
                self._cache[key] = obj
        self._emit([Change(self.watched.kind, key, None if kind == "DELETED" else obj)])


# --- batching ------------------------------------------------------------------------------------------------------

class Coalescer:
    """Gathers changes for `window_s` after the first one and hands them on as one Batch, on its own thread."""

    def __init__(self, deliver: Callable[[Batch], None], window_s: float, stopping: threading.Event) -> None:
        self._deliver = deliver
        self._window_s = window_s
        self._stopping = stopping
        self._pending: dict[tuple[str, str], Change] = {}
        self._due: float | None = None
        self._ready = threading.Condition()

    def add(self, changes: list[Change]) -> None:
        with self._ready:
            for change in changes:
                self._pending.pop((change.kind, change.key), None)  # re-inserted: keeps the latest state
                self._pending[(change.kind, change.key)] = change
            if self._due is None:
                self._due = time.monotonic() + self._window_s
                self._ready.notify()

    def wake(self) -> None:
        with self._ready:
            self._ready.notify()

    def run(self) -> None:
        while not self._stopping.is_set():
            with self._ready:
                if self._due is None:
                    self._ready.wait()
                    continue
                wait = self._due - time.monotonic()
                if wait > 0:
                    self._ready.wait(wait)
                    continue
                batch, self._pending, self._due = Batch(tuple(self._pending.values())), {}, None
            self._deliver(batch)


# --- the whole watch -----------------------------------------------------------------------------------------------

@dataclass
class ClusterWatch:
    """Nodes, pods, KAI queues and PodGroups listed and watched, each on a thread; batches to `on_batch`, the
    overall state to `on_status` (both called on the watch's threads). `start()`, then `stop()` (or use it as a
    context)."""

    transport: Transport
    on_batch: Callable[[Batch], None]
    on_status: Callable[[WatchStatus], None] = lambda _status: None
    watched: tuple[Watched, ...] = WATCHED
    window_s: float = BATCH_WINDOW_S
    backoff: Callable[[], Backoff] = Backoff
    _threads: list[threading.Thread] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self._stopping = threading.Event()
        self._coalescer = Coalescer(self.on_batch, self.window_s, self._stopping)
        self._states: dict[str, WatchStatus] = {w.kind: WatchStatus("connecting") for w in self.watched}
        self._status = WatchStatus("connecting")
        self._status_lock = threading.Lock()
        self.watchers = {w.kind: CollectionWatcher(w, self.transport, self._coalescer.add, self._report,
                                                   self._stopping, self.backoff()) for w in self.watched}

    def start(self) -> ClusterWatch:
        """Start the threads (once: a started watch, entered as a context, is not started again)."""
        if self._threads:
            return self
        self._threads = [threading.Thread(target=self._coalescer.run, name="gpuadmin-watch-batches", daemon=True)]
        self._threads += [threading.Thread(target=w.run, name=f"gpuadmin-watch-{w.watched.kind}s", daemon=True)
                          for w in self.watchers.values()]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """End every thread: the streams are interrupted, a backoff's wait ends, a batch due is dropped."""
        self._stopping.set()
        self.transport.interrupt()
        self._coalescer.wake()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> ClusterWatch:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def status(self) -> WatchStatus:
        return self._status

    def objects(self, kind: str) -> dict[str, Obj]:
        """The cached objects of one kind, by NAME or NAMESPACE/NAME (a copy of the mapping; objects are shared)."""
        return self.watchers[kind].objects()

    def listings(self) -> int | None:
        """How many lists the collections have made in all (a relist after a 410 adds one), or None while one has
        not been listed yet (its cache is not the cluster's). A collection the server does not serve counts as
        listed: its empty cache is the truth. A change of the count means the caches were replaced wholesale."""
        watchers = list(self.watchers.values())
        if any(w.lists == 0 and not w.absent for w in watchers):
            return None
        return sum(w.lists for w in watchers)

    def _report(self, watched: Watched, status: WatchStatus) -> None:
        with self._status_lock:
            self._states[watched.kind] = status
            worst = max(self._states.values(), key=lambda s: _SEVERITY[s.state])
            overall = WatchStatus(worst.state, "; ".join(s.detail for s in self._states.values()
                                                         if s.state == worst.state and s.detail))
            changed, self._status = overall != self._status, overall
        if changed and not self._stopping.is_set():
            self.on_status(overall)


__all__ = ["NODES", "PODGROUPS", "PODS", "QUEUES", "WATCHED", "Backoff", "Batch", "Change", "ClusterWatch",
           "CollectionWatcher", "Gone", "HttpTransport", "Transport", "WatchFailure", "WatchState", "WatchStatus",
           "Watched", "object_key", "resource_version"]
