"""The k8s-device-plugin / GFD sharing config (`version: v1`) as a ConfigMap, and the per-node labels.

One ConfigMap key per Kubernetes node with GPUs (`orchestrator: kubernetes`), `gpuadmin-<node>`, selected
by the node label `nvidia.com/device-plugin.config`; `nvidia.com/mig.config` names the node's mig-parted
config (`gpuadmin-<node>`, or `all-disabled` without MIG). Per node:

- `flags.migStrategy`: `none` without MIG; `single` when every GPU is MIG with one and the same profile;
  else `mixed`;
- `sharing.timeSlicing.resources`: `nvidia.com/gpu` with the replicas of time-sliced GPUs, and
  `nvidia.com/mig-<profile>` with those of time-sliced MIG instances (mixed strategy, named as the plugin names
  them, `+` as `.`: `nvidia.com/mig-1g.10gb.me`; under `single` the MIG devices are `nvidia.com/gpu`);
  `sharing.mps` instead where the GPUs share by MPS.

A GPU instance split into compute instances gives the plugin one MIG device per CI (`1c.3g.71gb`). The plugin's
mixed strategy makes resources only of profiles whose CI spans the GI (NVIDIA/k8s-device-plugin
internal/rm/rm.go AddDefaultResourcesToConfig: `if info.C != info.G { return nil }`), and a MIG device no
resource matches fails the device map (internal/rm/device_map.go buildMigDeviceMap: "MIG profile … does not
match any resource patterns"), so the plugin does not start on the node. Under `single` every MIG device is
`nvidia.com/gpu` and the node only needs them all alike (assertAllMigDevicesAreValid), which identical CIs are.
A split under `mixed` is therefore a `ConsumerRefusal` (`export.device-plugin.compute-instances`): the
node is exported without the split instance, and the warning says the plugin will not start there.

The plugin configures sharing per resource name and node, not per GPU: where GPUs of one node differ (two
replica counts, a time-sliced GPU beside a whole one) the export takes the largest count and says so in
`warnings`. `parse_device_plugin_config` validates a config as the plugin's own parser does
(NVIDIA/k8s-device-plugin api/config/v1: config.go `parseConfigFrom`, resources.go `NewResourceName`,
replicas.go): a missing `version` is v1; a resource name without the `nvidia.com/` prefix gets it, so another
domain or a `+` (the MIG resources name `+` as `.`) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from gpuadmin.adapters._common import ConsumerRefusal, input_error
from gpuadmin.adapters.mig_parted import mig_config_label
from gpuadmin.catalog import mig_device_resource_name
from gpuadmin.engine.commands import mig_config_name
from gpuadmin.model import MigInstance, Node
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.k8s_names import dns1123_subdomain_problems
from gpuadmin.store.yamlsafe import load_yaml

DEVICE_PLUGIN_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
STRATEGIES = ("none", "single", "mixed")
COMPUTE_INSTANCES_CHECK = "export.device-plugin.compute-instances"
#: The plugin's `ResourceNamePrefix` and `MaxResourceNameLength` (api/config/v1/consts.go).
PLUGIN_RESOURCE_PREFIX = "nvidia.com/"
PLUGIN_RESOURCE_NAME_MAX = 63


def _mig_device_names(instance: MigInstance) -> list[str]:
    """The MIG devices a GI gives the plugin: one per compute instance (`1c.3g.71gb`), else the GI itself."""
    return list(instance.compute_instances) if instance.split and instance.compute_instances else [instance.profile]


def mig_strategy(node: Node) -> str:
    mig = [g for g in node.gpus if g.mode == "mig"]
    if not mig:
        return "none"
    profiles = {name for g in mig for i in g.mig or () for name in _mig_device_names(i)}
    if len(mig) == len(node.gpus) and len(profiles) == 1 and all(g.mig for g in mig):
        return "single"
    return "mixed"


def _put(resources: dict[str, int], name: str, replicas: int, node: str, warnings: list[str]) -> None:
    old = resources.get(name)
    if old is not None and old != replicas:
        warnings.append(
            f"{node}: {name} has {old} and {replicas} replicas on different GPUs; the device plugin "
            f"sets one count per node, exported {max(old, replicas)}"
        )
    resources[name] = max(old or 0, replicas)


def node_config(node: Node, warnings: list[str] | None = None) -> dict[str, Any]:
    """The device-plugin config of one node (a plain dict, `version: v1`)."""
    out = warnings if warnings is not None else []
    strategy = mig_strategy(node)
    time_sliced: dict[str, int] = {}
    mps: dict[str, int] = {}
    whole = 0
    for gpu in node.gpus:
        if gpu.mode == "time-sliced" and gpu.replicas is not None:
            target = mps if gpu.sharing == "mps" else time_sliced
            _put(target, "nvidia.com/gpu", gpu.replicas, node.name, out)
        elif gpu.mode == "full":
            whole += 1
        for instance in gpu.mig or ():
            if instance.split and strategy == "mixed":
                out.append(ConsumerRefusal(COMPUTE_INSTANCES_CHECK, (
                    f"{node.name} GPU {gpu.index}: GPU instance {instance.profile}@{instance.start} is split into "
                    f"compute instances ({', '.join(instance.compute_instances or ())}); the device plugin's "
                    "mixed strategy names only MIG devices whose compute instance spans their GPU instance "
                    "and fails to start on a node with any other, so this node's plugin will not start "
                    "until the split is undone; exported the node without this instance"
                )))
            elif instance.replicas and instance.split:
                out.append(
                    f"{node.name} GPU {gpu.index}: GPU instance {instance.profile}@{instance.start} is split into "
                    f"compute instances ({', '.join(instance.compute_instances or ())}); time-slicing of its "
                    f"{instance.replicas} replicas is not exported (the plugin shares per MIG device, and the "
                    "resource names of compute-instance devices are not covered here)"
                )
            elif instance.replicas:
                name = "nvidia.com/gpu" if strategy == "single" else mig_device_resource_name(instance.profile)
                _put(time_sliced, name, instance.replicas, node.name, out)
    if whole and "nvidia.com/gpu" in (time_sliced | mps) and strategy != "single":
        out.append(
            f"{node.name}: {whole} whole GPU(s) beside time-sliced ones; the device plugin shares every "
            "nvidia.com/gpu of the node"
        )
    if time_sliced and mps:
        out.append(
            f"{node.name}: time-slicing and MPS on one node; the device plugin allows one method, "
            "exported time-slicing"
        )
    config: dict[str, Any] = {"version": "v1", "flags": {"migStrategy": strategy}}
    if time_sliced:
        config["sharing"] = {
            "timeSlicing": {"resources": [{"name": n, "replicas": r} for n, r in sorted(time_sliced.items())]}
        }
    elif mps:
        config["sharing"] = {
            "mps": {"resources": [{"name": n, "replicas": r} for n, r in sorted(mps.items())]}
        }
    return config


def _k8s_gpu_nodes(nodes: list[Node]) -> list[Node]:
    return sorted((n for n in nodes if n.kubernetes and n.gpus), key=lambda n: n.name)


def export_device_plugin(
    nodes: list[Node],
    *,
    name: str = "gpuadmin-device-plugin-config",
    namespace: str = "gpu-operator",
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """A ConfigMap with one device-plugin config per Kubernetes GPU node (key `gpuadmin-<node>`)."""
    data = {
        mig_config_name(n.name): yaml.safe_dump(node_config(n, warnings), sort_keys=False).rstrip("\n")
        for n in _k8s_gpu_nodes(nodes)
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def export_labels(nodes: list[Node]) -> dict[str, dict[str, str]]:
    """Kubernetes node → the labels that select its configs (`kubectl label node … --overwrite`)."""
    return {
        n.name: {DEVICE_PLUGIN_LABEL: mig_config_name(n.name), MIG_CONFIG_LABEL: mig_config_label(n)}
        for n in _k8s_gpu_nodes(nodes)
    }


# ------------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True, slots=True)
class DevicePluginConfig:
    mig_strategy: str
    time_slicing: dict[str, int]  # resource → replicas
    mps: dict[str, int]
    rename_by_default: bool = False


def plugin_resource_name(raw: str) -> tuple[str, list[str]]:
    """A resource name as the plugin reads it (resources.go `NewResourceName`), and what it refuses in it.

    A name not starting with `nvidia.com/` gets that prefix (`gpu` → `nvidia.com/gpu`, but `amd.com/gpu` →
    `nvidia.com/amd.com/gpu`); the whole is at most 63 characters; what follows the first `/` must be a DNS-1123
    subdomain (lower case, digits, `-`, `.`), so `nvidia.com/mig-1g.10gb+me` is refused."""
    name = raw if raw.startswith(PLUGIN_RESOURCE_PREFIX) else PLUGIN_RESOURCE_PREFIX + raw
    problems = []
    if len(name) > PLUGIN_RESOURCE_NAME_MAX:
        problems.append(f"resource name {name!r} is longer than {PLUGIN_RESOURCE_NAME_MAX} characters")
    local = name.split("/", 1)[1]
    bad = dns1123_subdomain_problems(local)
    if bad:
        hint = ""
        if "+" in local:
            hint = f" (the plugin names MIG resources with '.' for '+': {name.replace('+', '.')!r})"
        elif "/" in local:
            hint = " (the plugin only shares its own nvidia.com/ resources)"
        problems.append(f"incorrect format for resource name {name!r}: {'; '.join(bad)}{hint}")
    return name, problems


def parse_device_plugin_config(text: str, file: str = "<device-plugin config>") -> DevicePluginConfig:
    """Validate one config as the plugin does: version v1 (the default), strategy, resources with the plugin's
    names and replicas ≥ 2."""
    loaded = load_yaml(text, file)
    data = loaded.data
    errors: list[Diagnostic] = []
    version = data.get("version")
    if version not in (None, "", "v1"):  # config.go parseConfigFrom: an empty version is v1
        errors.append(Diagnostic(f"unknown version: {version!r}", ("version",)))
    flags = data.get("flags") or {}
    strategy = flags.get("migStrategy", "none") if isinstance(flags, dict) else None
    if strategy not in STRATEGIES:
        errors.append(
            Diagnostic(f"unknown MIG strategy {strategy!r} (none, single, mixed)", ("flags", "migStrategy"))
        )
    sharing = data.get("sharing") or {}
    found: dict[str, dict[str, int]] = {"timeSlicing": {}, "mps": {}}
    rename = False
    for method in ("timeSlicing", "mps"):
        block = sharing.get(method) if isinstance(sharing, dict) else None
        if block is None:
            continue
        rename = bool(block.get("renameByDefault", False))
        resources = block.get("resources")
        if not isinstance(resources, list) or not resources:
            errors.append(Diagnostic("no resources specified", ("sharing", method, "resources")))
            continue
        for i, r in enumerate(resources):
            where = ("sharing", method, "resources", i)
            if not isinstance(r, dict) or "name" not in r or "replicas" not in r:
                errors.append(Diagnostic("a resource needs 'name' and 'replicas'", where))
                continue
            if not isinstance(r["name"], str):
                errors.append(Diagnostic("a resource name must be a string", (*where, "name")))
                continue
            name, problems = plugin_resource_name(r["name"])
            errors += [Diagnostic(problem, (*where, "name")) for problem in problems]
            if isinstance(r.get("rename"), str):
                errors += [Diagnostic(problem, (*where, "rename"))
                           for problem in plugin_resource_name(r["rename"])[1]]
            replicas = r["replicas"]
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 2:
                errors.append(Diagnostic("number of replicas must be >= 2", (*where, "replicas")))
                continue
            found[method][name] = replicas
    if found["timeSlicing"] and found["mps"]:
        errors.append(Diagnostic("time-slicing and MPS are mutually exclusive", ("sharing",)))
    if errors:
        raise InputError([loaded.locate(e) for e in errors])
    return DevicePluginConfig(str(strategy), found["timeSlicing"], found["mps"], rename)


def parse_device_plugin_configmap(text: str, file: str = "<configmap>") -> dict[str, DevicePluginConfig]:
    """Every config of a device-plugin ConfigMap, by key."""
    loaded = load_yaml(text, file)
    if loaded.data.get("kind") != "ConfigMap" or not isinstance(loaded.data.get("data"), dict):
        raise input_error("expected a ConfigMap with data", file, 1)
    out: dict[str, DevicePluginConfig] = {}
    for key, value in loaded.data["data"].items():
        if not isinstance(value, str):
            raise InputError([loaded.locate(Diagnostic("a config must be a string", ("data", key)))])
        out[str(key)] = parse_device_plugin_config(value, f"{file}:data.{key}")
    return out
