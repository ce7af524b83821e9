"""kubectl get nodes -o json: the real GFD label set (wrapped into a Node List) and hand-written Lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from adapters_support import gfd_node_list

from gpuadmin.adapters import import_kube_nodes, parse_kube_nodes
from gpuadmin.adapters._common import gfd_mig_products
from gpuadmin.catalog import get_catalog
from gpuadmin.model.diagnostics import InputError


def test_real_gfd_labels_h100_mixed_all_balanced(tmp_path: Path) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(gfd_node_list()))
    nodes = import_kube_nodes(path)
    assert len(nodes) == 1
    node = nodes[0]
    assert node.name == "s4124-0073" and node.state == "ready"
    assert (node.platform, node.orchestrator) == ("baremetal", "kubernetes")  # a Kubernetes node
    assert node.cpus == 96 and node.memory_gib == 1008  # 1056765716Ki
    assert len(node.gpus) == 1 and node.gpus[0].model == "H100-SXM5-80GB" and node.gpus[0].mode == "mig"
    assert [(i.profile, i.start) for i in node.gpus[0].mig or ()] == [
        ("2g.20gb", 0),
        ("1g.10gb", 2),
        ("1g.10gb", 3),
        ("3g.40gb", 4),
    ]
    assert node.labels["nvidia.com/mig.config"] == "all-balanced"
    assert len(node.labels) == len(gfd_node_list()["items"][0]["metadata"]["labels"])


def test_cordoned() -> None:
    nodes, _ = parse_kube_nodes(json.dumps(gfd_node_list(unschedulable=True)))
    assert nodes[0].state == "cordoned"


def _node(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"capacity": {"cpu": "128", "memory": "2113492Mi"}},
    }


def _list(*items: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


def test_hand_written_list_time_sliced_whole_and_cpu_nodes() -> None:
    text = _list(
        _node(
            "a100-ts",
            {
                "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-SHARED",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.replicas": "4",
                "nvidia.com/gpu.sharing-strategy": "time-slicing",
            },
        ),
        _node(
            "h200",
            {
                "nvidia.com/gpu.product": "NVIDIA-H200",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.replicas": "1",
            },
            unschedulable=True,
        ),
        _node("cpu-1", {"kubernetes.io/os": "linux"}),
    )
    nodes, warnings = parse_kube_nodes(text)
    ts, h200, cpu = nodes
    assert [g.mode for g in ts.gpus] == ["time-sliced"] * 8 and {g.replicas for g in ts.gpus} == {4}
    assert {g.model for g in ts.gpus} == {"A100-SXM4-80GB"}
    assert ts.cpus == 128 and ts.memory_gib == 2064
    assert [g.mode for g in h200.gpus] == ["full"] * 8 and h200.state == "cordoned"
    assert {g.model for g in h200.gpus} == {"H200-SXM5-141GB"}
    assert cpu.gpus == []
    assert warnings == []


def test_mixed_counts_dealt_evenly_over_gpus() -> None:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.5gb.count": "4",
        "nvidia.com/mig-2g.10gb.count": "2",
        "nvidia.com/mig-3g.20gb.count": "2",
        "nvidia.com/mig-3g.20gb.replicas": "3",
    }
    nodes, warnings = parse_kube_nodes(_list(_node("a100", labels)))
    gpus = nodes[0].gpus
    assert len(gpus) == 2
    for gpu in gpus:
        assert sorted(i.profile for i in gpu.mig or ()) == ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"]
        assert [i.replicas for i in gpu.mig or () if i.profile == "3g.20gb"] == [3]
    assert any("dealt to the GPUs" in w for w in warnings)


def test_mixed_uneven_first_fit() -> None:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-7g.80gb.count": "1",
        "nvidia.com/mig-1g.10gb.count": "3",
    }
    gpus = parse_kube_nodes(_list(_node("h", labels)))[0][0].gpus
    assert [[i.profile for i in g.mig or ()] for g in gpus] == [["7g.80gb"], ["1g.10gb"] * 3]


def test_single_strategy_product_suffix() -> None:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "14",
        "nvidia.com/mig.strategy": "single",
    }
    nodes, warnings = parse_kube_nodes(_list(_node("s", labels)))
    gpus = nodes[0].gpus
    assert len(gpus) == 2 and all([i.profile for i in g.mig or ()] == ["1g.5gb"] * 7 for g in gpus)
    assert any("single MIG strategy" in w for w in warnings)


def test_single_node_object_is_accepted() -> None:
    nodes, _ = parse_kube_nodes(json.dumps(_node("one", {})))
    assert [n.name for n in nodes] == ["one"]


def test_errors() -> None:
    with pytest.raises(InputError, match=r"^n.json:2:"):
        parse_kube_nodes('{\n "kind": }', "n.json")
    with pytest.raises(InputError, match="expected kind List"):
        parse_kube_nodes('{"kind": "Pod"}')
    bad = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.5gb.count": "1",
    }
    with pytest.raises(InputError, match=r"1g\.5gb' does not exist on H100-SXM5-80GB"):
        parse_kube_nodes(_list(_node("h", bad)))
    with pytest.raises(InputError, match="duplicate node names: a"):
        parse_kube_nodes(_list(_node("a", {}), _node("a", {})))


def test_unknown_product_imports_whole_with_gfd_memory() -> None:
    labels = {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB", "nvidia.com/gpu.count": "2",
              "nvidia.com/gpu.memory": "16160"}
    nodes, warnings = parse_kube_nodes(_list(_node("v100", labels)))
    gpus = nodes[0].gpus
    assert [(g.model, g.mode) for g in gpus] == [("Tesla-V100-SXM2-16GB", "full")] * 2
    assert all(g.not_in_catalog is not None and g.not_in_catalog.memory_mib == 16160 for g in gpus)
    assert any("not in the catalog" in w and "MIG and vGPU" in w for w in warnings)
    t4 = parse_kube_nodes(_list(_node("t4", {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "1"})))
    assert t4[0][0].gpus[0].model == "T4" and t4[0][0].gpus[0].not_in_catalog is None


# Issue 19, point 7. GFD's MIG labels, as k8s-device-plugin's labeller writes them (GFD lives in that repository
# now): internal/lm/mig-strategy.go names a mixed-strategy resource "nvidia.com/mig-" + the MIG device's name,
# and internal/resource/nvml-mig-device.go `GetName` is the profile with every "+" replaced by "." (so
# 1g.10gb+me → nvidia.com/mig-1g.10gb.me); internal/lm/resource.go keys each label "<resource>.<suffix>"
# (count, replicas, sharing-strategy, product, then the device attributes) and sanitises the product
# "<model>-MIG-<name>" keeping "." and "-". The real node's own labels come from the fixture file.
def _gfd_mig_labels(model_product: str, device: str, count: int, replicas: int = 1,
                    attributes: dict[str, str] | None = None) -> dict[str, str]:
    resource = f"nvidia.com/mig-{device}"
    shared = replicas > 1
    labels = {
        f"{resource}.count": str(count),
        f"{resource}.replicas": str(replicas),
        f"{resource}.sharing-strategy": "time-slicing" if shared else "none",
        f"{resource}.product": f"{model_product}-MIG-{device}" + ("-SHARED" if shared else ""),
    }
    labels.update({f"{resource}.{k}": v for k, v in (attributes or {}).items()})
    return labels


def _real_h100_labels() -> dict[str, str]:
    """The real H100 node's labels (NVIDIA's mig-mixed-node-labels.json), without its MIG device labels."""
    labels: dict[str, str] = gfd_node_list()["items"][0]["metadata"]["labels"]
    return {k: v for k, v in labels.items() if not k.startswith("nvidia.com/mig-")}


# the real file's 1g.10gb attributes, with the one OFA that +me adds (NVIDIA MIG user guide, H100 profiles)
_H100_1G_ME = {"engines.copy": "1", "engines.decoder": "1", "engines.encoder": "0", "engines.jpeg": "1",
               "engines.ofa": "1", "memory": "9984", "multiprocessors": "16", "slices.ci": "1", "slices.gi": "1"}


def test_gfd_labels_of_nvidias_all_1g_10gb_me_config_import() -> None:
    """The real H100 node, re-partitioned by NVIDIA's mig-parted config `all-1g.10gb.me` (one 1g.10gb+me):
    GFD labels it `nvidia.com/mig-1g.10gb.me.*`, which failed the import ("'1g.10gb.me' does not exist")."""
    labels = _real_h100_labels() | {"nvidia.com/mig.config": "all-1g.10gb.me"}
    labels |= _gfd_mig_labels("NVIDIA-H100-80GB-HBM3", "1g.10gb.me", 1, attributes=_H100_1G_ME)
    node = parse_kube_nodes(_list(_node("s4124-0073", labels)))[0][0]
    assert [[i.profile for i in g.mig or ()] for g in node.gpus] == [["1g.10gb+me"]]


def test_gfd_labels_of_a_mixed_layout_with_a_time_sliced_me_instance() -> None:
    """The real all-balanced node with one of its 1g.10gb as 1g.10gb+me, shared ×2 by time-slicing: the
    replicas are read from `nvidia.com/mig-1g.10gb.me.replicas`."""
    real = gfd_node_list()["items"][0]["metadata"]["labels"]
    labels = {k: v for k, v in real.items() if not k.startswith("nvidia.com/mig-1g.10gb.")}
    labels |= _gfd_mig_labels("NVIDIA-H100-80GB-HBM3", "1g.10gb", 1)
    labels |= _gfd_mig_labels("NVIDIA-H100-80GB-HBM3", "1g.10gb.me", 1, replicas=2, attributes=_H100_1G_ME)
    gpu = parse_kube_nodes(_list(_node("s4124-0073", labels)))[0][0].gpus[0]
    assert sorted((i.profile, i.replicas) for i in gpu.mig or ()) == [
        ("1g.10gb", None), ("1g.10gb+me", 2), ("2g.20gb", None), ("3g.40gb", None)]


@pytest.mark.parametrize(
    "config, device, count, profile",
    [  # NVIDIA's mig-parted configs for the RTX PRO 6000 Blackwell (fixtures/mig-parted_config-default.yaml)
        ("all-1g.24gb.me.all", "1g.24gb.me.all", 1, "1g.24gb+me.all"),
        ("all-2g.48gb.me.all", "2g.48gb.me.all", 1, "2g.48gb+me.all"),
        ("all-1g.24gb-me", "1g.24gb-me", 4, "1g.24gb-me"),
        ("all-1g.24gb.gfx", "1g.24gb.gfx", 4, "1g.24gb+gfx"),
        ("all-4g.96gb.gfx", "4g.96gb.gfx", 1, "4g.96gb+gfx"),
    ],
)
def test_gfd_labels_of_me_all_minus_me_and_gfx_devices_import(config: str, device: str, count: int,
                                                               profile: str) -> None:
    product = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
    labels = {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "1", "nvidia.com/mig.strategy": "mixed",
              "nvidia.com/mig.config": config, **_gfd_mig_labels(product, device, count)}
    gpus = parse_kube_nodes(_list(_node("rtx", labels)))[0][0].gpus
    assert [[i.profile for i in g.mig or ()] for g in gpus] == [[profile] * count]


def test_single_strategy_product_of_an_me_device() -> None:
    """Under `single`, GFD's product is `<model>-MIG-<device name>`, `+` as `.` too."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me", "nvidia.com/gpu.count": "2",
              "nvidia.com/mig.strategy": "single"}
    gpus = parse_kube_nodes(_list(_node("s", labels)))[0][0].gpus
    assert [[i.profile for i in g.mig or ()] for g in gpus] == [["1g.10gb+me"], ["1g.10gb+me"]]


def test_a_gfd_device_name_that_is_no_profile_of_the_model_is_an_error_naming_its_label() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "1",
              "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.10gb.gfx.count": "1"}
    with pytest.raises(InputError, match=r"nvidia\.com/mig-1g\.10gb\.gfx\.count.*'1g\.10gb\.gfx' does not exist"):
        parse_kube_nodes(_list(_node("h", labels)), "n.json")


def test_gfd_product_of_an_me_device_is_the_one_pods_are_steered_by() -> None:
    """The single-strategy product label that `export pods` steers a pending job by (gfd_mig_products) is the
    one GFD writes and the import reads: `+` as `.` (a label value cannot hold `+`)."""
    h100 = get_catalog().model("H100-SXM5-80GB")
    assert h100 is not None
    assert gfd_mig_products(h100, "1g.10gb+me") == ["NVIDIA-H100-80GB-HBM3-MIG-1g.10gb.me"]
