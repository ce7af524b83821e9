"""cordon, uncordon, repair-node and drain executed on the API server double: success, a 403, a stale plan's 409,
a PodDisruptionBudget until the timeout, and a re-run that finds the work done."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.cluster.errors import ClusterConflict, ClusterForbidden
from gpuadmin.cluster.exec_base import StepFailed
from gpuadmin.cluster.execute import execute
from gpuadmin.errors import ExitCode
from tests.kube import cluster_objects as objects
from tests.kube.execute_support import FAST, Cluster, cluster, statuses


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Cluster]:
    yield from cluster(tmp_path)


def unschedulable(live: Cluster, node: str) -> bool:
    return bool((live.double.get("nodes", node) or {})["spec"].get("unschedulable"))


def test_cordon_patches_the_node_and_a_rerun_finds_it_done(live: Cluster) -> None:
    done = live.run([{"op": "cordon", "node": "gpu-a"}])
    assert done.outcome == "executed" and statuses(done) == ["executed"]
    assert done.steps[0].calls == ("GET nodes/gpu-a", "PATCH nodes/gpu-a")
    assert unschedulable(live, "gpu-a") and not unschedulable(live, "gpu-b")


def test_a_rerun_of_an_executed_plan_reports_already(live: Cluster) -> None:
    changes = [{"op": "cordon", "node": "gpu-a"}]
    parsed, before, after = live.planned(changes)
    versions = live.versions()
    first = execute(live.conn, parsed, before, after, versions, timeout=1, settings=FAST)
    second = execute(live.conn, parsed, before, after, versions, timeout=1, settings=FAST)
    assert statuses(first) == ["executed"] and statuses(second) == ["already"]
    assert second.outcome == "executed" and second.steps[0].calls == ("GET nodes/gpu-a",)


def test_uncordon_and_repair(live: Cluster) -> None:
    live.double.create(objects.node("gpu-c", unschedulable=True))
    done = live.run([{"op": "uncordon", "node": "gpu-c"}])
    assert statuses(done) == ["executed"] and not unschedulable(live, "gpu-c")
    live.double.create(objects.node("gpu-d", ready=False, unschedulable=True))
    repaired = live.run([{"op": "repair-node", "node": "gpu-d", "note": "RMA 1: PSU", "state": "ready"}])
    assert statuses(repaired) == ["executed"] and not unschedulable(live, "gpu-d")
    assert "still reports Ready=Unknown (NodeStatusUnknown)" in repaired.steps[0].message


def test_a_node_changed_since_the_sync_is_a_stale_plan(live: Cluster) -> None:
    versions = live.versions()
    from lightkube.resources.core_v1 import Node

    # someone else changed the node after gpuadmin read it
    live.conn.client.patch(Node, "gpu-a", {"metadata": {"labels": {"team": "vision"}}})
    done = live.run([{"op": "cordon", "node": "gpu-a"}], versions=versions)
    assert done.outcome == "failed" and statuses(done) == ["failed"]
    assert isinstance(done.error, ClusterConflict) and done.error.exit_code == ExitCode.CONFLICT
    assert "sync" in done.steps[0].message and "modified" in done.steps[0].message
    assert not unschedulable(live, "gpu-a")


def test_a_403_is_not_permitted_with_the_apis_message(live: Cluster) -> None:
    live.double.deny.add(("patch", "nodes"))
    done = live.run([{"op": "cordon", "node": "gpu-a"}])
    assert done.outcome == "failed" and isinstance(done.error, ClusterForbidden)
    assert done.error.exit_code == ExitCode.NOT_PERMITTED
    assert 'cannot patch resource "nodes"' in done.steps[0].message
    assert done.steps[0].calls[-1] == "PATCH nodes/gpu-a"


def test_drain_cordons_and_evicts_all_but_daemonset_and_mirror_pods(live: Cluster) -> None:
    live.double.create(objects.pod("train-0", node_name="gpu-a"))
    live.double.create(objects.pod("train-1", namespace="research", node_name="gpu-a"))
    live.double.create(objects.pod("elsewhere", node_name="gpu-b"))
    daemon = objects.pod("dcgm-exporter-x", namespace="gpu-operator", node_name="gpu-a")
    daemon["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dcgm-exporter",
                                              "uid": "u", "controller": True}]
    live.double.create(daemon)
    mirror = objects.pod("kube-proxy-gpu-a", namespace="kube-system", node_name="gpu-a")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    live.double.create(mirror)
    done = live.run([{"op": "drain", "node": "gpu-a"}])
    assert done.outcome == "executed" and statuses(done) == ["executed"]
    assert unschedulable(live, "gpu-a")
    assert live.double.get("pods", "train-0", "default") is None
    assert live.double.get("pods", "train-1", "research") is None
    assert live.double.get("pods", "dcgm-exporter-x", "gpu-operator") is not None
    assert live.double.get("pods", "kube-proxy-gpu-a", "kube-system") is not None
    assert live.double.get("pods", "elsewhere", "default") is not None
    assert "POST pods/default/train-0/eviction" in done.steps[0].calls
    assert ("delete", "pods") not in live.double.requests  # never deleted directly
    rerun = live.run([{"op": "drain", "node": "gpu-a"}])
    assert statuses(rerun) == ["already"]


def test_drain_retries_a_disruption_budget_until_the_timeout_then_names_the_pods(live: Cluster) -> None:
    for name in ("serve-0", "serve-1"):
        live.double.create(objects.pod(name, node_name="gpu-a", labels={"app": "serve"}))
    live.double.create(objects.disruption_budget("serve", {"app": "serve"}, min_available=2))
    done = live.run([{"op": "drain", "node": "gpu-a"}], timeout=0.3)
    assert done.outcome == "partial"  # cordoned, nothing evicted
    step = done.steps[0]
    assert step.status == "failed" and isinstance(done.error, StepFailed)
    assert "default/serve-0, default/serve-1" in step.message and "PodDisruptionBudget" in step.message
    evictions = [c for c in step.calls if c.startswith("POST pods/default/serve-0/eviction")]
    assert len(evictions) >= 2 or any("×" in c for c in step.calls)  # retried with backoff
    assert unschedulable(live, "gpu-a") and live.double.get("pods", "serve-0", "default") is not None


def test_drain_whose_budget_frees_up_finishes(live: Cluster) -> None:
    for name in ("serve-0", "serve-1"):
        live.double.create(objects.pod(name, node_name="gpu-a", labels={"app": "serve"}))
    live.double.create(objects.disruption_budget("serve", {"app": "serve"}, max_unavailable=1))
    done = live.run([{"op": "drain", "node": "gpu-a"}], timeout=2)
    # the first eviction takes the one disruption allowed; in the double a pod evicted is gone at once, so the
    # budget lets the second go too
    assert done.outcome == "executed"
    assert live.double.get("pods", "serve-1", "default") is None


def test_an_eviction_refused_by_rbac_is_not_permitted(live: Cluster) -> None:
    live.double.create(objects.pod("train-0", node_name="gpu-a"))
    live.double.deny.add(("create", "pods/eviction"))
    done = live.run([{"op": "drain", "node": "gpu-a"}])
    assert isinstance(done.error, ClusterForbidden) and done.outcome == "partial"
    assert live.double.get("pods", "train-0", "default") is not None
