"""Issue 19, point 1: every name gpuadmin writes into a Kubernetes object passes Kubernetes' own name rules.

The OpenAPI schema (test_pods_queues.py) types a resource name or a label as a plain string, so it let
`nvidia.com/mig-1g.10gb+me` through; the API server refuses it (a qualified name has no `+`). The rules here
are apimachinery's (gpuadmin/adapters/k8s_names.py cites each), checked on every export of every bundled sample
and of a generated inventory: object names, namespaces, label keys and values, annotation keys, container
resource names, node selectors and affinity expressions, Kueue resource names, ConfigMap keys, and the resource
names inside the device-plugin configs (also by the plugin's own rule).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.generate import dump_inventory, generate_inventory
from gpuadmin.adapters import export_mig_parted_configmap
from gpuadmin.adapters.device_plugin import plugin_resource_name
from gpuadmin.catalog import get_catalog, mig_device_resource_name
from gpuadmin.model.k8s_names import (
    DNS1123_LABEL,
    NAME_PART,
    dns1123_subdomain_problems,
    label_value_problems,
)
from gpuadmin.service import Service

# The rest of Kubernetes' name rules, which only this test needs (the exports must pass them; gpuadmin's own
# checks use the two above): kubernetes/apimachinery pkg/util/validation/validation.go `IsDNS1123Label`,
# `IsQualifiedName` (since 2025 an alias of pkg/api/validate/content/kube.go `IsLabelKey`: an optional
# DNS-1123-subdomain prefix and `/`, then a name part of at most 63 characters); kubernetes/kubernetes
# pkg/apis/core/helper/helpers.go `IsExtendedResourceName` and pkg/apis/core/validation/validation.go
# `validateContainerResourceName`.
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL)
_NAME_PART_RE = re.compile(NAME_PART)
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_NATIVE_NAMESPACE = "kubernetes.io/"
_QUOTA_REQUESTS_PREFIX = "requests."


def dns1123_label_problems(value: str) -> list[str]:
    problems = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS1123_LABEL_RE.fullmatch(value):
        problems.append("a DNS-1123 label must consist of lower case alphanumeric characters or '-', and must "
                        "start and end with an alphanumeric character")
    return problems


def qualified_name_problems(value: str) -> list[str]:
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name is a name with an optional DNS subdomain prefix and one '/'"]
    problems = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {p}" for p in dns1123_subdomain_problems(prefix)]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _NAME_PART_RE.fullmatch(name):
        problems.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                        "end with an alphanumeric character")
    return problems


def extended_resource_name_problems(value: str) -> list[str]:
    """What a device plugin may advertise: a domain prefix other than `kubernetes.io`, not `requests.`-prefixed,
    and `requests.` + name still a qualified name."""
    if "/" not in value or _NATIVE_NAMESPACE in value:
        return ["an extended resource name needs a domain prefix other than kubernetes.io (e.g. nvidia.com/gpu)"]
    if value.startswith(_QUOTA_REQUESTS_PREFIX):
        return ["an extended resource name may not start with 'requests.'"]
    return [f"as a quota name: {p}" for p in qualified_name_problems(_QUOTA_REQUESTS_PREFIX + value)]


def container_resource_name_problems(value: str) -> list[str]:
    problems = qualified_name_problems(value)
    if problems:
        return problems
    if "/" not in value:
        if value not in _STANDARD_CONTAINER_RESOURCES and not value.startswith("hugepages-"):
            return ["must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-*)"]
        return []
    return [] if _NATIVE_NAMESPACE in value else extended_resource_name_problems(value)

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample-inventories").glob("*.yaml"))
# apimachinery pkg/util/validation/validation.go IsConfigMapKey: `[-._a-zA-Z0-9]+`, at most 253, not "." / ".."
CONFIG_MAP_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")


# ------------------------------------------------------------------------------------------------ the rules


@pytest.mark.parametrize(
    "value, valid",
    [  # cases of apimachinery's validation_test.go TestIsQualifiedName, and the name the API server refused
        ("simple", True), ("now-with-dashes", True), ("1-starts-with-num", True), ("1234", True),
        ("simple/simple", True), ("now-with-dashes/simple", True), ("1-num.2-num/3-num", True),
        ("example.com/Uppercase_And.Dots-9", True), ("a" * 63, True), ("nvidia.com/mig-1g.10gb.me", True),
        ("nvidia.com/mig-1g.10gb+me", False), ("", False), ("a" * 64, False), ("/simple", False),
        ("simple/", False), ("Example.com/x", False), ("a/b/c", False), ("-dash-start", False),
        ("dot-end.", False), ("space in", False),
    ],
)
def test_qualified_names(value: str, valid: bool) -> None:
    assert (qualified_name_problems(value) == []) is valid


@pytest.mark.parametrize(
    "value, valid",
    [("", True), ("simple", True), ("now-with-dashes", True), ("1-num.2_under", True), ("a" * 63, True),
     ("a" * 64, False), ("-start", False), ("end-", False), ("a+b", False), ("DOMAIN\\user", False)],
)
def test_label_values(value: str, valid: bool) -> None:
    assert (label_value_problems(value) == []) is valid


@pytest.mark.parametrize(
    "value, valid",
    [("cpu", True), ("memory", True), ("hugepages-2Mi", True), ("nvidia.com/gpu", True),
     ("nvidia.com/mig-1g.10gb.me", True), ("rdma/rdma_shared_device_a", True),
     ("nvidia.com/mig-1g.10gb+me", False), ("gpu", False), ("requests.nvidia.com/gpu", False)],
)
def test_container_resource_names(value: str, valid: bool) -> None:
    assert (container_resource_name_problems(value) == []) is valid


def test_extended_resources_need_a_domain_other_than_kubernetes_io() -> None:
    assert extended_resource_name_problems("nvidia.com/gpu") == []
    assert extended_resource_name_problems("kubernetes.io/gpu") != []
    assert extended_resource_name_problems("gpu") != []


def test_dns1123() -> None:
    assert dns1123_label_problems("gpu-h100-01") == [] and dns1123_label_problems("a.b") != []
    assert dns1123_subdomain_problems("a.b-c") == [] and dns1123_subdomain_problems("A") != []
    assert dns1123_subdomain_problems("a" * 254) != []


@pytest.mark.parametrize(
    "device, resource",
    [  # the plugin's rule (k8s-device-plugin internal/rm/rm.go): "mig-" + profile, every "+" as "."
        ("3g.40gb", "nvidia.com/mig-3g.40gb"),
        ("1g.10gb+me", "nvidia.com/mig-1g.10gb.me"),
        ("1g.24gb+me.all", "nvidia.com/mig-1g.24gb.me.all"),
        ("1g.24gb-me", "nvidia.com/mig-1g.24gb-me"),
        ("2g.48gb+gfx", "nvidia.com/mig-2g.48gb.gfx"),
        ("1c.3g.71gb", "nvidia.com/mig-1c.3g.71gb"),
    ],
)
def test_mig_resource_names_are_the_plugins(device: str, resource: str) -> None:
    assert mig_device_resource_name(device) == resource


def test_every_catalog_mig_profile_has_a_valid_resource_name() -> None:
    """The plugin advertises every GI profile the catalog holds (mixed strategy): each name must be a valid
    extended resource name, and the plugin's own parser must accept it."""
    for model in get_catalog().gpu_models.values():
        for profile in model.mig_profiles:
            name = mig_device_resource_name(profile.name)
            assert container_resource_name_problems(name) == [], (model.name, profile.name)
            assert extended_resource_name_problems(name) == [], (model.name, profile.name)
            assert plugin_resource_name(name) == (name, []), (model.name, profile.name)


