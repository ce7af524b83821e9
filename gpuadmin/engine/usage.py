"""What a running job consumes, in GPU-equivalents and GPU memory, for quota and fair share.

A whole GPU counts 1; a MIG instance counts its share of the GPU's compute slices (3g of 7 = 3/7);
a fractional job counts its fraction (or its memory over the GPU's). Memory is counted alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuadmin.catalog import get_catalog
from gpuadmin.model import Job, Node, Slot


@dataclass(frozen=True, slots=True)
class Usage:
    gpus: float = 0.0
    gpu_memory_gib: float = 0.0
    nonpreemptible_gpus: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.gpus + other.gpus, self.gpu_memory_gib + other.gpu_memory_gib,
                     self.nonpreemptible_gpus + other.nonpreemptible_gpus)

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.gpus - other.gpus, self.gpu_memory_gib - other.gpu_memory_gib,
                     self.nonpreemptible_gpus - other.nonpreemptible_gpus)


ZERO = Usage()


def slot_share(node: Node | None, slot: Slot, job: Job) -> tuple[float, float]:
    """(GPU-equivalents, GiB) one slot gives this job; (0, 0) for a slot that does not resolve."""
    gpu = node.gpu(slot.gpu) if node is not None else None
    model = get_catalog().model(gpu.model) if gpu is not None else None
    if gpu is None:
        return 0.0, 0.0
    if model is None:
        # a GPU the catalog does not know is only ever whole or time-sliced (the MIG rules refuse the rest);
        # it counts against quota like any other GPU, with the memory its source reported
        if gpu.not_in_catalog is None or slot.mig_start is not None:
            return 0.0, 0.0
        memory = (gpu.not_in_catalog.memory_mib or 0) / 1024
    else:
        memory = model.memory_mib / 1024
    if slot.mig_start is not None and model is not None:
        instance = next((i for i in gpu.mig or () if i.start == slot.mig_start), None)
        profile = model.mig_profile(instance.profile) if instance is not None else None
        if profile is None or not model.compute_slices or not model.memory_slices:
            return 0.0, 0.0
        share = profile.compute_slices / model.compute_slices
        mem = profile.memory_gib if profile.memory_gib is not None else (
            memory * profile.memory_slices / model.memory_slices)
        if job.request.fraction is not None:
            return share * job.request.fraction, mem * job.request.fraction
        return share, mem
    if job.request.fraction is not None:
        return job.request.fraction, memory * job.request.fraction
    if job.request.gpu_memory_gib is not None:
        share = min(1.0, job.request.gpu_memory_gib / memory) if memory else 1.0
        return share, job.request.gpu_memory_gib
    return 1.0, memory


def job_usage(job: Job, node_of: Callable[[str], Node | None]) -> Usage:
    if job.status != "running":
        return ZERO
    gpus = mem = 0.0
    for slot in job.placement:
        share, gib = slot_share(node_of(slot.node), slot, job)
        gpus += share
        mem += gib
    return Usage(gpus, mem, 0.0 if job.preemptible else gpus)
