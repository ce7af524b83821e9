"""Read the live cluster: one consistent listing of everything gpuadmin models, as a `ClusterSnapshot`.

What is listed (each collection paged with `limit` / `continue`, its list's resourceVersion recorded):
- core/v1 Nodes → gpuadmin nodes (`adapters.kube_cluster.cluster_node`);
- core/v1 Pods, all namespaces → jobs to be (`cluster_pod`); a pod that asks for no GPU is none of gpuadmin's
  and is passed over without a word;
- KAI `Queue`s (scheduling.run.ai/v2, cluster-scoped) → queues (`kai_queue`); where the CRD is not installed
  (the API server answers 404) there are no queues, and a finding says so;
- KAI `PodGroup`s (scheduling.run.ai/v2alpha2), where installed: each gang's `minMember` and queue;
- the GPU Operator's ConfigMaps: the mig-parted config its mig-manager reads and the device-plugin config the
  nodes' `nvidia.com/device-plugin.config` label picks a key of (names and namespace: `ReadSettings`).

Every object is hostile input: one that cannot be translated (a name Kubernetes itself would refuse, escape bytes,
a number out of bounds) is skipped with a `Finding` that locates it (kind, namespace/name, field), and the read
goes on; it never refuses the whole cluster for one bad object. Failures of the API itself (403, unreachable)
are the typed errors of `gpuadmin.cluster.errors`.

The Kubernetes client is imported inside the functions that use it (tests/test_architecture_kube_client.py).
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from gpuadmin.adapters.device_plugin import DEVICE_PLUGIN_LABEL, parse_device_plugin_config
from gpuadmin.adapters.kube_cluster import (
    MIG_CONFIG_STATE,
    ClusterNode,
    ClusterPod,
    asks_for_gpu,
    cluster_node,
    cluster_pod,
    kai_queue,
    printable,
)
from gpuadmin.adapters.mig_parted import MIG_MANAGER_KEY, parse_mig_parted
from gpuadmin.cluster.errors import api_failure
from gpuadmin.errors import Diagnostic, GpuadminError, InputError, dotted
from gpuadmin.model import Queue
from gpuadmin.model.k8s_names import dns1123_subdomain_problems

FindingKind = Literal["cluster", "node", "pod", "queue", "podgroup", "configmap", "host", "vm"]
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
KAI_GROUP = "scheduling.run.ai"
_T = TypeVar("_T")


#: The ConfigMaps' names where neither the command line nor a ClusterPolicy names them: the mig-manager's default
#: (ClusterPolicy `migManager.config.name`), and the name of NVIDIA's time-slicing guide for the device plugin's
#: (`devicePlugin.config.name`, which has no default).
DEFAULT_MIG_PARTED_CONFIGMAP = "default-mig-parted-config"
DEFAULT_DEVICE_PLUGIN_CONFIGMAP = "time-slicing-config"


@dataclass(frozen=True)
class ReadSettings:
    """Where the GPU Operator keeps its configs. The namespace: NVIDIA's install guide's (`helm install ... -n
    gpu-operator`) unless given. A ConfigMap's name not given (None) is the one the cluster's ClusterPolicy
    (nvidia.com/v1) names — `migManager.config.name`, `devicePlugin.config.name` — else the defaults above."""

    namespace: str = "gpu-operator"
    mig_parted_configmap: str | None = None
    device_plugin_configmap: str | None = None
    page_size: int = 500  # objects a list request asks for at a time (`limit`), as kubectl's default chunk size

    def __post_init__(self) -> None:
        """The names go into request paths: each must be a Kubernetes name (no `/`, no `..`)."""
        for what, name in (("namespace", self.namespace), ("mig-parted ConfigMap", self.mig_parted_configmap),
                           ("device-plugin ConfigMap", self.device_plugin_configmap)):
            problems = dns1123_subdomain_problems(name) if name is not None else []
            if name is not None and problems:
                raise InputError([Diagnostic(f"the {what} {printable(name, 80)!r} is not a Kubernetes name: "
                                             f"{problems[0]}")])


@dataclass(frozen=True)
class Finding:
    """Something the cluster holds that gpuadmin skipped or reads with a caveat, located: kind, namespace/name
    (printable, as read) and the field."""

    kind: FindingKind
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.kind}/{self.name}" if self.name else self.kind
        return f"{where}{f' {self.field}' if self.field else ''}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "field": self.field, "message": self.message}


@dataclass(frozen=True)
class PodGroupRead:
    """A KAI PodGroup: its pods are scheduled all together or not at all, at least `min_member` of them."""

    namespace: str
    name: str
    min_member: int
    queue: str | None


@dataclass(frozen=True)
class ConfigMapRead:
    """A GPU Operator ConfigMap, and the config names it defines (mig-parted's `mig-configs`, or the device
    plugin's keys)."""

    namespace: str
    name: str
    resource_version: str | None
    configs: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class ClusterSnapshot:
    """Everything one read of the cluster found: translated objects, each one's resourceVersion (the keys of
    `Store.cluster_versions`: ("node", NAME), ("pod", "NS/NAME"), ("queue", NAME), ("configmap", "NS/NAME")),
    each list's resourceVersion, and the findings."""

    nodes: list[ClusterNode] = field(default_factory=list)
    pods: list[ClusterPod] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    pod_groups: dict[str, PodGroupRead] = field(default_factory=dict)  # by "NAMESPACE/NAME"
    mig_parted: ConfigMapRead | None = None
    device_plugin: ConfigMapRead | None = None
    versions: dict[tuple[str, str], str] = field(default_factory=dict)
    list_versions: dict[str, str] = field(default_factory=dict)  # "nodes", "pods", ... → the list's resourceVersion
    findings: list[Finding] = field(default_factory=list)
    queues_installed: bool = True  # False: the KAI Queue CRD is not installed
    configmap_names: tuple[str, str] = ("", "")  # the mig-parted and device-plugin ConfigMaps looked for
    other_pods: int = 0  # pods that ask for no GPU, passed over


def read_cluster(client: Any, settings: ReadSettings | None = None) -> ClusterSnapshot:
    """List the cluster through `client` (a `lightkube.Client`) into a snapshot. Raises the typed errors of
    `gpuadmin.cluster.errors` when the API server refuses (403) or cannot be reached."""
    settings = settings or ReadSettings()
    kinds = _generic_kinds()
    snapshot = ClusterSnapshot()
    for index, item in _listed(client, kinds["nodes"], "nodes", settings, snapshot):
        _read_node(item, index, snapshot)
    for index, item in _listed(client, kinds["pods"], "pods", settings, snapshot):
        _read_pod(item, index, snapshot)
    try:
        for index, item in _listed(client, kinds["queues"], "queues", settings, snapshot):
            _read_queue(item, index, snapshot)
    except _NotInstalled:
        snapshot.queues_installed = False
        snapshot.findings.append(Finding("cluster", "", "", f"the KAI Queue CRD ({KAI_GROUP}/v2 queues) is not "
                                         "installed: no queues read (the pods' queues get no quota)"))
    try:
        for _, item in _listed(client, kinds["podgroups"], "podgroups", settings, snapshot):
            _read_pod_group(item, snapshot)
    except _NotInstalled:
        pass  # PodGroups are KAI's; without KAI, gangs are read from the pods' own labels
    _read_configmaps(client, kinds, settings, snapshot)
    _check_node_configs(snapshot, settings)
    return snapshot


class _NotInstalled(Exception):
    """The API server does not serve this kind (404 on its list): its CRD is not installed."""


@functools.cache
def _generic_kinds() -> dict[str, Any]:
    """The resources read, as lightkube generic resources: their objects are the decoded JSON dicts the pure
    translators of `kube_cluster` take, with no typed model built and taken apart again. Made here, not with
    `create_global_resource`, which registers the class in lightkube's global registry: a core kind (Node) is
    registered there already by `lightkube.resources.core_v1`, and a second class for it is refused."""
    from lightkube.generic_resource import GenericGlobalResource, GenericNamespacedResource, create_api_info

    def kind(base: type, group: str, version: str, name: str, plural: str) -> type:
        return type(name, (base,), {"_api_info": create_api_info(group, version, name, plural)})

    return {
        "nodes": kind(GenericGlobalResource, "", "v1", "Node", "nodes"),
        "pods": kind(GenericNamespacedResource, "", "v1", "Pod", "pods"),
        "queues": kind(GenericGlobalResource, KAI_GROUP, "v2", "Queue", "queues"),
        "podgroups": kind(GenericNamespacedResource, KAI_GROUP, "v2alpha2", "PodGroup", "podgroups"),
        "configmaps": kind(GenericNamespacedResource, "", "v1", "ConfigMap", "configmaps"),
        "clusterpolicies": kind(GenericGlobalResource, "nvidia.com", "v1", "ClusterPolicy", "clusterpolicies"),
    }


def _listed(client: Any, resource: Any, plural: str, settings: ReadSettings,
            snapshot: ClusterSnapshot) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Every object of a collection, page by page, with its index; the list's resourceVersion is recorded."""
    from lightkube import ApiError
    from lightkube.core.exceptions import NotReadyError

    namespaced = plural in ("pods", "podgroups")
    listing = client.list(resource, chunk_size=settings.page_size, **({"namespace": "*"} if namespaced else {}))
    try:
        yield from enumerate(prefetched(listing))
    except ApiError as exc:
        if exc.status.code == 404 and plural in ("queues", "podgroups"):
            raise _NotInstalled(plural) from None
        raise api_failure(exc, f"listing {plural}") from None
    except GpuadminError:
        raise
    except Exception as exc:  # the transport: refused, reset, TLS, timeout — api_failure tells them apart
        raise api_failure(exc, f"listing {plural}") from None
    with contextlib.suppress(NotReadyError):  # a list answered without a resourceVersion records none
        snapshot.list_versions[plural] = listing.resourceVersion


def prefetched(listing: Iterable[_T]) -> Iterator[_T]:
    """The listing's items, fetched by a thread of its own: the next page is asked for and decoded while this
    one's objects are translated, so the API server serves it meanwhile rather than waiting for the next request
    (a 10,000-pod listing is 20 pages). What the listing raises is raised here, after the items before it. The
    thread is a daemon: a reader that stops early leaves it to finish its page and end with the process."""
    items: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def fetch() -> None:
        try:
            for item in listing:
                items.put((True, item))
        except BaseException as failure:  # handed to the reader, which raises it as the listing would have
            items.put((False, failure))
        else:
            items.put((False, None))

    threading.Thread(target=fetch, name="gpuadmin-list", daemon=True).start()
    while True:
        fetched, value = items.get()
        if fetched:
            yield value
        elif value is None:
            return
        else:
            raise value


def _object_name(item: Mapping[str, Any]) -> str:
    """namespace/name of an object, as printable text, for a finding (never trusted further than that)."""
    metadata = item.get("metadata") if isinstance(item, Mapping) else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name = printable(str(metadata.get("name") or "?"), 80)
    namespace = metadata.get("namespace")
    return f"{printable(str(namespace), 63)}/{name}" if namespace else name


def _skipped(snapshot: ClusterSnapshot, kind: FindingKind, item: Mapping[str, Any], failure: InputError,
             plural: str, index: int) -> None:
    """A finding for an object that could not be translated: its field, relative to the object."""
    diagnostic = failure.diagnostics[0]
    path = diagnostic.path
    if path[:2] == (plural, index):
        path = path[2:]
    where = dotted(path) if path else ""
    message = printable(diagnostic.message, 200)
    snapshot.findings.append(Finding(kind, _object_name(item), where, f"skipped: {message}"))


def _translated(snapshot: ClusterSnapshot, kind: FindingKind, plural: str, index: int, item: Mapping[str, Any],
                translate: Callable[[], _T]) -> _T | None:
    try:
        return translate()
    except InputError as failure:
        _skipped(snapshot, kind, item, failure, plural, index)
        return None


def _version_of(item: Mapping[str, Any]) -> str | None:
    value = (item.get("metadata") or {}).get("resourceVersion")
    return value if isinstance(value, str) else None


def _read_node(item: Mapping[str, Any], index: int, snapshot: ClusterSnapshot) -> None:
    read = _translated(snapshot, "node", "nodes", index, item, lambda: cluster_node(item, ("nodes", index)))
    if read is None:
        return
    node, warnings = read
    snapshot.nodes.append(node)
    snapshot.findings += [Finding("node", node.node.name, "", printable(w, 200)) for w in warnings]
    if node.resource_version:
        snapshot.versions[("node", node.node.name)] = node.resource_version
    if node.mig_config_state == "failed":
        config = node.node.labels.get(MIG_CONFIG_LABEL, "")
        snapshot.findings.append(Finding("node", node.node.name, f"metadata.labels.{MIG_CONFIG_STATE}",
                                         f"the GPU Operator's mig-manager failed to apply mig config {config!r}"))


def _read_pod(item: Mapping[str, Any], index: int, snapshot: ClusterSnapshot) -> None:
    if not asks_for_gpu(item):
        snapshot.other_pods += 1
        return
    pod = _translated(snapshot, "pod", "pods", index, item, lambda: cluster_pod(item, ("pods", index)))
    if pod is None:
        return
    snapshot.pods.append(pod)
    if pod.resource_version:
        snapshot.versions[("pod", pod.job_name)] = pod.resource_version


def _read_queue(item: Mapping[str, Any], index: int, snapshot: ClusterSnapshot) -> None:
    queue = _translated(snapshot, "queue", "queues", index, item,
                        lambda: kai_queue({**item, "kind": "Queue"}, ("queues", index)))
    if queue is None:
        return
    snapshot.queues.append(queue)
    version = _version_of(item)
    if version:
        snapshot.versions[("queue", queue.name)] = version


def _read_pod_group(item: Mapping[str, Any], snapshot: ClusterSnapshot) -> None:
    metadata, spec = item.get("metadata") or {}, item.get("spec") or {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not (isinstance(name, str) and isinstance(namespace, str)) or dns1123_subdomain_problems(name) \
            or dns1123_subdomain_problems(namespace):
        snapshot.findings.append(Finding("podgroup", _object_name(item), "metadata.name",
                                         "skipped: not a Kubernetes name"))
        return
    min_member = spec.get("minMember", 1)
    if not isinstance(min_member, int) or isinstance(min_member, bool) or not 1 <= min_member <= 100_000:
        snapshot.findings.append(Finding("podgroup", f"{namespace}/{name}", "spec.minMember",
                                         f"skipped: minMember {printable(str(min_member), 20)!r} is not a count"))
        return
    queue = spec.get("queue")
    queue = queue if isinstance(queue, str) and not dns1123_subdomain_problems(queue) else None
    snapshot.pod_groups[f"{namespace}/{name}"] = PodGroupRead(namespace, name, min_member, queue)


def _read_configmaps(client: Any, kinds: dict[str, Any], settings: ReadSettings, snapshot: ClusterSnapshot) -> None:
    """The mig-parted and device-plugin ConfigMaps, each read where it exists: a GPU Operator without MIG or
    without a device-plugin config has none, and that is no finding unless a node's label names a config."""
    mig_name, plugin_name = _configmap_names(client, kinds["clusterpolicies"], settings, snapshot)
    mig = _configmap(client, kinds["configmaps"], settings.namespace, mig_name, snapshot)
    if mig is not None:
        snapshot.mig_parted = _configs_of(mig, snapshot, _mig_parted_configs)
    plugin = _configmap(client, kinds["configmaps"], settings.namespace, plugin_name, snapshot)
    if plugin is not None:
        snapshot.device_plugin = _configs_of(plugin, snapshot, _device_plugin_configs)
    snapshot.configmap_names = (mig_name, plugin_name)


def _configmap_names(client: Any, resource: Any, settings: ReadSettings,
                     snapshot: ClusterSnapshot) -> tuple[str, str]:
    """The ConfigMaps' names: as given, else as the ClusterPolicy names them, else the defaults. A cluster without
    the GPU Operator's CRD (404), or an operator not allowed to read it (403, a finding), gets the defaults."""
    from lightkube import ApiError

    mig, plugin = settings.mig_parted_configmap, settings.device_plugin_configmap
    if mig is not None and plugin is not None:
        return mig, plugin
    policy: Mapping[str, Any] = {}
    try:
        policy = next(iter(client.list(resource, chunk_size=1)), {})
    except ApiError as exc:
        if exc.status.code == 403:
            snapshot.findings.append(Finding("cluster", "", "", "not allowed to read the GPU Operator's ClusterPolicy: "
                                             "its ConfigMaps are looked for under their default names"))
        elif exc.status.code != 404:
            raise api_failure(exc, "listing clusterpolicies") from None
    except Exception as exc:  # the transport
        raise api_failure(exc, "listing clusterpolicies") from None
    named = {part: _field(policy, "spec", part, "config", "name") for part in ("migManager", "devicePlugin")}
    return (mig or _valid_name(named["migManager"], DEFAULT_MIG_PARTED_CONFIGMAP),
            plugin or _valid_name(named["devicePlugin"], DEFAULT_DEVICE_PLUGIN_CONFIGMAP))


def _field(item: Any, *path: str) -> Any:
    """item[path[0]][path[1]]..., or None where a step is missing or not a mapping (a hostile object's shape)."""
    for key in path:
        item = item.get(key) if isinstance(item, Mapping) else None
    return item


def _valid_name(value: Any, default: str) -> str:
    return value if isinstance(value, str) and value and not dns1123_subdomain_problems(value) else default


def _configmap(client: Any, resource: Any, namespace: str, name: str,
               snapshot: ClusterSnapshot) -> Mapping[str, Any] | None:
    from lightkube import ApiError

    try:
        item: Mapping[str, Any] = client.get(resource, name=name, namespace=namespace)
    except ApiError as exc:
        if exc.status.code == 404:
            return None
        raise api_failure(exc, f"reading ConfigMap {namespace}/{name}") from None
    except Exception as exc:  # the transport
        raise api_failure(exc, f"reading ConfigMap {namespace}/{name}") from None
    version = _version_of(item)
    if version:
        snapshot.versions[("configmap", f"{namespace}/{name}")] = version
    return item


def _configs_of(item: Mapping[str, Any], snapshot: ClusterSnapshot,
                names: Callable[[Mapping[str, Any], str], tuple[str, ...]]) -> ConfigMapRead | None:
    metadata = item.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    key = f"{namespace}/{name}"
    try:
        configs = names(item.get("data") or {}, key)
    except InputError as failure:
        message = printable(str(failure.diagnostics[0]), 200)
        snapshot.findings.append(Finding("configmap", key, "data", f"not read: {message}"))
        return None
    return ConfigMapRead(namespace, name, _version_of(item), configs)


def _mig_parted_configs(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The configs a mig-parted ConfigMap defines (its `data.config.yaml`, the key the mig-manager reads)."""
    text = data.get(MIG_MANAGER_KEY)
    if not isinstance(text, str):
        raise InputError([Diagnostic(f"no data.{MIG_MANAGER_KEY}, the key the mig-manager reads")])
    return tuple(sorted(parse_mig_parted(text, f"configmap {key}").configs))


def _device_plugin_configs(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The configs of a device-plugin ConfigMap (one per key), each validated as the plugin does. A text
    validated once is not validated again under another key: gpuadmin's own export writes one config per node,
    most of them alike (1,024 parsed a sync), and the validation reads nothing but the text."""
    valid: set[str] = set()
    for config, text in data.items():
        if not isinstance(text, str):
            raise InputError([Diagnostic(f"data.{printable(str(config), 63)} is not a string")])
        if text not in valid:
            parse_device_plugin_config(text, f"configmap {key}:data.{config}")
            valid.add(text)
    return tuple(sorted(str(k) for k in data))


def _check_node_configs(snapshot: ClusterSnapshot, settings: ReadSettings) -> None:
    """A node whose label names a config its ConfigMap does not define: the GPU Operator cannot apply it. Where
    the ConfigMap itself was not found (a cluster whose ClusterPolicy names another), one finding says so."""
    mig_name, plugin_name = snapshot.configmap_names
    for label, configmap, what, name in (
            (MIG_CONFIG_LABEL, snapshot.mig_parted, "mig-parted", mig_name),
            (DEVICE_PLUGIN_LABEL, snapshot.device_plugin, "device-plugin", plugin_name)):
        naming = [(read.node.name, read.node.labels[label]) for read in snapshot.nodes if label in read.node.labels]
        if configmap is None and naming:
            snapshot.findings.append(Finding(
                "configmap", f"{settings.namespace}/{name}", "",
                f"not found: the {what} configs that {len(naming)} node(s) name in {label} are not checked"))
            continue
        for node, wanted in naming:
            if configmap is not None and wanted not in configmap.configs:
                snapshot.findings.append(Finding(
                    "node", node, f"metadata.labels.{label}",
                    f"names {what} config {printable(wanted, 63)!r}, which ConfigMap {configmap.key} does not "
                    "define"))
