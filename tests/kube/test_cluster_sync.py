"""`gpuadmin init --from-cluster kubernetes`, `sync` and `diff` against the API server double (issue 22 item 3).

The cluster: the objects of tests/kube/cluster_objects.py (GFD labels of a real H100 node, node status from
Kubernetes' reference, KAI's Queue and PodGroup from KAI's docs, the GPU Operator's ConfigMaps from NVIDIA's).
Changes to it are made over HTTP, as a client (kubectl, a controller) makes them.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.cli.main import run
from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.cli.clikit import gpuadmin
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble

TOKEN = "double-token-never-checked"  # the bearer token of the double's kubeconfig: never to be seen again
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(mig_configs=objects.mig_parted_config_names()) as cluster:
        cluster.create(objects.mig_parted_configmap())
        cluster.create(objects.whole_gpu_node("gpu-a", taints=[TAINT]))
        cluster.create(objects.whole_gpu_node("gpu-b", ready=False))
        cluster.create(objects.whole_gpu_node("gpu-c", unschedulable=True))
        cluster.create(objects.node("mig-a"))
        cluster.create(objects.kai_queue("team-a", gpu_quota=16))
        cluster.create(objects.kai_pod_group("trainer", namespace="team-a", min_member=2, queue="team-a"))
        for i, node in enumerate(("gpu-a", "gpu-c")):  # a gang of two pods, 2 GPUs each: a PodGroup, KAI's way
            pod = objects.pod(f"trainer-{i}", namespace="team-a", node_name=node, count=2,
                              labels={"kai.scheduler/queue": "team-a"}, scheduler="kai-scheduler")
            pod["metadata"]["annotations"] = {"pod-group-name": "trainer"}
            cluster.create(pod)
        cluster.create(objects.pod("infer", namespace="team-a", node_name="mig-a", resource="nvidia.com/mig-1g.10gb",
                                   labels={"kai.scheduler/queue": "team-a"}))
        fraction = objects.pod("notebook", namespace="team-a", labels={"kai.scheduler/queue": "team-a"},
                               scheduler="kai-scheduler")
        fraction["spec"]["containers"][0]["resources"] = {}
        fraction["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
        cluster.create(fraction)
        yield cluster


@pytest.fixture
def kubeconfig(double: ApiServerDouble, tmp_path: Path) -> Path:
    return double.write_kubeconfig(tmp_path / "kubeconfig")


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def init(capsys: pytest.CaptureFixture[str], state: Path, kubeconfig: Path, *more: str) -> tuple[int, str, str]:
    return cli(capsys, "--state", state, "init", "--from-cluster", "kubernetes", "--kubeconfig", kubeconfig, *more)


def change(double: ApiServerDouble, path: str, patch: dict[str, Any]) -> None:
    """A merge patch over HTTP, as `kubectl patch --type merge` sends it."""
    request = urllib.request.Request(double.url + path, data=json.dumps(patch).encode(), method="PATCH",
                                     headers={"Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status == 200


def test_init_reads_the_cluster_into_a_bound_state(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  double: ApiServerDouble, kubeconfig: Path) -> None:
    state = tmp_path / "state"
    code, _, err = init(capsys, state, kubeconfig)
    assert code == ExitCode.OK, err
    with Store.open(state) as store:
        binding, loaded = store.binding(), store.load()
        versions = store.cluster_versions()
    assert binding is not None and (binding.context, binding.server) == ("double", double.url)
    nodes = loaded.nodes
    assert (nodes["gpu-b"].state, nodes["gpu-b"].down_reason) == \
        ("down", "NodeStatusUnknown: Kubelet stopped posting node status.")
    assert nodes["gpu-c"].state == "cordoned" and nodes["gpu-a"].state == "ready"
    assert [(t.key, t.value, t.effect) for t in nodes["gpu-a"].taints or ()] == [("nvidia.com/gpu", "present",
                                                                                   "NoSchedule")]
    assert nodes["mig-a"].mig_config_state == "success" and nodes["mig-a"].mig_config_state == "success"
    jobs = loaded.jobs
    gang = jobs["team-a/trainer"]  # the PodGroup's two pods are one gang job
    assert (gang.request.gpus, gang.request.nodes, gang.status, gang.queue) == (2, 2, "running", "team-a")
    assert {(s.node, s.gpu) for s in gang.placement} == {("gpu-a", 0), ("gpu-a", 1), ("gpu-c", 0), ("gpu-c", 1)}
    assert jobs["team-a/infer"].placement[0].mig_start is not None
    assert (jobs["team-a/notebook"].request.fraction, jobs["team-a/notebook"].status) == (0.5, "pending")
    assert loaded.queues["team-a"].quota.gpus == 16
    assert versions[("node", "gpu-a")] and versions[("pod", "team-a/trainer-0")] and versions[("queue", "team-a")]
    assert ("configmap", "gpu-operator/default-mig-parted-config") in versions


def test_what_the_cluster_breaks_is_a_warning_not_a_refusal(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                            double: ApiServerDouble, kubeconfig: Path) -> None:
    # a gang of two pods packed on one node: gpuadmin's gang rule wants one pod a node; the cluster has it so
    double.create(objects.kai_pod_group("packed", min_member=2))
    for i in range(2):
        pod = objects.pod(f"packed-{i}", node_name="gpu-a", count=1)
        pod["metadata"]["annotations"] = {"pod-group-name": "packed"}
        double.create(pod)
    code, _, err = init(capsys, tmp_path / "state", kubeconfig)
    assert code == ExitCode.OK
    assert "warning: the cluster breaks rule placement.gang-whole (job/default/packed)" in err
    assert (tmp_path / "state" / "state.db").exists()


def test_a_hostile_object_is_skipped_with_a_finding(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                    double: ApiServerDouble, kubeconfig: Path) -> None:
    hostile = objects.whole_gpu_node("gpu-x")
    hostile["metadata"]["name"] = "gpu\x1b]0;owned\x07[red]x"
    double.create(hostile)
    code, out, err = init(capsys, tmp_path / "state", kubeconfig, "-o", "json")
    assert code == ExitCode.OK
    findings = json.loads(out)["findings"]
    assert [f["field"] for f in findings if f["kind"] == "node"] == ["metadata.name"]
    assert "\x1b" not in err and "\x07" not in err and "\x1b" not in out
    with Store.open(tmp_path / "state") as store:
        assert sorted(store.load().nodes) == ["gpu-a", "gpu-b", "gpu-c", "mig-a"]


def test_no_credential_reaches_any_output_or_the_state_file(tmp_path: Path, double: ApiServerDouble,
                                                             kubeconfig: Path) -> None:
    state = tmp_path / "state"
    results = [gpuadmin("--state", state, "init", "--from-cluster", "kubernetes", "--kubeconfig", kubeconfig)]
    change(double, "/api/v1/nodes/gpu-c", {"spec": {"unschedulable": False}})
    for args in (("diff",), ("diff", "-o", "json"), ("sync", "-o", "json"), ("get", "journal", "-o", "json")):
        results.append(gpuadmin("--state", state, *args, "--kubeconfig", kubeconfig) if args[0] != "get"
                       else gpuadmin("--state", state, *args))
    for result in results:
        assert TOKEN not in result.out and TOKEN not in result.err
    assert [r.code for r in results] == [0, 1, 1, 0, 0]
    for path in state.iterdir():  # the database and its WAL
        assert TOKEN.encode() not in path.read_bytes(), path


def test_diff_shows_drift_field_by_field_and_exits_1_as_kubectl_diff(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = tmp_path / "state"
    init(capsys, state, kubeconfig)
    assert cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig)[0] == ExitCode.OK
    change(double, "/api/v1/nodes/gpu-c", {"spec": {"unschedulable": None}})  # uncordoned on the cluster
    code, out, _ = cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig, "-o", "json")
    assert code == 1
    assert json.loads(out)["drift"] == [{"kind": "node", "name": "gpu-c", "field": "state", "state": "cordoned",
                                         "cluster": "ready"}]
    code, out, _ = cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig)
    assert code == 1 and "gpu-c" in out and "cordoned" in out
    with Store.open(state) as store:
        assert store.revision() == 0  # diff writes nothing
    # a label is one row, named by its key (a key with dots and a slash in brackets), not the node's whole label map
    labels = {"team": "vision", "topology.kubernetes.io/zone": "ad-1"}
    change(double, "/api/v1/nodes/gpu-c", {"metadata": {"labels": labels}})
    code, out, _ = cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig, "-o", "json")
    rows = {d["field"]: (d["state"], d["cluster"]) for d in json.loads(out)["drift"]}
    assert rows == {"state": ("cordoned", "ready"), "labels.team": (None, "vision"),
                    "labels[topology.kubernetes.io/zone]": (None, "ad-1")}


def test_sync_brings_a_drifted_cluster_in_as_one_entry_and_a_second_sync_as_none(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = tmp_path / "state"
    init(capsys, state, kubeconfig)
    change(double, "/api/v1/nodes/gpu-c", {"spec": {"unschedulable": None}})
    change(double, "/apis/scheduling.run.ai/v2/queues/team-a", {"spec": {"resources": {"gpu": {"quota": 24}}}})
    ready = [{**c, "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
             if c["type"] == "Ready" else c for c in objects.node_conditions(True)]
    change(double, "/api/v1/nodes/gpu-b", {"status": {"conditions": ready}})
    double.create(objects.pod("late", namespace="team-a", node_name="gpu-c", count=1,
                              labels={"kai.scheduler/queue": "team-a"}))
    code, out, err = cli(capsys, "--state", state, "sync", "--kubeconfig", kubeconfig, "-o", "json")
    assert code == ExitCode.OK, err
    synced = json.loads(out)
    assert sorted((c["kind"], c["name"], c["action"]) for c in synced["changed"]) == [
        ("job", "team-a/late", "add"), ("node", "gpu-b", "modify"), ("node", "gpu-c", "modify"),
        ("queue", "team-a", "modify")]
    with Store.open(state) as store:
        journal = store.journal()
        loaded = store.load()
        versions = store.cluster_versions()
    synced_entries = [e for e in journal if e.origin == "cluster"]
    assert len(synced_entries) == 1 and synced_entries[0].revision == 1 and synced_entries[0].id == synced["entry"]
    assert loaded.nodes["gpu-b"].state == "ready" and loaded.nodes["gpu-b"].down_reason is None
    assert loaded.queues["team-a"].quota.gpus == 24 and loaded.jobs["team-a/late"].status == "running"
    assert versions[("pod", "team-a/late")] == double.get("pods", "late", "team-a")["metadata"]["resourceVersion"]
    # a second sync with nothing new for gpuadmin (an annotation moved gpu-a's resourceVersion): no entry, the same
    # revision, and the versions now those of the cluster (a change is planned against them)
    change(double, "/api/v1/nodes/gpu-a", {"metadata": {"annotations": {"heartbeat": "1"}}})
    code, _, err = cli(capsys, "--state", state, "sync", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK and "nothing to sync" in err
    with Store.open(state) as store:
        assert len(store.journal()) == len(journal) and store.revision() == 1
        assert store.cluster_versions()[("node", "gpu-a")] == \
            double.get("nodes", "gpu-a")["metadata"]["resourceVersion"]
    # the entry reads like any other: described, and undone by a plan of restores
    code, out, _ = cli(capsys, "--state", state, "describe", "entry", str(synced["entry"]), "-o", "json")
    assert code == 0 and json.loads(out)["summary"]["origin"] == "cluster"
    code, _, err = cli(capsys, "--state", state, "undo", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, err
    with Store.open(state) as store:  # on a bound state the undo is executed: gpu-c cordoned on the cluster again
        assert store.load().nodes["gpu-c"].state == "cordoned" and store.revision() == 2
    assert double.get("nodes", "gpu-c")["spec"].get("unschedulable") is True


def test_a_sync_keeps_the_slots_the_state_gave_a_running_job(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                             double: ApiServerDouble, kubeconfig: Path) -> None:
    """The cluster does not say which GPU a pod holds: a job still running where it ran keeps its slots."""
    state = tmp_path / "state"
    init(capsys, state, kubeconfig)
    with Store.open(state) as store:
        before = store.load().jobs["team-a/trainer"].placement
    double.create(objects.pod("first", namespace="a", node_name="gpu-a", count=1))  # sorts before team-a
    cli(capsys, "--state", state, "sync", "--kubeconfig", kubeconfig)
    with Store.open(state) as store:
        after = store.load().jobs
    assert after["team-a/trainer"].placement == before
    assert {(s.node, s.gpu) for s in after["a/first"].placement} == {("gpu-a", 2)}


def test_an_unbound_state_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = tmp_path / "state"
    sample = Path(__file__).resolve().parents[2] / "sample-inventories" / "oci-h100.yaml"
    assert cli(capsys, "--state", state, "init", "--from", sample)[0] == 0
    for command in ("sync", "diff"):
        code, _, err = cli(capsys, "--state", state, command)
        assert code == ExitCode.BAD_INPUT and "not bound to a cluster" in err


def test_a_403_is_exit_4_with_the_api_message(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              double: ApiServerDouble, kubeconfig: Path) -> None:
    state = tmp_path / "state"
    init(capsys, state, kubeconfig)
    double.deny.add(("list", "nodes"))
    for command in ("sync", "diff"):
        code, _, err = cli(capsys, "--state", state, command, "--kubeconfig", kubeconfig)
        assert code == ExitCode.NOT_PERMITTED and 'cannot list resource "nodes"' in err
    code, _, err = init(capsys, tmp_path / "other", kubeconfig)
    assert code == ExitCode.NOT_PERMITTED and not (tmp_path / "other" / "state.db").exists()


def test_an_unreachable_cluster_is_exit_3(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          double: ApiServerDouble, kubeconfig: Path) -> None:
    state = tmp_path / "state"
    init(capsys, state, kubeconfig)
    double.stop()
    for command in ("sync", "diff"):
        code, _, err = cli(capsys, "--state", state, command, "--kubeconfig", kubeconfig)
        assert code == ExitCode.CONFLICT and "unreachable" in err
    with Store.open(state) as store:
        assert store.revision() == 0


def test_a_bad_kubeconfig_is_exit_2_naming_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "broken-kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\nclusters: [[[\n")
    code, _, err = init(capsys, tmp_path / "state", bad)
    assert code == ExitCode.BAD_INPUT and str(bad) in err


def test_configmaps_are_checked_against_the_nodes_labels(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         double: ApiServerDouble, kubeconfig: Path) -> None:
    double.create(objects.device_plugin_configmap())
    double.create(objects.whole_gpu_node("gpu-t4", labels={"nvidia.com/device-plugin.config": "no-such-config"}))
    code, out, _ = init(capsys, tmp_path / "state", kubeconfig, "--device-plugin-configmap",
                        "time-slicing-config-fine", "-o", "json")
    assert code == ExitCode.OK
    assert [(f["name"], f["field"]) for f in json.loads(out)["findings"] if f["kind"] == "node"] == \
        [("gpu-t4", "metadata.labels.nvidia.com/device-plugin.config")]
    with Store.open(tmp_path / "state") as store:
        assert ("configmap", "gpu-operator/time-slicing-config-fine") in store.cluster_versions()


def test_repair_of_a_down_node_clears_its_down_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      kubeconfig: Path) -> None:
    state = tmp_path / "state"
    init(capsys, state, kubeconfig)
    changes = tmp_path / "repair.yaml"
    changes.write_text("changes: [{op: repair-node, node: gpu-b, note: kubelet restarted}]\n")
    code, _, err = cli(capsys, "--state", state, "apply", "-f", changes, "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, err
    with Store.open(state) as store:
        node = store.load().nodes["gpu-b"]
    assert (node.state, node.down_reason) == ("ready", None)


@pytest.mark.slow
def test_sync_of_1024_nodes_and_10000_pods(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with ApiServerDouble() as double:
        double.create(objects.mig_parted_configmap())
        for i in range(1024):
            double.create(objects.whole_gpu_node(f"gpu-{i:04d}"))
        for i in range(10_000):
            node = f"gpu-{i % 1024:04d}" if i < 8000 else None  # 8,000 running (of 8,192 GPUs), 2,000 pending
            double.create(objects.pod(f"p-{i:05d}", namespace=f"ns-{i % 50}", node_name=node))
        kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
        state = tmp_path / "state"
        code, _, err = init(capsys, state, kubeconfig)
        assert code == ExitCode.OK, err[-2000:]
        change(double, "/api/v1/nodes/gpu-0007", {"spec": {"unschedulable": True}})
        code, _, err = cli(capsys, "--state", state, "sync", "--kubeconfig", kubeconfig)
        assert code == ExitCode.OK, err[-2000:]
    with Store.open(state) as store:
        loaded = store.load()
        entries = [e for e in store.journal() if e.origin == "cluster"]
    assert (len(loaded.nodes), len(loaded.jobs)) == (1024, 10_000)
    assert len(entries) == 1 and [d["name"] for d in entries[0].diff or ()] == ["gpu-0007"]
    assert sum(1 for j in loaded.jobs.values() if j.status == "running") == 8000
    db = sqlite3.connect(state / "state.db")
    assert db.execute("SELECT count(*) FROM cluster_versions").fetchone()[0] == 1024 + 10_000 + 1


def test_configmap_names_given_are_checked_before_any_request(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              double: ApiServerDouble, kubeconfig: Path) -> None:
    code, _, err = init(capsys, tmp_path / "state", kubeconfig, "--device-plugin-configmap", "../../secrets/x")
    assert code == ExitCode.BAD_INPUT and "not a Kubernetes name" in err
    assert not any(verb == "get" and resource == "configmaps" for verb, resource in double.requests)


def test_a_pod_named_as_a_pod_group_is_read_once(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 double: ApiServerDouble, kubeconfig: Path) -> None:
    double.create(objects.pod("trainer", namespace="team-a", labels={"kai.scheduler/queue": "team-a"}))
    code, out, _ = init(capsys, tmp_path / "state", kubeconfig, "-o", "json")
    assert code == ExitCode.OK
    assert [f["message"] for f in json.loads(out)["findings"] if f["kind"] == "pod"] == \
        ["skipped: job team-a/trainer is read already"]


def test_cluster_options_without_from_cluster_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sample = Path(__file__).resolve().parents[2] / "sample-inventories" / "oci-h100.yaml"
    code, _, err = cli(capsys, "--state", tmp_path / "state", "init", "--from", sample, "--context", "oke")
    assert code == ExitCode.BAD_INPUT and "go with --from-cluster" in err
    assert not (tmp_path / "state" / "state.db").exists()


def test_fractions_sharing_a_gpu_keep_their_slots_from_sync_to_sync(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    """Two running pods of half a GPU each share one GPU in the state; a later diff or sync must not read the
    second one's kept slot as taken by the first (it did: a kept fraction claimed its whole GPU) and move it."""
    for name in ("half-0", "half-1"):
        pod = objects.pod(name, namespace="team-a", node_name="gpu-a", labels={"kai.scheduler/queue": "team-a"},
                          scheduler="kai-scheduler")
        pod["spec"]["containers"][0]["resources"] = {}
        pod["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
        double.create(pod)
    state = tmp_path / "state"
    init(capsys, state, kubeconfig)
    with Store.open(state) as store:
        jobs = store.load().jobs
    assert jobs["team-a/half-0"].placement == jobs["team-a/half-1"].placement  # one GPU, half each
    assert cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig)[0] == ExitCode.OK


