"""The incremental sync (`sync_changes`, service/cluster_changes.py) held equal to the reference, `sync`.

Differential: two states made from the same cluster on the API server double (tests/kube/apiserver_double.py);
then, step after step, random creates, patches and deletes of nodes, pods (single, gangs of a KAI PodGroup, pods of
a PodGroup that does not exist, pods asking for no GPU), KAI Queues and PodGroups, made over HTTP as a client makes
them. After each step one state takes `sync_changes` from a fresh list of every watched kind (the watch's cache
as it is once caught up), the other a full `sync`; nodes, jobs, queues, slots and stored resourceVersions must be
equal after every step, and so must the entries' restores.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.cluster.connect import connect
from gpuadmin.cluster.mirror import ClusterMirror
from gpuadmin.cluster.read import ReadSettings
from gpuadmin.cluster.watch import WATCHED, Watched
from gpuadmin.engine.planner import dump
from gpuadmin.service import ClusterFeed, Service, init_from_cluster
from gpuadmin.service.cluster_sync import read_from
from gpuadmin.service.errors import Stale
from gpuadmin.store import Store
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble

Obj = dict[str, Any]
NAMESPACES = ("default", "team-a", "team-a-b")  # "team-a" / "team-a-b": a list's order is not the names' order
QUEUES = ("team-a", "team-b", "ghost")  # "ghost": named by pods, defined by no KAI Queue unless a step makes it
HOSTILE_QUEUE = "[b]x"  # markup in a queue label: skipped, with a finding


def request(double: ApiServerDouble, method: str, path: str, body: Obj | None = None) -> None:
    data = json.dumps(body).encode() if body is not None else None
    sent = urllib.request.Request(double.url + path, data=data, method=method,
                                  headers={"Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(sent, timeout=5):
        pass


def cache_of(double: ApiServerDouble) -> dict[str, dict[str, Obj]]:
    """Every watched kind's objects, as the watch's cache holds them once caught up (a fresh list)."""
    out: dict[str, dict[str, Obj]] = {}
    for watched in WATCHED:
        out[watched.kind] = listed(double, watched)
    return out


def listed(double: ApiServerDouble, watched: Watched) -> dict[str, Obj]:
    with urllib.request.urlopen(double.url + watched.path, timeout=5) as response:
        items = json.loads(response.read())["items"]
    return {(f"{o['metadata']['namespace']}/" if watched.namespaced else "") + o["metadata"]["name"]: o
            for o in items}


class Cluster:
    """The double, and the random steps made on it."""

    def __init__(self, double: ApiServerDouble, rng: random.Random) -> None:
        self.double = double
        self.rng = rng
        self.serial = 0

    def names(self, plural: str) -> list[str]:
        return sorted(listed(self.double, next(w for w in WATCHED if w.path.endswith("/" + plural))))

    def fresh(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial}"

    def pod(self, *, group: str | None = None, namespace: str | None = None, count: int | None = None,
            hostile: bool = False) -> None:
        rng = self.rng
        nodes = [*self.names("nodes"), "gone-node"]  # a pod bound to a node that is not there: a finding
        node = rng.choice(nodes) if rng.random() < 0.7 else None
        mig = node is not None and node.startswith("mig") and rng.random() < 0.7
        queue = HOSTILE_QUEUE if hostile else rng.choice(QUEUES)
        made = objects.pod(self.fresh("p"), namespace=namespace or rng.choice(NAMESPACES), node_name=node,
                           resource="nvidia.com/mig-1g.10gb" if mig else "nvidia.com/gpu",
                           count=1 if mig else (count or rng.choice((1, 2, 4))),
                           labels={"kai.scheduler/queue": queue},
                           scheduler=rng.choice(("kai-scheduler", "default-scheduler")))
        if group is not None:
            made["metadata"]["annotations"] = {"pod-group-name": group}
        self.double.create(made)

    def step(self) -> None:
        """One change to the cluster, chosen at random (a pod's change makes a pod where there is none)."""
        steps = [self.node, self.node, self.pod, self.pod, self.pod, self.bind, self.patch_pod, self.delete_pod,
                 self.delete_pod, self.gang, self.queue, self.pod_group, self.other_pod, self.hostile_pod]
        chosen = self.rng.choice(steps)
        if chosen in (self.bind, self.patch_pod, self.delete_pod) and not self.names("pods"):
            chosen = self.pod
        chosen()

    def node(self) -> None:
        rng, double, nodes = self.rng, self.double, self.names("nodes")
        choice = rng.random()
        if nodes and choice < 0.3:
            request(double, "DELETE", f"/api/v1/nodes/{rng.choice(nodes)}")
        elif nodes and choice < 0.6:
            request(double, "PATCH", f"/api/v1/nodes/{rng.choice(nodes)}",
                    {"spec": {"unschedulable": rng.random() < 0.5}})
        elif nodes and choice < 0.7:
            request(double, "PATCH", f"/api/v1/nodes/{rng.choice(nodes)}",
                    {"status": {"conditions": objects.node_conditions(rng.random() < 0.5)}})
        elif rng.random() < 0.5:
            double.create(objects.node(self.fresh("mig")))
        else:  # a whole-GPU node, maybe the name of one just deleted, with a different count of GPUs
            name = rng.choice(["gpu-a", "gpu-b", self.fresh("gpu")])
            if name not in nodes:
                double.create(objects.whole_gpu_node(name, count=rng.choice((2, 4, 8))))

    def a_pod(self) -> tuple[str, str]:
        namespace, name = self.rng.choice(self.names("pods")).split("/")
        return namespace, name

    def bind(self) -> None:
        """A pod bound and running (the scheduler's Binding, then the kubelet's status)."""
        namespace, name = self.a_pod()
        node = self.rng.choice(self.names("nodes") or ["gone-node"])
        request(self.double, "PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}",
                {"spec": {"nodeName": node}, "status": {"phase": "Running"}})

    def patch_pod(self) -> None:
        rng = self.rng
        namespace, name = self.a_pod()
        patches: list[Obj] = [{"metadata": {"labels": {"kai.scheduler/queue": rng.choice(QUEUES)}}},
                              {"status": {"phase": rng.choice(("Succeeded", "Failed", "Running"))}},
                              {"metadata": {"annotations": {"pod-group-name": rng.choice(("g-1", "g-2", None))}}},
                              {"metadata": {"labels": {"heartbeat": str(rng.randrange(1000))}}}]
        request(self.double, "PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}", rng.choice(patches))

    def delete_pod(self) -> None:
        namespace, name = self.a_pod()
        request(self.double, "DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")

    def gang(self) -> None:
        """A KAI PodGroup's pods, the same whole GPUs each (or not: then one job each), its PodGroup made or not."""
        rng = self.rng
        group, namespace = rng.choice(("g-1", "g-2", self.fresh("g"))), rng.choice(NAMESPACES)
        count = rng.choice((1, 2))
        for _ in range(rng.choice((1, 2, 3))):
            self.pod(group=group, namespace=namespace, count=count if rng.random() < 0.8 else 4)
        if rng.random() < 0.7 and self.double.get("podgroups", group, namespace) is None:
            self.double.create(objects.kai_pod_group(group, namespace=namespace, min_member=2,
                                                     queue=rng.choice(QUEUES)))

    def queue(self) -> None:
        rng, queues = self.rng, self.names("queues")
        name = rng.choice(QUEUES)
        if name in queues and rng.random() < 0.5:
            request(self.double, "DELETE", f"/apis/scheduling.run.ai/v2/queues/{name}")
        elif name in queues:
            request(self.double, "PATCH", f"/apis/scheduling.run.ai/v2/queues/{name}",
                    {"spec": {"resources": {"gpu": {"quota": rng.choice((-1, 4, 16))}}}})
        else:
            self.double.create(objects.kai_queue(name, gpu_quota=rng.choice((-1, 8))))

    def pod_group(self) -> None:
        groups = self.names("podgroups")
        if groups:
            namespace, name = self.rng.choice(groups).split("/")
            path = f"/apis/scheduling.run.ai/v2alpha2/namespaces/{namespace}/podgroups/{name}"
            if self.rng.random() < 0.3:
                request(self.double, "DELETE", path)
            else:
                request(self.double, "PATCH", path, {"spec": {"queue": self.rng.choice(QUEUES)}})

    def other_pod(self) -> None:
        """A pod asking for no GPU: none of gpuadmin's."""
        made = objects.pod(self.fresh("web"), namespace=self.rng.choice(NAMESPACES))
        made["spec"]["containers"][0]["resources"] = {}
        self.double.create(made)

    def hostile_pod(self) -> None:
        self.pod(hostile=True)


def cluster_at_start(double: ApiServerDouble) -> None:
    double.create(objects.mig_parted_configmap())
    double.create(objects.whole_gpu_node("gpu-a", count=8))
    double.create(objects.whole_gpu_node("gpu-b", count=2, labels={"nvidia.com/mig.config": "no-such-config"}))
    double.create(objects.node("mig-a"))
    double.create(objects.kai_queue("team-a", gpu_quota=16))
    double.create(objects.kai_pod_group("g-1", namespace="team-a", min_member=2, queue="team-b"))
    for i, node in enumerate(("gpu-a", "gpu-b")):
        made = objects.pod(f"trainer-{i}", namespace="team-a", node_name=node, count=2,
                           labels={"kai.scheduler/queue": "team-a"}, scheduler="kai-scheduler")
        made["metadata"]["annotations"] = {"pod-group-name": "g-1"}
        double.create(made)
    double.create(objects.pod("infer", namespace="team-a", node_name="mig-a", resource="nvidia.com/mig-1g.10gb",
                              labels={"kai.scheduler/queue": "ghost"}))
    double.create(objects.pod("solo", node_name="gpu-a", count=4))


def model_of(state: Path) -> dict[str, Any]:
    """What the two states must agree on: their entities, the slots held, the resourceVersions stored."""
    loaded = Service(state_dir=state).state
    with sqlite3.connect(state / "state.db") as conn:
        slots = sorted(conn.execute("SELECT node, gpu, job FROM slots").fetchall())
    with Store.open(state) as store:
        versions = store.cluster_versions()
    return {"nodes": {n: dump(m) for n, m in loaded.nodes.items()},
            "jobs": {n: dump(m) for n, m in loaded.jobs.items()},
            "queues": {n: dump(m) for n, m in loaded.queues.items()}, "slots": slots, "versions": versions}


def restores_of(state: Path) -> list[Any]:
    """The last journal entry's changes, if it is a sync's."""
    with Store.open(state) as store:
        last = store.journal()[-1]
    return (last.plan or {}).get("changes", []) if last.origin == "cluster" else []


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(mig_configs=objects.mig_parted_config_names()) as cluster:
        cluster_at_start(cluster)
        yield cluster


def start(double: ApiServerDouble, tmp_path: Path) -> tuple[Path, Path, Path, ClusterMirror]:
    """Two states made from the cluster; the first's mirror, made as the console's first (full) sync makes it."""
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
    fast, full = tmp_path / "fast", tmp_path / "full"
    init_from_cluster(fast, kubeconfig=kubeconfig)
    init_from_cluster(full, kubeconfig=kubeconfig)
    read = read_from(connect(kubeconfig, None))
    with Store.open(fast) as store:
        mirror = ClusterMirror.of_snapshot(read.snapshot, ReadSettings(), 0, store.revision())
    return kubeconfig, fast, full, mirror


# One seed in every run; the other five (extra seeds of the same differential, about 20 s each on CI's two cores)
# with the slow stress runs.
@pytest.mark.parametrize("seed", [0, *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(1, 6))])
def test_incremental_syncs_equal_a_full_sync_after_every_step(double: ApiServerDouble, tmp_path: Path,
                                                             seed: int) -> None:
    kubeconfig, fast, full, mirror = start(double, tmp_path)
    assert model_of(fast) == model_of(full)
    cluster = Cluster(double, random.Random(seed))
    fast_service, full_service = Service(state_dir=fast), Service(state_dir=full)
    for step in range(30):
        for _ in range(cluster.rng.choice((1, 1, 2, 4))):
            cluster.step()
        quick = fast_service.sync_changes(cache_of(double), mirror)
        reference = full_service.sync(kubeconfig=kubeconfig)
        assert model_of(fast) == model_of(full), f"seed {seed}, step {step}"
        assert (quick.entry is None) == (reference.entry is None)
        if quick.entry is not None:
            assert restores_of(fast) == restores_of(full), f"seed {seed}, step {step}"
            assert sorted(quick.changed) == sorted(reference.changed)
        assert {(v.rule, v.target) for v in quick.warnings} == {(v.rule, v.target) for v in reference.warnings}
        # what the sync found of the objects it read again, a full sync finds as well
        assert set(quick.findings) <= set(reference.findings), f"seed {seed}, step {step}"


