"""Node-level filters: what a job asks of the node itself, not of its GPUs (kube-scheduler's NodeAffinity and
NodeResourcesFit plugins), and jobs that run inside a vSphere VM.

* `NodeNeeds`        — a job's node-level request, hashable (jobs are grouped by it as by their `Shape`); the
                       empty one means "any node", and such jobs keep the cycle's fast path untouched;
* `NodeResources`    — the CPUs and memory left on each schedulable node, updated as the cycle binds and
                       evicts; a node without `cpus` / `memory_gib` in the inventory is not checked;
* `VmSlots`          — the healthy GPUs each VM holds that no job in it runs on yet (the index never offers a GPU a
                       VM holds, so a job without `vm` never lands there);
* `untolerated`      — kube-scheduler's TaintToleration filter: the first NoSchedule or NoExecute taint of a node
                       that none of the job's tolerations tolerates (PreferNoSchedule never filters); asked of a
                       job only where a schedulable node has such a taint the job does not tolerate
                       (`NodeNeeds.taints`): a job that tolerates them all, and every job of a cluster without
                       them, keeps the cycle's fast path;
* `node_status`      — whether one node passes them, in kube-scheduler's words ("Insufficient cpu",
                       "didn't match node selector/affinity", "node(s) had untolerated taint {key: value}");
* `filter_node`      — the cycle's whole filter chain on one node (state, node-level, GPUs) as one `Status`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuadmin.engine.rules.vsphere import vm_gpus
from gpuadmin.engine.scheduler.filters import FITS, Status, gpu_status
from gpuadmin.engine.scheduler.index import CapacityIndex, NodeCap
from gpuadmin.engine.scheduler.shape import Shape
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Job, Node, Taint
from gpuadmin.model.inventory import AffinityOperator, TolerationKey, term_matches, tolerates

EPSILON = 1e-9
INSUFFICIENT_CPU = "Insufficient cpu"
INSUFFICIENT_MEMORY = "Insufficient memory"
NO_LABEL_MATCH = "didn't match node selector/affinity"
UNTOLERATED_TAINT = "untolerated-taint"
FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})  # PreferNoSchedule only scores, in kube-scheduler


@dataclass(frozen=True, slots=True)
class NodeNeeds:
    cpus: float = 0.0
    memory_gib: float = 0.0
    selector: tuple[tuple[str, str], ...] = ()
    affinity: tuple[tuple[str, AffinityOperator, tuple[str, ...]], ...] = ()
    vm: str | None = None
    taints: bool = False  # the taint filter applies (a schedulable node has a NoSchedule / NoExecute taint the
    # job does not tolerate)
    tolerations: tuple[TolerationKey, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.cpus or self.memory_gib or self.selector or self.affinity or self.vm or self.taints)

    @property
    def labelled(self) -> bool:
        return bool(self.selector or self.affinity)

    def untolerated(self, node: Node) -> Taint | None:
        """The node's first NoSchedule / NoExecute taint that none of the tolerations tolerates, if any."""
        if not self.taints:
            return None
        return untolerated(node, self.tolerations)

    def labels_match(self, node: Node) -> bool:
        labels = node.labels
        return all(labels.get(k) == v for k, v in self.selector) and all(
            term_matches(k, op, values, labels) for k, op, values in self.affinity
        )


NO_NEEDS = NodeNeeds()


