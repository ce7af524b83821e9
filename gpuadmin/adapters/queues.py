"""Queues as KAI-Scheduler Queues and as Kueue ClusterQueues (+ ResourceFlavor + LocalQueues).

KAI (`scheduling.run.ai/v2`, kind `Queue`): `spec.resources.gpu` = {quota, limit, overQuotaWeight} from the
queue's quota, limit (-1 = no limit) and over-quota weight; `priority`; every queue is a child
(`parentQueue`) of one root queue that holds the cluster's total (quota -1: unlimited). cpu and memory are
left unlimited (-1): gpuadmin queues account GPUs only.

Kueue (`kueue.x-k8s.io/v1beta1`): one ResourceFlavor; per queue a ClusterQueue in one cohort with
`resourceGroups: [{coveredResources: [nvidia.com/gpu], flavors: [{name, resources: [{name: nvidia.com/gpu,
nominalQuota: quota, borrowingLimit: limit - quota}]}]}]` (no borrowingLimit when the queue has no limit),
`fairSharing.weight` from the over-quota weight, and a LocalQueue in the jobs' namespace. Kueue has no queue
priority (that is WorkloadPriorityClass, per workload); gpuadmin's queue priority is not exported there.
"""

from __future__ import annotations

from typing import Any, Literal

from gpuadmin.adapters._common import dns_name
from gpuadmin.model import Queue

QueueFormat = Literal["kai", "kueue", "all"]


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def kai_queues(queues: list[Queue], *, root: str = "gpuadmin") -> list[dict[str, Any]]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": dns_name(root)},
            "spec": {
                "resources": {"gpu": dict(unlimited), "cpu": dict(unlimited), "memory": dict(unlimited)}
            },
        }
    ]
    for queue in sorted(queues, key=lambda q: q.name):
        quota = queue.quota.gpus or 0
        limit = queue.limit.gpus if queue.limit is not None and queue.limit.gpus is not None else -1
        out.append(
            {
                "apiVersion": "scheduling.run.ai/v2",
                "kind": "Queue",
                "metadata": {"name": dns_name(queue.name)},
                "spec": {
                    "displayName": queue.name,
                    "parentQueue": dns_name(root),
                    "priority": queue.priority,
                    "resources": {
                        "gpu": {
                            "quota": quota,
                            "limit": limit,
                            "overQuotaWeight": _number(queue.over_quota_weight),
                        },
                        "cpu": dict(unlimited),
                        "memory": dict(unlimited),
                    },
                },
            }
        )
    return out


def kueue_queues(
    queues: list[Queue],
    *,
    flavor: str = "default-flavor",
    cohort: str = "gpuadmin",
    namespace: str = "gpuadmin",
    node_labels: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    flavor_spec: dict[str, Any] = {"nodeLabels": dict(node_labels)} if node_labels else {}
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": dns_name(flavor)},
            "spec": flavor_spec,
        }
    ]
    for queue in sorted(queues, key=lambda q: q.name):
        quota = queue.quota.gpus or 0
        resource: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": quota}
        if queue.limit is not None and queue.limit.gpus is not None:
            resource["borrowingLimit"] = max(0, queue.limit.gpus - quota)
        name = dns_name(queue.name)
        out.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "namespaceSelector": {},
                    "cohort": dns_name(cohort),
                    "queueingStrategy": "BestEffortFIFO",
                    "fairSharing": {"weight": str(_number(queue.over_quota_weight))},
                    "resourceGroups": [
                        {
                            "coveredResources": ["nvidia.com/gpu"],
                            "flavors": [{"name": dns_name(flavor), "resources": [resource]}],
                        }
                    ],
                },
            }
        )
        out.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"clusterQueue": name},
            }
        )
    return out


def export_queues(
    queues: list[Queue],
    *,
    flavor: str = "default-flavor",
    fmt: QueueFormat = "all",
    root: str = "gpuadmin",
    cohort: str = "gpuadmin",
    namespace: str = "gpuadmin",
    node_labels: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """KAI Queues, then Kueue objects (`fmt` picks one of them)."""
    out: list[dict[str, Any]] = []
    if fmt in ("kai", "all"):
        out += kai_queues(queues, root=root)
    if fmt in ("kueue", "all"):
        out += kueue_queues(
            queues, flavor=flavor, cohort=cohort, namespace=namespace, node_labels=node_labels
        )
    return out
