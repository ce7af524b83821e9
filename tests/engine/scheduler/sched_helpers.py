"""Small hand-built clusters for the scheduler tests."""

from __future__ import annotations

from typing import Any

from gpuadmin.engine.scheduler import SchedulePlan, schedule
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory

H100 = "H100-SXM5-80GB"
A100 = "A100-SXM4-80GB"


def node(
    name: str,
    n: int = 8,
    model: str = H100,
    *,
    nvlink: str = "nvswitch",
    network: str | None = None,
    state: str = "ready",
    gpus: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "platform": "baremetal",
        "nvlink": nvlink,
        "state": state,
        "gpus": gpus if gpus is not None else [{"index": i, "model": model, "mode": "full"} for i in range(n)],
    }
    if network is not None:
        out["rdma"] = {"nics": 8, "gbps": 400, "network": network}
    out.update(extra)
    return out


def job(
    name: str,
    queue: str = "q",
    *,
    status: str = "pending",
    placement: list[dict[str, Any]] | None = None,
    priority: int = 0,
    preemptible: bool = True,
    isolation: str | None = None,
    **request: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "queue": queue,
        "request": request,
        "priority": priority,
        "preemptible": preemptible,
    }
    if isolation is not None:
        out["isolation"] = isolation
    if placement is not None:
        out["status"] = status if status != "pending" else "running"
        out["placement"] = placement
    elif status != "pending":
        out["status"] = status
    return out


def queue(name: str = "q", quota: float | None = None, limit: float | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, **extra}
    if quota is not None:
        out["quota"] = {"gpus": quota}
    if limit is not None:
        out["limit"] = {"gpus": limit}
    return out


def cluster(
    nodes: list[dict[str, Any]], jobs: list[dict[str, Any]], queues: list[dict[str, Any]] | None = None
) -> ClusterState:
    inv = Inventory.model_validate(
        {
            "version": 1,
            "cluster": "test",
            "queues": queues or [queue(quota=1000)],
            "nodes": nodes,
            "jobs": jobs,
        },
        strict=False,
    )
    return ClusterState.from_inventory(inv)


def run(state: ClusterState, policy: str = "binpack") -> SchedulePlan:
    result = schedule(state, "spread" if policy == "spread" else "binpack")
    assert result.plan.allowed, result.plan.violations
    return result


def binds(result: SchedulePlan) -> dict[str, list[tuple[str, int, int | None]]]:
    out: dict[str, list[tuple[str, int, int | None]]] = {}
    for c in result.changes:
        if c.op == "bind-job":
            out[c.name] = [(s.node, s.gpu, s.mig_start) for s in c.placement]
    return out


def nodes_of(result: SchedulePlan, name: str) -> set[str]:
    return {n for n, _, _ in binds(result).get(name, [])}
