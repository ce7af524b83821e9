"""Issue 19, points 2 and 3: Pods ask for what the device plugin of their node advertises, and what the plugin
cannot map is said (a `ConsumerRefusal`, exit 1) and left out.

The device plugin's behaviour, from NVIDIA/k8s-device-plugin (internal/rm/rm.go AddDefaultResourcesToConfig,
internal/rm/device_map.go): under `migStrategy: single` every MIG device is `nvidia.com/gpu`
(`AddMIGResource("*", "gpu")`); under `mixed` only profiles whose compute instance spans the GPU instance get a
resource (`nvidia.com/mig-<profile>`), and a MIG device no resource matches — a compute instance `1c.3g.71gb` —
fails the device map ("MIG profile … does not match any resource patterns"): the plugin does not start.

Data: the H100 layouts are NVIDIA's mig-parted `all-1g.10gb` / `all-balanced` configs (the real
config-default.yaml fixture); the GFD product value is the real H100 node's label
(h100-mig-mixed-all-balanced_node-labels.json); the split nodes are the written B200 / H200 `nvidia-smi -q -x`
fixtures (tests/adapters/fixtures/written/, from NVIDIA's documented format: a 3g.90gb GI holding a 2c and a
1c CI; a 3g.71gb GI holding two 1c CIs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from adapters_support import FIXTURES, GFD_LABELS, MIG_PARTED, fixture_bytes, validate_k8s

from gpuadmin.adapters import (
    export_device_plugin,
    export_mig_parted,
    export_pods,
    import_nvidia_smi,
    layouts_for_model,
    node_config,
    read_mig_parted,
)
from gpuadmin.catalog import get_catalog
from gpuadmin.model import Job, Node
from tests.cli.clikit import gpuadmin

H100 = "H100-SXM5-80GB"


def _h100_node(name: str, config: str, gpus: int = 2, replicas: int | None = None) -> Node:
    """A Kubernetes node whose H100s all run NVIDIA's mig-parted config `config`."""
    model = get_catalog().model(H100)
    assert model is not None
    layout = layouts_for_model(read_mig_parted(MIG_PARTED), config, model)[0]
    assert layout is not None
    mig = [{"profile": i.profile, "start": i.start, **({"replicas": replicas} if replicas else {})} for i in layout]
    return Node.model_validate({"name": name, "platform": "baremetal", "orchestrator": "kubernetes", "gpus": [
        {"index": i, "model": H100, "mode": "mig", "mig": mig} for i in range(gpus)]})


def _job(name: str, request: dict[str, Any], placement: list[dict[str, Any]] | None = None) -> Job:
    return Job.model_validate({"name": name, "queue": "q", "request": request,
                               "status": "running" if placement else "pending", "placement": placement or []})


def _limits(manifest: dict[str, Any]) -> dict[str, Any]:
    spec = manifest["spec"].get("template", manifest)["spec"] if manifest["kind"] == "Job" else manifest["spec"]
    limits: dict[str, Any] = spec["containers"][0]["resources"]["limits"]
    return limits


def _pods(jobs: list[Job], nodes: list[Node], warnings: list[str] | None = None) -> dict[str, dict[str, Any]]:
    manifests = export_pods(jobs, nodes, warnings=warnings)
    for manifest in manifests:
        validate_k8s(manifest)
    return {m["metadata"]["name"]: m for m in manifests[1:]}


# ------------------------------------------------------------------------------------------------ point 2


