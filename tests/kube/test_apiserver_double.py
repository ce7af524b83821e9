"""The API server double speaks the protocol issue 22's cluster code depends on, and the real kubectl reads it.

Each test drives the double over HTTP with the standard library, as a client would, never through its Python API,
except to seed objects.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import MIG_CONFIG, MIG_STATE, ApiServerDouble

Obj = dict[str, Any]


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(mig_delay_s=0.1, bookmark_interval_s=0.1, mig_configs=objects.mig_parted_config_names()) as d:
        d.create(objects.node("gpu-a"))
        d.create(objects.node("gpu-b", ready=False))
        yield d


def call(double: ApiServerDouble, method: str, path: str, body: object = None,
         content_type: str = "application/json") -> tuple[int, Obj]:
    data = None if body is None else body.encode() if isinstance(body, str) else json.dumps(body).encode()
    request = urllib.request.Request(double.url + path, data=data, method=method,
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def watch_events(double: ApiServerDouble, path: str, count: int) -> list[Obj]:
    """The first `count` events of a watch stream (one JSON object a line)."""
    events = []
    with urllib.request.urlopen(double.url + path, timeout=5) as stream:
        for line in stream:
            events.append(json.loads(line))
            if len(events) == count:
                break
    return events


def wait_for_label(double: ApiServerDouble, node: str, key: str, value: str, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (double.get("nodes", node) or {})["metadata"]["labels"].get(key) == value:
            return
        time.sleep(0.02)
    raise AssertionError(f"{node}: {key} never became {value}, is {double.get('nodes', node)}")


def test_nodes_are_shaped_like_a_real_gfd_labelled_node(double: ApiServerDouble) -> None:
    code, node = call(double, "GET", "/api/v1/nodes/gpu-a")
    assert code == 200 and node["kind"] == "Node" and node["apiVersion"] == "v1"
    assert node["metadata"]["labels"]["nvidia.com/mig.strategy"] == "mixed"
    assert node["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] == "2"
    ready = {c["type"]: c for c in node["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    _, down = call(double, "GET", "/api/v1/nodes/gpu-b")
    assert {c["type"]: c for c in down["status"]["conditions"]}["Ready"]["reason"] == "NodeStatusUnknown"


def test_list_has_a_resource_version_selectors_and_pages(double: ApiServerDouble) -> None:
    for i in range(3):
        double.create(objects.pod(f"train-{i}", node_name="gpu-a", labels={"app": "train" if i else "infer"}))
    code, listing = call(double, "GET", "/api/v1/nodes")
    assert code == 200 and listing["kind"] == "NodeList"
    assert int(listing["metadata"]["resourceVersion"]) >= 2
    assert [n["metadata"]["name"] for n in listing["items"]] == ["gpu-a", "gpu-b"]
    assert "kind" not in listing["items"][0]  # as on the wire: list items carry no kind
    _, train = call(double, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dtrain")
    assert [p["metadata"]["name"] for p in train["items"]] == ["train-1", "train-2"]
    _, on_node = call(double, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-a&limit=2")
    assert len(on_node["items"]) == 2 and on_node["metadata"]["remainingItemCount"] == 1
    _, rest = call(double, "GET", f"/api/v1/pods?limit=2&continue={on_node['metadata']['continue']}")
    assert [p["metadata"]["name"] for p in rest["items"]] == ["train-2"]


def test_a_continued_list_is_the_snapshot_of_its_first_page_until_compaction(double: ApiServerDouble) -> None:
    for i in range(3):
        double.create(objects.pod(f"p-{i}", node_name="gpu-a"))
    _, first = call(double, "GET", "/api/v1/pods?limit=2")
    token = first["metadata"]["continue"]
    call(double, "DELETE", "/api/v1/namespaces/default/pods/p-2")
    double.create(objects.pod("p-3", node_name="gpu-a"))
    # as etcd serves a continued list: the objects as of the first page's resourceVersion
    _, rest = call(double, "GET", f"/api/v1/pods?limit=2&continue={token}")
    assert [p["metadata"]["name"] for p in rest["items"]] == ["p-2"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    _, again = call(double, "GET", "/api/v1/pods?limit=2")
    double.compact()
    code, status = call(double, "GET", f"/api/v1/pods?limit=2&continue={again['metadata']['continue']}")
    assert (code, status["reason"]) == (410, "Expired") and "too old" in status["message"]
    assert call(double, "GET", "/api/v1/pods?limit=2&continue=bm90LWEtdG9rZW4=")[0] == 400


def test_watch_streams_changes_after_the_resource_version_with_bookmarks(double: ApiServerDouble) -> None:
    _, listing = call(double, "GET", "/api/v1/nodes")
    since = listing["metadata"]["resourceVersion"]
    call(double, "PATCH", "/api/v1/nodes/gpu-a", {"spec": {"unschedulable": True}},
         "application/strategic-merge-patch+json")
    events = watch_events(double, f"/api/v1/nodes?watch=1&resourceVersion={since}&allowWatchBookmarks=true", 2)
    assert events[0]["type"] == "MODIFIED" and events[0]["object"]["spec"]["unschedulable"] is True
    assert events[1]["type"] == "BOOKMARK"
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(since)


def test_watch_from_a_compacted_resource_version_gets_410_gone(double: ApiServerDouble) -> None:
    _, listing = call(double, "GET", "/api/v1/nodes")
    call(double, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {"x": "1"}}}, "application/merge-patch+json")
    double.compact()
    [event] = watch_events(double, f"/api/v1/nodes?watch=1&resourceVersion={listing['metadata']['resourceVersion']}", 1)
    assert event["type"] == "ERROR" and event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"


def test_three_patch_types(double: ApiServerDouble) -> None:
    double.create(objects.pod("p", node_name="gpu-a"))
    code, pod = call(double, "PATCH", "/api/v1/namespaces/default/pods/p",
                     {"spec": {"containers": [{"name": "cuda", "image": "cuda:next"}]}},
                     "application/strategic-merge-patch+json")
    # strategic merge merges the container named cuda instead of replacing the list
    assert code == 200 and pod["spec"]["containers"][0]["image"] == "cuda:next"
    assert pod["spec"]["containers"][0]["command"] == ["nvidia-smi", "-L"]
    _, node = call(double, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {"nvidia.com/gpu.replicas": None}}},
                   "application/merge-patch+json")
    assert "nvidia.com/gpu.replicas" not in node["metadata"]["labels"]
    taint = {"key": "nvidia.com/gpu", "value": "maintenance", "effect": "NoSchedule"}
    _, node = call(double, "PATCH", "/api/v1/nodes/gpu-a",
                   [{"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"]["resourceVersion"]},
                    {"op": "add", "path": "/spec/taints", "value": [taint]}], "application/json-patch+json")
    assert node["spec"]["taints"] == [taint]


def test_a_stale_resource_version_is_409_conflict(double: ApiServerDouble) -> None:
    _, node = call(double, "GET", "/api/v1/nodes/gpu-a")
    stale = node["metadata"]["resourceVersion"]
    call(double, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {"x": "1"}}}, "application/merge-patch+json")
    code, status = call(double, "PATCH", "/api/v1/nodes/gpu-a",
                        {"metadata": {"resourceVersion": stale}, "spec": {"unschedulable": True}},
                        "application/strategic-merge-patch+json")
    assert (code, status["kind"], status["reason"]) == (409, "Status", "Conflict")
    assert "the object has been modified" in status["message"]
    code, _ = call(double, "PUT", "/api/v1/nodes/gpu-a", node)
    assert code == 409
    code, _ = call(double, "PATCH", "/api/v1/nodes/gpu-a",
                   [{"op": "test", "path": "/metadata/resourceVersion", "value": stale}], "application/json-patch+json")
    assert code == 409
    assert not (double.get("nodes", "gpu-a") or {})["spec"].get("unschedulable")


def test_server_side_apply_of_a_kai_queue(double: ApiServerDouble) -> None:
    path = "/apis/scheduling.run.ai/v2/queues/research"
    manifest = json.dumps(objects.kai_queue("research", gpu_quota=8))  # JSON is YAML
    code, status = call(double, "PATCH", path, manifest, "application/apply-patch+yaml")
    assert code == 400 and "fieldManager" in status["message"]
    code, queue = call(double, "PATCH", path + "?fieldManager=gpuadmin", manifest, "application/apply-patch+yaml")
    assert code == 200 and queue["spec"]["resources"]["gpu"]["quota"] == 8
    again = "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: research}\n" \
            "spec: {resources: {gpu: {quota: 16}}}\n"
    _, queue = call(double, "PATCH", path + "?fieldManager=gpuadmin", again, "application/apply-patch+yaml")
    assert queue["spec"]["resources"]["gpu"] == {"quota": 16, "limit": -1, "overQuotaWeight": 1}
    _, listing = call(double, "GET", "/apis/scheduling.run.ai/v2/queues")
    assert listing["kind"] == "QueueList" and len(listing["items"]) == 1


def test_eviction_honours_pod_disruption_budgets(double: ApiServerDouble) -> None:
    for name in ("w-0", "w-1"):
        double.create(objects.pod(name, node_name="gpu-a", labels={"app": "serve"}))
    double.create(objects.pod("lone", node_name="gpu-a"))
    double.create(objects.disruption_budget("serve", {"app": "serve"}, min_available=2))
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "w-0", "namespace": "default"}}
    code, status = call(double, "POST", "/api/v1/namespaces/default/pods/w-0/eviction", eviction)
    assert (code, status["reason"]) == (429, "TooManyRequests") and "disruption budget" in status["message"]
    assert double.get("pods", "w-0", "default") is not None
    code, _ = call(double, "POST", "/api/v1/namespaces/default/pods/lone/eviction",
                   {**eviction, "metadata": {"name": "lone", "namespace": "default"}})
    assert code == 201 and double.get("pods", "lone", "default") is None


def test_the_rbac_deny_list_answers_403(double: ApiServerDouble) -> None:
    double.deny.add(("patch", "nodes"))
    code, status = call(double, "PATCH", "/api/v1/nodes/gpu-a", {"spec": {"unschedulable": True}},
                        "application/strategic-merge-patch+json")
    assert (code, status["reason"]) == (403, "Forbidden") and "cannot patch resource" in status["message"]
    assert call(double, "GET", "/api/v1/nodes/gpu-a")[0] == 200
    assert ("patch", "nodes") in double.requests


def test_binding_assigns_a_pending_pod_once(double: ApiServerDouble) -> None:
    double.create(objects.pod("pending", scheduler="gpuadmin"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "pending"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-a"}}
    assert call(double, "POST", "/api/v1/namespaces/default/pods/pending/binding", binding)[0] == 201
    assert (double.get("pods", "pending", "default") or {})["spec"]["nodeName"] == "gpu-a"
    code, status = call(double, "POST", "/api/v1/namespaces/default/pods/pending/binding", binding)
    assert code == 409 and "already assigned" in status["message"]


def test_the_mig_manager_reports_pending_then_success_or_failed(double: ApiServerDouble) -> None:
    double.mig_failing_configs.add("all-1g.10gb")
    relabel = "application/merge-patch+json"
    _, node = call(double, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {MIG_CONFIG: "all-3g.40gb"}}},
                   relabel)
    # the mig-manager works after the relabel, as the real one does: its two state changes follow as watch events
    since = node["metadata"]["resourceVersion"]
    path = f"/api/v1/nodes?watch=1&fieldSelector=metadata.name%3Dgpu-a&resourceVersion={since}"
    states = [e["object"]["metadata"]["labels"][MIG_STATE] for e in watch_events(double, path, 2)]
    assert states == ["pending", "success"]
    call(double, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {MIG_CONFIG: "all-1g.10gb"}}}, relabel)
    wait_for_label(double, "gpu-a", MIG_STATE, "failed")
    call(double, "PATCH", "/api/v1/nodes/gpu-b", {"metadata": {"labels": {MIG_CONFIG: "no-such-config"}}}, relabel)
    wait_for_label(double, "gpu-b", MIG_STATE, "failed")  # not in the mig-parted config


def test_bad_requests_get_a_status_not_a_crash(double: ApiServerDouble) -> None:
    assert call(double, "GET", "/api/v1/nodes/nope")[0] == 404
    assert call(double, "GET", "/api/v1/widgets")[0] == 404
    assert call(double, "PATCH", "/api/v1/nodes/gpu-a", "{", "application/merge-patch+json")[0] == 400
    assert call(double, "PATCH", "/api/v1/nodes/gpu-a", "{}", "text/plain")[0] == 415
    code, status = call(double, "POST", "/api/v1/namespaces/default/configmaps", objects.device_plugin_configmap())
    assert code == 201 and status["metadata"]["namespace"] == "default"
    assert call(double, "POST", "/api/v1/namespaces/default/configmaps", objects.device_plugin_configmap())[0] == 409


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (Debian's kubernetes-client) is not installed")
def test_the_real_kubectl_reads_cordons_and_watches_the_double(double: ApiServerDouble, tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(double.write_kubeconfig(tmp_path / "kubeconfig")),
           "HOME": str(tmp_path)}  # kubectl's discovery cache goes under HOME, not the user's

    def kubectl(*args: str) -> str:
        done = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=30, check=True)
        return done.stdout

    listed = kubectl("get", "nodes")
    assert "gpu-a   Ready" in listed and "gpu-b   NotReady" in listed
    assert kubectl("cordon", "gpu-a").strip() == "node/gpu-a cordoned"
    assert (double.get("nodes", "gpu-a") or {})["spec"]["unschedulable"] is True
    # `timeout` ends a watcher the double failed to feed, so a broken stream fails the test instead of hanging it
    watcher = subprocess.Popen(["timeout", "20", "kubectl", "get", "nodes", "-w"], env=env, stdout=subprocess.PIPE,
                               text=True)
    try:
        assert watcher.stdout is not None
        lines = [watcher.stdout.readline(), watcher.stdout.readline(), watcher.stdout.readline()]
        assert "Ready,SchedulingDisabled" in lines[1]
        kubectl("uncordon", "gpu-a")
        changed = watcher.stdout.readline()
        assert changed.startswith("gpu-a") and "SchedulingDisabled" not in changed
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)


def test_the_mig_manager_reads_its_configs_from_the_mig_parted_configmap() -> None:
    with ApiServerDouble(mig_delay_s=0.05, mig_configmap=("gpu-operator", "custom-mig-parted")) as d:
        d.create(objects.node("gpu-a"))
        relabel = "application/merge-patch+json"
        call(d, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {MIG_CONFIG: "mine"}}}, relabel)
        wait_for_label(d, "gpu-a", MIG_STATE, "failed")  # no such ConfigMap yet: no config named mine
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "custom-mig-parted"},
                     "data": {"config.yaml": "version: v1\nmig-configs:\n  yours: []\n  mine: []\n"}}
        assert call(d, "POST", "/api/v1/namespaces/gpu-operator/configmaps", configmap)[0] == 201
        call(d, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {MIG_CONFIG: "yours"}}}, relabel)
        wait_for_label(d, "gpu-a", MIG_STATE, "success")
        assert d.mig_finished == {"gpu-a": "yours"}


def test_a_slow_mig_manager_leaves_the_old_state_until_it_notices() -> None:
    with ApiServerDouble(mig_delay_s=0.05, mig_notice_s=0.3) as d:
        d.create(objects.node("gpu-a", labels={MIG_STATE: "success"}))
        _, node = call(d, "PATCH", "/api/v1/nodes/gpu-a", {"metadata": {"labels": {MIG_CONFIG: "all-3g.40gb"}}},
                       "application/merge-patch+json")
        assert node["metadata"]["labels"][MIG_STATE] == "success"  # the config before's, not this one's
        wait_for_label(d, "gpu-a", MIG_STATE, "pending")
        wait_for_label(d, "gpu-a", MIG_STATE, "success")


def test_pvcs_and_batch_jobs_are_served(double: ApiServerDouble) -> None:
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "shared"},
             "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Ti"}}}}
    assert call(double, "POST", "/api/v1/namespaces/gpuadmin/persistentvolumeclaims", claim)[0] == 201
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pretrain"},
           "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2, "template": {}}}
    code, created = call(double, "POST", "/apis/batch/v1/namespaces/gpuadmin/jobs", job)
    assert code == 201 and created["metadata"]["namespace"] == "gpuadmin"
    assert call(double, "DELETE", "/apis/batch/v1/namespaces/gpuadmin/jobs/pretrain?propagationPolicy=Background")[
        0] == 200
