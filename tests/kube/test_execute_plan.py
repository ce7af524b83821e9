"""A plan executed on the API server double as a whole: the registry covers every op, a failure stops the plan
(partial, the steps saying which), ops with nothing to do on a cluster say so, and undo's restores execute."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.cluster.errors import ClusterForbidden, ClusterUnreachable
from gpuadmin.cluster.execute import EXECUTORS, Executes, NotExecuted, execute
from gpuadmin.engine import ops
from gpuadmin.errors import ExitCode
from gpuadmin.model import MigInstance
from tests.kube import cluster_objects as objects
from tests.kube.execute_support import FAST, Cluster, cluster, statuses


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Cluster]:
    yield from cluster(tmp_path)


def test_every_op_has_an_executor_or_says_why_it_has_none() -> None:
    assert set(EXECUTORS) == set(ops.OPS)
    for op, spec in ops.OPS.items():
        runs = spec.runs["kubernetes"]
        executor = EXECUTORS[op]
        if isinstance(runs, ops.Runs) and runs.kind == "commands":
            assert isinstance(executor, Executes), f"{op} renders commands for Kubernetes: it needs an executor"
        if isinstance(executor, NotExecuted):
            assert executor.why.strip(), op
        else:  # what a plan on a bound state says apply will call
            assert callable(executor.run) and executor.calls.strip(), op


def test_a_failure_stops_the_plan_and_the_steps_say_where(live: Cluster) -> None:
    live.double.deny.add(("create", "pods/eviction"))
    live.double.create(objects.pod("train-0", node_name="gpu-b"))
    done = live.run([{"op": "cordon", "node": "gpu-a"}, {"op": "drain", "node": "gpu-b"},
                     {"op": "uncordon", "node": "gpu-a"}])
    assert done.outcome == "partial"
    assert statuses(done) == ["executed", "failed", "not-run"]
    assert [s.target for s in done.steps] == ["node gpu-a", "node gpu-b", "node gpu-a"]
    assert isinstance(done.error, ClusterForbidden) and done.failed_step is done.steps[1]
    assert done.steps[2].calls == ()
    assert done.steps[1].as_journal()["status"] == "failed"
    assert (live.double.get("nodes", "gpu-a") or {})["spec"]["unschedulable"] is True  # not undone, not redone


def test_a_first_step_refused_changes_nothing(live: Cluster) -> None:
    live.double.deny.add(("patch", "nodes"))
    done = live.run([{"op": "cordon", "node": "gpu-a"}, {"op": "cordon", "node": "gpu-b"}])
    assert done.outcome == "failed" and statuses(done) == ["failed", "not-run"]


def test_the_plans_own_writes_are_not_a_stale_plan(live: Cluster) -> None:
    """set-mig relabels the node (a new resourceVersion) before the cordon that carries the synced one."""
    mig = {"op": "set-mig", "node": "gpu-a", "gpu": 0, "instances": [{"profile": "7g.80gb"}]}
    done = live.run([mig, {"op": "cordon", "node": "gpu-a"}])
    assert done.outcome == "executed", done.steps
    assert statuses(done) == ["executed", "executed"]
    # what the next plan carries is the node as gpuadmin left it
    assert done.versions[("node", "gpu-a")] == live.versions()[("node", "gpu-a")]


def test_an_op_with_nothing_to_do_on_the_cluster_is_state_only(live: Cluster) -> None:
    done = live.run([{"op": "remove-node", "name": "gpu-b"}])
    assert statuses(done) == ["state-only"] and done.outcome == "executed"
    assert "decommissioning" in done.steps[0].message and done.steps[0].calls == ()
    assert live.double.get("nodes", "gpu-b") is not None


def test_a_restore_brings_the_node_back_as_it_was(live: Cluster) -> None:
    live.run([{"op": "cordon", "node": "gpu-a"}])
    node = live.state().nodes["gpu-a"].model_copy(update={"state": "ready"})
    done = live.run([{"op": "restore", "kind": "node", "name": "gpu-a", "node": node.model_dump(mode="json")}])
    assert statuses(done) == ["executed"], done.steps
    assert not (live.double.get("nodes", "gpu-a") or {})["spec"].get("unschedulable")
    assert done.steps[0].calls == ("GET nodes/gpu-a", "PATCH nodes/gpu-a")  # its GPUs did not change: untouched


def test_a_restore_of_a_gpu_layout_goes_through_the_mig_manager(live: Cluster) -> None:
    node = live.state().nodes["gpu-a"]
    gpu = node.gpus[0].model_copy(update={"mig": [MigInstance(profile="7g.80gb", start=0)]})
    restored = node.model_copy(update={"gpus": [gpu]})
    done = live.run([{"op": "restore", "kind": "node", "name": "gpu-a", "node": restored.model_dump(mode="json")}])
    assert statuses(done) == ["executed"], done.steps
    labels = (live.double.get("nodes", "gpu-a") or {})["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"].startswith("gpuadmin-")
    assert labels["nvidia.com/mig.config.state"] == "success"


def test_a_partly_executed_plan_runs_again_as_it_is(live: Cluster) -> None:
    live.double.deny.add(("create", "pods/eviction"))
    live.double.create(objects.pod("train-0", node_name="gpu-b"))
    changes = [{"op": "cordon", "node": "gpu-a"}, {"op": "drain", "node": "gpu-b"},
               {"op": "uncordon", "node": "gpu-a"}]
    parsed, before, after = live.planned(changes)
    versions = live.versions()
    first = execute(live.conn, parsed, before, after, versions, timeout=1, settings=FAST)
    assert statuses(first) == ["executed", "failed", "not-run"]
    live.double.deny.clear()  # the operator was granted evictions
    again = execute(live.conn, parsed, before, after, versions, timeout=1, settings=FAST)
    assert statuses(again) == ["already", "executed", "executed"] and again.outcome == "executed"
    assert live.double.get("pods", "train-0", "default") is None


def test_an_unreachable_cluster_fails_the_step(live: Cluster) -> None:
    parsed, before, after = live.planned([{"op": "cordon", "node": "gpu-a"}])
    live.double.stop()
    done = execute(live.conn, parsed, before, after, {}, timeout=1, settings=FAST)
    assert done.outcome == "failed" and isinstance(done.error, ClusterUnreachable)
    assert done.error.exit_code == ExitCode.CONFLICT and done.steps[0].calls == ("GET nodes/gpu-a",)
