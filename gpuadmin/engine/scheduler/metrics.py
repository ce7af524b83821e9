"""Cluster-level figures of the FGD measure, for the benchmark and `describe`."""

from __future__ import annotations

from collections.abc import Iterable

from gpuadmin.engine.scheduler.fgd import Workload, classes_from_shapes
from gpuadmin.engine.scheduler.index import CapacityIndex
from gpuadmin.engine.scheduler.shape import shape_of
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Job


def workload_of(jobs: Iterable[Job], top: int = 16) -> Workload:
    """The FGD workload of a set of jobs: their request shapes, weighted by node count."""
    shapes = [shape_of(j) for j in jobs]
    return Workload(classes_from_shapes([s.task_class(float(s.nodes)) for s in shapes], top))


def cluster_fragmentation(state: ClusterState, workload: Workload) -> tuple[float, float]:
    """(fragmented GPUs, idle GPUs) over the schedulable nodes: Σ_n F(n) and Σ_n idle(n)."""
    index = CapacityIndex(state)
    frag = idle = 0.0
    for nc in index.nodes:
        whole, mig, ts = nc.whole_part(), nc.mig_part(), nc.ts_part()
        frag += workload.node_fragmentation(whole, mig, ts)
        idle += Workload.whole_idle(whole) + Workload.mig_idle(mig) + Workload.ts_idle(ts)
    return frag, idle
