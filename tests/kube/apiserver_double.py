"""A test double of the Kubernetes API server, on 127.0.0.1, for the tests of issue 22 (Kubernetes live).

No API server can run on these machines (Debian packages none), so the code that talks to a cluster is tested
against this double. It speaks the wire protocol that code depends on — and enough of it that the real `kubectl`
reads it (tests/kube/test_apiserver_double.py runs kubectl against it):

- core/v1 nodes, pods, configmaps; policy/v1 poddisruptionbudgets; KAI's scheduling.run.ai/v2 queues;
- list with resourceVersion, labelSelector, fieldSelector (metadata.name, metadata.namespace, spec.nodeName),
  limit/continue;
- watch (`?watch=1`): JSON lines, BOOKMARK events when allowWatchBookmarks is set, and the `410 Gone` ERROR event
  for a resourceVersion older than the last `compact()`, as a real server does after etcd compaction;
- PATCH as strategic-merge, merge (RFC 7386) and JSON patch (RFC 6902); server-side apply
  (application/apply-patch+yaml, fieldManager required); PUT; POST; DELETE;
- 409 Conflict when a body's metadata.resourceVersion is stale; 403 Forbidden for the (verb, resource) pairs in
  `deny`; the pods/eviction subresource honouring PodDisruptionBudgets (429); the pods/binding subresource;
- a simulated GPU Operator mig-manager: a node whose `nvidia.com/mig.config` label changes gets
  `nvidia.com/mig.config.state=pending`, then `success` after `mig_delay_s` seconds — or `failed` when the config is
  in `mig_failing_configs` or not in the mig-parted config the double was given. On `success` the node is relabelled
  as GPU Feature Discovery relabels a real one after the mig-manager applied the config (its `nvidia.com/mig-*`
  labels and the device plugin's resources, tests/kube/gfd.py), where the mig-parted ConfigMap holds the config.

Simplifications, on purpose: strategic merge merges lists of objects by their `name` key and knows no `$patch`
directives; server-side apply merges like a merge patch and never reports field-ownership conflicts; there is no
authentication (plain http on 127.0.0.1, which kubectl accepts in a kubeconfig's `server:`).
"""

from __future__ import annotations

import base64
import calendar
import copy
import itertools
import json
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import yaml

from tests.kube import gfd

Obj = dict[str, Any]

MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
MAX_LIST_SNAPSHOTS = 16


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


KINDS = [
    Kind("", "v1", "nodes", "Node", False),
    Kind("", "v1", "pods", "Pod", True),
    Kind("", "v1", "configmaps", "ConfigMap", True),
    Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    Kind("scheduling.run.ai", "v2", "queues", "Queue", False),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    Kind("batch", "v1", "jobs", "Job", True),
    Kind("scheduling.run.ai", "v2alpha2", "podgroups", "PodGroup", True),
    Kind("nvidia.com", "v1", "clusterpolicies", "ClusterPolicy", False),
]


