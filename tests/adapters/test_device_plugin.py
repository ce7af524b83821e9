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


def test_time_sliced_media_extension_instances_use_the_plugins_resource_names() -> None:
    """Issue 19, point 1: the plugin advertises `1g.10gb+me` as `nvidia.com/mig-1g.10gb.me` (every `+` as `.`,
    k8s-device-plugin internal/rm/rm.go); a config sharing `nvidia.com/mig-1g.10gb+me` names no resource the
    plugin has, and the plugin's parser refuses it. `-me` keeps its `-`."""
    h100 = Node(
        name="h100-me", platform="baremetal", orchestrator="kubernetes",
        gpus=[Gpu(index=0, model="H100-SXM5-80GB", mode="mig",
                  mig=[MigInstance(profile="1g.10gb+me", start=0, replicas=2),
                       MigInstance(profile="3g.40gb", start=4, replicas=3)])],
    )
    rtx = Node(
        name="rtx-me", platform="baremetal", orchestrator="kubernetes",
        gpus=[Gpu(index=0, model="RTX-PRO-6000-BSE", mode="mig",
                  mig=[MigInstance(profile="1g.24gb+me.all", start=0, replicas=2),
                       MigInstance(profile="1g.24gb-me", start=1, replicas=3),
                       MigInstance(profile="2g.48gb+gfx", start=2, replicas=4)])],
    )
    assert node_config(h100)["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/mig-1g.10gb.me", "replicas": 2},
        {"name": "nvidia.com/mig-3g.40gb", "replicas": 3},
    ]
    assert node_config(rtx)["sharing"]["timeSlicing"]["resources"] == [
        {"name": "nvidia.com/mig-1g.24gb-me", "replicas": 3},
        {"name": "nvidia.com/mig-1g.24gb.me.all", "replicas": 2},
        {"name": "nvidia.com/mig-2g.48gb.gfx", "replicas": 4},
    ]
    read = parse_device_plugin_configmap(yaml.safe_dump(export_device_plugin([h100, rtx])))
    assert read["gpuadmin-h100-me"].time_slicing == {"nvidia.com/mig-1g.10gb.me": 2, "nvidia.com/mig-3g.40gb": 3}
    assert set(read["gpuadmin-rtx-me"].time_slicing) == {
        "nvidia.com/mig-1g.24gb-me", "nvidia.com/mig-1g.24gb.me.all", "nvidia.com/mig-2g.48gb.gfx"}


def _sharing(name: str) -> str:
    return f"version: v1\nsharing: {{timeSlicing: {{resources: [{{name: '{name}', replicas: 2}}]}}}}\n"


@pytest.mark.parametrize(
    "text, strategy",
    [  # api/config/v1/config.go parseConfigFrom: `if config.Version == "" { config.Version = Version }`
        ("flags: {migStrategy: mixed}\n", "mixed"),
        ("version: ''\nflags: {migStrategy: single}\n", "single"),
        ("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 4}]}}\n", "none"),
    ],
)
def test_a_config_without_version_is_v1_as_the_plugin_reads_it(text: str, strategy: str) -> None:
    """Issue 19, point 4: the plugin accepts a config without `version` (it defaults to v1)."""
    assert parse_device_plugin_config(text, "p.yaml").mig_strategy == strategy


@pytest.mark.parametrize(
    "name, read_as",
    [  # resources.go NewResourceName: a name without the nvidia.com/ prefix gets it
        ("gpu", "nvidia.com/gpu"),
        ("mig-1g.10gb.me", "nvidia.com/mig-1g.10gb.me"),
        ("nvidia.com/mig-1g.24gb.me.all", "nvidia.com/mig-1g.24gb.me.all"),
        ("nvidia.com/mig-1g.24gb-me", "nvidia.com/mig-1g.24gb-me"),
    ],
)
def test_resource_names_the_plugin_accepts(name: str, read_as: str) -> None:
    assert parse_device_plugin_config(_sharing(name), "p.yaml").time_slicing == {read_as: 2}


@pytest.mark.parametrize(
    "name, message",
    [  # resources.go NewResourceName: the part after the first '/' must be a DNS-1123 subdomain, whole ≤ 63
        ("nvidia.com/mig-1g.10gb+me", r"incorrect format .*'nvidia.com/mig-1g.10gb\.me'"),
        ("mig-1g.24gb+me.all", "incorrect format for resource name 'nvidia.com/mig-1g.24gb[+]me.all'"),
        ("amd.com/gpu", "incorrect format for resource name 'nvidia.com/amd.com/gpu'.*only shares its own"),
        ("example.com/nvidia.com/gpu", "incorrect format"),
        ("nvidia.com/GPU", "incorrect format"),
        ("nvidia.com/" + "a" * 53, "longer than 63"),
    ],
)
def test_resource_names_the_plugin_refuses(name: str, message: str) -> None:
    """Issue 19, point 4: `+` and other domains than nvidia.com were accepted; the plugin refuses them."""
    with pytest.raises(InputError, match=message) as refused:
        parse_device_plugin_config(_sharing(name), "p.yaml")
    assert "p.yaml:2:" in str(refused.value) and "sharing.timeSlicing.resources[0].name:" in str(refused.value)
