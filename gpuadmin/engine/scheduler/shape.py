"""A job's request shape: what placement needs to know of a job, hashable, so jobs are grouped by it.

Two jobs of one shape fit exactly the same slices; once a shape has failed to fit in a cycle, every later
job of that shape is skipped until capacity is released (evictions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.scheduler.fgd import TaskClass
from gpuadmin.model import Job
from gpuadmin.model.inventory import Isolation

ShapeKind = Literal["gpus", "mig", "fraction", "memory"]


@dataclass(frozen=True, slots=True)
class Shape:
    kind: ShapeKind
    gpus: int  # whole GPUs per node (gangs: per node); 1 for the other kinds
    nodes: int
    profile: str  # MIG profile as requested (canonicalised per model at placement)
    fraction: float
    gib: float
    model: str | None  # catalog name where the catalog knows it, else as written
    nvlink: bool
    rdma: bool
    shared: bool  # `Job.shared`, the one notion of "this job may share" of the rules and the scheduler
    isolation: Isolation | None  # as written, for explanations only: decisions follow `shared`

    @property
    def exclusive(self) -> bool:
        """Never shares a slice: isolation: exclusive, or the default of a whole-GPU or MIG request."""
        return not self.shared

    def describe(self) -> str:
        on = f" {self.model}" if self.model else ""
        if self.kind == "gpus":
            text = f"{self.gpus}{on} GPU{'s' if self.gpus != 1 else ''}"
            if self.nodes > 1:
                text += f" on each of {self.nodes} nodes"
            if self.nvlink and self.gpus > 1:
                text += " in one NVLink domain"
            if self.rdma:
                text += " with RDMA"
            return text
        if self.kind == "mig":
            return f"a MIG {self.profile} instance" + (f" of a{on}" if self.model else "")
        if self.kind == "fraction":
            return f"{self.fraction:g} of a time-sliced{on} GPU"
        return f"{self.gib:g} GiB of a time-sliced{on} GPU"

    def task_class(self, weight: float = 1.0) -> TaskClass:
        """This shape as a typical task of the FGD workload (per node for gangs)."""
        if self.kind == "gpus":
            return TaskClass("gpus", weight, gpus=self.gpus, nvlink=self.nvlink and self.gpus > 1, model=self.model)
        if self.kind == "mig":
            return TaskClass("mig", weight, profile=self.profile, model=self.model)
        return TaskClass("share", weight, share=self.fraction, gib=self.gib, model=self.model)


def canonical_model(name: str | None) -> str | None:
    if name is None:
        return None
    model = get_catalog().model(name)
    return model.name if model is not None else name


def shape_of(job: Job) -> Shape:
    req = job.request
    kind: ShapeKind
    if req.gpus is not None:
        kind = "gpus"
    elif req.mig is not None:
        kind = "mig"
    elif req.fraction is not None:
        kind = "fraction"
    else:
        kind = "memory"
    return Shape(
        kind=kind,
        gpus=req.gpus if req.gpus is not None else 1,
        nodes=req.nodes,
        profile=(req.mig or "").strip().lower(),
        fraction=req.fraction or 0.0,
        gib=req.gpu_memory_gib or 0.0,
        model=canonical_model(req.model),
        nvlink=req.nvlink,
        rdma=req.rdma,
        shared=job.shared,
        isolation=job.isolation,
    )
