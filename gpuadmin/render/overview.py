"""The overview an operator opens first: how the cluster's GPUs are carved and used, what is waiting and
why, which queues borrow, which nodes are out. Plain data; the console draws it.

A GPU is *free* when nothing holds any part of it, *full* when no part of it is left to give, and
*partly used* otherwise: a MIG GPU with one small instance held is partly used, not used.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.sharing import is_fractional, need, shares_dynamically, usable_gib
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu, Job, Node

Use = Literal["free", "partly used", "full"]
USES: tuple[Use, ...] = ("free", "partly used", "full")


def holders_by_slice(view: View, node: Node, gpu: Gpu) -> dict[int | None, list[Job]]:
    """The running jobs on this GPU, by the slice they hold: a MIG instance's start, or None for the whole GPU
    or a shared replica. Jobs in name order."""
    out: dict[int | None, list[Job]] = {}
    for name in sorted(view.holders(node.name, gpu.index)):
        job = view.job(name)
        if job is None:
            continue
        for start in {s.mig_start for s in job.placement if s.node == node.name and s.gpu == gpu.index}:
            out.setdefault(start, []).append(job)
    return out


@dataclass(frozen=True)
class DynamicShare:
    """A full GPU of a dynamic-sharing node as fractions hold it: each holder's share of the GPU and GiB, what
    is used and left of the memory that fractions may take (the GPU's less `reserved_gib`)."""

    holders: tuple[tuple[str, float, float], ...]  # (job, share of the GPU, GiB), by name
    usable_gib: float
    reserved_gib: float

    @property
    def used(self) -> float:
        return min(1.0, sum(share for _, share, _ in self.holders))

    @property
    def left_gib(self) -> float:
        return max(0.0, self.usable_gib * (1.0 - self.used))


def dynamic_share(view: View, node: Node, gpu: Gpu) -> DynamicShare | None:
    """How fractions share this GPU; None unless it is a full GPU of a dynamic-sharing node."""
    if not shares_dynamically(node, gpu) or node.sharing is None:
        return None
    usable = usable_gib(node, gpu)
    holders = []
    for job in holders_by_slice(view, node, gpu).get(None, ()):
        if is_fractional(job):
            share = need(job, usable)
            holders.append((job.name, round(share, 4), round(share * usable, 1)))
    return DynamicShare(tuple(holders), usable, node.sharing.reserved_gib)


def vm_holders(node: Node, gpu: Gpu) -> list[str]:
    """The VMs that hold this GPU: by passthrough (the GPU's `vm`, a VM's `gpus`), through an attached device
    group, or by a vGPU on it."""
    names = [gpu.vm] if gpu.vm else []
    groups = {g.name: g.gpus for g in node.device_groups}
    for vm in node.vms:
        if gpu.index in (vm.gpus or ()) or (vm.device_group and gpu.index in groups.get(vm.device_group, ())):
            names.append(vm.name)
    names += [v.vm for v in gpu.vgpus or ()]
    return sorted(set(names))


def gpu_use(view: View, node: Node, gpu: Gpu) -> Use:
    holders = view.holders(node.name, gpu.index)
    if gpu.mode != "vgpu" and vm_holders(node, gpu):  # a VM holds the whole GPU
        return "full"
    if gpu.mode == "mig":
        instances = gpu.mig or ()
        model = get_catalog().model(gpu.model)
        held = set(holders_by_slice(view, node, gpu))
        if not held:
            return "free"
        carved = sum(p.memory_slices for i in instances
                     if model is not None and (p := model.mig_profile(i.profile)) is not None)
        all_held = all(i.start in held for i in instances)
        return "full" if all_held and model is not None and carved >= model.memory_slices else "partly used"
    if gpu.mode == "vgpu":
        if not gpu.vgpus:
            return "free"
        model = get_catalog().model(gpu.model)
        board = model.vgpu_framebuffer_mib if model is not None else None
        sizes = [t.framebuffer_mib for v in gpu.vgpus
                 if model is not None and (t := model.vgpu_type(v.profile)) is not None]
        return "full" if board and len(sizes) == len(gpu.vgpus) and sum(sizes) >= board else "partly used"
    if gpu.mode == "passthrough":
        return "full" if gpu.vm else "free"
    if not holders:
        return "free"
    if gpu.mode == "time-sliced":
        return "full" if len(holders) >= (gpu.replicas or 1) else "partly used"
    dynamic = dynamic_share(view, node, gpu)
    if dynamic is not None and dynamic.holders:
        return "full" if dynamic.used >= 1.0 - 1e-9 else "partly used"
    shares = sum((job.request.fraction or 1.0) for name in holders if (job := view.job(name)) is not None)
    return "full" if shares >= 1.0 - 1e-9 else "partly used"


def cluster_overview(view: View, reason_codes: dict[str, str] | None) -> dict[str, Any]:
    modes: Counter[str] = Counter()
    uses: Counter[str] = Counter()
    models: Counter[str] = Counter()
    states: Counter[str] = Counter()
    out_of_service: list[dict[str, str]] = []
    gpus = 0
    for node in view.nodes():
        states[node.state] += 1
        if node.state != "ready":
            out_of_service.append({"node": node.name, "state": node.state})
        for gpu in node.gpus:
            gpus += 1
            modes[gpu.mode] += 1
            models[gpu.model] += 1
            uses[gpu_use(view, node, gpu)] += 1
    jobs: Counter[str] = Counter()
    pending = []
    for job in view.jobs():
        jobs[job.status] += 1
        if job.status in ("pending", "preempted"):
            pending.append(job.name)
    by_reason: Counter[str] | None = None
    if reason_codes is not None:
        by_reason = Counter(reason_codes.get(name, "unexplained") for name in pending)
    over_quota = []
    for queue in view.queues():
        used = view.queue_usage(queue.name).gpus
        quota = queue.quota.gpus
        if quota is not None and used > quota + 1e-9:
            over_quota.append({"queue": queue.name, "used_gpus": round(used, 2), "quota_gpus": quota,
                               "borrowed_gpus": round(used - quota, 2)})
    return {
        "cluster": view.cluster, "revision": view.revision, "nodes": sum(states.values()), "gpus": gpus,
        "nodes_by_state": dict(sorted(states.items())), "gpus_by_mode": dict(sorted(modes.items())),
        "gpus_by_model": dict(sorted(models.items())), "gpus_by_use": {u: uses.get(u, 0) for u in USES},
        "jobs_by_status": dict(sorted(jobs.items())),
        "pending_by_reason": None if by_reason is None else dict(by_reason.most_common()),
        "queues_over_quota": over_quota, "nodes_out_of_service": out_of_service,
    }


__all__ = ["USES", "DynamicShare", "cluster_overview", "dynamic_share", "gpu_use", "vm_holders"]
