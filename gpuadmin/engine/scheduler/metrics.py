"""Cluster-level figures of the FGD measure, for the benchmark and `describe`.

Two readings of the same measure (docs/scheduling.md §3):

* `cluster_fragmentation` — the measure the scheduler descends: every task class of the workload is weighed
  against every part of every node, so idle capacity of a mode a class can never use (time-sliced shares for
  a whole-GPU task, MIG instances for a fraction) counts as fragment for that class;
* `pool_fragmentation` — the paper's measure applied to each statically partitioned pool (full-mode GPUs, MIG
  instances, time-sliced units) as a cluster of its own, against the classes that can run in that pool (their
  popularity renormalised within the pool). In Weng et al. every GPU can host every task; in gpuadmin a GPU's
  mode decides which requests it takes, and no placement can move capacity between pools, so the cross-pool
  term is a property of the configuration, not of the placements. Both schedulers of a comparison see the
  same cross-pool term; this reading leaves it out.

For one pool the two readings choose the same placements: within a pool the cross-pool term changes by the
same amount whichever unit a job takes.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuadmin.engine.scheduler.fgd import TOP_CLASSES, Workload, classes_from_shapes
from gpuadmin.engine.scheduler.index import CapacityIndex
from gpuadmin.engine.scheduler.shape import shape_of
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Job


def workload_of(jobs: Iterable[Job], top: int = TOP_CLASSES) -> Workload:
    """The FGD workload of a set of jobs: their request shapes, weighted by node count."""
    shapes = [shape_of(j) for j in jobs]
    return Workload(classes_from_shapes([s.task_class(float(s.nodes)) for s in shapes], top))


def cluster_fragmentation(state: ClusterState, workload: Workload) -> tuple[float, float]:
    """(fragmented GPUs, idle GPUs) over the schedulable nodes: Σ_n F(n) and Σ_n idle(n)."""
    index = CapacityIndex(state)
    frag = idle = 0.0
    for nc in index.nodes:
        whole, mig, ts = nc.whole_part(), nc.mig_part(), nc.ts_part()
        frag += workload.node_fragmentation(whole, mig, ts, nc.reserve)
        idle += Workload.whole_idle(whole) + Workload.mig_idle(mig) + Workload.ts_idle(ts)
    return frag, idle


def pool_fragmentation(state: ClusterState, workload: Workload) -> dict[str, tuple[float, float]]:
    """Per pool ("whole", "mig", "time-sliced"): (fragmented GPUs, idle GPUs), each pool measured against
    the workload's classes that run in it, renormalised (`Workload` normalises its classes)."""
    whole_w = Workload(workload.whole_classes)
    mig_w = Workload(workload.mig_classes)
    ts_w = Workload(workload.share_classes)
    out = {"whole": [0.0, 0.0], "mig": [0.0, 0.0], "time-sliced": [0.0, 0.0]}
    for nc in CapacityIndex(state).nodes:
        whole, mig, ts = nc.whole_part(), nc.mig_part(), nc.ts_part()
        for pool, sub, idle, credit in (
            ("whole", whole_w, Workload.whole_idle(whole), whole_w.whole_credit(whole)),
            ("mig", mig_w, Workload.mig_idle(mig), mig_w.mig_credit(mig)),
            ("time-sliced", ts_w, Workload.ts_idle(ts), ts_w.ts_credit(ts)),
        ):
            out[pool][1] += idle
            if sub.classes:  # a pool no class of the workload targets has no fragment in this reading
                out[pool][0] += sub.total_weight * idle - credit
    return {k: (v[0], v[1]) for k, v in out.items()}