# ------------------------------------------------------------------------------------- the exported objects


def _labels(where: str, labels: Any) -> list[str]:
    out = []
    for key, value in (labels or {}).items():
        out += [f"{where}: label key {key!r}: {p}" for p in qualified_name_problems(key)]
        out += [f"{where}: label {key}={value!r}: {p}" for p in label_value_problems(str(value))]
    return out


def _resource_name(where: str, name: str) -> list[str]:
    problems = container_resource_name_problems(name)
    if not problems and "/" in name:  # what gpuadmin names with a domain is a device plugin's resource
        problems = extended_resource_name_problems(name)
    return [f"{where}: resource {name!r}: {p}" for p in problems]


def _pod_spec(where: str, spec: dict[str, Any]) -> list[str]:
    out = _labels(f"{where} nodeSelector", spec.get("nodeSelector"))
    for container in spec.get("containers", []):
        out += [f"{where}: container {container['name']!r}: {p}" for p in dns1123_label_problems(container["name"])]
        for kind in ("limits", "requests"):
            for name in container.get("resources", {}).get(kind, {}):
                out += _resource_name(f"{where} {kind}", name)
    for volume in spec.get("volumes", []):
        out += [f"{where}: volume {volume['name']!r}: {p}" for p in dns1123_label_problems(volume["name"])]
    terms = (spec.get("affinity", {}).get("nodeAffinity", {})
             .get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []))
    for term in terms:
        for expression in term.get("matchExpressions", []):
            out += [f"{where}: affinity key {expression['key']!r}: {p}"
                    for p in qualified_name_problems(expression["key"])]
            if expression["operator"] in ("In", "NotIn"):
                for value in expression.get("values", []):
                    out += [f"{where}: affinity value {value!r}: {p}" for p in label_value_problems(value)]
    return out


def _device_plugin_config(where: str, text: str) -> list[str]:
    config = yaml.safe_load(text)
    out = []
    for method in ("timeSlicing", "mps"):
        for resource in (config.get("sharing") or {}).get(method, {}).get("resources", []):
            out += _resource_name(f"{where} sharing.{method}", resource["name"])
            out += [f"{where}: {p}" for p in plugin_resource_name(resource["name"])[1]]
    return out


def _config_map(where: str, data: dict[str, str]) -> list[str]:
    out = []
    for key, value in data.items():
        if not CONFIG_MAP_KEY.match(key) or key in (".", ".."):
            out.append(f"{where}: data key {key!r} is not a ConfigMap key")
        if key != "config.yaml":  # the device plugin's per-node configs; config.yaml is mig-parted's
            out += _device_plugin_config(f"{where} data.{key}", value)
    return out


