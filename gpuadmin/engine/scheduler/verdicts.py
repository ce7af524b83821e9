"""What the filters said of every node for each job a cycle leaves pending (kube-scheduler's "0/12 nodes are
available: 9 Insufficient nvidia.com/gpu, 3 node(s) were unschedulable").

The cycle places jobs through its buckets, never node by node; once it is done, its `VerdictBook` runs the
filter chain (`node_filters.filter_node`) over the index as the cycle leaves it — the capacity every pending
job was last tried against, or less — and counts the nodes per reason. Nodes the filters cannot tell apart
(same state, RDMA, GPUs and free parts) are judged once for all of them when a job has no node-level needs;
with needs (labels, CPUs, memory, a VM) every node is judged on its own. Memoised per (shape, needs): jobs
with the same request share one count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpuadmin.engine.scheduler.filters import Status
from gpuadmin.engine.scheduler.index import CapacityIndex, NodeCap
from gpuadmin.engine.scheduler.node_filters import NO_NEEDS, NodeNeeds, NodeResources, VmSlots, filter_node
from gpuadmin.engine.scheduler.shape import Shape


@dataclass(frozen=True, slots=True)
class Verdicts:
    """The filters' verdicts on every node for one request: how many fit, and per failing status its count
    (most nodes first, then by reason)."""

    total: int
    fit: int
    misfits: tuple[tuple[Status, int], ...]

    def count(self, code: str) -> int:
        return sum(n for status, n in self.misfits if status.code == code)

    @property
    def summary(self) -> str:
        text = f"{self.fit}/{self.total} nodes fit"
        if self.misfits:
            text += ": " + ", ".join(f"{n} {status.reason}" for status, n in self.misfits)
        return text


def _look(nc: NodeCap) -> tuple[Any, ...]:
    """Everything the filters read of a node for a job without node-level needs."""
    return (
        nc.node.state,
        nc.network is None,
        nc.reserve,
        tuple(sorted((i.model, i.mode, i.domain is not None, i.unhealthy is not None,
                      tuple(sorted(i.instances.items())),
                      tuple(sorted(s for s, h in i.instance_holders.items() if h)),
                      tuple(sorted(-1 if k is None else k for k in i.units))) for i in nc.gpus.values())),
        nc.whole_part(),
        nc.mig_part(),
        nc.ts_part(),
    )


class VerdictBook:
    def __init__(self, index: CapacityIndex, resources: NodeResources, vms: VmSlots) -> None:
        self.nodes = (*index.nodes, *index.blocked)
        self.resources = resources
        self.vms = vms
        self._groups: list[tuple[NodeCap, int]] | None = None
        self._memo: dict[tuple[Shape, NodeNeeds], Verdicts] = {}

    def groups(self) -> list[tuple[NodeCap, int]]:
        """One node of each look with the number of nodes that share it (computed on first use)."""
        if self._groups is None:
            found: dict[tuple[Any, ...], list[Any]] = {}
            for nc in self.nodes:
                entry = found.setdefault(_look(nc), [nc, 0])
                entry[1] += 1
            self._groups = [(nc, many) for nc, many in found.values()]
        return self._groups

    def of(self, shape: Shape, needs: NodeNeeds = NO_NEEDS) -> Verdicts:
        key = (shape, needs)
        found = self._memo.get(key)
        if found is None:
            looks = self.groups() if not needs else [(nc, 1) for nc in self.nodes]
            counts: dict[Status, int] = {}
            for nc, many in looks:
                status = filter_node(nc, shape, needs, self.resources, self.vms)
                counts[status] = counts.get(status, 0) + many
            fit = counts.pop(Status(), 0)
            misfits = tuple(sorted(counts.items(), key=lambda sn: (-sn[1], sn[0].reason, sn[0].code)))
            found = self._memo[key] = Verdicts(len(self.nodes), fit, misfits)
        return found
