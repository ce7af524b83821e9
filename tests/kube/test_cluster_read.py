"""`gpuadmin.cluster.read` lists the live cluster (here the API server double) into a snapshot: every object
translated, each one's resourceVersion, and a located finding for what it skipped.

The objects are those of tests/kube/cluster_objects.py (GFD labels of a real H100 node, node status from
Kubernetes' reference, KAI's Queue and PodGroup from KAI's docs, the GPU Operator's ConfigMaps from NVIDIA's).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.cluster.connect import connect
from gpuadmin.cluster.read import ClusterSnapshot, ReadSettings, read_cluster
from gpuadmin.errors import ExitCode, GpuadminError
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble

DEVICE_PLUGIN = ReadSettings(device_plugin_configmap="time-slicing-config-fine")


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(mig_configs=objects.mig_parted_config_names()) as cluster:
        cluster.create(objects.mig_parted_configmap())  # as the GPU Operator installs it
        yield cluster


def client_of(double: ApiServerDouble, tmp_path: Path) -> Any:
    return connect(double.write_kubeconfig(tmp_path / "kubeconfig")).client


def read(double: ApiServerDouble, tmp_path: Path, settings: ReadSettings = DEVICE_PLUGIN) -> ClusterSnapshot:
    return read_cluster(client_of(double, tmp_path), settings)


def test_nodes_are_read_with_state_reason_taints_and_mig_manager_state(double: ApiServerDouble,
                                                                       tmp_path: Path) -> None:
    double.create(objects.node("gpu-a"))
    double.create(objects.node("gpu-b", ready=False,
                               taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]))
    double.create(objects.node("gpu-c", unschedulable=True))
    snapshot = read(double, tmp_path)
    nodes = {n.node.name: n.node for n in snapshot.nodes}
    assert {name: node.state for name, node in nodes.items()} == \
        {"gpu-a": "ready", "gpu-b": "down", "gpu-c": "cordoned"}
    assert nodes["gpu-b"].down_reason == "NodeStatusUnknown: Kubelet stopped posting node status."
    assert [(t.key, t.effect) for t in nodes["gpu-b"].taints or ()] == [("node.kubernetes.io/unreachable",
                                                                         "NoExecute")]
    assert nodes["gpu-a"].mig_config_state == "success" and nodes["gpu-a"].taints is None
    assert {key for key in snapshot.versions if key[0] == "node"} == {("node", "gpu-a"), ("node", "gpu-b"),
                                                                       ("node", "gpu-c")}
    assert snapshot.findings == []


def test_pods_asking_for_gpus_are_read_and_the_others_passed_over(double: ApiServerDouble, tmp_path: Path) -> None:
    double.create(objects.node("gpu-a"))
    double.create(objects.pod("train", namespace="team-a", node_name="gpu-a", count=2,
                              labels={"kai.scheduler/queue": "team-a"}))
    double.create(objects.pod("infer", resource="nvidia.com/mig-1g.10gb"))
    double.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "coredns", "namespace": "kube-system"},
                   "spec": {"containers": [{"name": "coredns", "image": "coredns"}]}})
    snapshot = read(double, tmp_path)
    pods = {p.job_name: p for p in snapshot.pods}
    assert set(pods) == {"team-a/train", "default/infer"} and snapshot.other_pods == 1
    assert (pods["team-a/train"].request.gpus, pods["team-a/train"].node, pods["team-a/train"].queue) == \
        (2, "gpu-a", "team-a")
    assert pods["default/infer"].request.mig == "1g.10gb" and pods["default/infer"].status == "pending"
    assert ("pod", "team-a/train") in snapshot.versions


def test_queues_pod_groups_and_configmaps_are_read(double: ApiServerDouble, tmp_path: Path) -> None:
    double.create(objects.kai_queue("team-a", gpu_quota=8))
    double.create(objects.kai_pod_group("trainer", namespace="team-a", min_member=2, queue="team-a"))
    double.create(objects.device_plugin_configmap())
    snapshot = read(double, tmp_path)
    assert [(q.name, q.quota.gpus) for q in snapshot.queues] == [("team-a", 8)]
    assert snapshot.pod_groups["team-a/trainer"].min_member == 2
    assert snapshot.mig_parted is not None and "all-balanced" in snapshot.mig_parted.configs
    assert snapshot.device_plugin is not None and snapshot.device_plugin.configs == ("a100-40gb", "tesla-t4")
    assert ("configmap", "gpu-operator/default-mig-parted-config") in snapshot.versions
    assert ("queue", "team-a") in snapshot.versions


def test_a_cluster_without_kai_has_no_queues_and_says_so(tmp_path: Path) -> None:
    with ApiServerDouble(not_installed={"queues", "podgroups"}) as double:
        double.create(objects.node("gpu-a"))
        snapshot = read(double, tmp_path)
    assert snapshot.queues == [] and not snapshot.queues_installed
    assert [(f.kind, f.name) for f in snapshot.findings] == [
        ("cluster", ""), ("configmap", "gpu-operator/default-mig-parted-config")]
    assert "Queue CRD" in snapshot.findings[0].message
    assert "1 node(s) name in nvidia.com/mig.config" in snapshot.findings[1].message


def test_lists_are_paged_and_each_list_resource_version_recorded(double: ApiServerDouble, tmp_path: Path) -> None:
    for i in range(5):
        double.create(objects.node(f"gpu-{i}"))
    snapshot = read(double, tmp_path, ReadSettings(page_size=2))
    assert len(snapshot.nodes) == 5
    assert double.requests.count(("list", "nodes")) == 3  # 2 + 2 + 1
    assert snapshot.list_versions["nodes"] == "6"  # the ConfigMap, then five nodes


@pytest.mark.parametrize(("kind", "mangle", "field"), [
    ("node", lambda o: o["metadata"].update(name="gpu[red]\x1b[2J"), "metadata.name"),
    ("node", lambda o: o["spec"].update(taints=[{"key": "x\x1b]0;pwn\x07", "effect": "NoSchedule"}]),
     "spec.taints[0].key"),
    ("pod", lambda o: o["metadata"].update(labels={"kai.scheduler/queue": "[b]x"}),
     "metadata.labels.kai.scheduler/queue"),
    ("queue", lambda o: o["metadata"].update(name="Team_A"), "metadata.name"),
])
def test_a_hostile_object_is_skipped_with_a_located_finding_and_the_rest_read(
        double: ApiServerDouble, tmp_path: Path, kind: str, mangle: Any, field: str) -> None:
    made = {"node": lambda: objects.node("gpu-x"), "pod": lambda: objects.pod("p-x"),
            "queue": lambda: objects.kai_queue("q-x")}
    double.create(objects.node("gpu-a"))
    double.create(objects.pod("p-a"))
    double.create(objects.kai_queue("q-a"))
    hostile = made[kind]()
    mangle(hostile)
    double.create(hostile)
    snapshot = read(double, tmp_path)
    assert [(f.kind, f.field) for f in snapshot.findings] == [(kind, field)]
    assert "\x1b" not in str(snapshot.findings[0]) and "\x07" not in str(snapshot.findings[0])
    assert ([n.node.name for n in snapshot.nodes], [p.job_name for p in snapshot.pods],
            [q.name for q in snapshot.queues]) == (["gpu-a"], ["default/p-a"], ["q-a"])


def test_a_node_naming_a_config_its_configmap_lacks_is_a_finding(double: ApiServerDouble, tmp_path: Path) -> None:
    double.create(objects.node("gpu-a", labels={"nvidia.com/mig.config": "no-such-config",
                                                "nvidia.com/device-plugin.config": "tesla-t4"}))
    double.create(objects.device_plugin_configmap())
    snapshot = read(double, tmp_path)
    assert [(f.name, f.field) for f in snapshot.findings] == [("gpu-a", "metadata.labels.nvidia.com/mig.config")]


def test_forbidden_is_exit_4_with_the_api_message(double: ApiServerDouble, tmp_path: Path) -> None:
    double.deny.add(("list", "pods"))
    with pytest.raises(GpuadminError) as refused:
        read(double, tmp_path)
    assert refused.value.exit_code == ExitCode.NOT_PERMITTED and "cannot list resource" in str(refused.value)


def test_an_unreachable_server_is_exit_3(double: ApiServerDouble, tmp_path: Path) -> None:
    client = client_of(double, tmp_path)
    double.stop()
    with pytest.raises(GpuadminError) as failed:
        read_cluster(client)
    assert failed.value.exit_code == ExitCode.CONFLICT


def test_the_cluster_policy_names_the_configmaps(double: ApiServerDouble, tmp_path: Path) -> None:
    double.create(objects.cluster_policy(device_plugin="time-slicing-config-fine"))
    double.create(objects.device_plugin_configmap())
    snapshot = read(double, tmp_path, ReadSettings())
    assert snapshot.configmap_names == ("default-mig-parted-config", "time-slicing-config-fine")
    assert snapshot.device_plugin is not None and snapshot.device_plugin.configs == ("a100-40gb", "tesla-t4")


def test_without_a_cluster_policy_the_default_names_are_looked_for(tmp_path: Path) -> None:
    with ApiServerDouble(not_installed={"clusterpolicies"}) as double:
        snapshot = read(double, tmp_path, ReadSettings())
    assert snapshot.configmap_names == ("default-mig-parted-config", "time-slicing-config")
    assert ("get", "configmaps") in double.requests and snapshot.findings == []


def test_a_placement_that_cannot_be_kept_gives_back_what_it_took(double: ApiServerDouble, tmp_path: Path) -> None:
    """A state's placement that clashes part-way (here with another job's) holds nothing: the job gets fresh slots
    from the first free ones, which include those the failed claim had taken for a moment."""
    from gpuadmin.cluster.inventory import cluster_inventory
    from gpuadmin.model import Job, Request, Slot

    double.create(objects.whole_gpu_node("gpu-a"))
    for name in ("a", "b"):
        double.create(objects.pod(name, node_name="gpu-a", count=2))
    snapshot = read(double, tmp_path)

    def running(name: str, gpus: list[int]) -> Job:
        return Job(name=f"default/{name}", queue="default", request=Request(gpus=2), status="running",
                   placement=[Slot(node="gpu-a", gpu=i) for i in gpus])

    made = cluster_inventory(snapshot, "double", {"default/a": running("a", [0, 1]),
                                                  "default/b": running("b", [2, 1])})
    placed = {j.name: [s.gpu for s in j.placement] for j in made.inventory.jobs}
    assert placed == {"default/a": [0, 1], "default/b": [2, 3]}
