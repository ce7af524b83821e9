"""Shared helpers for the adapter tests: the real fixtures, golden files, Kubernetes schema validation."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden"

SHA256 = {
    "mig-parted_config-default.yaml": "f94c3be382d7849525ea90a83d7cb523c6a1fef7f4093decefe8ac73a2def913",
    "time-slicing-config-fine.yaml": "1d19024af22787294de5c50769f6af9584a0b85fa73585d2c4e9c3c4167598e7",
    "h100-mig-mixed-all-balanced_node-labels.json": "0b760bf1bf474a34eb25c8661117a014a40659c3eb77bba7b04697c701346313",
    "k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml": "c7403cf2d8755a141651017c5de0a58fa4394c78e3fcb14d5ef799dd3817b628",
    "telegraf_a100-sxm4-80gb_mig-4x1g.20gb.xml": "6eeba22e13ac4203ae5ab71a6e72fc1ee1e585ed1ef8fbe6ab493a222e3b2b74",
    "8x-a100-sxm4-80gb_nv12_8nic_deepep-issue-13.txt": "5ca4ac9633b1d58b4cd747193fc63bbcbdba8a112793389f950f185120ea74f7",  # noqa: E501
    "4x-a100-sxm_nv4-mesh_4nic_nccl-tests-issue-331.txt": "52da184e55f5f018c02a2b0cd83b82a157f0c872bfaad46e39dd3b57f7badef6",  # noqa: E501
    "nvidia-smi_h200-141gb_recorded-2026-12-04.xml": "0999c48ddf0cbbe206aaca209382bf2857947e0a0475a3bf91f09516fe1f231c",
}

H100_XML = FIXTURES / "k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml"
H200_XML = FIXTURES / "nvidia-smi_h200-141gb_recorded-2026-12-04.xml"
A100_XML = FIXTURES / "telegraf_a100-sxm4-80gb_mig-4x1g.20gb.xml"
TOPO = FIXTURES / "8x-a100-sxm4-80gb_nv12_8nic_deepep-issue-13.txt"
TOPO_MESH = FIXTURES / "4x-a100-sxm_nv4-mesh_4nic_nccl-tests-issue-331.txt"
MIG_PARTED = FIXTURES / "mig-parted_config-default.yaml"
TIME_SLICING = FIXTURES / "time-slicing-config-fine.yaml"
GFD_LABELS = FIXTURES / "h100-mig-mixed-all-balanced_node-labels.json"


def fixture_bytes(name: str) -> bytes:
    data = (FIXTURES / name).read_bytes()
    assert hashlib.sha256(data).hexdigest() == SHA256[name], f"{name} is no longer the byte-exact copy"
    return data


def gfd_node_list(name: str = "s4124-0073", unschedulable: bool = False) -> dict[str, Any]:
    """The fixture generator: the real GFD label map wrapped into a `kubectl get nodes -o json` List."""
    labels = json.loads(fixture_bytes("h100-mig-mixed-all-balanced_node-labels.json"))
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "capacity": {
                "cpu": "96",
                "memory": "1056765716Ki",
                "nvidia.com/gpu": "0",
                "nvidia.com/mig-1g.10gb": "2",
                "nvidia.com/mig-2g.20gb": "1",
                "nvidia.com/mig-3g.40gb": "1",
            }
        },
    }
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [node]}


def golden(name: str, data: Any) -> None:
    """Compare `data` (as YAML) with golden/<name>.yaml; GPUADMIN_UPDATE_GOLDEN=1 rewrites the file."""
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
    path = GOLDEN / f"{name}.yaml"
    if os.environ.get("GPUADMIN_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no golden file {path}; run with GPUADMIN_UPDATE_GOLDEN=1 to create it")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file {path}"


K8S_VERSION = "1.33.0"


def validate_k8s(manifest: dict[str, Any]) -> None:
    """Validate a core Kubernetes object against the official OpenAPI schema (kubernetes-validate, offline,
    strict: unknown fields are errors)."""
    import kubernetes_validate

    try:
        kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as bad:
        raise AssertionError(
            f"{manifest['kind']} {manifest['metadata'].get('name')}: {bad.message} at {list(bad.path)}"
        ) from None