def test_a_hostile_object_is_skipped_with_the_same_finding_in_both(double: ApiServerDouble, tmp_path: Path) -> None:
    kubeconfig, fast, full, mirror = start(double, tmp_path)
    hostile = objects.pod("evil", namespace="team-a", node_name="gpu-a", labels={"kai.scheduler/queue": HOSTILE_QUEUE})
    double.create(hostile)
    double.create(objects.pod("fine", namespace="team-a", node_name="gpu-a"))
    quick = Service(state_dir=fast).sync_changes(cache_of(double), mirror)
    reference = Service(state_dir=full).sync(kubeconfig=kubeconfig)
    skipped = [f for f in reference.findings if f.name == "team-a/evil"]
    assert [(f.kind, f.field) for f in skipped] == [("pod", "metadata.labels.kai.scheduler/queue")]
    assert [f for f in quick.findings if f.name == "team-a/evil"] == skipped
    jobs = Service(state_dir=fast).state.jobs
    assert "team-a/fine" in jobs and "team-a/evil" not in jobs
    assert model_of(fast) == model_of(full)


def test_a_state_moved_by_another_writer_is_stale_for_the_mirror(double: ApiServerDouble, tmp_path: Path) -> None:
    """The mirror follows the state's revision: a change made meanwhile (here a full sync) means a full sync."""
    kubeconfig, fast, _, mirror = start(double, tmp_path)
    double.create(objects.pod("late", node_name="gpu-a"))
    Service(state_dir=fast).sync(kubeconfig=kubeconfig)
    with pytest.raises(Stale):
        Service(state_dir=fast).sync_changes(cache_of(double), mirror)
    with pytest.raises(Stale):  # and it stays refused: only a new mirror, from a full sync, goes on
        Service(state_dir=fast).sync_changes(cache_of(double), mirror)