def untolerated(node: Node, tolerations: tuple[TolerationKey, ...]) -> Taint | None:
    """kube-scheduler's TaintToleration filter on one node: its first taint with effect NoSchedule or NoExecute
    that no toleration tolerates (Kubernetes' matching, `model.inventory.tolerates`)."""
    for taint in node.taints or ():
        if taint.effect in FILTERING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def taint_status(taint: Taint) -> Status:
    """The filter's verdict naming the taint, in kube-scheduler's words."""
    return Status(UNTOLERATED_TAINT, f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")


def taints_filter(state: ClusterState) -> tuple[Taint, ...]:
    """The distinct taints the filter acts on in this state: NoSchedule / NoExecute taints of schedulable (ready)
    nodes. A cordoned or down node carries the node controller's taints, but the node-state filter keeps every job
    off it first, as kube-scheduler's NodeUnschedulable does."""
    found: dict[tuple[str, str, str], Taint] = {}
    for node in state.nodes.values():
        if node.state == "ready":
            for taint in node.taints or ():
                if taint.effect in FILTERING_EFFECTS:
                    found.setdefault((taint.key, taint.value, taint.effect), taint)
    return tuple(found.values())


def needs_of(job: Job, taints: Sequence[Taint] = ()) -> NodeNeeds:
    """The job's node-level needs. `taints`: those the filter acts on in this state (`taints_filter`); a job that
    tolerates every one of them passes the filter on every node, so it is not asked of it (the fast path: a GPU
    Operator cluster's `nvidia.com/gpu:NoSchedule` taint, which its GPU pods tolerate, slows nothing)."""
    tolerations = tuple(sorted({t.as_tuple() for t in job.tolerations or ()}, key=repr))
    checked = any(not any(tolerates(t, taint) for t in tolerations) for taint in taints)
    req = job.request
    if req.cpus is None and req.memory_gib is None and not job.node_selector and not job.node_affinity and (
        job.vm is None
    ) and not checked:
        return NO_NEEDS
    return NodeNeeds(
        req.cpus or 0.0,
        req.memory_gib or 0.0,
        tuple(sorted((job.node_selector or {}).items())),
        tuple(t.as_tuple() for t in job.node_affinity or ()),
        job.vm,
        checked,
        tolerations if checked else (),
    )


class NodeResources:
    """CPUs and memory left per node (by node name; None where the inventory does not say)."""

    def __init__(self, state: ClusterState) -> None:
        self.cpus: dict[str, float | None] = {}
        self.memory: dict[str, float | None] = {}
        for node in state.nodes.values():
            self.cpus[node.name] = float(node.cpus) if node.cpus is not None else None
            self.memory[node.name] = float(node.memory_gib) if node.memory_gib is not None else None
        for job in state.jobs.values():
            if job.status == "running" and (job.request.cpus or job.request.memory_gib):
                self.take(job, {s.node for s in job.placement})

    def _add(self, job: Job, nodes: set[str], sign: float) -> None:
        cpus, memory = job.request.cpus or 0.0, job.request.memory_gib or 0.0
        for name in nodes:
            have = self.cpus.get(name)
            if have is not None:
                self.cpus[name] = have + sign * cpus
            mem = self.memory.get(name)
            if mem is not None:
                self.memory[name] = mem + sign * memory

    def take(self, job: Job, nodes: set[str]) -> None:
        self._add(job, nodes, -1.0)

    def give_back(self, job: Job, nodes: set[str]) -> None:
        self._add(job, nodes, 1.0)

    def shortfall(self, name: str, needs: NodeNeeds) -> str | None:
        cpus, memory = self.cpus.get(name), self.memory.get(name)
        if needs.cpus and cpus is not None and needs.cpus > cpus + EPSILON:
            return INSUFFICIENT_CPU
        if needs.memory_gib and memory is not None and needs.memory_gib > memory + EPSILON:
            return INSUFFICIENT_MEMORY
        return None


def node_status(nc: NodeCap, needs: NodeNeeds, resources: NodeResources, vm_host: str | None) -> Status:
    """Whether the node passes the node-level filters for a job with these needs (kube-scheduler's words)."""
    if needs.vm is not None and nc.name != vm_host:
        return Status("vm-host", f"not the host of VM {needs.vm}")
    if needs.labelled and not needs.labels_match(nc.node):
        return Status("node-selector", NO_LABEL_MATCH)
    taint = needs.untolerated(nc.node)
    if taint is not None:
        return taint_status(taint)
    short = resources.shortfall(nc.name, needs)
    return FITS if short is None else Status("node-resources", short)


def filter_node(nc: NodeCap, shape: Shape, needs: NodeNeeds, resources: NodeResources, vms: VmSlots) -> Status:
    """The whole filter chain on one node, in the cycle's order: the node's state (only ready nodes are
    schedulable), the node-level filters, then its GPUs — for a job in a VM, the VM's free GPUs instead."""
    if nc.node.state != "ready":
        return Status("node-state", nc.node.state)
    if not needs:
        return gpu_status(nc, shape)
    found = node_status(nc, needs, resources, vms.host.get(needs.vm) if needs.vm else None)
    if not found.fits or needs.vm is None:
        return found if not found.fits else gpu_status(nc, shape)
    if len(vms.free.get(needs.vm, ())) >= shape.gpus:
        return FITS
    return Status("vm-capacity", f"fewer than {shape.gpus} free GPUs in VM {needs.vm}")


class VmSlots:
    """Per VM: its host and the GPUs it holds that no running (or just bound) job in it holds."""

    def __init__(self, state: ClusterState) -> None:
        self.host: dict[str, str] = {}
        self.free: dict[str, list[int]] = {}
        self.total: dict[str, int] = {}
        for node in state.nodes.values():
            for vm in node.vms:
                self.host[vm.name] = node.name
                fenced = {g.index for g in node.gpus if g.health is not None}  # never offered (set-gpu-health)
                self.free[vm.name] = [g for g in vm_gpus(node, vm) if g not in fenced]
                self.total[vm.name] = len(self.free[vm.name])
        for job in state.jobs.values():
            if job.status == "running" and job.vm is not None:
                self.take(job.vm, [s.gpu for s in job.placement])

    def take(self, vm: str, gpus: list[int]) -> None:
        free = self.free.get(vm)
        if free is not None:
            self.free[vm] = [g for g in free if g not in gpus]

    def pick(self, vm: str, count: int) -> list[int] | None:
        free = self.free.get(vm, [])
        return sorted(free)[:count] if len(free) >= count else None


def allowed_nodes(index: CapacityIndex, needs: NodeNeeds, resources: NodeResources,
                  label_memo: dict[NodeNeeds, set[int]]) -> set[int]:
    """The schedulable nodes (by index position) that pass the node-level filters now (labels and taints, which
    do not change during a cycle, memoised)."""
    label_key = NodeNeeds(selector=needs.selector, affinity=needs.affinity, taints=needs.taints,
                          tolerations=needs.tolerations)
    labelled = label_memo.get(label_key)
    if labelled is None:
        labelled = label_memo[label_key] = {nc.idx for nc in index.nodes if label_key.labels_match(nc.node)
                                            and label_key.untolerated(nc.node) is None}
    if not (needs.cpus or needs.memory_gib):
        return labelled
    nodes = index.nodes
    return {i for i in labelled if resources.shortfall(nodes[i].name, needs) is None}
