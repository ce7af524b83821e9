"""Device-plugin sharing config and node labels, against NVIDIA's real time-slicing ConfigMap."""

from __future__ import annotations

import pytest
import yaml
from adapters_support import TIME_SLICING, fixture_bytes, golden, validate_k8s

from gpuadmin.adapters import export_device_plugin, export_labels, node_config, parse_device_plugin_configmap
from gpuadmin.adapters.device_plugin import parse_device_plugin_config
from gpuadmin.model import Gpu, MigInstance, Node
from gpuadmin.model.diagnostics import InputError


def _a100_equivalent() -> Node:
    """A node whose layout is what NVIDIA's `a100-40gb` config expresses: whole GPUs shared ×8, and MIG
    instances of each listed profile time-sliced ×2/×2/×3/×7."""
    return Node(
        name="a100-40gb",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[
            Gpu(index=0, model="A100-SXM4-40GB", mode="time-sliced", replicas=8),
            Gpu(
                index=1,
                model="A100-SXM4-40GB",
                mode="mig",
                mig=[
                    MigInstance(profile="3g.20gb", start=4, replicas=3),
                    MigInstance(profile="2g.10gb", start=0, replicas=2),
                    MigInstance(profile="1g.5gb", start=2, replicas=2),
                    MigInstance(profile="1g.5gb", start=3, replicas=2),
                ],
            ),
            Gpu(
                index=2,
                model="A100-SXM4-40GB",
                mode="mig",
                mig=[MigInstance(profile="7g.40gb", start=0, replicas=7)],
            ),
        ],
    )


def _t4_equivalent() -> Node:  # no T4 in the catalog: an A10, also not MIG-capable
    return Node(
        name="tesla-t4",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[Gpu(index=0, model="A10", mode="time-sliced", replicas=4)],
    )


def test_real_configmap_parses() -> None:
    configs = parse_device_plugin_configmap(fixture_bytes(TIME_SLICING.name).decode(), str(TIME_SLICING))
    assert set(configs) == {"a100-40gb", "tesla-t4"}
    assert configs["a100-40gb"].mig_strategy == "mixed"
    assert configs["a100-40gb"].time_slicing == {
        "nvidia.com/gpu": 8,
        "nvidia.com/mig-1g.5gb": 2,
        "nvidia.com/mig-2g.10gb": 2,
        "nvidia.com/mig-3g.20gb": 3,
        "nvidia.com/mig-7g.40gb": 7,
    }
    assert configs["tesla-t4"].mig_strategy == "none" and configs["tesla-t4"].time_slicing == {
        "nvidia.com/gpu": 4
    }


def test_export_has_the_structure_of_the_real_file() -> None:
    real_doc = yaml.safe_load(fixture_bytes(TIME_SLICING.name))
    real = parse_device_plugin_configmap(fixture_bytes(TIME_SLICING.name).decode())
    warnings: list[str] = []
    exported = export_device_plugin([_a100_equivalent(), _t4_equivalent()], warnings=warnings)
    validate_k8s(exported)
    assert exported["apiVersion"] == real_doc["apiVersion"] and exported["kind"] == real_doc["kind"]
    ours = parse_device_plugin_configmap(yaml.safe_dump(exported))
    assert ours["gpuadmin-a100-40gb"] == real["a100-40gb"]
    assert ours["gpuadmin-tesla-t4"] == real["tesla-t4"]
    for key, real_key in (("gpuadmin-a100-40gb", "a100-40gb"), ("gpuadmin-tesla-t4", "tesla-t4")):
        assert yaml.safe_load(exported["data"][key]) == yaml.safe_load(real_doc["data"][real_key])
    assert warnings == []


def test_strategies_and_mps() -> None:
    single = Node(
        name="s",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[
            Gpu(
                index=i,
                model="H100-SXM5-80GB",
                mode="mig",
                mig=[
                    MigInstance(profile="3g.40gb", start=0, replicas=2),
                    MigInstance(profile="3g.40gb", start=4),
                ],
            )
            for i in range(2)
        ],
    )
    assert node_config(single) == {
        "version": "v1",
        "flags": {"migStrategy": "single"},
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
    }
    plain = Node(name="p", platform="baremetal", orchestrator="kubernetes", gpus=[Gpu(index=0, model="H100-SXM5-80GB")])
    assert node_config(plain) == {"version": "v1", "flags": {"migStrategy": "none"}}
    mps = Node(
        name="m",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[Gpu(index=0, model="L40S", mode="time-sliced", replicas=6, sharing="mps")],
    )
    assert node_config(mps)["sharing"] == {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 6}]}}


def test_per_node_only_warnings() -> None:
    node = Node(
        name="w",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[
            Gpu(index=0, model="A10", mode="time-sliced", replicas=2),
            Gpu(index=1, model="A10", mode="time-sliced", replicas=4),
            Gpu(index=2, model="A10"),
        ],
    )
    warnings: list[str] = []
    config = node_config(node, warnings)
    assert config["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert any("2 and 4 replicas" in w for w in warnings) and any("whole GPU" in w for w in warnings)


def test_labels_and_golden() -> None:
    nodes = [
        _a100_equivalent(),
        _t4_equivalent(),
        Node(name="bm", platform="baremetal", gpus=[Gpu(index=0, model="A10")]),
    ]
    labels = export_labels(nodes)
    assert labels == {
        "a100-40gb": {
            "nvidia.com/device-plugin.config": "gpuadmin-a100-40gb",
            "nvidia.com/mig.config": "gpuadmin-a100-40gb",
        },
        "tesla-t4": {
            "nvidia.com/device-plugin.config": "gpuadmin-tesla-t4",
            "nvidia.com/mig.config": "all-disabled",
        },
    }
    golden("labels", labels)
    golden("device-plugin", export_device_plugin(nodes))


@pytest.mark.parametrize(
    "text, message",
    [
        ("version: v2\n", "unknown version"),
        ("version: v1\nflags: {migStrategy: both}\n", "unknown MIG strategy"),
        ("version: v1\nsharing: {timeSlicing: {resources: []}}\n", "no resources"),
        (
            "version: v1\nsharing: {timeSlicing: {resources: [{name: gpu, replicas: 1}]}}\n",
            "replicas must be >= 2",
        ),
    ],
)
def test_plugin_validation(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_device_plugin_config(text, "p.yaml")
