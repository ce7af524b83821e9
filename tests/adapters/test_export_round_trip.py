"""Issue 19, point 4: every export reads back to the same thing, in every form its consumer reads.

For each bundled sample (sample-inventories/*.yaml, real data for this purpose: the inventories gpuadmin ships),
the mig-parted config — plain, and as the GPU Operator's ConfigMap, whose `data.config.yaml` is the file
mig-manager reads (NVIDIA/gpu-operator controllers/object_controls.go sets
CONFIG_FILE=/mig-parted-config/config.yaml on the mounted custom ConfigMap; assets/state-mig-manager/
0400_configmap.yaml is the default one, keyed the same) — and the device-plugin config, plain and as the
ConfigMap, are written, read back with gpuadmin's own readers, and compared with what was written.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from gpuadmin.adapters import (
    export_device_plugin,
    export_mig_parted,
    export_mig_parted_configmap,
    mig_parted_layouts,
    node_config,
    parse_device_plugin_config,
    parse_device_plugin_configmap,
    parse_mig_parted,
)
from gpuadmin.engine.commands import mig_config_name
from gpuadmin.model import Inventory
from gpuadmin.model.diagnostics import InputError
from gpuadmin.store import load_inventory

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "sample-inventories").glob("*.yaml"))


@pytest.fixture(params=SAMPLES, ids=lambda p: p.stem)
def sample(request: pytest.FixtureRequest) -> Inventory:
    return load_inventory(request.param)


def test_mig_parted_reads_back_to_every_gpu_layout(sample: Inventory) -> None:
    """Plain config: each node's config gives each GPU back its MIG profiles (and CIs), or MIG off."""
    warnings: list[str] = []
    spec = parse_mig_parted(yaml.safe_dump(export_mig_parted(sample.nodes, warnings), sort_keys=False), "out.yaml")
    assert warnings == []
    for node in (n for n in sample.nodes if n.gpus):
        layouts = mig_parted_layouts(spec, mig_config_name(node.name), node, warnings)
        for gpu in node.gpus:
            read = layouts[gpu.index]
            if gpu.mode != "mig":
                assert read is None, (node.name, gpu.index)
                continue
            assert read is not None, (node.name, gpu.index)
            written = Counter((i.profile, tuple(i.compute_instances or ())) for i in gpu.mig or ())
            assert Counter((i.profile, tuple(i.compute_instances or ())) for i in read) == written
        assert warnings == [], node.name


def test_mig_parted_configmap_reads_back_as_the_plain_config(sample: Inventory) -> None:
    """The ConfigMap form (`export_mig_parted_configmap`) reads as the same configs; on main it was refused
    with "missing 'version' field"."""
    plain = parse_mig_parted(yaml.safe_dump(export_mig_parted(sample.nodes), sort_keys=False), "out.yaml")
    configmap = export_mig_parted_configmap(sample.nodes)
    assert list(configmap["data"]) == ["config.yaml"]
    read = parse_mig_parted(yaml.safe_dump(configmap, sort_keys=False), "cm.yaml")
    assert read.configs == plain.configs
    assert read.file == "cm.yaml:data.config.yaml"  # diagnostics inside the config name where they are


def test_device_plugin_configs_read_back_as_written(sample: Inventory) -> None:
    """Each node's plain config, and the ConfigMap of all of them, parse to what `node_config` wrote."""
    exported = export_device_plugin(sample.nodes)
    from_configmap = parse_device_plugin_configmap(yaml.safe_dump(exported), "cm.yaml")
    k8s_gpu_nodes = [n for n in sample.nodes if n.kubernetes and n.gpus]
    assert set(from_configmap) == {mig_config_name(n.name) for n in k8s_gpu_nodes}
    for node in k8s_gpu_nodes:
        written = node_config(node)
        read = parse_device_plugin_config(yaml.safe_dump(written, sort_keys=False), f"{node.name}.yaml")
        assert from_configmap[mig_config_name(node.name)] == read
        assert read.mig_strategy == written["flags"]["migStrategy"]
        sharing = written.get("sharing", {})
        for method, found in (("timeSlicing", read.time_slicing), ("mps", read.mps)):
            resources = sharing.get(method, {}).get("resources", [])
            assert found == {r["name"]: r["replicas"] for r in resources}, (node.name, method)


def test_mig_parted_configmap_without_its_key_is_refused_by_name() -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  other.yaml: |\n    version: v1\n"
    with pytest.raises(InputError, match=r"^cm\.yaml:5:3: data: .*data\.config\.yaml"):
        parse_mig_parted(text, "cm.yaml")
    inner_error = "apiVersion: v1\nkind: ConfigMap\ndata:\n  config.yaml: |\n    version: v2\n"
    with pytest.raises(InputError, match=r"^cm\.yaml:data\.config\.yaml:1:.*unknown version: v2"):
        parse_mig_parted(inner_error, "cm.yaml")
