"""Issue 12, item 4: the bundled OCI sample is the seed's OKE cluster, so its Kubernetes exports are real.

Device-plugin configs, node labels and pods of `sample-inventories/oci-h100.yaml`, parsed back and checked
against NVIDIA's real files (the device plugin's ConfigMap, GFD's labels of an H100 node) and the official
Kubernetes schemas — with no warnings: every job runs on a Kubernetes node.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from adapters_support import GFD_LABELS, TIME_SLICING, fixture_bytes, validate_k8s

from gpuadmin.adapters import export_device_plugin, export_labels, export_pods, parse_device_plugin_configmap
from gpuadmin.adapters.device_plugin import DEVICE_PLUGIN_LABEL, MIG_CONFIG_LABEL, mig_strategy
from gpuadmin.adapters.pods import RDMA_RESOURCE
from gpuadmin.model import Inventory, Node
from gpuadmin.store import load_inventory

ROOT = Path(__file__).resolve().parents[2]
OCI = ROOT / "sample-inventories" / "oci-h100.yaml"
# Kubernetes label values: at most 63 characters, alphanumerics with - _ . inside
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _oci() -> Inventory:
    return load_inventory(OCI)


def test_every_oci_node_is_an_oke_worker_on_bare_metal() -> None:
    for node in _oci().nodes:
        assert (node.platform, node.orchestrator) == ("baremetal", "kubernetes")
        assert node.labels["node.kubernetes.io/instance-type"] == node.shape == "BM.GPU.H100.8"
        assert node.labels["kubernetes.io/hostname"] == node.name
        assert node.labels["oci.oraclecloud.com/fault-domain"] in {f"FAULT-DOMAIN-{i}" for i in (1, 2, 3)}
        assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in node.labels.values())


def test_static_gfd_labels_are_what_gfd_writes_on_a_real_h100() -> None:
    real = json.loads(fixture_bytes(GFD_LABELS.name))
    for node in _oci().nodes:
        for key in ("nvidia.com/gpu.product", "nvidia.com/gpu.memory", "nvidia.com/gpu.family",
                    "nvidia.com/gpu.present", "nvidia.com/mig.capable"):
            assert node.labels[key] == real[key], (node.name, key)
        assert node.labels["nvidia.com/gpu.count"] == str(len(node.gpus))


def test_device_plugin_config_of_the_oci_sample_is_real() -> None:
    inv = _oci()
    warnings: list[str] = []
    exported = export_device_plugin(inv.nodes, warnings=warnings)
    assert warnings == []
    validate_k8s(exported)
    assert set(exported["data"]) == {f"gpuadmin-{n.name}" for n in inv.nodes}
    real_doc = yaml.safe_load(fixture_bytes(TIME_SLICING.name))
    real = parse_device_plugin_configmap(fixture_bytes(TIME_SLICING.name).decode())
    ours = parse_device_plugin_configmap(yaml.safe_dump(exported), "export")
    for node in inv.nodes:
        config = ours[f"gpuadmin-{node.name}"]
        assert config.mig_strategy == mig_strategy(node)
        replicas = {g.replicas for g in node.gpus if g.mode == "time-sliced"}
        if replicas:  # NVIDIA's own config shares nvidia.com/gpu the same way
            assert config.time_slicing == {"nvidia.com/gpu": max(r or 0 for r in replicas)}
            assert real["tesla-t4"].time_slicing.keys() == config.time_slicing.keys()
            doc = yaml.safe_load(exported["data"][f"gpuadmin-{node.name}"])
            real_shape = yaml.safe_load(real_doc["data"]["tesla-t4"])
            assert doc.keys() == real_shape.keys() and doc["sharing"].keys() == real_shape["sharing"].keys()
    assert any(c.mig_strategy == "mixed" for c in ours.values())  # the MIG pool
    assert any(c.time_slicing for c in ours.values())  # the shared pool


def test_labels_of_the_oci_sample_select_their_configs() -> None:
    inv = _oci()
    labels = export_labels(inv.nodes)
    real = json.loads(fixture_bytes(GFD_LABELS.name))
    assert MIG_CONFIG_LABEL in real  # the label mig-manager reads, as on a real node
    assert set(labels) == {n.name for n in inv.nodes}
    for node in inv.nodes:
        mine = labels[node.name]
        assert mine[DEVICE_PLUGIN_LABEL] == f"gpuadmin-{node.name}"
        has_mig = any(g.mode == "mig" for g in node.gpus)
        assert mine[MIG_CONFIG_LABEL] == (f"gpuadmin-{node.name}" if has_mig else "all-disabled")
        assert all(LABEL_VALUE.match(v) and len(v) <= 63 for v in mine.values())


def _node(inv: Inventory, name: str) -> Node:
    return next(n for n in inv.nodes if n.name == name)


def test_pods_of_the_oci_sample_run_on_its_oke_workers_with_the_rwx_volume() -> None:
    inv = _oci()
    warnings: list[str] = []
    manifests = export_pods(inv.jobs, inv.nodes, warnings=warnings)
    assert warnings == []
    documents = list(yaml.safe_load_all(yaml.safe_dump_all(manifests)))  # what `export pods` prints, parsed back
    assert documents == manifests
    pvc, *workloads = documents
    assert pvc["kind"] == "PersistentVolumeClaim"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"] and pvc["spec"]["storageClassName"] == "fss-dyn-storage"
    active = [j for j in inv.jobs if j.status in ("pending", "running")]
    assert len(workloads) >= len(active) > 0
    for manifest in documents:
        validate_k8s(manifest)
    by_job = {m["metadata"]["labels"]["gpuadmin/job"]: m for m in workloads}
    for job in active:
        manifest = by_job[job.name]
        spec = manifest["spec"]["template"]["spec"] if manifest["kind"] == "Job" else manifest["spec"]
        assert spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
        limits = spec["containers"][0]["resources"]["limits"]
        assert (RDMA_RESOURCE in limits) == job.request.rdma
        terms = spec.get("affinity", {}).get("nodeAffinity", {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
        for term in terms:  # every affinity selects a node of the sample by the labels the sample gives it
            [expression] = term["matchExpressions"]
            matching = [n for n in inv.nodes if n.labels.get(expression["key"]) in expression["values"]]
            assert matching, (job.name, expression)
            if job.status == "running":
                assert {n.name for n in matching} <= {s.node for s in job.placement}
    # the README's first session: eval-405b-shard waits for a 7g.80gb MIG instance
    assert "nvidia.com/mig-7g.80gb" in by_job["eval-405b-shard"]["spec"]["containers"][0]["resources"]["limits"]
    assert _node(inv, "gpu-h100-07").gpus[0].mode == "mig"
