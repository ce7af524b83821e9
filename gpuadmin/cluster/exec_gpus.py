"""Executors of the GPU ops, through the GPU Operator's own path: set-mig, set-mode, set-time-slicing.

MIG: the node's layout goes into the mig-parted ConfigMap the mig-manager reads (`ExecuteSettings.mig_parted_
configmap`, key `config.yaml`, the node's per-GPU `mig-devices` as `gpuadmin export mig-parted` writes them), the node
is labelled `nvidia.com/mig.config=<config>`, and the executor waits for the mig-manager's
`nvidia.com/mig.config.state` to say `success` (or reports `failed`, or what it last saw at the timeout). Leaving MIG
is the label `all-disabled`. Sharing: the node's device-plugin config (`export device-plugin`'s) goes into the
device-plugin ConfigMap and the node is labelled `nvidia.com/device-plugin.config=<config>`.

Config names are content-addressed (`gpuadmin-` and 12 hex digits of the config's hash), one per layout, not one
per node: the mig-manager and the device plugin's config-manager act when the node's *label* changes, and read the
ConfigMap as a file the kubelet refreshes up to a minute late. A config rewritten under a name the node already
carries would never be applied, or applied stale and reported `success`; a new name is a label change they act on,
and a file not refreshed yet is a loud `failed` (run the plan again), never a silent old layout. The label patch
also drops the previous `nvidia.com/mig.config.state`: a `success` left from the last config is no evidence about
this one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from gpuadmin.adapters.device_plugin import DEVICE_PLUGIN_LABEL, MIG_CONFIG_LABEL, node_config
from gpuadmin.adapters.mig_parted import ALL_DISABLED, MIG_MANAGER_KEY, node_mig_config
from gpuadmin.cluster.errors import ClusterConflict
from gpuadmin.cluster.exec_api import Obj
from gpuadmin.cluster.exec_base import Context, Done, StepFailed
from gpuadmin.engine import changes as ch
from gpuadmin.errors import InputError
from gpuadmin.model import Node
from gpuadmin.store.yamlsafe import load_yaml

MIG_STATE_LABEL = "nvidia.com/mig.config.state"
CONFIG_PREFIX = "gpuadmin-"
CONFLICT_RETRIES = 3  # a ConfigMap others write too: re-read and write again after a 409, this many times


def config_name(config: Any) -> str:
    """The content-addressed name of a config: the same layout is the same name, a new layout a new label value."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    return CONFIG_PREFIX + digest[:12]


def _has_mig(node: Node | None) -> bool:
    return node is not None and any(g.mode == "mig" for g in node.gpus)


def _write_key(context: Context, configmap: str, key: str, edit: Any) -> bool:
    """Set one key of a ConfigMap in the operator's namespace to `edit(old text)`; False where it already holds it.
    Written with the resourceVersion just read: a concurrent writer's 409 is a fresh read and another try."""
    namespace = context.settings.operator_namespace
    for _ in range(CONFLICT_RETRIES):
        found = context.api.get("configmap", configmap, namespace)
        data = (found or {}).get("data") or {}
        text = edit(data.get(key))
        if data.get(key) == text:
            return False
        if found is None:
            context.api.create("configmap", {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": configmap, "namespace": namespace},
                                             "data": {key: text}})
            return True
        try:
            context.api.patch("configmap", configmap, {"metadata": {"resourceVersion": found["metadata"].get(
                "resourceVersion")}, "data": {key: text}}, namespace=namespace)
        except ClusterConflict:
            continue
        return True
    raise StepFailed(f"configmap {namespace}/{configmap} kept changing under gpuadmin ({CONFLICT_RETRIES} tries)")


def _with_mig_config(text: str | None, name: str, config: list[dict[str, Any]] | None) -> str:
    """The mig-parted file with `name` set to `config` (and `all-disabled`, which leaving MIG names)."""
    where = f"configmap {MIG_MANAGER_KEY}"
    loaded: dict[str, Any] = {"version": "v1", "mig-configs": {}}
    try:  # the cluster's text is hostile like any file: the strict reader refuses alias bombs, tags, huge files
        if text:
            loaded = load_yaml(text, where).data
    except InputError as bad:
        raise StepFailed(f"the mig-parted ConfigMap's config.yaml cannot be read: {bad}") from None
    if not isinstance(loaded.get("mig-configs"), dict):
        raise StepFailed("the mig-parted ConfigMap's config.yaml is not a mig-parted config (no mig-configs)")
    configs: dict[str, Any] = loaded["mig-configs"]
    wanted: dict[str, Any] = {ALL_DISABLED: configs.get(ALL_DISABLED) or [{"devices": "all", "mig-enabled": False}]}
    if config is not None:
        wanted[name] = config
    if all(configs.get(k) == v for k, v in wanted.items()) and text:
        return text
    loaded["mig-configs"] = {**configs, **wanted}
    return yaml.safe_dump(loaded, sort_keys=False, default_flow_style=None)


