"""Queues (KAI `Queue` objects by server-side apply) and jobs (the pods `export pods` writes, the Binding
subresource, the Eviction API) executed on the API server double."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.adapters.kube_cluster import cluster_pod
from gpuadmin.cluster.errors import ClusterForbidden
from gpuadmin.cluster.exec_base import StepFailed
from gpuadmin.cluster.execute import execute
from gpuadmin.model import Job
from tests.kube import cluster_objects as objects
from tests.kube.execute_support import FAST, Cluster, cluster, full_gpu_node, statuses

FINETUNE = {"name": "finetune", "queue": "research", "request": {"mig": "1g.10gb"}}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Cluster]:
    for found in cluster(tmp_path):
        found.double.create(objects.kai_queue("research", gpu_quota=8))
        yield found


def gpu_quota(live: Cluster, name: str) -> dict[str, object]:
    quota: dict[str, object] = (live.double.get("queues", name) or {})["spec"]["resources"]["gpu"]
    return quota


def test_add_queue_applies_it_under_the_root_queue(live: Cluster) -> None:
    done = live.run([{"op": "add-queue", "queue": {"name": "evals", "quota": {"gpus": 2}, "limit": {"gpus": 4}}}])
    assert statuses(done) == ["executed"]
    assert done.steps[0].calls == ("GET queues/evals", "GET queues/gpuadmin", "APPLY queues/gpuadmin",
                                   "APPLY queues/evals")
    assert gpu_quota(live, "evals") == {"quota": 2, "limit": 4, "overQuotaWeight": 1}
    assert (live.double.get("queues", "evals") or {})["spec"]["parentQueue"] == "gpuadmin"
    assert ("patch", "queues") in live.double.requests  # server-side apply is a PATCH
    assert statuses(live.run([{"op": "set-quota", "queue": "evals", "quota": {"gpus": 2}}])) == ["already"]


def test_set_quota_applies_only_its_fields(live: Cluster) -> None:
    done = live.run([{"op": "set-quota", "queue": "research", "quota": {"gpus": 4}, "over_quota_weight": 2}])
    assert statuses(done) == ["executed"] and done.steps[0].calls == ("GET queues/research", "APPLY queues/research")
    assert gpu_quota(live, "research") == {"quota": 4, "limit": -1, "overQuotaWeight": 2}
    # what gpuadmin does not set stays as the queue's owner wrote it
    assert (live.double.get("queues", "research") or {})["spec"]["resources"]["cpu"]["quota"] == -1
    assert statuses(live.run([{"op": "set-quota", "queue": "research", "quota": {"gpus": 4}}])) == ["already"]


def test_remove_queue_deletes_it_once(live: Cluster) -> None:
    done = live.run([{"op": "remove-queue", "name": "research"}])
    assert statuses(done) == ["executed"] and live.double.get("queues", "research") is None
    assert done.steps[0].calls == ("DELETE queues/research",)


def test_a_queue_write_refused_by_rbac(live: Cluster) -> None:
    live.double.deny.add(("patch", "queues"))
    done = live.run([{"op": "set-quota", "queue": "research", "quota": {"gpus": 4}}])
    assert isinstance(done.error, ClusterForbidden) and "cannot patch" in done.steps[0].message
    assert gpu_quota(live, "research")["quota"] == 8


def test_submit_creates_what_export_pods_writes(live: Cluster) -> None:
    done = live.run([{"op": "submit-job", "job": FINETUNE}])
    assert statuses(done) == ["executed"], done.steps
    assert done.steps[0].calls == ("GET persistentvolumeclaims/gpuadmin/gpuadmin-shared",
                                   "POST persistentvolumeclaims/gpuadmin/gpuadmin-shared",
                                   "GET pods/gpuadmin/finetune", "POST pods/gpuadmin/finetune")
    pod = live.double.get("pods", "finetune", "gpuadmin") or {}
    assert pod["metadata"]["labels"]["gpuadmin/job"] == "finetune"
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": 1}
    assert cluster_pod(pod).request.mig == "1g.10gb"  # what a sync reads back is the job submitted


def test_cancel_deletes_the_pods_gpuadmin_submitted(live: Cluster) -> None:
    live.run([{"op": "submit-job", "job": FINETUNE}])
    live.jobs.append(Job.model_validate(FINETUNE))
    done = live.run([{"op": "cancel-job", "name": "finetune"}])
    assert statuses(done) == ["executed"] and live.double.get("pods", "finetune", "gpuadmin") is None
    assert done.steps[0].calls == (
        "LIST pods in gpuadmin (app.kubernetes.io/managed-by=gpuadmin,gpuadmin/job=finetune)",
        "DELETE jobs/gpuadmin/finetune", "DELETE pods/gpuadmin/finetune")
    assert statuses(live.run([{"op": "cancel-job", "name": "finetune"}])) == ["already"]


def test_a_submit_run_again_finds_its_objects(live: Cluster) -> None:
    parsed, before, after = live.planned([{"op": "submit-job", "job": FINETUNE}])
    execute(live.conn, parsed, before, after, {}, timeout=1, settings=FAST)
    again = execute(live.conn, parsed, before, after, {}, timeout=1, settings=FAST)
    assert statuses(again) == ["already"]


def test_a_pending_gang_is_the_indexed_job_export_writes(live: Cluster) -> None:
    for name in ("gpu-c", "gpu-d"):
        live.double.create(full_gpu_node(name))
    gang = {"name": "pretrain", "queue": "research", "request": {"gpus": 1, "nodes": 2}}
    done = live.run([{"op": "submit-job", "job": gang}])
    assert statuses(done) == ["executed"] and "POST jobs/gpuadmin/pretrain" in done.steps[0].calls
    job = live.double.get("jobs", "pretrain", "gpuadmin") or {}
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["parallelism"] == 2


def test_submit_refused_by_rbac_after_the_pvc_is_partial(live: Cluster) -> None:
    live.double.deny.add(("create", "pods"))
    done = live.run([{"op": "submit-job", "job": FINETUNE}])
    assert isinstance(done.error, ClusterForbidden) and done.outcome == "partial"
    assert live.double.get("pods", "finetune", "gpuadmin") is None


def test_cancel_deletes_the_jobs_pod(live: Cluster) -> None:
    live.double.create(objects.pod("train-0", node_name="gpu-b", resource="nvidia.com/mig-1g.10gb"))
    live.jobs.append(Job(name="default/train-0", queue="research", request={"mig": "1g.10gb"}, status="running",
                         placement=[{"node": "gpu-b", "gpu": 0, "mig_start": 3}]))
    done = live.run([{"op": "cancel-job", "name": "default/train-0"}])
    assert statuses(done) == ["executed"] and done.steps[0].calls[-1] == "DELETE pods/default/train-0"
    assert live.double.get("pods", "train-0", "default") is None


def test_cancel_refuses_a_pod_a_controller_would_restart(live: Cluster) -> None:
    pod = objects.pod("serve-7f9c", node_name="gpu-b", resource="nvidia.com/mig-1g.10gb")
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "serve-7f9c",
                                           "uid": "u", "controller": True}]
    live.double.create(pod)
    live.jobs.append(Job(name="default/serve-7f9c", queue="research", request={"mig": "1g.10gb"},
                         status="running", placement=[{"node": "gpu-b", "gpu": 0, "mig_start": 3}]))
    done = live.run([{"op": "cancel-job", "name": "default/serve-7f9c"}])
    assert isinstance(done.error, StepFailed) and "ReplicaSet/serve-7f9c" in done.steps[0].message
    assert live.double.get("pods", "serve-7f9c", "default") is not None


def test_preempt_evicts_through_the_eviction_api(live: Cluster) -> None:
    live.double.create(objects.pod("train-0", node_name="gpu-b", resource="nvidia.com/mig-1g.10gb"))
    live.jobs.append(Job(name="default/train-0", queue="research", request={"mig": "1g.10gb"}, status="running",
                         placement=[{"node": "gpu-b", "gpu": 0, "mig_start": 3}]))
    done = live.run([{"op": "preempt-job", "name": "default/train-0"}])
    assert statuses(done) == ["executed"] and "POST pods/default/train-0/eviction" in done.steps[0].calls
    assert ("delete", "pods") not in live.double.requests


def pending(live: Cluster, pod: str, scheduler: str = "gpuadmin") -> None:
    live.double.create(objects.pod(pod, resource="nvidia.com/mig-1g.10gb", scheduler=scheduler))
    live.jobs.append(Job(name=f"default/{pod}", queue="research", request={"mig": "1g.10gb"}))


def test_bind_posts_the_binding_subresource(live: Cluster) -> None:
    pending(live, "p-0")
    bind = {"op": "bind-job", "name": "default/p-0", "placement": [{"node": "gpu-a", "gpu": 0, "mig_start": 2}]}
    done = live.run([bind])
    assert statuses(done) == ["executed"] and done.steps[0].calls == ("GET pods/default/p-0",
                                                                      "POST pods/default/p-0/binding")
    assert (live.double.get("pods", "p-0", "default") or {})["spec"]["nodeName"] == "gpu-a"


def test_bind_never_binds_another_schedulers_pod(live: Cluster) -> None:
    pending(live, "kai-0", scheduler="kai-scheduler")
    done = live.run([{"op": "bind-job", "name": "default/kai-0",
                      "placement": [{"node": "gpu-a", "gpu": 0, "mig_start": 2}]}])
    assert isinstance(done.error, StepFailed) and "another scheduler's" in done.steps[0].message
    assert ("create", "pods/binding") not in live.double.requests


def test_a_gang_binds_all_or_none(live: Cluster) -> None:
    for name in ("gpu-c", "gpu-d"):
        live.double.create(full_gpu_node(name))
    labels = {"app.kubernetes.io/managed-by": "gpuadmin", "gpuadmin/job": "pretrain"}
    live.double.create(objects.pod("pretrain-0", namespace="gpuadmin", labels=labels, scheduler="gpuadmin"))
    live.jobs.append(Job(name="pretrain", queue="research", request={"gpus": 1, "nodes": 2}))
    bind = {"op": "bind-job", "name": "pretrain",
            "placement": [{"node": "gpu-c", "gpu": 0}, {"node": "gpu-d", "gpu": 0}]}
    short = live.run([bind])
    assert isinstance(short.error, StepFailed) and "1 pod(s) for 2 node(s)" in short.steps[0].message
    assert ("create", "pods/binding") not in live.double.requests  # none bound while the gang is not whole
    live.double.create(objects.pod("pretrain-1", namespace="gpuadmin", labels=labels, scheduler="gpuadmin"))
    done = live.run([bind])
    assert statuses(done) == ["executed"]
    assert [(live.double.get("pods", f"pretrain-{i}", "gpuadmin") or {})["spec"]["nodeName"] for i in (0, 1)] == [
        "gpu-c", "gpu-d"]