def test_a_pod_of_another_scheduler_kept_off_by_a_taint_is_explained_with_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    # gpu-a, the one ready node with whole GPUs free, is tainted nvidia.com/gpu=present:NoSchedule
    needy = objects.pod("needy", namespace="team-a", labels={"kai.scheduler/queue": "team-a"},
                        scheduler="kai-scheduler")
    needy["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infer",
                                     "effect": "NoSchedule", "tolerationSeconds": 60}]
    double.create(needy)
    double.create(objects.pod("tolerant", namespace="team-a", labels={"kai.scheduler/queue": "team-a"},
                              scheduler="kai-scheduler"))  # tolerates nvidia.com/gpu, as NVIDIA's examples do
    state = tmp_path / "state"
    assert init(capsys, state, kubeconfig)[0] == ExitCode.OK
    with Store.open(state) as store:
        tolerations = store.load().jobs["team-a/needy"].tolerations
    assert [t.model_dump(exclude_none=True) for t in tolerations or ()] == [
        {"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoSchedule"}]
    code, out, _ = cli(capsys, "--state", state, "explain", "team-a/needy", "-o", "json")
    why = json.loads(out)
    assert why["reason"] == "untolerated-taint", why
    assert "node(s) had untolerated taint {nvidia.com/gpu: present}" in why["message"]
    code, out, _ = cli(capsys, "--state", state, "explain", "team-a/tolerant", "-o", "json")
    assert code == ExitCode.OK and json.loads(out)["reason"] == "other-scheduler"  # it fits: KAI places it


def test_a_pod_with_a_toleration_kubernetes_would_refuse_is_skipped_with_a_finding(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    hostile = objects.pod("hostile", namespace="team-a")
    hostile["spec"]["tolerations"] = [{"key": "\x1b[31mred", "operator": "Exists"}]
    double.create(hostile)
    code, _, err = init(capsys, tmp_path / "state", kubeconfig)
    assert code == ExitCode.OK
    assert "pods/team-a/hostile" in err or "hostile" in err
    assert "spec.tolerations" in err and "\x1b" not in err