def _node_labels(context: Context, name: str) -> dict[str, str]:
    node = context.api.get("node", name)
    if node is None:
        raise StepFailed(f"node {name} is not on the cluster (`gpuadmin sync` to see it as it is)")
    labels: dict[str, str] = node.get("metadata", {}).get("labels") or {}
    return labels


def apply_mig(context: Context, node: Node) -> bool:
    """The node's MIG layout through the mig-manager; True where gpuadmin changed something."""
    layout = node_mig_config(node) if _has_mig(node) else None
    name = config_name(layout) if layout is not None else ALL_DISABLED
    wrote = _write_key(context, context.settings.mig_parted_configmap, MIG_MANAGER_KEY,
                       lambda text: _with_mig_config(text, name, layout))
    labels = _node_labels(context, node.name)
    if labels.get(MIG_CONFIG_LABEL) != name:
        context.api.patch("node", node.name, {"metadata": {"labels": {MIG_CONFIG_LABEL: name, MIG_STATE_LABEL: None}}})
        wrote = True
    elif labels.get(MIG_STATE_LABEL) == "success":
        return wrote
    context.saw("node", node.name, _wait_for_mig_manager(context, node.name, name))
    return True


def _wait_for_mig_manager(context: Context, name: str, config: str) -> Obj:
    while True:
        node = context.api.get("node", name) or {}
        labels = node.get("metadata", {}).get("labels") or {}
        state = labels.get(MIG_STATE_LABEL)
        if labels.get(MIG_CONFIG_LABEL) != config:
            raise StepFailed(f"node {name}: {MIG_CONFIG_LABEL} is now {labels.get(MIG_CONFIG_LABEL)!r}, not "
                             f"{config!r}: something else relabelled the node")
        if state == "success":
            return node
        if state == "failed":
            raise StepFailed(f"node {name}: the mig-manager reports {MIG_STATE_LABEL}=failed applying {config} (its "
                             "logs say why; the node keeps the layout it had)")
        if context.remaining() <= 0:
            raise StepFailed(f"node {name}: timed out waiting for the mig-manager to apply {config}; last seen "
                             f"{MIG_STATE_LABEL}={state or '(unset)'}")
        context.sleep(min(context.settings.poll_interval_s, max(context.remaining(), 0.0)))


def apply_device_plugin(context: Context, node: Node) -> bool:
    """The node's device-plugin config (sharing, MIG strategy) and its label; True where gpuadmin changed it."""
    text = yaml.safe_dump(node_config(node), sort_keys=False).rstrip("\n")
    name = config_name(text)
    wrote = _write_key(context, context.settings.device_plugin_configmap, name, lambda _old: text)
    if _node_labels(context, node.name).get(DEVICE_PLUGIN_LABEL) != name:
        context.saw("node", node.name, context.api.patch(
            "node", node.name, {"metadata": {"labels": {DEVICE_PLUGIN_LABEL: name}}}))
        wrote = True
    return wrote


def reconcile_gpus(context: Context, name: str, *, mig: bool) -> Done:
    """Bring the node's GPU configuration on the cluster to the plan's: its MIG layout where `mig` (a layout
    entered, changed or left), then its device-plugin config."""
    node = context.node(name)
    wrote = apply_mig(context, node) if mig else False
    wrote = apply_device_plugin(context, node) or wrote
    return Done("executed", f"node {name}: GPU configuration applied") if wrote else Done(
        "already", f"node {name}: the cluster already has this GPU configuration")


def _mig_involved(context: Context, name: str) -> bool:
    return _has_mig(context.after.node(name)) or _has_mig(context.before.node(name))


def set_mig(context: Context, change: ch.SetMig) -> Done:
    return reconcile_gpus(context, change.node, mig=True)


def set_mode(context: Context, change: ch.SetMode) -> Done:
    return reconcile_gpus(context, change.node, mig=_mig_involved(context, change.node))


def set_time_slicing(context: Context, change: ch.SetTimeSlicing) -> Done:
    return reconcile_gpus(context, change.node, mig=False)
