"""Pod specs and queue manifests: golden files, and schema validation of every manifest.

Core objects (Pod, Job, PersistentVolumeClaim, ConfigMap) are validated with kubernetes-validate against the
official Kubernetes OpenAPI schemas it bundles (offline, strict). The CRDs — KAI-Scheduler's Queue and Kueue's
ClusterQueue / ResourceFlavor / LocalQueue — are not in those schemas; they are validated against the JSON
schemas below, written by hand from the CRDs' fields (KAI-Scheduler
`deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml` v2; Kueue `config/components/crd/bases/
kueue.x-k8s.io_clusterqueues.yaml` v1beta1, …) with unknown fields refused.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml
from adapters_support import golden, validate_k8s

from gpuadmin.adapters import export_mig_parted_configmap, export_pods, export_queues
from gpuadmin.model import DynamicSharing, Gpu, Job, MigInstance, Node, Queue, Request, Resources, Slot

_NUMBER = {"type": "number"}
_QUOTA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"quota": _NUMBER, "limit": _NUMBER, "overQuotaWeight": _NUMBER},
}
_META = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
        "namespace": {"type": "string"},
        "labels": {"type": "object"},
    },
}
_QUANTITY = {
    "anyOf": [{"type": "integer"}, {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?([KMGTPE]i?|m)?$"}]
}

KAI_QUEUE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "scheduling.run.ai/v2"},
        "kind": {"const": "Queue"},
        "metadata": _META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "displayName": {"type": "string"},
                "parentQueue": {"type": "string"},
                "priority": {"type": "integer"},
                "preemptMinRuntime": {"type": "string"},
                "reclaimMinRuntime": {"type": "string"},
                "resources": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"cpu": _QUOTA, "gpu": _QUOTA, "memory": _QUOTA},
                },
            },
        },
    },
}
KUEUE_CLUSTER_QUEUE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "kueue.x-k8s.io/v1beta1"},
        "kind": {"const": "ClusterQueue"},
        "metadata": _META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "namespaceSelector": {"type": "object"},
                "cohort": {"type": "string", "maxLength": 253},
                "queueingStrategy": {"enum": ["StrictFIFO", "BestEffortFIFO"]},
                "fairSharing": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"weight": _QUANTITY},
                },
                "resourceGroups": {
                    "type": "array",
                    "maxItems": 16,
                    "items": {
                        "type": "object",
                        "required": ["coveredResources", "flavors"],
                        "additionalProperties": False,
                        "properties": {
                            "coveredResources": {
                                "type": "array",
                                "minItems": 1,
                                "maxItems": 16,
                                "items": {"type": "string"},
                            },
                            "flavors": {
                                "type": "array",
                                "minItems": 1,
                                "maxItems": 16,
                                "items": {
                                    "type": "object",
                                    "required": ["name", "resources"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "name": {"type": "string"},
                                        "resources": {
                                            "type": "array",
                                            "minItems": 1,
                                            "maxItems": 16,
                                            "items": {
                                                "type": "object",
                                                "required": ["name", "nominalQuota"],
                                                "additionalProperties": False,
                                                "properties": {
                                                    "name": {"type": "string"},
                                                    "nominalQuota": _QUANTITY,
                                                    "borrowingLimit": _QUANTITY,
                                                    "lendingLimit": _QUANTITY,
                                                },
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
KUEUE_RESOURCE_FLAVOR = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "kueue.x-k8s.io/v1beta1"},
        "kind": {"const": "ResourceFlavor"},
        "metadata": _META,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "nodeLabels": {"type": "object", "additionalProperties": {"type": "string"}},
                "nodeTaints": {"type": "array"},
                "tolerations": {"type": "array"},
            },
        },
    },
}
KUEUE_LOCAL_QUEUE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "kueue.x-k8s.io/v1beta1"},
        "kind": {"const": "LocalQueue"},
        "metadata": {**_META, "required": ["name", "namespace"]},
        "spec": {
            "type": "object",
            "required": ["clusterQueue"],
            "additionalProperties": False,
            "properties": {"clusterQueue": {"type": "string"}},
        },
    },
}
CRD_SCHEMAS = {
    ("scheduling.run.ai/v2", "Queue"): KAI_QUEUE,
    ("kueue.x-k8s.io/v1beta1", "ClusterQueue"): KUEUE_CLUSTER_QUEUE,
    ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"): KUEUE_RESOURCE_FLAVOR,
    ("kueue.x-k8s.io/v1beta1", "LocalQueue"): KUEUE_LOCAL_QUEUE,
}


def validate_any(manifest: dict[str, Any]) -> None:
    schema = CRD_SCHEMAS.get((manifest["apiVersion"], manifest["kind"]))
    if schema is None:
        validate_k8s(manifest)
    else:
        jsonschema.validate(manifest, schema)


QUEUES = [
    Queue(
        name="research", quota=Resources(gpus=16), limit=Resources(gpus=32), over_quota_weight=2, priority=100
    ),
    Queue(name="inference", quota=Resources(gpus=8)),
]
NODES = [
    Node(
        name="gpu-h100-01",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[
            Gpu(index=0, model="H100-SXM5-80GB"),
            Gpu(
                index=1,
                model="H100-SXM5-80GB",
                mode="mig",
                mig=[MigInstance(profile="2g.20gb", start=0), MigInstance(profile="3g.40gb", start=4)],
            ),
            Gpu(index=2, model="H100-SXM5-80GB", mode="time-sliced", replicas=4),
        ],
    ),
    Node(
        name="gpu-h100-02",
        platform="baremetal", orchestrator="kubernetes",
        gpus=[Gpu(index=i, model="H100-SXM5-80GB") for i in range(8)],
    ),
]
JOBS = [
    Job(
        name="llm-pretrain",
        queue="research",
        request=Request(gpus=8, nodes=2, nvlink=True, rdma=True),
        priority=50,
    ),
    Job(
        name="llm-ft",
        queue="research",
        request=Request(gpus=4, nodes=2, rdma=True),
        status="running",
        placement=[Slot(node="gpu-h100-02", gpu=i) for i in range(4)] + [Slot(node="gpu-h100-01", gpu=0)],
    ),
    Job(name="notebook-7", queue="research", request=Request(fraction=0.5), isolation="shared"),
    Job(name="infer-a", queue="inference", request=Request(mig="3g.40gb", model="H100-SXM5-80GB")),
    Job(
        name="infer-b",
        queue="inference",
        request=Request(mig="2g.20gb"),
        status="running",
        placement=[Slot(node="gpu-h100-01", gpu=1, mig_start=0)],
    ),
    Job(name="old", queue="inference", request=Request(gpus=1), status="completed"),
]


def test_pods_golden_and_valid() -> None:
    manifests = export_pods(JOBS, NODES)
    for manifest in manifests:
        validate_any(manifest)
    golden("pods", manifests)
    kinds = [(m["kind"], m["metadata"]["name"]) for m in manifests]
    assert kinds == [
        ("PersistentVolumeClaim", "gpuadmin-shared"),
        ("Pod", "infer-a"),
        ("Pod", "infer-b"),
        ("Pod", "llm-ft-0"),
        ("Pod", "llm-ft-1"),
        ("Job", "llm-pretrain"),
        ("Pod", "notebook-7"),
    ]
    pvc = manifests[0]
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    by_name = {m["metadata"]["name"]: m for m in manifests}
    gang = by_name["llm-pretrain"]["spec"]
    assert (gang["completionMode"], gang["completions"], gang["parallelism"]) == ("Indexed", 2, 2)
    container = gang["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 8, "rdma/rdma_shared_device_a": 1}
    assert container["volumeMounts"] == [{"name": "shared", "mountPath": "/mnt/shared"}]
    infer_b = by_name["infer-b"]["spec"]
    assert infer_b["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-2g.20gb": 1}
    terms = infer_b["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-h100-01"]}]}
    ]
    infer_a = by_name["infer-a"]["spec"]["affinity"]["nodeAffinity"]
    values = infer_a["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"
    ]
    assert values == [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
    ]
    ft_nodes = [
        by_name[f"llm-ft-{i}"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
        for i in range(2)
    ]
    assert ft_nodes == [["gpu-h100-02"], ["gpu-h100-01"]]
    ft_gpus = [
        by_name[f"llm-ft-{i}"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
        for i in range(2)
    ]
    assert ft_gpus == [4, 1]  # what each pod holds on its node


@pytest.mark.parametrize(
    "system, label", [("kai", "kai.scheduler/queue"), ("kueue", "kueue.x-k8s.io/queue-name")]
)
def test_pods_for_queue_systems(system: str, label: str) -> None:
    manifests = export_pods(JOBS, NODES, queue_system=system)  # type: ignore[arg-type]
    for manifest in manifests[1:]:
        validate_any(manifest)
        assert manifest["metadata"]["labels"][label] in ("research", "inference")
    pod = next(m for m in manifests if m["kind"] == "Pod")
    assert (pod["spec"].get("schedulerName") == "kai-scheduler") == (system == "kai")


def test_fraction_on_a_dynamically_shared_gpu_is_a_kai_fraction_pod() -> None:
    shared = Node(name="gpu-h100-12", platform="kubernetes", sharing=DynamicSharing(fractions="dynamic"),
                  gpus=[Gpu(index=0, model="H100-SXM5-80GB")])
    plain = Node(name="gpu-h100-13", platform="kubernetes",
                 gpus=[Gpu(index=0, model="H100-SXM5-80GB", mode="time-sliced", replicas=4)])
    jobs = [
        Job(name="nb-a", queue="research", request=Request(fraction=0.5), status="running",
            placement=[Slot(node="gpu-h100-12", gpu=0)]),
        Job(name="nb-b", queue="research", request=Request(gpu_memory_gib=20), status="running",
            placement=[Slot(node="gpu-h100-12", gpu=0)]),
        Job(name="nb-c", queue="research", request=Request(fraction=0.25), status="running",
            placement=[Slot(node="gpu-h100-13", gpu=0)]),
    ]
    pods = {m["metadata"]["name"]: m for m in export_pods(jobs, [shared, plain])[1:]}
    for pod in pods.values():
        validate_any(pod)
    assert pods["nb-a"]["metadata"]["annotations"] == {"gpu-fraction": "0.5", "gpuadmin/job": "nb-a",
                                                       "gpuadmin/queue": "research"}
    assert pods["nb-b"]["metadata"]["annotations"] == {"gpu-memory": "20480", "gpuadmin/job": "nb-b",
                                                      "gpuadmin/queue": "research"}
    for name in ("nb-a", "nb-b"):
        assert pods[name]["spec"]["schedulerName"] == "kai-scheduler"
        assert "nvidia.com/gpu" not in pods[name]["spec"]["containers"][0]["resources"]["limits"]
    # a fraction on a time-sliced GPU stays a device-plugin replica
    assert "gpu-fraction" not in pods["nb-c"]["metadata"]["annotations"]
    assert pods["nb-c"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}


def test_queues_golden_and_valid() -> None:
    manifests = export_queues(
        QUEUES, flavor="h100", node_labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    )
    for manifest in manifests:
        validate_any(manifest)
    golden("queues", manifests)
    kai = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "Queue"}
    assert kai["research"]["spec"]["resources"]["gpu"] == {"quota": 16, "limit": 32, "overQuotaWeight": 2}
    assert kai["inference"]["spec"]["resources"]["gpu"] == {"quota": 8, "limit": -1, "overQuotaWeight": 1}
    assert (
        kai["research"]["spec"]["parentQueue"] == "gpuadmin" and "parentQueue" not in kai["gpuadmin"]["spec"]
    )
    cq = {m["metadata"]["name"]: m for m in manifests if m["kind"] == "ClusterQueue"}
    research = cq["research"]["spec"]["resourceGroups"][0]["flavors"][0]
    assert research == {
        "name": "h100",
        "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 16}],
    }
    assert "borrowingLimit" not in cq["inference"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert {m["kind"] for m in manifests} == {"Queue", "ResourceFlavor", "ClusterQueue", "LocalQueue"}


def test_crd_schemas_refuse_bad_manifests() -> None:
    bad_kai = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"resources": {"gpu": {"quota": "lots"}}},
    }
    with pytest.raises(jsonschema.ValidationError):
        validate_any(bad_kai)
    bad_cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "f"}]}]},
    }
    with pytest.raises(jsonschema.ValidationError):
        validate_any(bad_cq)
    with pytest.raises(AssertionError):
        validate_any(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containerz": []}}
        )


def test_mig_parted_configmap_is_valid() -> None:
    validate_any(export_mig_parted_configmap(NODES))


def _expressions(spec: dict[str, Any]) -> list[dict[str, Any]]:
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert len(terms) == 1, "one term: all its expressions must hold"
    return list(terms[0]["matchExpressions"])


def test_pods_carry_cpu_memory_selector_affinity_owner_and_submit_time() -> None:
    raw = {
        "name": "sft-run",
        "queue": "research",
        "request": {"gpus": 2, "cpus": 16, "memory_gib": 128, "model": "H100-SXM5-80GB"},
        "owner": "alice",
        "submitted": "2026-12-03T10:15:00Z",
        "node_selector": {"pool": "training"},
        "node_affinity": [
            {"key": "zone", "operator": "In", "values": ["eu-1a", "eu-1b"]},
            {"key": "spot", "operator": "DoesNotExist"},
        ],
    }
    half = {"name": "nb", "queue": "research", "request": {"fraction": 0.5, "cpus": 0.5, "memory_gib": 1.5},
            "owner": "CORP\\bob"}
    manifests = export_pods([Job.model_validate(raw), Job.model_validate(half)], NODES)
    for manifest in manifests:
        validate_any(manifest)
    pods = {m["metadata"]["name"]: m for m in yaml.safe_load_all(yaml.safe_dump_all(manifests))}
    pod = pods["sft-run"]
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"nvidia.com/gpu": 2, "cpu": "16", "memory": "128Gi"}
    assert pod["spec"]["nodeSelector"] == {"pool": "training"}
    assert _expressions(pod["spec"]) == [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]},
        {"key": "zone", "operator": "In", "values": ["eu-1a", "eu-1b"]},
        {"key": "spot", "operator": "DoesNotExist"},
    ]
    assert pod["metadata"]["labels"]["gpuadmin/owner"] == "alice"
    assert pod["metadata"]["annotations"] == {
        "gpuadmin/job": "sft-run", "gpuadmin/queue": "research",  # the exact names a sync reads back
        "gpuadmin/owner": "alice",
        "gpuadmin/submitted": "2026-12-03T10:15:00+00:00",
    }
    notebook = pods["nb"]
    assert notebook["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "500m"
    assert notebook["spec"]["containers"][0]["resources"]["requests"]["memory"] == "1536Mi"
    assert "gpuadmin/owner" not in notebook["metadata"]["labels"], "not a label value: the annotation only"
    assert notebook["metadata"]["annotations"] == {"gpuadmin/job": "nb", "gpuadmin/queue": "research",
                                                   "gpuadmin/owner": "CORP\\bob"}


def test_a_job_in_a_vm_is_pinned_to_the_vms_node_and_not_warned_about() -> None:
    host = Node.model_validate({
        "name": "esx-1", "platform": "vsphere", "vsphere": {"version": "8.0U1"},
        "gpus": [{"index": 0, "model": "A40", "mode": "passthrough", "vm": "train-vm-01"}],
        "vms": [{"name": "train-vm-01", "hardware_version": 20, "gpus": [0]}],
    })
    running = Job.model_validate({"name": "in-vm", "queue": "research", "request": {"gpus": 1}, "vm": "train-vm-01",
                                  "status": "running", "placement": ["esx-1/0"]})
    pending = Job.model_validate({"name": "next", "queue": "research", "request": {"gpus": 1}, "vm": "train-vm-01"})
    warnings: list[str] = []
    manifests = export_pods([running, pending], [host], warnings=warnings)
    assert warnings == []
    for manifest in manifests[1:]:
        validate_any(manifest)
        assert _expressions(manifest["spec"]) == [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["train-vm-01"]}
        ]


def test_pods_carry_the_jobs_tolerations_and_read_back_with_them() -> None:
    from gpuadmin.adapters.kube_cluster import cluster_pod

    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                   {"key": "dedicated", "value": "infer"}, {"operator": "Exists"}]
    job = Job.model_validate({"name": "serve", "queue": "research", "request": {"gpus": 1},
                              "tolerations": tolerations})
    (manifest,) = [m for m in export_pods([job], NODES) if m["kind"] == "Pod"]
    validate_any(manifest)
    assert manifest["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "infer"}, {"operator": "Exists"}]
    assert cluster_pod(manifest).job().tolerations == job.tolerations
    plain = Job.model_validate({"name": "plain", "queue": "research", "request": {"gpus": 1}})
    assert all("tolerations" not in m.get("spec", {}) for m in export_pods([plain], NODES))
