"""Dynamic GPU sharing (Run:ai/KAI fractions on full-mode GPUs): the arithmetic every part of the engine shares.

On a node with `sharing: {fractions: dynamic}` a full-mode GPU is *free* (no holder), *whole* (a whole-GPU job
holds it) or *shared* (fractional jobs hold it). A shared GPU offers its compute (1) and its memory less the
reserved slice (`reserved_gib`) to fractions: a `fraction: f` job takes f of both, a `gpu_memory_gib: g` job
takes g GiB and g / usable of the compute share, so one sum — the *need* — says whether the GPU is full.
"""

from __future__ import annotations

from gpuadmin.catalog import get_catalog
from gpuadmin.model import Gpu, Job, Node


def is_fractional(job: Job) -> bool:
    """A request for part of one GPU (`fraction` or `gpu_memory_gib`)."""
    return job.request.fractional


def shares_dynamically(node: Node | None, gpu: Gpu | None) -> bool:
    """True where fractions may share this GPU: a full-mode GPU of a catalog model on a dynamic-sharing node."""
    return (
        node is not None
        and node.sharing is not None
        and gpu is not None
        and gpu.mode == "full"
        and get_catalog().model(gpu.model) is not None
    )


def usable_gib(node: Node, gpu: Gpu) -> float:
    """GPU memory fractions may take on a dynamically shared GPU: its memory less the reserved slice."""
    model = get_catalog().model(gpu.model)
    reserved = node.sharing.reserved_gib if node.sharing is not None else 0.0
    return max(0.0, model.memory_mib / 1024 - reserved) if model is not None else 0.0


def need(job: Job, usable: float) -> float:
    """The share of a dynamically shared GPU a fractional job takes (compute and memory alike)."""
    if job.request.fraction is not None:
        return job.request.fraction
    if job.request.gpu_memory_gib is not None:
        return job.request.gpu_memory_gib / usable if usable > 0 else float("inf")
    return 1.0
