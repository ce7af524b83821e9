"""set-mig, set-mode and set-time-slicing executed through the GPU Operator's path on the API server double: the
mig-parted ConfigMap, the node's `nvidia.com/mig.config` label and the (simulated) mig-manager's state; the
device-plugin ConfigMap and its label."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gpuadmin.cluster.errors import ClusterForbidden
from gpuadmin.cluster.exec_base import StepFailed
from gpuadmin.cluster.exec_gpus import MIG_STATE_LABEL, config_name
from gpuadmin.cluster.execute import execute
from tests.kube.execute_support import FAST, Cluster, cluster, statuses

WHOLE_GPU_7G = {"op": "set-mig", "node": "gpu-a", "gpu": 0, "instances": [{"profile": "7g.80gb"}]}
MIG_CONFIG = "nvidia.com/mig.config"
PLUGIN_CONFIG = "nvidia.com/device-plugin.config"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Cluster]:
    yield from cluster(tmp_path)


def labels(live: Cluster, node: str) -> dict[str, str]:
    return dict((live.double.get("nodes", node) or {})["metadata"]["labels"])


def mig_configs(live: Cluster) -> dict[str, object]:
    configmap = live.double.get("configmaps", "gpuadmin-mig-parted-config", "gpu-operator") or {}
    configs: dict[str, object] = yaml.safe_load(configmap["data"]["config.yaml"])["mig-configs"]
    return configs


def plugin_configs(live: Cluster) -> dict[str, dict[str, object]]:
    configmap = live.double.get("configmaps", "gpuadmin-device-plugin-config", "gpu-operator") or {}
    return {key: yaml.safe_load(text) for key, text in configmap["data"].items()}


def test_set_mig_writes_the_config_labels_the_node_and_waits_for_the_mig_manager(live: Cluster) -> None:
    done = live.run([WHOLE_GPU_7G])
    assert done.outcome == "executed" and statuses(done) == ["executed"], done.steps
    node_labels = labels(live, "gpu-a")
    config = node_labels[MIG_CONFIG]
    assert config.startswith("gpuadmin-") and node_labels[MIG_STATE_LABEL] == "success"
    assert mig_configs(live)[config] == [{"device-filter": ["0x233010DE"], "devices": [0], "mig-enabled": True,
                                          "mig-devices": {"7g.80gb": 1}}]
    assert "all-disabled" in mig_configs(live)
    plugin = plugin_configs(live)[node_labels[PLUGIN_CONFIG]]
    assert plugin["flags"] == {"migStrategy": "single"}
    calls = done.steps[0].calls
    assert calls[:3] == ("GET configmaps/gpu-operator/gpuadmin-mig-parted-config",
                         "POST configmaps/gpu-operator/gpuadmin-mig-parted-config", "GET nodes/gpu-a")
    assert "PATCH nodes/gpu-a" in calls
    assert labels(live, "gpu-b")[MIG_CONFIG] == "all-balanced"  # the other node keeps its config


def test_gfd_relabels_the_node_after_the_mig_manager_so_a_sync_reads_the_new_layout(live: Cluster) -> None:
    before = live.state().nodes["gpu-a"].gpus
    assert [sorted(i.profile for i in g.mig or ()) for g in before] == [["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]]
    assert statuses(live.run([WHOLE_GPU_7G])) == ["executed"]
    node_labels = labels(live, "gpu-a")
    assert node_labels["nvidia.com/mig-7g.80gb.count"] == "1"
    assert node_labels["nvidia.com/mig-7g.80gb.product"] == "NVIDIA-H100-80GB-HBM3-MIG-7g.80gb"
    assert not [k for k in node_labels if k.startswith(("nvidia.com/mig-1g", "nvidia.com/mig-2g", "nvidia.com/mig-3g"))]
    allocatable = (live.double.get("nodes", "gpu-a") or {})["status"]["allocatable"]
    assert allocatable["nvidia.com/mig-7g.80gb"] == "1" and "nvidia.com/mig-1g.10gb" not in allocatable
    synced = live.state().nodes["gpu-a"]  # read back as a sync reads the cluster
    assert [(g.mode, [i.profile for i in g.mig or ()]) for g in synced.gpus] == [("mig", ["7g.80gb"])]
    assert labels(live, "gpu-b")["nvidia.com/mig-1g.10gb.count"] == "2"  # the other node is not relabelled


def test_gfd_relabels_a_node_that_leaves_mig_as_whole_gpus(live: Cluster) -> None:
    assert statuses(live.run([{"op": "set-mode", "node": "gpu-a", "gpu": 0, "mode": "full"}])) == ["executed"]
    node_labels = labels(live, "gpu-a")
    assert not [k for k in node_labels if k.startswith("nvidia.com/mig-")]
    assert node_labels["nvidia.com/gpu.replicas"] == "1"
    assert [g.mode for g in live.state().nodes["gpu-a"].gpus] == ["full"]


def test_a_rerun_finds_the_layout_applied(live: Cluster) -> None:
    parsed, before, after = live.planned([WHOLE_GPU_7G])
    assert statuses(execute(live.conn, parsed, before, after, live.versions(), timeout=2, settings=FAST)) == [
        "executed"]
    rerun = execute(live.conn, parsed, before, after, live.versions(), timeout=2, settings=FAST)
    assert statuses(rerun) == ["already"]
    assert not [c for c in rerun.steps[0].calls if not c.startswith("GET ")]


def test_the_same_layout_on_two_nodes_is_one_config(live: Cluster) -> None:
    done = live.run([WHOLE_GPU_7G, {**WHOLE_GPU_7G, "node": "gpu-b"}])
    assert statuses(done) == ["executed", "executed"]
    assert labels(live, "gpu-a")[MIG_CONFIG] == labels(live, "gpu-b")[MIG_CONFIG]


def test_a_failed_mig_manager_is_a_failed_step(live: Cluster) -> None:
    live.double.mig_failing_configs.add(config_name([{"device-filter": ["0x233010DE"], "devices": [0],
                                                      "mig-enabled": True, "mig-devices": {"7g.80gb": 1}}]))
    done = live.run([WHOLE_GPU_7G])
    assert done.outcome == "partial" and statuses(done) == ["failed"]  # the ConfigMap and label were written
    assert isinstance(done.error, StepFailed)
    assert "mig-manager reports nvidia.com/mig.config.state=failed" in done.steps[0].message


def test_a_mig_manager_too_slow_times_out_with_what_it_last_saw(tmp_path: Path) -> None:
    for live in cluster(tmp_path, mig_delay_s=5.0):
        done = live.run([WHOLE_GPU_7G], timeout=0.3)
        assert statuses(done) == ["failed"]
        assert "timed out waiting for the mig-manager" in done.steps[0].message
        assert "last seen nvidia.com/mig.config.state=pending" in done.steps[0].message
        assert any("GET nodes/gpu-a ×" in c for c in done.steps[0].calls)  # polled, one entry with its count


def test_leaving_mig_labels_all_disabled(live: Cluster) -> None:
    done = live.run([{"op": "set-mode", "node": "gpu-a", "gpu": 0, "mode": "full"}])
    assert statuses(done) == ["executed"]
    assert labels(live, "gpu-a")[MIG_CONFIG] == "all-disabled"
    assert labels(live, "gpu-a")[MIG_STATE_LABEL] == "success"
    assert plugin_configs(live)[labels(live, "gpu-a")[PLUGIN_CONFIG]]["flags"] == {"migStrategy": "none"}


def test_time_slicing_writes_the_device_plugin_config_only(live: Cluster) -> None:
    mig_labels = {k: labels(live, "gpu-a")[k] for k in (MIG_CONFIG, MIG_STATE_LABEL)}
    done = live.run([{"op": "set-time-slicing", "node": "gpu-a", "gpu": 0, "replicas": 2, "mig_profile": "1g.10gb"}])
    assert statuses(done) == ["executed"]
    # the mig-manager is not asked to do anything
    assert {k: labels(live, "gpu-a")[k] for k in mig_labels} == mig_labels == {MIG_CONFIG: "all-balanced",
                                                                                MIG_STATE_LABEL: "success"}
    plugin = plugin_configs(live)[labels(live, "gpu-a")[PLUGIN_CONFIG]]
    assert plugin["sharing"] == {"timeSlicing": {"resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}]}}
    assert not [c for c in done.steps[0].calls if "mig-parted" in c]


def test_a_403_on_the_configmap_is_not_permitted(live: Cluster) -> None:
    live.double.deny.add(("create", "configmaps"))
    done = live.run([WHOLE_GPU_7G])
    assert isinstance(done.error, ClusterForbidden) and done.outcome == "failed"
    assert labels(live, "gpu-a")[MIG_CONFIG] == "all-balanced"  # nothing written past the refusal


def test_a_config_changed_by_someone_else_meanwhile_is_written_again(live: Cluster) -> None:
    live.double.create({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "gpuadmin-mig-parted-config", "namespace": "gpu-operator"},
                        "data": {"config.yaml": "version: v1\nmig-configs:\n  custom: []\n"}})
    done = live.run([WHOLE_GPU_7G])
    assert statuses(done) == ["executed"]
    assert set(mig_configs(live)) == {"custom", "all-disabled", labels(live, "gpu-a")[MIG_CONFIG]}


def test_the_state_of_the_config_before_is_no_evidence(tmp_path: Path) -> None:
    """The mig-manager notices a relabel a moment later; until then the node still says `success` for its old
    config. The executor drops that label with its relabel, so it waits for the mig-manager's own word."""
    for live in cluster(tmp_path, mig_notice_s=0.2, mig_delay_s=1.0):
        assert labels(live, "gpu-a")[MIG_STATE_LABEL] == "success"  # all-balanced's, applied long ago
        done = live.run([WHOLE_GPU_7G], timeout=5)
        assert statuses(done) == ["executed"]
        assert live.double.mig_finished.get("gpu-a") == labels(live, "gpu-a")[MIG_CONFIG]


@pytest.mark.parametrize("text", ["mig-configs: [\n", "version: v1\n",
                                  "mig-configs: !!python/name:os.system {}\n"])
def test_a_mig_parted_configmap_that_is_not_one_fails_the_step(live: Cluster, text: str) -> None:
    live.double.create({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "gpuadmin-mig-parted-config", "namespace": "gpu-operator"},
                        "data": {"config.yaml": text}})
    done = live.run([WHOLE_GPU_7G])
    assert isinstance(done.error, StepFailed) and done.outcome == "failed"
    assert "mig-parted ConfigMap's config.yaml" in done.steps[0].message
