"""The sync's fast paths, each held equal to its reference path on the same API server double (issue 22's bench):

- pods that ask the same share one `Request` (`kube_cluster._shared_request`) — against a fresh model per pod;
- a device-plugin ConfigMap's configs alike in text are validated once (`cluster.read._device_plugin_configs`) — against
  each one validated;
- a listing's next page is fetched while this one is translated (`cluster.read.prefetched`) — against the
  listing read page by page;
- the cluster is read in a thread while the state loads (`cluster_sync.read_beside`) — against the read and the
  load in turn (`read_from`), and with the read's failure first when both fail, as in turn.

The cluster holds every kind of GPU request, values that are equal numbers across kinds (1 GPU and 1 GiB of GPU
memory; a 0.5 fraction and 0.5 GiB), a gang, and hostile objects (terminal escapes in names, a fraction out of
range), the objects of tests/kube/cluster_objects.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.adapters import kube_cluster
from gpuadmin.adapters.device_plugin import parse_device_plugin_config
from gpuadmin.cluster import read as cluster_read
from gpuadmin.cluster.connect import connect
from gpuadmin.cluster.errors import ClusterError
from gpuadmin.cluster.read import ClusterSnapshot, ReadSettings, read_cluster
from gpuadmin.engine.planner import dump
from gpuadmin.errors import Diagnostic, InputError
from gpuadmin.model import Request
from gpuadmin.service.cluster_sync import init_from_cluster, read_beside, read_from
from gpuadmin.store import Store, StoreError
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble


def _annotated(name: str, annotations: dict[str, str], **kwargs: Any) -> dict[str, Any]:
    pod = objects.pod(name, **kwargs)
    pod["spec"]["containers"][0]["resources"] = {}
    pod["metadata"]["annotations"] = annotations
    return pod


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(mig_configs=objects.mig_parted_config_names()) as cluster:
        cluster.create(objects.mig_parted_configmap())
        cluster.create(objects.whole_gpu_node("gpu-a"))
        cluster.create(objects.whole_gpu_node("gpu-b"))
        cluster.create(objects.node("mig-a"))
        cluster.create(objects.kai_queue("team-a", gpu_quota=16))
        cluster.create(objects.kai_pod_group("trainer", namespace="team-a", min_member=2, queue="team-a"))
        for i, node in enumerate(("gpu-a", "gpu-b")):
            pod = objects.pod(f"trainer-{i}", namespace="team-a", node_name=node, count=2,
                              labels={"kai.scheduler/queue": "team-a"}, scheduler="kai-scheduler")
            pod["metadata"]["annotations"] = {"pod-group-name": "trainer"}
            cluster.create(pod)
        # equal numbers of different kinds, in both orders of listing: 1 GPU / 1 GiB, 0.5 fraction / 0.5 GiB
        cluster.create(objects.pod("a-one-gpu", node_name="gpu-a"))
        cluster.create(_annotated("b-one-gib", {"gpu-memory": "1024"}))
        cluster.create(_annotated("c-half-gib", {"gpu-memory": "512"}))
        cluster.create(_annotated("d-half-gpu", {"gpu-fraction": "0.5"}))
        cluster.create(objects.pod("e-one-gpu", node_name="gpu-b"))
        cluster.create(objects.pod("f-two-gpus", count=2))
        cluster.create(objects.pod("g-mig", node_name="mig-a", resource="nvidia.com/mig-1g.10gb"))
        cluster.create(objects.pod("h-mig", resource="nvidia.com/mig-1g.10gb"))
        cluster.create(_annotated("i-too-much", {"gpu-fraction": "2"}))  # hostile: refused, a finding
        hostile = objects.pod("j-escape")
        hostile["metadata"]["labels"] = {"kai.scheduler/queue": "[b]x\x1b[2J"}
        cluster.create(hostile)
        node = objects.node("gpu-x")
        node["metadata"]["name"] = "gpu[red]\x1b[2J"
        cluster.create(node)
        yield cluster


@pytest.fixture
def kubeconfig(double: ApiServerDouble, tmp_path: Path) -> Path:
    return double.write_kubeconfig(tmp_path / "kubeconfig")


def _fresh_request(kind: kube_cluster.RequestKind, value: int | float | str) -> Request:
    """The reference: a new model for every pod, as before requests were shared."""
    return Request.model_validate({kind: value})


def _pods(snapshot: ClusterSnapshot) -> dict[str, Any]:
    return {p.job_name: (p, dump(p.request)) for p in snapshot.pods}


def test_shared_requests_read_the_cluster_as_a_fresh_request_per_pod(
        kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kube_cluster._shared_request.cache_clear()
    shared = read_cluster(connect(kubeconfig).client)
    with monkeypatch.context() as patched:
        patched.setattr(kube_cluster, "_shared_request", _fresh_request)
        reference = read_cluster(connect(kubeconfig).client)
    assert _pods(shared) == _pods(reference)
    assert (shared.findings, shared.versions) == (reference.findings, reference.versions)
    assert [f.field for f in shared.findings if f.kind == "pod"] == ["metadata.annotations.gpu-fraction",
                                                                     "metadata.labels.kai.scheduler/queue"]
    requests = {p.job_name: p.request for p in shared.pods}
    assert (requests["default/b-one-gib"].gpu_memory_gib, requests["default/b-one-gib"].gpus) == (1.0, None)
    assert (requests["default/d-half-gpu"].fraction, requests["default/c-half-gib"].fraction) == (0.5, None)
    # shared where equal: one model for both one-GPU pods, for both MIG pods
    assert requests["default/a-one-gpu"] is requests["default/e-one-gpu"]
    assert requests["default/g-mig"] is requests["default/h-mig"]


def test_reading_beside_the_load_reads_what_the_read_then_the_load_read(
        double: ApiServerDouble, kubeconfig: Path, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    init_from_cluster(state_dir, kubeconfig=kubeconfig)
    # a pod named ahead of those running on gpu-a: without the state's jobs it would take their slots
    double.create(objects.pod("0-new", node_name="gpu-a"))
    with Store.open(state_dir) as store:
        read, state = read_beside(lambda: connect(kubeconfig), None, store.load)
        reference = read_from(connect(kubeconfig), None, dict(store.load().jobs))
    assert state.revision == 0 and set(state.jobs) | {"default/0-new"} == {j.name for j in reference.inventory.jobs}
    assert read.binding == reference.binding
    assert read.inventory == reference.inventory
    assert (read.findings, read.snapshot.versions) == (reference.findings, reference.snapshot.versions)
    assert [str(f) for f in read.findings] == [str(f) for f in reference.findings] != []


def _unreachable() -> Any:
    raise ClusterError("the API server at http://127.0.0.1:9 is unreachable")


def _corrupt() -> Any:
    raise StoreError("state.db: jobs row 'x' does not validate")


def test_when_the_read_and_the_load_both_fail_the_read_failure_is_raised(kubeconfig: Path) -> None:
    with pytest.raises(ClusterError, match="unreachable"):
        read_beside(_unreachable, None, _corrupt)
    with pytest.raises(StoreError, match="does not validate"):  # the read went well: the load's failure
        read_beside(lambda: connect(kubeconfig), None, _corrupt)


def _each_parsed(data: dict[str, Any], key: str) -> tuple[str, ...]:
    """The reference: every key's text validated, alike or not."""
    for config, text in data.items():
        if not isinstance(text, str):
            raise InputError([Diagnostic(f"data.{config} is not a string")])
        parse_device_plugin_config(text, f"configmap {key}:data.{config}")
    return tuple(sorted(str(k) for k in data))


