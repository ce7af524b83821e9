"""The scheduler: order → filter → score → bind → preempt, one cycle at a time (docs/scheduling.md).

`schedule(state, policy)` plans one cycle and returns a `SchedulePlan` whose `plan` has been checked by the
rules; `explain(state, job)` says why a job is pending, with numbers and a remedy.
"""

from gpuadmin.engine.scheduler.cycle import MAX_PREEMPTORS, Cycle, SchedulePlan, schedule
from gpuadmin.engine.scheduler.explain import Explanation, explain
from gpuadmin.engine.scheduler.fgd import TaskClass, Workload
from gpuadmin.engine.scheduler.metrics import cluster_fragmentation, workload_of

__all__ = [
    "MAX_PREEMPTORS",
    "Cycle",
    "Explanation",
    "SchedulePlan",
    "TaskClass",
    "Workload",
    "cluster_fragmentation",
    "explain",
    "schedule",
    "workload_of",
]
