"""`apply` on a state bound to a cluster executes, through the control plane only (issue 22 item 4): the journal
says executed / partial / failed with the steps, never "applied" for what only gpuadmin's state holds; 403 is exit
4, a 409 on a node changed since the sync exit 3; `--model-only` executes nothing. Against the API server double,
with the cluster of tests/kube/test_cluster_sync.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadmin.errors import ExitCode
from gpuadmin.store import Store
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble
from tests.kube.test_cluster_sync import change, cli, double, init, kubeconfig

__all__ = ["double", "kubeconfig"]  # the fixtures, shared with the sync tests


def bound(capsys: pytest.CaptureFixture[str], tmp_path: Path, kubeconfig: Path) -> Path:
    state = tmp_path / "state"
    assert init(capsys, state, kubeconfig)[0] == ExitCode.OK
    return state


def unschedulable(double: ApiServerDouble, node: str) -> bool:
    obj = double.get("nodes", node)
    assert obj is not None
    return bool(obj.get("spec", {}).get("unschedulable"))


def last_entry(state: Path) -> tuple[str, int | None, list[dict[str, object]] | None, str]:
    with Store.open(state) as store:
        entry = store.journal()[-1]
    return entry.outcome, entry.revision, entry.execution, entry.message


def test_a_cordon_is_executed_on_the_cluster_and_journaled_with_its_steps(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    code, _, err = cli(capsys, "--state", state, "cordon", "gpu-a", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, err
    assert unschedulable(double, "gpu-a")
    outcome, revision, steps, _ = last_entry(state)
    assert (outcome, revision) == ("executed", 1)
    assert steps is not None and steps[0]["status"] == "executed" and "PATCH nodes/gpu-a" in steps[0]["calls"]
    assert "executed on the cluster, revision 1" in err and "PATCH nodes/gpu-a" in err
    with Store.open(state) as store:
        assert store.load().nodes["gpu-a"].state == "cordoned"
    code, out, _ = cli(capsys, "--state", state, "describe", "entry", "2")  # the steps, as describe shows them
    assert code == ExitCode.OK and "Outcome:        executed" in out and "step: executed cordon node gpu-a" in out
    code, out, _ = cli(capsys, "--state", state, "get", "journal", "-o", "json")  # and as get journal -o json does
    items = {item["id"]: item for item in json.loads(out)["items"]}
    assert code == ExitCode.OK and items[2]["outcome"] == "executed"
    assert items[2]["spec"]["execution"][0]["status"] == "executed" and "spec" not in items[1]
    # the cluster's new resourceVersion was kept: the next change on that node is not taken for a stale plan
    assert cli(capsys, "--state", state, "uncordon", "gpu-a", "--yes", "--kubeconfig", kubeconfig)[0] == ExitCode.OK
    assert not unschedulable(double, "gpu-a")


def test_a_plan_on_a_bound_state_says_what_apply_executes_on_the_cluster_not_node_commands(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    changes = tmp_path / "changes.yaml"
    changes.write_text("changes:\n  - {op: cordon, node: gpu-a}\n  - {op: preempt-job, name: team-a/infer}\n"
                       "  - {op: set-mig, node: mig-a, gpu: 0, instances: "
                       "[{profile: 7g.80gb}]}\n  - {op: set-sharing, node: gpu-a, fractions: dynamic}\n")
    code, out, err = cli(capsys, "--state", state, "plan", "-f", changes)
    assert code == ExitCode.OK, err
    assert "Node commands" not in out and "kubectl" not in out and "nvidia-smi" not in out
    heading = "On the cluster (apply executes these API calls, change by change; nothing for anyone to run):"
    lines = out[out.index(heading):].splitlines()
    assert lines[1:3] == ["  cordon node gpu-a:", "      GET node; PATCH node spec.unschedulable (strategic merge, "
                                                   "with the synced resourceVersion)"]
    # the ConfigMap the binding stored: the one the cluster's mig-manager reads (no ClusterPolicy: its default)
    assert "ConfigMap gpu-operator/default-mig-parted-config (config.yaml)" in out.replace("\n      ", " ")
    assert "  set-sharing node gpu-a:\n      nothing on the cluster: dynamic sharing" in out
    code, out, _ = cli(capsys, "--state", state, "plan", "-f", changes, "-o", "json")
    steps = json.loads(out)["cluster_steps"]
    assert [(s["op"], s["executes"]) for s in steps] == [("cordon", True), ("preempt-job", True), ("set-mig", True),
                                                         ("set-sharing", False)]
    code, out, _ = cli(capsys, "--state", state, "cordon", "gpu-a", "--dry-run")  # a verb's plan says so too
    assert "cordon node gpu-a:" in out and "Node commands" not in out
    code, out, _ = cli(capsys, "--state", state, "cordon", "gpu-a", "--dry-run", "--model-only")
    assert "Node commands:" in out and "On the cluster" not in out  # a what-if executes nothing there


def test_the_gpu_operators_configmaps_given_to_init_are_stored_and_used_by_sync_diff_and_apply(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    custom = objects.mig_parted_configmap()
    custom["metadata"]["name"] = "custom-mig-parted"  # the NVIDIA configs, under the name the operator is given
    double.create(custom)
    state = tmp_path / "state"
    code, _, err = init(capsys, state, kubeconfig, "--mig-parted-configmap", "custom-mig-parted",
                        "--device-plugin-configmap", "custom-plugin")
    assert code == ExitCode.OK, err
    with Store.open(state) as store:
        binding = store.binding()
    assert binding is not None
    assert (binding.operator_namespace, binding.mig_parted_configmap, binding.device_plugin_configmap) == (
        "gpu-operator", "custom-mig-parted", "custom-plugin")
    double.requests.clear()
    code, _, err = cli(capsys, "--state", state, "sync", "--kubeconfig", kubeconfig)  # no options: the stored ones
    assert code == ExitCode.OK, err
    assert "default-mig-parted-config" not in err and ("list", "clusterpolicies") not in double.requests
    with Store.open(state) as store:
        assert ("configmap", "gpu-operator/custom-mig-parted") in store.cluster_versions()
        assert ("configmap", "gpu-operator/default-mig-parted-config") not in store.cluster_versions()
    assert cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig)[0] == ExitCode.OK
    changes = tmp_path / "changes.yaml"
    changes.write_text("changes:\n  - {op: set-time-slicing, node: gpu-a, gpu: 4, replicas: 2}\n")
    code, _, err = cli(capsys, "--state", state, "apply", "-f", changes, "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, err
    written = double.get("configmaps", "custom-plugin", "gpu-operator")  # where the device plugin reads
    assert written is not None and double.get("configmaps", "gpuadmin-device-plugin-config", "gpu-operator") is None
    label = (double.get("nodes", "gpu-a") or {})["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    assert label in written["data"]
    with pytest.raises(SystemExit) as refused:  # init's option, stored: not a sync's
        cli(capsys, "--state", state, "sync", "--mig-parted-configmap", "other", "--kubeconfig", kubeconfig)
    assert refused.value.code == ExitCode.BAD_INPUT and "--mig-parted-configmap" in capsys.readouterr().err


def test_model_only_executes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble,
                                     kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    served = len(double.requests)
    code, _, err = cli(capsys, "--state", state, "cordon", "gpu-a", "--yes", "--model-only")
    assert code == ExitCode.OK, err
    assert not unschedulable(double, "gpu-a") and len(double.requests) == served  # not even a connection
    outcome, revision, steps, message = last_entry(state)
    assert (outcome, revision, steps) == ("applied", 1, None) and "model only" in message


def test_a_403_fails_the_change_with_exit_4_and_changes_nothing(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    double.deny.add(("patch", "nodes"))
    code, _, err = cli(capsys, "--state", state, "cordon", "gpu-a", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.NOT_PERMITTED and "forbidden" in err.lower()
    assert "gpuadmin:   failed     cordon node gpu-a  GET nodes/gpu-a, PATCH nodes/gpu-a" in err  # its step
    outcome, revision, steps, _ = last_entry(state)
    assert (outcome, revision) == ("failed", None) and steps is not None and steps[0]["status"] == "failed"
    code, out, _ = cli(capsys, "--state", state, "get", "journal", "-o", "json")
    failed = json.loads(out)["items"][-1]
    assert code == ExitCode.OK and failed["outcome"] == "failed"
    assert failed["spec"]["execution"][0]["status"] == "failed"
    with Store.open(state) as store:
        assert store.revision() == 0 and store.load().nodes["gpu-a"].state == "ready"


def test_a_node_changed_since_the_sync_is_a_stale_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    change(double, "/api/v1/nodes/gpu-a", {"metadata": {"labels": {"team": "vision"}}})  # someone else, meanwhile
    code, _, err = cli(capsys, "--state", state, "cordon", "gpu-a", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.CONFLICT and "sync" in err
    assert not unschedulable(double, "gpu-a") and last_entry(state)[0] == "failed"
    assert cli(capsys, "--state", state, "sync", "--kubeconfig", kubeconfig)[0] == ExitCode.OK
    assert cli(capsys, "--state", state, "cordon", "gpu-a", "--yes", "--kubeconfig", kubeconfig)[0] == ExitCode.OK
    assert unschedulable(double, "gpu-a")


def test_a_plan_that_fails_half_way_is_partial_and_a_rerun_completes_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    changes = tmp_path / "changes.yaml"
    changes.write_text("changes:\n  - {op: cordon, node: gpu-a}\n  - {op: set-quota, queue: team-a, quota: {gpus: 8}}\n"
                       "  - {op: cordon, node: mig-a}\n")
    double.deny.add(("patch", "queues"))
    code, _, err = cli(capsys, "--state", state, "apply", "-f", changes, "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.NOT_PERMITTED, err
    outcome, revision, steps, _ = last_entry(state)
    assert (outcome, revision) == ("partial", 1) and steps is not None
    assert [s["status"] for s in steps] == ["executed", "failed", "not-run"]
    assert "executed   cordon node gpu-a" in err and "not-run    cordon node mig-a" in err
    with Store.open(state) as store:  # the state holds exactly what the cluster holds: the first change
        loaded = store.load()
        assert loaded.nodes["gpu-a"].state == "cordoned" and loaded.nodes["mig-a"].state == "ready"
        assert loaded.queues["team-a"].quota.gpus == 16
    assert unschedulable(double, "gpu-a") and not unschedulable(double, "mig-a")
    double.deny.clear()
    code, _, err = cli(capsys, "--state", state, "apply", "-f", changes, "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, err
    assert unschedulable(double, "mig-a") and last_entry(state)[0] == "executed"
    queue = double.get("queues", "team-a")
    assert queue is not None and queue["spec"]["resources"]["gpu"]["quota"] == 8


def test_a_drain_whose_eviction_is_refused_leaves_the_node_cordoned_in_the_state_as_on_the_cluster(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    double.deny.add(("create", "pods/eviction"))  # the cordon goes through, the eviction of trainer-0 does not
    code, _, err = cli(capsys, "--state", state, "drain", "gpu-a", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.NOT_PERMITTED, err
    outcome, revision, steps, _ = last_entry(state)
    assert (outcome, revision) == ("partial", 1) and steps is not None and steps[0]["status"] == "failed"
    assert unschedulable(double, "gpu-a") and double.get("pods", "trainer-0", "team-a") is not None
    with Store.open(state) as store:  # exactly what the cluster holds: cordoned, its pod still running there
        loaded = store.load()
        assert loaded.nodes["gpu-a"].state == "cordoned"
        assert loaded.jobs["team-a/trainer"].status == "running"
    code, out, _ = cli(capsys, "--state", state, "diff", "--kubeconfig", kubeconfig)
    assert code == ExitCode.OK, out  # the next sync has nothing to bring in


def test_an_unreachable_cluster_is_exit_3_with_the_state_unchanged(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    double.stop()
    code, _, err = cli(capsys, "--state", state, "cordon", "gpu-a", "--yes", "--kubeconfig", kubeconfig)
    assert code == ExitCode.CONFLICT and "unreachable" in err
    with Store.open(state) as store:
        assert store.revision() == 0 and store.journal()[-1].outcome == "failed"


def test_a_real_process_reports_a_refusal_without_a_traceback(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    double.deny.add(("patch", "nodes"))
    done = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "cordon", "gpu-a",
                           "--yes", "--kubeconfig", str(kubeconfig)], capture_output=True, text=True, check=False)
    assert done.returncode == ExitCode.NOT_PERMITTED and "Traceback" not in done.stderr
    assert "double-token-never-checked" not in done.stderr + done.stdout


def test_json_output_holds_the_executed_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              double: ApiServerDouble, kubeconfig: Path) -> None:
    state = bound(capsys, tmp_path, kubeconfig)
    code, out, err = cli(capsys, "--state", state, "cordon", "gpu-a", "--yes", "-o", "json", "--kubeconfig",
                         kubeconfig)
    assert code == ExitCode.OK, err
    document = json.loads(out)  # one document: the plan, and what the cluster did with it
    assert document["changes"] == [{"op": "cordon", "node": "gpu-a"}]
    assert [(s["op"], s["status"], s["calls"]) for s in document["execution"]] == [
        ("cordon", "executed", ["GET nodes/gpu-a", "PATCH nodes/gpu-a"])]
    code, out, _ = cli(capsys, "--state", state, "get", "journal", "-o", "json")
    entry = json.loads(out)["items"][-1]
    assert code == ExitCode.OK and entry["outcome"] == "executed"
    assert entry["spec"]["execution"] == document["execution"]
    assert cli(capsys, "--state", state, "uncordon", "gpu-a", "--yes", "--model-only", "-o", "json")[0] == 0
    assert "spec" not in json.loads(cli(capsys, "--state", state, "get", "journal", "-o", "json")[1])["items"][-1]
    assert unschedulable(double, "gpu-a")  # the model-only uncordon left the cluster as it was