def _cluster_queue(where: str, spec: dict[str, Any]) -> list[str]:
    out = []
    for group in spec.get("resourceGroups", []):
        for name in group["coveredResources"]:
            out += _resource_name(f"{where} coveredResources", name)
        for flavor in group["flavors"]:
            out += [f"{where}: flavor {flavor['name']!r}: {p}" for p in dns1123_subdomain_problems(flavor["name"])]
            for resource in flavor["resources"]:
                out += _resource_name(f"{where} flavor {flavor['name']}", resource["name"])
    return out


def _object(obj: dict[str, Any]) -> list[str]:
    meta = obj["metadata"]
    where = f"{obj['kind']} {meta['name']}"
    out = [f"{where}: name: {p}" for p in dns1123_subdomain_problems(meta["name"])]
    if "namespace" in meta:
        out += [f"{where}: namespace: {p}" for p in dns1123_label_problems(meta["namespace"])]
    out += _labels(where, meta.get("labels"))
    out += [f"{where}: annotation key {k!r}: {p}" for k in meta.get("annotations", {})
            for p in qualified_name_problems(k)]
    spec = obj.get("spec", {})
    if obj["kind"] == "Pod":
        out += _pod_spec(where, spec)
    elif obj["kind"] == "Job":
        out += _labels(f"{where} template", spec["template"]["metadata"].get("labels"))
        out += _pod_spec(where, spec["template"]["spec"])
    elif obj["kind"] == "ConfigMap":
        out += _config_map(where, obj["data"])
    elif obj["kind"] == "ResourceFlavor":
        out += _labels(f"{where} nodeLabels", spec.get("nodeLabels"))
    elif obj["kind"] == "ClusterQueue":
        out += _cluster_queue(where, spec)
    for reference in ("parentQueue", "clusterQueue"):  # KAI's parent queue, a Kueue LocalQueue's ClusterQueue
        if reference in spec:
            out += [f"{where}: {reference}: {p}" for p in dns1123_subdomain_problems(spec[reference])]
    return out


def _export_problems(service: Service) -> tuple[list[str], set[str]]:
    """The problems with every name in every export of one state, and every MIG resource name met."""
    nodes = list(service.state.nodes.values())
    objects: list[dict[str, Any]] = []
    for system in ("none", "kai", "kueue"):
        objects += service.export("pods", warnings=[], queue_system=system)
    objects.append(service.export("device-plugin", warnings=[]))
    objects.append(export_mig_parted_configmap(nodes))
    objects += service.export("queues", fmt="all")
    out = [p for obj in objects for p in _object(obj)]
    for node, labels in service.export("labels").items():
        out += [f"node {node}: {p}" for p in dns1123_subdomain_problems(node)]
        out += _labels(f"node {node}", labels)
    for config in service.export("mig-parted", warnings=[])["mig-configs"]:  # nvidia.com/mig.config values
        out += [f"mig-parted config {config!r}: {p}" for p in label_value_problems(config)]
    mig_resources = {name for obj in objects if obj["kind"] in ("Pod", "Job")
                     for spec in ([obj["spec"]] if obj["kind"] == "Pod" else [obj["spec"]["template"]["spec"]])
                     for c in spec["containers"] for name in c["resources"]["limits"]
                     if name.startswith("nvidia.com/mig-")}
    return out, mig_resources


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_every_export_of_every_sample_passes_kubernetes_name_rules(sample: Path) -> None:
    problems, mig_resources = _export_problems(Service(inventory=sample))
    assert problems == []
    if sample.stem in ("k8s-mixed", "oci-h100"):  # each holds a job on a +me instance (video-*)
        assert any(name.endswith(".me") for name in mig_resources), mig_resources


def test_every_export_of_a_generated_inventory_passes_kubernetes_name_rules(tmp_path: Path) -> None:
    """A generated inventory (seed 0 holds pending +me jobs), its bare-metal nodes made Kubernetes workers so
    that the device-plugin configs and labels are written too."""
    data = generate_inventory(48, 300, seed=0)
    for node in data["nodes"]:
        if node.get("platform", "baremetal") == "baremetal":
            node["orchestrator"] = "kubernetes"
    path = tmp_path / "generated.yaml"
    with path.open("w", encoding="utf-8") as stream:
        dump_inventory(data, stream)
    service = Service(inventory=path)
    problems, mig_resources = _export_problems(service)
    assert problems == []
    assert service.export("device-plugin", warnings=[])["data"]
    assert any(name.endswith(".me") for name in mig_resources), mig_resources


@pytest.mark.parametrize("value", ["alice\n", "node-1\n"])
def test_a_trailing_newline_is_no_name(value: str) -> None:
    """The rules matched with `re.match(...$)`, which lets a trailing newline through: an owner `alice\\n` became
    a label the API server refuses. The whole value must match."""
    assert label_value_problems(value)
    assert dns1123_subdomain_problems(value)
