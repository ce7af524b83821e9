"""The cluster watch (gpuadmin/cluster/watch.py) against the API server double, over HTTP.

Events arrive in coalesced batches; a compaction's 410 relists and loses nothing; a restarted server is reconnected
to with backoff; bookmarks move the resourceVersion on; and, the differential test, the watch's cache and the
objects its batches hand on equal a fresh list after any sequence of creates, patches, deletes and compactions.
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.cluster.connect import connect
from gpuadmin.cluster.watch import (
    BATCH_WINDOW_S,
    NODES,
    PODGROUPS,
    PODS,
    QUEUES,
    WATCHED,
    Backoff,
    Batch,
    ClusterWatch,
    HttpTransport,
    Watched,
    WatchStatus,
)
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble

Obj = dict[str, Any]
PATCH = "application/merge-patch+json"


def transport_for(double: ApiServerDouble, tmp_path: Path) -> HttpTransport:
    """The transport for the double's context, connected as gpuadmin connects to any cluster."""
    return HttpTransport.of_client(connect(double.write_kubeconfig(tmp_path / "kubeconfig")).client)


def eventually(check: Callable[[], bool], timeout_s: float = 5.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened within {timeout_s} s: {what}")


def patch(double: ApiServerDouble, path: str, body: Obj) -> None:
    request = urllib.request.Request(double.url + path, data=json.dumps(body).encode(), method="PATCH",
                                     headers={"Content-Type": PATCH})
    with urllib.request.urlopen(request, timeout=5):
        pass


def delete(double: ApiServerDouble, path: str) -> None:
    with urllib.request.urlopen(urllib.request.Request(double.url + path, method="DELETE"), timeout=5):
        pass


class Consumer:
    """What a caller of the watch sees: its batches, applied to a copy of the cluster, and its states."""

    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.objects: dict[tuple[str, str], Obj] = {}
        self.states: list[WatchStatus] = []
        self._lock = threading.Lock()

    def batch(self, batch: Batch) -> None:
        with self._lock:
            self.batches.append(batch)
            for change in batch.changes:
                if change.obj is None:
                    self.objects.pop((change.kind, change.key), None)
                else:
                    self.objects[(change.kind, change.key)] = change.obj

    def status(self, status: WatchStatus) -> None:
        self.states.append(status)

    def version(self, kind: str, key: str) -> str | None:
        with self._lock:
            obj = self.objects.get((kind, key))
        return obj["metadata"]["resourceVersion"] if obj is not None else None


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(bookmark_interval_s=0.1) as d:
        d.create(objects.node("gpu-a"))
        d.create(objects.node("gpu-b", ready=False))
        d.create(objects.pod("train-0", node_name="gpu-a"))
        d.create(objects.kai_queue("research", gpu_quota=8))
        yield d


def quick_backoff() -> Backoff:
    return Backoff(initial_s=0.05, cap_s=0.4)


def start_watch(double: ApiServerDouble, tmp_path: Path, consumer: Consumer,
                watched: tuple[Watched, ...] = WATCHED, window_s: float = BATCH_WINDOW_S) -> ClusterWatch:
    watch = ClusterWatch(transport_for(double, tmp_path), consumer.batch, consumer.status, watched=watched,
                         window_s=window_s, backoff=quick_backoff).start()
    eventually(lambda: watch.status.state == "live", what="the watch goes live")
    return watch


def fresh_list(double: ApiServerDouble, watched: Watched) -> dict[str, Obj]:
    with urllib.request.urlopen(double.url + watched.path, timeout=5) as response:
        listing = json.loads(response.read())
    return {(f"{o['metadata']['namespace']}/" if watched.namespaced else "") + o["metadata"]["name"]: o
            for o in listing["items"]}


def without_type(obj: Obj) -> Obj:
    """An object as a list item carries it: watch events carry kind and apiVersion, list items do not."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def test_the_first_list_and_then_each_event_arrive_as_batches(double: ApiServerDouble, tmp_path: Path) -> None:
    consumer = Consumer()
    with start_watch(double, tmp_path, consumer):
        eventually(lambda: len(consumer.objects) == 4, what="the first list")
        assert set(consumer.objects) == {("node", "gpu-a"), ("node", "gpu-b"), ("pod", "default/train-0"),
                                         ("queue", "research")}
        settled = len(consumer.batches)
        patch(double, "/api/v1/nodes/gpu-a", {"spec": {"unschedulable": True}})
        eventually(lambda: consumer.objects[("node", "gpu-a")]["spec"].get("unschedulable") is True,
                   what="the cordon reaches the consumer")
        delete(double, "/api/v1/namespaces/default/pods/train-0")
        eventually(lambda: ("pod", "default/train-0") not in consumer.objects, what="the deletion")
        assert len(consumer.batches) == settled + 2


def test_changes_within_the_window_are_coalesced_to_the_last_state(double: ApiServerDouble, tmp_path: Path) -> None:
    consumer = Consumer()
    with start_watch(double, tmp_path, consumer, window_s=1.0):  # a long window: a loaded machine stays within it
        eventually(lambda: len(consumer.objects) == 4, what="the first list")
        settled = len(consumer.batches)
        for value in ("1", "2", "3"):  # three events, read one by one, each well after the one before
            patch(double, "/api/v1/nodes/gpu-b", {"metadata": {"labels": {"step": value}}})
            time.sleep(0.05)
        eventually(lambda: consumer.version("node", "gpu-b") == double.get("nodes", "gpu-b")["metadata"][  # type: ignore[index]
            "resourceVersion"], what="the last patch")
        [batch] = consumer.batches[settled:]
        [change] = batch.changes
        assert change.obj is not None and change.obj["metadata"]["labels"]["step"] == "3"


def test_a_compaction_410_relists_and_nothing_is_lost(double: ApiServerDouble, tmp_path: Path) -> None:
    consumer = Consumer()
    with start_watch(double, tmp_path, consumer) as watch:
        eventually(lambda: len(consumer.objects) == 4, what="the first list")
        with double.paused():  # written and compacted before the open watches are sent any of it: they get 410
            patch(double, "/api/v1/nodes/gpu-a", {"metadata": {"labels": {"drained": "yes"}}})
            delete(double, "/api/v1/nodes/gpu-b")
            double.create(objects.pod("train-1", node_name="gpu-a"))
            double.compact()
        eventually(lambda: ("node", "gpu-b") not in consumer.objects and ("pod", "default/train-1") in
                   consumer.objects, what="the relist's changes")
        assert watch.watchers["node"].lists == 2 and watch.watchers["pod"].lists == 2
        assert consumer.objects[("node", "gpu-a")]["metadata"]["labels"]["drained"] == "yes"
        for watched in (NODES, PODS):
            assert watch.objects(watched.kind) == fresh_list(double, watched)


def test_a_restarted_server_is_reconnected_to_with_backoff(double: ApiServerDouble, tmp_path: Path) -> None:
    consumer = Consumer()
    port = int(double.url.rsplit(":", 1)[1])
    with start_watch(double, tmp_path, consumer, watched=(NODES,)) as watch:
        eventually(lambda: len(consumer.objects) == 2, what="the first list")
        watcher = watch.watchers["node"]
        double.stop()
        eventually(lambda: watch.status.state in ("reconnecting", "down"), what="the watch notices")
        eventually(lambda: watcher._backoff.failures >= 3, what="refused connects, backed off")
        assert "retry in" in watch.status.detail
        double.create(objects.node("gpu-c"))  # while the server is down: served from its history on reconnect
        double.start(port)
        eventually(lambda: ("node", "gpu-c") in consumer.objects, what="the change made while down")
        eventually(lambda: watch.status.state == "live", what="live again")
        assert watcher.lists == 1  # resumed from its resourceVersion: no relist
        assert watcher._backoff.failures == 0  # reset once the server answered


def test_backoff_grows_is_capped_jittered_and_reset() -> None:
    low = Backoff(initial_s=0.25, cap_s=2.0, jitter=lambda: 0.0)
    assert [low.next_delay() for _ in range(6)] == [0.125, 0.25, 0.5, 1.0, 1.0, 1.0]
    high = Backoff(initial_s=0.25, cap_s=2.0, jitter=lambda: 1.0)
    assert [high.next_delay() for _ in range(6)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    high.reset()
    assert high.next_delay() == 0.25
    spread = Backoff(initial_s=1.0, cap_s=1.0)
    delays = {spread.next_delay() for _ in range(20)}
    assert len(delays) > 1 and all(0.5 <= d <= 1.0 for d in delays)


def test_bookmarks_move_the_resource_version_on(double: ApiServerDouble, tmp_path: Path) -> None:
    consumer = Consumer()
    with start_watch(double, tmp_path, consumer, watched=(NODES,)) as watch:
        eventually(lambda: len(consumer.objects) == 2, what="the first list")
        watcher = watch.watchers["node"]
        listed_at = int(watcher.resource_version or 0)
        settled = len(consumer.batches)
        for i in range(3):  # other kinds' writes: no node event, but the node watch's bookmarks move on
            double.create(objects.pod(f"p-{i}"))
        latest = int(double.get("pods", "p-2", "default")["metadata"]["resourceVersion"])  # type: ignore[index]
        eventually(lambda: int(watcher.resource_version or 0) == latest, what="a bookmark at the latest version")
        assert latest > listed_at and len(consumer.batches) == settled  # a bookmark is no change
        # the server forgets the history; a watch resuming from the bookmark's version needs none of it
        double.compact()
        port = int(double.url.rsplit(":", 1)[1])
        double.stop()
        eventually(lambda: watch.status.state != "live", what="the watch notices the stop")
        double.start(port)
        eventually(lambda: watch.status.state == "live", what="live again")
        time.sleep(0.3)
        assert watcher.lists == 1


def test_a_refusal_says_down_at_once_with_the_api_message(double: ApiServerDouble, tmp_path: Path) -> None:
    double.deny.add(("list", "pods"))
    consumer = Consumer()
    watch = ClusterWatch(transport_for(double, tmp_path), consumer.batch, consumer.status, backoff=quick_backoff)
    with watch:
        eventually(lambda: watch.status.state == "down", what="down")
        assert "403" in watch.status.detail and 'cannot list resource "pods"' in watch.status.detail
        double.deny.clear()  # RBAC fixed: the next try succeeds
        eventually(lambda: watch.status.state == "live", what="live once permitted")


def test_stop_ends_every_thread_at_once(double: ApiServerDouble, tmp_path: Path) -> None:
    watch = start_watch(double, tmp_path, Consumer())
    began = time.monotonic()
    watch.stop()
    assert time.monotonic() - began < 1.0
    assert not any(thread.is_alive() for thread in watch._threads)


def random_step(double: ApiServerDouble, rng: random.Random, names: dict[str, set[str]]) -> None:
    """One create, patch or delete of a node, pod or queue, chosen by `rng`."""
    kind = rng.choice(["node", "pod", "queue"])
    known = names[kind]
    path = {"node": "/api/v1/nodes/", "pod": "/api/v1/namespaces/default/pods/",
            "queue": "/apis/scheduling.run.ai/v2/queues/"}[kind]
    action = rng.choice(["create", "patch", "patch", "delete"]) if known else "create"
    if action == "create":
        name = f"{kind}-{rng.randrange(10_000)}"
        if name in known:
            return
        double.create({"node": objects.node, "pod": objects.pod, "queue": objects.kai_queue}[kind](name))
        known.add(name)
        return
    name = rng.choice(sorted(known))
    if action == "patch":
        patch(double, path + name, {"metadata": {"labels": {"step": str(rng.randrange(1000))}}})
    else:
        delete(double, path + name)
        known.discard(name)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_cache_and_the_batches_equal_a_fresh_list(double: ApiServerDouble, tmp_path: Path, seed: int) -> None:
    """Differential: whatever happens on the cluster — changes faster than the watch reads, compactions in the
    middle — the watch's cache and what its batches handed on equal a fresh list of each collection."""
    rng = random.Random(seed)
    names = {"node": {"gpu-a", "gpu-b"}, "pod": {"train-0"}, "queue": {"research"}}
    consumer = Consumer()
    with start_watch(double, tmp_path, consumer) as watch:
        for step in range(120):
            if step % 40 == 20:
                with double.paused():  # a burst the watches are sent nothing of, then compacted: 410 and relist
                    for _ in range(5):
                        random_step(double, rng, names)
                    double.compact()
            else:
                random_step(double, rng, names)

        def caught_up() -> bool:
            return all({key: without_type(obj) for key, obj in watch.objects(w.kind).items()} == fresh_list(double, w)
                       for w in WATCHED)

        eventually(caught_up, what="the caches equal a fresh list")
        eventually(lambda: all({k: without_type(o) for (kind, k), o in consumer.objects.items() if kind == w.kind}
                               == fresh_list(double, w) for w in WATCHED), what="the batches add up to a fresh list")
        assert watch.watchers["node"].lists >= 2  # the compactions did force relists
    assert {w.kind for w in WATCHED} == {NODES.kind, PODS.kind, QUEUES.kind, PODGROUPS.kind}


def test_an_object_without_a_usable_name_is_left_out_not_fatal(double: ApiServerDouble, tmp_path: Path) -> None:
    consumer = Consumer()
    with start_watch(double, tmp_path, consumer, watched=(NODES, PODS)) as watch:
        eventually(lambda: len(consumer.objects) == 3, what="the first list")
        double.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": ""}})  # hostile: no name
        double.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan", "namespace": ""}})
        double.create(objects.node("gpu-c"))
        eventually(lambda: ("node", "gpu-c") in consumer.objects, what="the next good object")
        assert len(consumer.objects) == 4 and watch.status.state == "live"
        latest = double.get("nodes", "gpu-c")["metadata"]["resourceVersion"]  # type: ignore[index]
        assert watch.watchers["node"].resource_version == latest


def test_a_collection_the_server_does_not_serve_is_empty_not_down(double: ApiServerDouble, tmp_path: Path) -> None:
    """A 404 on the collection (a CRD not installed, as KAI's Queue on a cluster without KAI): no such objects, the
    watch stays live for the others."""
    absent = Watched("widget", "/apis/widgets.example.com/v1/widgets", namespaced=False)
    consumer = Consumer()
    with start_watch(double, tmp_path, consumer, watched=(NODES, absent)) as watch:
        eventually(lambda: len(consumer.objects) == 2, what="the nodes")
        assert watch.status.state == "live" and "widgets: not served" in watch.status.detail
        assert watch.objects("widget") == {}