def test_only_the_changed_objects_versions_are_written(double: ApiServerDouble, tmp_path: Path) -> None:
    _, fast, _, mirror = start(double, tmp_path)
    with Store.open(fast) as store:
        before = store.cluster_versions()
    # a new resourceVersion and nothing gpuadmin models: stored, and no entity moves
    request(double, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"annotations": {"heartbeat": "1"}}})
    request(double, "DELETE", "/api/v1/namespaces/default/pods/solo")
    result = Service(state_dir=fast).sync_changes(cache_of(double), mirror)
    with Store.open(fast) as store:
        after = store.cluster_versions()
    node = double.get("nodes", "gpu-a")
    assert node is not None
    assert after == {**{k: v for k, v in before.items() if k != ("pod", "default/solo")},
                     ("node", "gpu-a"): node["metadata"]["resourceVersion"]}
    # the job goes, and the queue only it named (no KAI Queue defines `default`)
    assert sorted(result.changed) == [("job", "default/solo", "remove"), ("queue", "default", "remove")]


def caught_up(feed: ClusterFeed, double: ApiServerDouble) -> None:
    """Wait until the watch's cache is the cluster (a fresh list of every kind)."""
    deadline = time.monotonic() + 10
    while feed.listings() is None or {kind: {k: o["metadata"]["resourceVersion"] for k, o in objs.items()}
                                      for kind, objs in feed.objects().items()} != \
            {kind: {k: o["metadata"]["resourceVersion"] for k, o in objs.items()}
             for kind, objs in cache_of(double).items()}:
        assert time.monotonic() < deadline, "the watch never caught up"
        time.sleep(0.02)


