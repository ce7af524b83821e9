"""`gpuadmin schedule` on a state bound to a cluster (issue 22 item 5): it binds pending pods whose schedulerName is
gpuadmin, through the Binding subresource, gangs all or none; another scheduler's pods are read and explained,
never bound. Against the API server double."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble
from tests.kube.test_cluster_sync import cli, init

QUEUE = {"kai.scheduler/queue": "team-a"}


@pytest.fixture
def double() -> Iterator[ApiServerDouble]:
    with ApiServerDouble(mig_configs=objects.mig_parted_config_names()) as cluster:
        cluster.create(objects.whole_gpu_node("gpu-a"))
        cluster.create(objects.kai_queue("team-a", gpu_quota=8))
        cluster.create(objects.pod("ours", namespace="team-a", count=2, labels=QUEUE, scheduler="gpuadmin"))
        cluster.create(objects.pod("kai", namespace="team-a", count=2, labels=QUEUE, scheduler="kai-scheduler"))
        cluster.create(objects.kai_pod_group("wide", namespace="team-a", min_member=2, queue="team-a"))
        for i in range(2):  # a gang of two 8-GPU pods: the cluster has one 8-GPU node, so neither may be bound
            pod = objects.pod(f"wide-{i}", namespace="team-a", count=8, labels=QUEUE, scheduler="gpuadmin")
            pod["metadata"]["annotations"] = {"pod-group-name": "wide"}
            cluster.create(pod)
        yield cluster


def node_of(double: ApiServerDouble, name: str) -> str | None:
    pod = double.get("pods", name, "team-a")
    assert pod is not None
    node = pod["spec"].get("nodeName")
    return str(node) if node else None


def test_schedule_binds_its_own_pods_only_and_a_gang_all_or_none(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble) -> None:
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
    state = tmp_path / "state"
    assert init(capsys, state, kubeconfig)[0] == ExitCode.OK
    code, out, err = cli(capsys, "--state", state, "schedule", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, err
    assert node_of(double, "ours") == "gpu-a"
    assert node_of(double, "kai") is None  # KAI's to place: read, explained, never bound
    assert node_of(double, "wide-0") is None and node_of(double, "wide-1") is None
    assert [r for r in double.requests if r == ("create", "pods/binding")] == [("create", "pods/binding")]
    with Store.open(state) as store:
        entry = store.journal()[-1]
        assert entry.outcome == "executed" and store.load().jobs["team-a/ours"].status == "running"
    code, out, _ = cli(capsys, "--state", state, "explain", "team-a/kai")
    assert "kai-scheduler" in out and "never binds" in out


def test_a_job_submitted_on_a_bound_state_reads_back_as_itself_and_gpuadmin_schedules_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble) -> None:
    """submit-job creates the pod `export pods` writes, addressed to gpuadmin (schedulerName gpuadmin) and carrying
    the job's and queue's names; a sync reads it back as the same job (no drift), and `schedule` binds it."""
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
    state = tmp_path / "state"
    assert init(capsys, state, kubeconfig)[0] == ExitCode.OK
    code, _, err = cli(capsys, "--state", state, "submit", "eval-run", "--queue", "team-a", "--gpus", "1", "--yes",
                       "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, err
    pod = double.get("pods", "eval-run", "gpuadmin")
    assert pod is not None and pod["spec"]["schedulerName"] == "gpuadmin"
    assert cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig)[0] == ExitCode.OK  # the same job
    code, _, err = cli(capsys, "--state", state, "schedule", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK and "executed on the cluster" in err
    bound = double.get("pods", "eval-run", "gpuadmin")
    assert bound is not None and bound["spec"].get("nodeName") == "gpu-a"
    # bound and not yet started (the double runs no kubelet) is running as far as GPUs go: still no drift
    assert cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig)[0] == ExitCode.OK