class ApiError(Exception):
    """An error answered as a metav1.Status, the way the API server reports every failure."""

    REASONS: ClassVar[dict[int, str]] = {
        400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict",
        410: "Expired", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests"}

    def __init__(self, code: int, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or self.REASONS.get(code, "InternalError")

    def status(self) -> Obj:
        return status_object(self.code, self.reason, self.message)


def status_object(code: int, reason: str, message: str) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure" if code >= 400 else "Success",
            "message": message, "reason": reason, "code": code}


@dataclass
class Event:
    resource_version: int
    type: str
    kind: Kind
    obj: Obj


@dataclass
class ApiServerDouble:
    """The double: start() it (or use it as a context manager), point a client at `url` or `write_kubeconfig()`."""

    mig_delay_s: float = 0.2
    bookmark_interval_s: float = 0.5
    mig_configs: set[str] | None = None  # names a mig-parted config defines; None accepts any
    mig_failing_configs: set[str] = field(default_factory=set)
    # (namespace, name) of the mig-parted ConfigMap the mig-manager reads, as the GPU Operator's
    # migManager.config.name names it: where set, the configs it accepts are that ConfigMap's, read at each relabel
    mig_configmap: tuple[str, str] | None = None
    # how long the mig-manager takes to notice a relabel (it is a controller watching nodes, not part of the write):
    # until then the node still carries the state label of the config before
    mig_notice_s: float = 0.0
    mig_finished: dict[str, str] = field(default_factory=dict)  # node → the config the mig-manager last finished
    deny: set[tuple[str, str]] = field(default_factory=set)  # (verb, resource[/subresource]) answered 403
    requests: list[tuple[str, str]] = field(default_factory=list)  # every (verb, resource[/subresource]) served
    # resources whose CRD is "not installed" (e.g. {"queues"}): 404 on every request, as a server without the CRD
    not_installed: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._objects: dict[tuple[str, str, str], Obj] = {}  # (plural, namespace, name)
        self._events: list[Event] = []
        self._rv = itertools.count(1)
        self._last_rv = 0
        self._compacted_rv = 0
        self._snapshots: dict[str, tuple[int, list[Obj]]] = {}  # continue token's list → (its rv, its items)
        self._changed = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._stopping = False
        self._paused = False

    # --- life cycle ---------------------------------------------------------------------------------------------

    def start(self, port: int = 0) -> ApiServerDouble:
        """Serve on `port` (0: a free one; `make demo-cluster` serves on a fixed one, so its kubeconfig stays valid).
        A stopped double starts again with its objects and history, on the port it had if asked (`start(port)`): an
        API server restarting, which its clients reconnect to."""
        double = self

        class Handler(RequestHandler):
            server_double = double

        self._stopping = False
        self._server = QuietServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="apiserver-double", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping = True
        with self._changed:
            self._changed.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> ApiServerDouble:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the double first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def write_kubeconfig(self, path: Path, context: str = "double") -> Path:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": context,
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {"token": "double-token-never-checked"}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        }
        path.write_text(yaml.safe_dump(config))
        return path

    # --- the store, for tests to seed and inspect ---------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        kind = kind_of(obj)
        with self._changed:
            return self._write(kind, obj, "ADDED")

    def get(self, plural: str, name: str, namespace: str = "") -> Obj | None:
        found = self._objects.get((plural, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def compact(self) -> None:
        """Forget the event history, as etcd compaction does: a watch from an older resourceVersion gets 410 Gone,
        and so does an open watch that had not yet been sent the events forgotten."""
        with self._changed:
            self._compacted_rv = self._last_rv
            self._events.clear()
            self._snapshots.clear()  # a list's continue token expires with them

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Open watches are sent nothing while this lasts (writes are served): what a test writes in it, and a
        compact(), reaches them together afterwards, as changes do that come faster than a client reads."""
        self._paused = True
        try:
            yield
        finally:
            with self._changed:
                self._paused = False
                self._changed.notify_all()

    def _write(self, kind: Kind, obj: Obj, event_type: str) -> Obj:
        meta = obj.setdefault("metadata", {})
        obj["kind"], obj["apiVersion"] = kind.kind, kind.api_version
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        if not kind.namespaced:
            meta.pop("namespace", None)
        self._last_rv = next(self._rv)
        meta["resourceVersion"] = str(self._last_rv)
        key = (kind.plural, meta.get("namespace", ""), meta["name"])
        if event_type == "DELETED":
            self._objects.pop(key, None)
        else:
            self._objects[key] = obj
        self._events.append(Event(self._last_rv, event_type, kind, copy.deepcopy(obj)))
        self._changed.notify_all()
        return copy.deepcopy(obj)

    # --- the simulated mig-manager ------------------------------------------------------------------------------

    def _mig_manager_notices(self, before: Obj | None, after: Obj) -> None:
        wanted = after["metadata"].get("labels", {}).get(MIG_CONFIG)
        previous = (before or {}).get("metadata", {}).get("labels", {}).get(MIG_CONFIG)
        if wanted is None or wanted == previous:
            return
        if self.mig_notice_s > 0:
            self._later(self.mig_notice_s, self._mig_manager_works, after["metadata"]["name"], wanted)
        else:
            self._mig_manager_works(after["metadata"]["name"], wanted)

    def _later(self, delay: float, call: Any, *args: Any) -> None:
        timer = threading.Timer(delay, call, args)
        timer.daemon = True
        timer.start()

    def _mig_manager_works(self, node_name: str, wanted: str) -> None:
        self._set_mig_state(node_name, wanted, "pending")
        with self._changed:  # reentrant: a relabel noticed at once is still inside its write
            known = set(self._mig_parted_configs()) if self.mig_configmap is not None else self.mig_configs
        fails = wanted in self.mig_failing_configs or (known is not None and wanted not in known)
        self._later(self.mig_delay_s, self._set_mig_state, node_name, wanted, "failed" if fails else "success")

    def _mig_parted_configs(self) -> dict[str, Any]:
        """The configs of the mig-parted ConfigMap the mig-manager reads (none where it is missing or not a
        mig-parted file): `mig_configmap`, else the one the ClusterPolicy's `migManager.config.name` names in
        `gpu-operator`, else the GPU Operator's `default-mig-parted-config`."""
        if self.mig_configmap is not None:
            namespace, name = self.mig_configmap
        else:
            policy = next((o for (p, _, _), o in self._objects.items() if p == "clusterpolicies"), {})
            named = ((policy.get("spec") or {}).get("migManager") or {}).get("config") or {}
            namespace, name = "gpu-operator", named.get("name") or "default-mig-parted-config"
        configmap = self._objects.get(("configmaps", namespace, name)) or {}
        try:
            loaded = yaml.safe_load((configmap.get("data") or {}).get("config.yaml") or "") or {}
        except yaml.YAMLError:
            return {}
        configs = loaded.get("mig-configs") if isinstance(loaded, dict) else None
        return configs if isinstance(configs, dict) else {}

    def _set_mig_state(self, node_name: str, config: str, state: str) -> None:
        with self._changed:
            node = self._objects.get(("nodes", "", node_name))
            # a later relabel supersedes this one, as the real mig-manager reconciles to the newest label
            if node is None or node["metadata"].get("labels", {}).get(MIG_CONFIG) != config:
                return
            node = copy.deepcopy(node)
            applied = self._mig_parted_configs().get(config) if state == "success" else None
            if isinstance(applied, list):  # GFD relabels the node, the device plugin advertises the new devices
                node["metadata"]["labels"], resources = gfd.relabelled(node, applied)
                for part in ("capacity", "allocatable"):
                    held = node.setdefault("status", {}).setdefault(part, {})
                    for key in [k for k in held if k == gfd.WHOLE_GPU or k.startswith("nvidia.com/mig-")]:
                        del held[key]
                    held.update(resources)
            node["metadata"]["labels"][MIG_STATE] = state
            self._write(KINDS[0], node, "MODIFIED")
            if state != "pending":
                self.mig_finished[node_name] = config

    # --- requests -----------------------------------------------------------------------------------------------

    def authorize(self, verb: str, resource: str) -> None:
        self.requests.append((verb, resource))
        if (verb, resource) in self.deny:
            raise ApiError(403, f'{resource} is forbidden: User "system:serviceaccount:gpuadmin:gpuadmin" '
                                f'cannot {verb} resource "{resource}" (denied by the double\'s RBAC deny-list)')

    def list_collection(self, kind: Kind, namespace: str, query: dict[str, str]) -> Obj:
        """A page of the list. A `continue` token serves the rest of the list as of the first page's
        resourceVersion, as the API server does from etcd's snapshot (and in time for 10,000 pods: the list is
        selected and sorted once, not per page); after `compact()` the token has expired: 410."""
        with self._changed:
            if query.get("continue"):
                snapshot, start = self._continued(query["continue"])
                rv, items = self._snapshots[snapshot]
            else:
                snapshot, start, rv = str(uuid.uuid4()), 0, self._last_rv
                items = sorted((o for (p, ns, _n), o in self._objects.items()
                                if p == kind.plural and namespace in ("", ns) and matches(o, query)),
                               key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
            limit = int(query.get("limit") or 0) or len(items)
            page = items[start:start + limit]
            meta: Obj = {"resourceVersion": str(rv)}
            if start + limit < len(items):
                # stored objects are replaced on every write, never changed in place: the list is the snapshot
                self._snapshots[snapshot] = (rv, items)
                meta["continue"] = base64.urlsafe_b64encode(f"{snapshot}:{start + limit}".encode()).decode()
                meta["remainingItemCount"] = len(items) - start - limit
            else:
                self._snapshots.pop(snapshot, None)
            while len(self._snapshots) > MAX_LIST_SNAPSHOTS:  # lists abandoned half-way: the oldest goes
                self._snapshots.pop(next(iter(self._snapshots)))
        # the items of a typed list carry no kind/apiVersion on the wire
        return {"kind": f"{kind.kind}List", "apiVersion": kind.api_version, "metadata": meta,
                "items": [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page]}

    def _continued(self, token: str) -> tuple[str, int]:
        snapshot, _, offset = decode_token(token).partition(":")
        if not offset.isdigit():
            raise ApiError(400, "the continue token is not valid")
        if snapshot not in self._snapshots:
            raise ApiError(410, "The provided continue parameter is too old to display a consistent list result. "
                                "You can start a new list without the continue parameter.")
        return snapshot, int(offset)

    def watch(self, kind: Kind, namespace: str, query: dict[str, str]) -> Iterator[Obj]:
        since = int(query.get("resourceVersion") or 0) or self._last_rv
        if since < self._compacted_rv:
            yield {"type": "ERROR", "object": status_object(
                410, "Expired", f"too old resource version: {since} ({self._compacted_rv})")}
            return
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        next_bookmark = time.monotonic() + self.bookmark_interval_s
        while not self._stopping and time.monotonic() < deadline:
            with self._changed:
                if self._paused:
                    self._changed.wait(timeout=0.1)
                    continue
                # events this watch had not been sent yet were compacted away: a real server closes a watcher that
                # falls that far behind, and its client's watch again gets the 410; the client sees the same
                expired = since < self._compacted_rv
                seen = self._last_rv  # every event up to here is in `fresh` or not this watch's
                fresh = [] if expired else [e for e in self._events if e.resource_version > since and e.kind == kind]
                if not fresh and not expired:
                    self._changed.wait(timeout=min(self.bookmark_interval_s, 0.1))
            if expired:
                yield {"type": "ERROR", "object": status_object(
                    410, "Expired", f"too old resource version: {since} ({self._compacted_rv})")}
                return
            for event in fresh:
                if namespace in ("", event.obj["metadata"].get("namespace", "")) and matches(event.obj, query):
                    yield {"type": event.type, "object": event.obj}
            since = max(since, seen)
            if bookmarks and time.monotonic() >= next_bookmark:
                next_bookmark = time.monotonic() + self.bookmark_interval_s
                # the version this watch has been sent everything up to: a client resuming from it misses nothing
                yield {"type": "BOOKMARK", "object": {"kind": kind.kind, "apiVersion": kind.api_version,
                                                      "metadata": {"resourceVersion": str(since)}}}

    def read(self, kind: Kind, namespace: str, name: str) -> Obj:
        found = self._objects.get((kind.plural, namespace, name))
        if found is None:
            raise ApiError(404, f'{kind.plural} "{name}" not found')
        return copy.deepcopy(found)

    def post(self, kind: Kind, namespace: str, body: Obj) -> Obj:
        with self._changed:
            name = body.get("metadata", {}).get("name", "")
            if (kind.plural, namespace, name) in self._objects:
                raise ApiError(409, f'{kind.plural} "{name}" already exists', "AlreadyExists")
            if kind.namespaced:
                body["metadata"]["namespace"] = namespace
            return self._write(kind, body, "ADDED")

    def replace(self, kind: Kind, namespace: str, name: str, body: Obj) -> Obj:
        with self._changed:
            before = self.read(kind, namespace, name)
            check_resource_version(kind, name, before, body)
            return self._store_modified(kind, before, body)

    def patch(self, kind: Kind, namespace: str, name: str, content_type: str, body: bytes,
              query: dict[str, str]) -> Obj:
        with self._changed:
            if content_type == "application/apply-patch+yaml":
                return self._apply(kind, namespace, name, body, query)
            before = self.read(kind, namespace, name)
            try:
                patch = json.loads(body)
            except ValueError as exc:
                raise ApiError(400, f"the patch is not JSON: {exc}") from exc
            if content_type == "application/json-patch+json":
                after = json_patch(before, patch)
            elif content_type == "application/merge-patch+json":
                after = merge_patch(before, patch)
            elif content_type == "application/strategic-merge-patch+json":
                after = merge_patch(before, patch, strategic=True)
            else:
                raise ApiError(415, f"the body of the request was in an unknown format - accepted media types "
                                    f"include: application/json-patch+json, application/merge-patch+json, "
                                    f"application/apply-patch+yaml, not {content_type!r}")
            if content_type != "application/json-patch+json":  # a JSON patch states its version with a `test` op
                check_resource_version(kind, name, before, after)
            return self._store_modified(kind, before, after)

    def _apply(self, kind: Kind, namespace: str, name: str, body: bytes, query: dict[str, str]) -> Obj:
        if not query.get("fieldManager"):
            raise ApiError(400, "PATCH requests of apply type must specify fieldManager")
        applied = yaml.safe_load(body) or {}
        before = self._objects.get((kind.plural, namespace, name))
        if before is None:
            applied.setdefault("metadata", {})["name"] = name
            if kind.namespaced:
                applied["metadata"]["namespace"] = namespace
            return self._write(kind, applied, "ADDED")
        return self._store_modified(kind, copy.deepcopy(before), merge_patch(before, applied))

    def _store_modified(self, kind: Kind, before: Obj, after: Obj) -> Obj:
        after["metadata"]["name"] = before["metadata"]["name"]
        stored = self._write(kind, after, "MODIFIED")
        if kind.plural == "nodes":
            self._mig_manager_notices(before, stored)
        return stored

    def delete(self, kind: Kind, namespace: str, name: str) -> Obj:
        with self._changed:
            return self._write(kind, self.read(kind, namespace, name), "DELETED")

    def evict(self, namespace: str, name: str) -> Obj:
        with self._changed:
            pod = self.read(KINDS[1], namespace, name)
            for budget in self._budgets_covering(pod):
                if disruptions_allowed(budget, self._pods_selected_by(budget)) <= 0:
                    raise ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.")
            self._write(KINDS[1], pod, "DELETED")
        return status_object(201, "", "")

    def _budgets_covering(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"].get("namespace", "")
        return [b for (p, ns, _n), b in self._objects.items()
                if p == "poddisruptionbudgets" and ns == namespace and selects(b, pod)]

    def _pods_selected_by(self, budget: Obj) -> list[Obj]:
        namespace = budget["metadata"].get("namespace", "")
        return [o for (p, ns, _n), o in self._objects.items() if p == "pods" and ns == namespace and selects(budget, o)]

    def bind(self, namespace: str, name: str, binding: Obj) -> Obj:
        with self._changed:
            pod = self.read(KINDS[1], namespace, name)
            node_name = binding.get("target", {}).get("name", "")
            if pod["spec"].get("nodeName"):
                raise ApiError(409, f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
            pod["spec"]["nodeName"] = node_name
            pod.setdefault("status", {}).setdefault("conditions", []).append(
                {"type": "PodScheduled", "status": "True"})
            self._write(KINDS[1], pod, "MODIFIED")
        return status_object(201, "", "")


# --- helpers: selectors, patches, budgets -------------------------------------------------------------------------

def kind_of(obj: Obj) -> Kind:
    for kind in KINDS:
        if kind.kind == obj.get("kind") and kind.api_version == obj.get("apiVersion"):
            return kind
    raise ValueError(f"the double serves no {obj.get('apiVersion')}/{obj.get('kind')}")


def decode_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except ValueError as exc:
        raise ApiError(400, "the continue token is not valid") from exc


def matches(obj: Obj, query: dict[str, str]) -> bool:
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, query.get("labelSelector", "").split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    fields = {"metadata.name": obj["metadata"]["name"], "metadata.namespace": obj["metadata"].get("namespace", ""),
              "spec.nodeName": (obj.get("spec") or {}).get("nodeName", "")}
    for term in filter(None, query.get("fieldSelector", "").split(",")):
        key, value = term.replace("==", "=").split("=", 1)
        if fields.get(key.rstrip("!")) is None:
            raise ApiError(400, f'field label not supported: "{key}"')
        if (fields[key.rstrip("!")] == value) == key.endswith("!"):
            return False
    return True


def selects(budget: Obj, pod: Obj) -> bool:
    wanted = budget.get("spec", {}).get("selector", {}).get("matchLabels", {})
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def disruptions_allowed(budget: Obj, pods: list[Obj]) -> int:
    healthy = sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
    spec = budget.get("spec", {})
    if "maxUnavailable" in spec:
        return int(spec["maxUnavailable"]) - (len(pods) - healthy)
    return healthy - int(spec.get("minAvailable", 0))


def check_resource_version(kind: Kind, name: str, stored: Obj, incoming: Obj) -> None:
    wanted = (incoming.get("metadata") or {}).get("resourceVersion")
    if wanted and wanted != stored["metadata"]["resourceVersion"]:
        raise ApiError(409, f'Operation cannot be fulfilled on {kind.plural} "{name}": the object has been '
                            "modified; please apply your changes to the latest version and try again")


def merge_patch(target: Any, patch: Any, strategic: bool = False) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif strategic and isinstance(value, list) and isinstance(merged.get(key), list) and all(
                isinstance(item, dict) and "name" in item for item in value + merged[key]):
            by_name = {item["name"]: item for item in merged[key]}
            for item in value:
                by_name[item["name"]] = merge_patch(by_name.get(item["name"], {}), item, strategic)
            merged[key] = list(by_name.values())
        else:
            merged[key] = merge_patch(merged.get(key), value, strategic)
    return merged


def json_patch(target: Obj, ops: list[Obj]) -> Obj:
    doc = copy.deepcopy(target)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        last = parts[-1]
        if op["op"] == "test":
            actual = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if actual != op["value"]:
                if parts == ["metadata", "resourceVersion"]:
                    raise ApiError(409, "Operation cannot be fulfilled: the object has been modified; please "
                                        "apply your changes to the latest version and try again")
                raise ApiError(422, f"the test operation on {op['path']} failed")
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif op["op"] == "add" and isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), op["value"])
        elif op["op"] in ("add", "replace"):
            parent[int(last) if isinstance(parent, list) else last] = op["value"]
        else:
            raise ApiError(422, f"the double supports add, remove, replace and test, not {op['op']!r}")
    return doc


# --- server-side printing: kubectl asks for a meta.k8s.io Table and draws its columns -------------------------------

NODE_COLUMNS = [{"name": n, "type": "string", "format": "name" if n == "Name" else "", "description": "", "priority": 0}
                for n in ("Name", "Status", "Roles", "Age", "Version")]


def node_row(obj: Obj) -> Obj:
    conditions = obj.get("status", {}).get("conditions", [])
    ready = next((c["status"] == "True" for c in conditions if c["type"] == "Ready"), False)
    status = "Ready" if ready else "NotReady"
    if obj.get("spec", {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    labels = obj["metadata"].get("labels") or {}
    roles = ",".join(sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))) or "<none>"
    version = obj.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", "")
    partial = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
    return {"cells": [obj["metadata"]["name"], status, roles, age(obj), version], "object": partial}


def age(obj: Obj) -> str:
    created = obj["metadata"].get("creationTimestamp")
    seconds = int(time.time() - calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))) if created else 0
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def node_table(objects: list[Obj], meta: Obj, with_columns: bool = True) -> Obj:
    table: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                  "rows": [node_row(o) for o in objects]}
    if with_columns:
        table["columnDefinitions"] = NODE_COLUMNS
    return table