def last_sync(state: Path) -> str:
    with Store.open(state) as store:
        return [e.message for e in store.journal() if e.origin == "cluster"][-1]


def test_the_console_feed_syncs_in_full_first_then_the_changes_then_in_full_after_another_writer(
        double: ApiServerDouble, tmp_path: Path) -> None:
    """`sync_watched` with the watch's feed: a full sync makes the mirror, the next brings in the changes alone,
    and once another writer moved the state (here `gpuadmin sync`) a full sync again — each leaving the state what a
    full sync at the same points leaves (where a pod lands depends on which syncs saw it come)."""
    kubeconfig, fast, full, _ = start(double, tmp_path)
    service, reference = Service(state_dir=fast), Service(state_dir=full)
    feed = service.watch_cluster(lambda _batch: None, lambda _status: None, kubeconfig)
    assert feed is not None
    try:
        caught_up(feed, double)
        double.create(objects.pod("first", node_name="gpu-a"))
        caught_up(feed, double)
        service.sync_watched(feed)
        reference.sync(kubeconfig=kubeconfig)
        assert last_sync(fast).startswith("sync from cluster") and feed.mirror is not None
        double.create(objects.pod("second", node_name="gpu-a"))
        caught_up(feed, double)
        moved = service.sync_watched(feed)
        reference.sync(kubeconfig=kubeconfig)
        assert last_sync(fast).startswith("sync of the changes watched") and moved is not None
        assert ("job", "default/second") in moved.touched
        assert model_of(fast) == model_of(full)
        request(double, "PATCH", "/api/v1/nodes/gpu-b", {"spec": {"unschedulable": True}})
        Service(state_dir=fast).sync(kubeconfig=kubeconfig)  # another writer
        reference.sync(kubeconfig=kubeconfig)
        request(double, "DELETE", "/api/v1/namespaces/default/pods/first")
        caught_up(feed, double)
        service.sync_watched(feed)
        reference.sync(kubeconfig=kubeconfig)
        assert last_sync(fast).startswith("sync from cluster")
    finally:
        feed.stop()
    assert model_of(fast) == model_of(full)
