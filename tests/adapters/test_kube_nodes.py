"""kubectl get nodes -o json: the real GFD label set (wrapped into a Node List) and hand-written Lists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from adapters_support import gfd_node_list

from gpuadmin.adapters import import_kube_nodes, parse_kube_nodes
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