# --- HTTP ---------------------------------------------------------------------------------------------------------

CORE_DISCOVERY = {"kind": "APIVersions", "versions": ["v1"],
                  "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def group_list() -> Obj:
    groups = sorted({(k.group, k.version) for k in KINDS if k.group})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
         "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}} for g, v in groups]}


def resource_list(group: str, version: str) -> Obj:
    verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
    resources: list[Obj] = []
    for k in KINDS:
        if (k.group, k.version) == (group, version):
            resources.append({"name": k.plural, "singularName": k.kind.lower(), "namespaced": k.namespaced,
                              "kind": k.kind, "verbs": verbs})
            if k.plural == "pods":
                resources += [{"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
                               "version": "v1", "kind": "Eviction", "verbs": ["create"]},
                              {"name": "pods/binding", "singularName": "", "namespaced": True, "kind": "Binding",
                               "verbs": ["create"]}]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}".lstrip("/"),
            "resources": resources}


@dataclass
class Route:
    kind: Kind
    namespace: str
    name: str
    subresource: str


def route(path: str) -> Route | Obj:
    """A resource route, or the discovery document the path names; ApiError 404 for anything else."""
    parts = [p for p in path.split("/") if p]
    if parts in (["api"], ["apis"], ["version"]):
        return {"api": CORE_DISCOVERY, "apis": group_list(),
                "version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0-apiserver-double",
                            "platform": "linux/amd64"}}[parts[0]]
    if parts[:1] == ["api"]:
        group, rest = "", parts[1:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[2:]
    else:
        raise ApiError(404, f"the server could not find the requested resource ({path})")
    if len(rest) == 1:
        return resource_list(group, rest[0])
    version, rest = rest[0], rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    for kind in KINDS:
        if (kind.group, kind.version, kind.plural) == (group, version, rest[0]) and len(rest) <= 3:
            return Route(kind, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "")
    raise ApiError(404, f"the server could not find the requested resource ({path})")


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a watch it stopped, a kept-alive connection it dropped) is no error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class RequestHandler(BaseHTTPRequestHandler):
    server_double: ApiServerDouble
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a test's output is for its failures."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        if self.server_double._stopping:  # a stopped server answers nothing, kept-alive connections included
            self.close_connection = True
            return
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            target = route(url.path)
            if isinstance(target, Route) and target.kind.plural in self.server_double.not_installed:
                raise ApiError(404, f"the server could not find the requested resource ({url.path})")
            if not isinstance(target, Route):
                self._send(200, target)
                return
            as_table = "as=Table" in (self.headers.get("Accept") or "") and target.kind.plural == "nodes"
            if method == "GET" and query.get("watch") in ("1", "true"):
                self.server_double.authorize("watch", target.kind.plural)
                events = self.server_double.watch(target.kind, target.namespace, query)
                self._stream(tabled(events) if as_table else events)
                return
            code, answer = self._answer(method, target, body, query)
            if as_table and answer.get("kind") == "NodeList":
                answer = node_table(answer["items"], answer["metadata"])
            elif as_table and answer.get("kind") == "Node":
                answer = node_table([answer], {"resourceVersion": answer["metadata"]["resourceVersion"]})
            self._send(code, answer)
        except ApiError as error:
            self._send(error.code, error.status())

    def _answer(self, method: str, target: Route, body: bytes, query: dict[str, str]) -> tuple[int, Obj]:
        double, kind, ns, name = self.server_double, target.kind, target.namespace, target.name
        resource = kind.plural + (f"/{target.subresource}" if target.subresource else "")
        verb = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}[method]
        double.authorize(verb, resource)
        if target.subresource:
            return self._subresource(method, target, body)
        if method == "GET":
            return 200, double.read(kind, ns, name) if name else double.list_collection(kind, ns, query)
        if method == "POST" and not name:
            return 201, double.post(kind, ns, load_json(body))
        if method == "PUT" and name:
            return 200, double.replace(kind, ns, name, load_json(body))
        if method == "PATCH" and name:
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            return 200, double.patch(kind, ns, name, content_type, body, query)
        if method == "DELETE" and name:
            return 200, double.delete(kind, ns, name)
        raise ApiError(405, f"{method} is not supported on {resource}")

    def _subresource(self, method: str, target: Route, body: bytes) -> tuple[int, Obj]:
        if (target.kind.plural, target.subresource, method) == ("pods", "eviction", "POST"):
            return 201, self.server_double.evict(target.namespace, target.name)
        if (target.kind.plural, target.subresource, method) == ("pods", "binding", "POST"):
            return 201, self.server_double.bind(target.namespace, target.name, load_json(body))
        raise ApiError(404, f"the double serves no {target.kind.plural}/{target.subresource} for {method}")

    def _send(self, code: int, payload: Obj) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: Iterator[Obj]) -> None:
        """A watch: one JSON object a line, in HTTP/1.1 chunks, until the watch ends or the client goes away."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = self.server_double._stopping
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def tabled(events: Iterator[Obj]) -> Iterator[Obj]:
    """A watch of Tables, as the API server prints one: the first event's Table carries the column definitions."""
    first = True
    for event in events:
        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
            meta = {"resourceVersion": event["object"]["metadata"]["resourceVersion"]}
            event = {"type": event["type"], "object": node_table([event["object"]], meta, with_columns=first)}
            first = False
        yield event


def load_json(body: bytes) -> Obj:
    try:
        loaded = json.loads(body)
    except ValueError as exc:
        raise ApiError(400, f"the body is not JSON: {exc}") from exc
    if not isinstance(loaded, dict):
        raise ApiError(400, "the body is not a JSON object")
    return loaded