def test_a_running_mig_job_on_a_single_strategy_node_asks_for_nvidia_com_gpu() -> None:
    node = _h100_node("h100-single", "all-1g.10gb")
    assert node_config(node)["flags"]["migStrategy"] == "single"
    pods = _pods([_job("serve", {"mig": "1g.10gb"}, [{"node": node.name, "gpu": 1, "mig_start": 3}])], [node])
    assert _limits(pods["serve"]) == {"nvidia.com/gpu": 1}  # main asked for nvidia.com/mig-1g.10gb: never there
    pinned = pods["serve"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert pinned["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [node.name]


def test_a_mixed_strategy_node_keeps_the_mig_resource() -> None:
    node = _h100_node("h100-mixed", "all-balanced")
    assert node_config(node)["flags"]["migStrategy"] == "mixed"
    pods = _pods([_job("serve", {"mig": "3g.40gb"}, [{"node": node.name, "gpu": 0, "mig_start": 4}])], [node])
    assert _limits(pods["serve"]) == {"nvidia.com/mig-3g.40gb": 1}


def test_fractions_on_time_sliced_mig_instances_ask_for_the_shared_resource_of_the_strategy() -> None:
    """The plugin time-slices a MIG instance under its own resource name: `nvidia.com/gpu` under single,
    `nvidia.com/mig-<profile>` under mixed (renameByDefault is off, so replicas keep the name)."""
    single = _h100_node("h100-single-ts", "all-1g.10gb", replicas=4)
    mixed = _h100_node("h100-mixed-ts", "all-balanced", replicas=2)
    assert node_config(single)["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert {"name": "nvidia.com/mig-2g.20gb", "replicas": 2} in node_config(mixed)["sharing"]["timeSlicing"][
        "resources"]
    pods = _pods([
        _job("nb-single", {"fraction": 0.25}, [{"node": single.name, "gpu": 0, "mig_start": 0}]),
        _job("nb-mixed", {"fraction": 0.5}, [{"node": mixed.name, "gpu": 1, "mig_start": 0}]),
    ], [single, mixed])
    assert _limits(pods["nb-single"]) == {"nvidia.com/gpu": 1}
    assert _limits(pods["nb-mixed"]) == {"nvidia.com/mig-2g.20gb": 1}  # main asked for nvidia.com/gpu


def test_a_pending_mig_job_is_steered_to_the_single_strategy_nodes_by_gfd_product() -> None:
    """Only single-strategy nodes hold 1g.10gb: `nvidia.com/gpu: 1` alone could land on a whole GPU, so the
    Pod requires GFD's product of that MIG device, the value a real H100 node carries."""
    real_product = json.loads(fixture_bytes(GFD_LABELS.name))["nvidia.com/mig-1g.10gb.product"]
    whole = Node.model_validate({"name": "h100-whole", "platform": "baremetal", "orchestrator": "kubernetes",
                                 "gpus": [{"index": 0, "model": H100}]})
    nodes = [_h100_node("h100-single", "all-1g.10gb"), whole]
    pods = _pods([_job("later", {"mig": "1g.10gb", "model": H100})], nodes)
    assert _limits(pods["later"]) == {"nvidia.com/gpu": 1}
    terms = pods["later"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": [real_product]}]


def test_a_pending_mig_job_with_nodes_of_both_strategies_asks_for_the_mixed_name_and_says_so() -> None:
    single = _h100_node("h100-single", "all-1g.10gb")
    mixed = _h100_node("h100-mixed", "all-balanced")
    warnings: list[str] = []
    pods = _pods([_job("later", {"mig": "1g.10gb"})], [single, mixed], warnings)
    assert _limits(pods["later"]) == {"nvidia.com/mig-1g.10gb": 1}
    assert "affinity" not in pods["later"]["spec"]  # the resource name itself steers it to the mixed nodes
    assert len(warnings) == 1 and "both MIG strategies" in warnings[0]
    assert "h100-mixed (mixed)" in warnings[0] and "h100-single (single)" in warnings[0]


# ------------------------------------------------------------------------------------------------ point 3


def _written_node(xml: str) -> Node:
    result = import_nvidia_smi(FIXTURES / "written" / xml, Path(xml).stem.replace("_", "-"),
                               orchestrator="kubernetes")
    return result.node


def test_device_plugin_refuses_compute_instance_splits_by_node_gpu_and_instance() -> None:
    node = _written_node("b200_x2_mig-compute-instances.xml")
    warnings: list[str] = []
    config = yaml.safe_load(export_device_plugin([node], warnings=warnings)["data"][f"gpuadmin-{node.name}"])
    assert config["flags"]["migStrategy"] == "mixed"
    refusals = [w for w in warnings if getattr(w, "check_id", None) == "export.device-plugin.compute-instances"]
    assert len(refusals) == 1  # main: no word at all
    assert refusals[0].startswith(f"{node.name} GPU 1: GPU instance 3g.90gb@4 is split into compute instances "
                                  "(2c.3g.90gb, 1c.3g.90gb)")
    assert "will not start" in refusals[0]


def test_identical_compute_instances_on_every_gpu_are_what_single_supports() -> None:
    """Every MIG device alike (here each GPU's only GI holds one 1c CI): the plugin's single strategy maps them
    all as nvidia.com/gpu (assertAllMigDevicesAreValid compares their attributes), so nothing is refused."""
    node = Node.model_validate({"name": "h", "platform": "baremetal", "orchestrator": "kubernetes", "gpus": [
        {"index": i, "model": H100, "mode": "mig",
         "mig": [{"profile": "7g.80gb", "start": 0, "compute_instances": ["1c.7g.80gb"]}]} for i in range(2)]})
    warnings: list[str] = []
    assert node_config(node, warnings)["flags"]["migStrategy"] == "single"
    assert warnings == []


def test_pods_of_a_job_holding_a_split_instance_are_left_out_and_refused() -> None:
    node = _written_node("h200_mig-3g-split-2x1c.xml")
    split = next(i for i in node.gpus[0].mig or () if i.split)
    held = _job("on-split", {"mig": split.profile}, [{"node": node.name, "gpu": 0, "mig_start": split.start}])
    fine = _job("on-whole-gi", {"mig": "3g.71gb"}, [{"node": node.name, "gpu": 0, "mig_start": 0}])
    warnings: list[str] = []
    pods = _pods([held, fine], [node], warnings)
    assert set(pods) == {"on-whole-gi"}
    assert [getattr(w, "check_id", None) for w in warnings] == ["export.pods.compute-instances"]
    assert f"job on-split holds GPU instance 3g.71gb@{split.start} on {node.name} GPU 0" in warnings[0]


def test_mig_parted_split_is_a_refusal_too() -> None:
    warnings: list[str] = []
    export_mig_parted([_written_node("b200_x2_mig-compute-instances.xml")], warnings)
    assert [getattr(w, "check_id", None) for w in warnings] == ["export.mig-parted.compute-instances"]


def test_the_cli_exits_1_on_a_refusal_and_still_writes_the_export(tmp_path: Path) -> None:
    node = _written_node("b200_x2_mig-compute-instances.xml")
    inventory = tmp_path / "split.yaml"
    inventory.write_text(yaml.safe_dump({"version": 1, "cluster": "c",
                                         "nodes": [node.model_dump(mode="json", exclude_none=True)]}))
    for kind, check in (("device-plugin", "export.device-plugin.compute-instances"),
                        ("mig-parted", "export.mig-parted.compute-instances")):
        result = gpuadmin("--inventory", inventory, "export", kind)
        assert result.code == 1, (kind, result.err)  # main: 0
        assert f"({check})" in result.err and yaml.safe_load(result.out)
    clean = gpuadmin("--inventory", inventory, "export", "labels")
    assert clean.code == 0