def _outcome(names: Any, data: dict[str, Any]) -> tuple[str, ...] | str:
    try:
        return tuple(names(data, "gpu-operator/time-slicing-config"))
    except InputError as failure:
        return str(failure.diagnostics[0])


SLICED = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
BAD = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n"


@pytest.mark.parametrize("data", [
    {f"gpuadmin-gpu-{i:04d}": SLICED for i in range(8)},  # gpuadmin's export: one per node, alike
    {"a": SLICED, "b": SLICED, "c": BAD, "d": SLICED},  # a bad one after alike ones: named, by its key
    {"a": BAD, "b": BAD},  # alike and bad: the first key is the one named
    {"a": SLICED, "b": SLICED.replace("4", "2"), "c": SLICED.replace("4", "x\x1b[2J")},  # hostile text
    {"a": SLICED, "b": 7},  # not a string
])
def test_alike_device_plugin_configs_are_validated_once_with_the_same_outcome(data: dict[str, Any]) -> None:
    assert _outcome(cluster_read._device_plugin_configs, data) == _outcome(_each_parsed, data)


def test_an_interrupt_while_the_state_loads_does_not_wait_for_the_read() -> None:
    release, finished = threading.Event(), threading.Event()

    def hanging() -> Any:  # an API server that does not answer (until the test lets it, or 30 s)
        release.wait(30)
        finished.set()
        raise ClusterError("timed out")

    def interrupted() -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        read_beside(hanging, None, interrupted)
    assert not finished.is_set()  # Ctrl-C ended the command while the read still hung
    release.set()


def test_a_prefetched_listing_reads_what_a_listing_read_page_by_page_reads(
        kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client = connect(kubeconfig).client
    settings = ReadSettings(page_size=2)  # many pages, so that fetching runs ahead of the reader
    fetched = read_cluster(client, settings)
    with monkeypatch.context() as patched:
        patched.setattr(cluster_read, "prefetched", iter)
        reference = read_cluster(client, settings)
    assert fetched == reference and len(fetched.pods) > 2 * settings.page_size


def test_what_a_prefetched_listing_raises_is_raised_after_the_items_before_it() -> None:
    failure = ClusterError("the connection was reset")

    def listing() -> Iterator[int]:
        yield from range(3)
        raise failure

    got: list[int] = []
    with pytest.raises(ClusterError) as raised:
        got.extend(cluster_read.prefetched(listing()))
    assert raised.value is failure and got == [0, 1, 2]
    assert list(cluster_read.prefetched(iter([]))) == []
