"""The free-capacity index, built once per cycle from a `ClusterState`.

Per schedulable node it keeps the free full-mode GPUs by NVLink domain (and device group), the free MIG
instances by (model, profile), and the shared units (time-sliced GPUs and MIG instances, and full GPUs that
fractions hold on a dynamic-sharing node) with their unreserved share and replicas left. On a dynamic-sharing
node a free full GPU is both whole capacity and a unit a fraction may open: the first fraction turns it into a
shared unit, and the last one to leave turns it back into a free GPU.

A GPU fenced as unhealthy (`set-gpu-health`) offers none of these: it is kept, with its reason, only for the
filters to say why a node falls short (`filters.gpu_status`, code `unhealthy`).

Across nodes it keeps *buckets*: nodes whose relevant part has the same value share a bucket, so a job is
scored once per distinct part, not once per node. Binding a job updates the index in place (never the state);
the planner checks the result once at the end.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from gpuadmin.catalog import get_catalog
from gpuadmin.catalog.entities import GpuModel
from gpuadmin.engine.rules.device_groups import nvlink_domain
from gpuadmin.engine.scheduler.fgd import DYNAMIC_REPLICAS, MigPart, TsPart, UnitState, WholePart
from gpuadmin.engine.sharing import is_fractional
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Gpu, Job, Node, Slot

Policy = Literal["binpack", "spread"]
DomainKey = tuple[str, int, str]  # (model, NVLink domain, device group or "-<gpu>" outside groups or "")
# A node's free whole GPUs, whether it has RDMA, and its dynamic-sharing reserve (None: fractions may not open
# its full GPUs): nodes with one key are interchangeable for whole-GPU jobs and for opening a shared GPU.
WholeKey = tuple[WholePart, bool, float | None]


UnitId = tuple[int, int]  # (node index, position in the node's shared units)
T = TypeVar("T", int, UnitId)


def _r(x: float) -> float:
    return round(x, 9)


class Bucket(Generic[T]):
    """A set of node indexes (or unit ids) with the lowest one at hand (lazy heap)."""

    __slots__ = ("heap", "members")

    def __init__(self) -> None:
        self.members: set[T] = set()
        self.heap: list[T] = []

    def add(self, item: T) -> None:
        if item not in self.members:
            self.members.add(item)
            heapq.heappush(self.heap, item)

    def discard(self, item: T) -> None:
        self.members.discard(item)

    def top(self) -> T | None:
        heap = self.heap
        while heap and heap[0] not in self.members:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def __len__(self) -> int:
        return len(self.members)


@dataclass(slots=True)
class TsUnit:
    """A time-sliced GPU (mig_start None) or time-sliced MIG instance."""

    gpu: int
    mig_start: int | None
    model: str
    profile: str  # MIG profile of the instance, "" for a GPU
    memory_gib: float
    weight: float  # GPU units of the slice: 1 for a GPU, the compute share for a MIG instance
    residual: float
    replicas_left: int
    holders: dict[str, float] = field(default_factory=dict)  # job → share it reserves
    key: int | None = None  # the state id of the bucket it is filed in
    dynamic: bool = False  # a full GPU fractions share (dynamic sharing): no replica count
    closed: bool = False  # a dynamic unit whose last fraction left: the GPU is whole capacity again

    def state(self) -> UnitState:
        return (
            self.model,
            _r(self.memory_gib),
            _r(self.residual),
            self.replicas_left,
            _r(self.weight),
            self.profile,
        )


@dataclass(slots=True)
class GpuInfo:
    mode: str
    model: str
    domain: DomainKey | None  # full-mode GPUs a job may take
    holders: set[str] = field(default_factory=set)  # whole-GPU holders (full mode)
    instances: dict[int, str] = field(default_factory=dict)  # start → canonical profile (MIG mode)
    instance_holders: dict[int, set[str]] = field(default_factory=dict)
    units: dict[int | None, TsUnit] = field(default_factory=dict)  # mig_start (None = the GPU) → unit
    dynamic_unit: TsUnit | None = None  # the unit this full GPU becomes while fractions share it (kept closed)
    unhealthy: str | None = None  # fenced (set-gpu-health): why; the GPU then offers nothing to place on


class NodeCap:
    __slots__ = (
        "domains",
        "gpus",
        "idx",
        "mig",
        "mig_share",
        "name",
        "network",
        "node",
        "reserve",
        "ts_units",
        "whole_key",
    )

    def __init__(self, idx: int, node: Node) -> None:
        self.idx = idx
        self.node = node
        self.name = node.name
        self.network: str | None = node.rdma.network if node.rdma is not None else None
        self.domains: dict[DomainKey, list[int]] = {}
        self.gpus: dict[int, GpuInfo] = {}
        self.mig: dict[tuple[str, str], set[tuple[int, int]]] = {}
        self.mig_share: dict[tuple[str, str], float] = {}
        self.ts_units: list[TsUnit] = []
        self.whole_key: WholeKey | None = None
        self.reserve: float | None = node.sharing.reserved_gib if node.sharing is not None else None

    # parts ---------------------------------------------------------------------------------------------
    def whole_part(self) -> WholePart:
        return tuple(sorted((d[0], len(g)) for d, g in self.domains.items() if g))

    def mig_part(self) -> MigPart:
        return tuple(sorted((m, p, len(s), _r(self.mig_share[(m, p)])) for (m, p), s in self.mig.items() if s))

    def ts_part(self) -> TsPart:
        return tuple(sorted(u.state() for u in self.ts_units if not u.closed))

    def free_whole(self, model: str | None = None) -> int:
        return sum(len(g) for d, g in self.domains.items() if model is None or d[0] == model)

    def free_instances(self, gpu: int) -> int:
        info = self.gpus.get(gpu)
        if info is None:
            return 0
        return sum(1 for s in info.instances if s not in info.units and not info.instance_holders.get(s))


def compute_share(model: GpuModel | None, profile: str) -> float:
    prof = model.mig_profile(profile) if model is not None else None
    if model is None or prof is None or not model.compute_slices:
        return 0.0
    return prof.compute_slices / model.compute_slices


def instance_memory(model: GpuModel, profile: str) -> float:
    prof = model.mig_profile(profile)
    if prof is None or not model.memory_slices:
        return 0.0
    if prof.memory_gib is not None:
        return prof.memory_gib
    return model.memory_mib / 1024 * prof.memory_slices / model.memory_slices


def job_unit_need(job: Job, unit: TsUnit) -> float:
    """The share of a shared unit a job reserves, as the no-oversubscription rule counts it."""
    if job.request.fraction is not None:
        return job.request.fraction
    if job.request.gpu_memory_gib is not None:
        return job.request.gpu_memory_gib / unit.memory_gib if unit.memory_gib > 0 else float("inf")
    return 0.0


def _vm_gpus(node: Node) -> set[int]:
    """GPUs that VMs hold on a vSphere host: passthrough lists and attached device groups."""
    held: set[int] = set()
    attached = {vm.device_group for vm in node.vms if vm.device_group is not None}
    for group in node.device_groups:
        if group.name in attached:
            held |= set(group.gpus)
    for vm in node.vms:
        held |= set(vm.gpus or ())
    return held


class CapacityIndex:
    def __init__(self, state: ClusterState, policy: Policy = "binpack") -> None:
        self.state = state
        self.policy = policy
        self.nodes: list[NodeCap] = []  # schedulable (ready) nodes
        self.blocked: list[NodeCap] = []  # cordoned, draining or down nodes (for explanations)
        self.by_name: dict[str, NodeCap] = {}
        self.whole: dict[WholeKey, Bucket[int]] = {}
        self.whole_net: dict[str, dict[tuple[WholePart, float | None], Bucket[int]]] = {}
        self.mig_heaps: dict[tuple[str, str], list[tuple[int, int, int, int]]] = {}
        self.ts: dict[int, Bucket[UnitId]] = {}  # shared units with a replica left, by state id
        self.state_ids: dict[UnitState, int] = {}
        self.states: list[UnitState] = []  # by id; ids are never reused within a cycle
        self.models_present: set[str] = set()
        for node in state.nodes.values():
            ready = node.state == "ready"
            nc = NodeCap(len(self.nodes) if ready else -1 - len(self.blocked), node)
            self._load(nc, node)
            self.by_name[node.name] = nc
            if ready:
                self.nodes.append(nc)
                self._file(nc)
            else:
                self.blocked.append(nc)

    # building --------------------------------------------------------------------------------------------
    def _load(self, nc: NodeCap, node: Node) -> None:
        catalog = get_catalog()
        vm_held = _vm_gpus(node)
        grouped: dict[int, str] = {}
        for dg in node.device_groups:
            for i in dg.gpus:
                grouped.setdefault(i, dg.name)
        holders = self.state.holders
        jobs = self.state.jobs
        for gpu in node.gpus:
            model = catalog.model(gpu.model)
            mname = model.name if model is not None else gpu.model
            self.models_present.add(mname)
            names = holders.get((node.name, gpu.index), set())
            held_jobs = [j for j in (jobs.get(n) for n in sorted(names)) if j is not None and j.status == "running"]
            info = GpuInfo(gpu.mode, mname, None)
            nc.gpus[gpu.index] = info
            if gpu.health is not None:  # fenced: no whole GPU, instance or replica of it is offered
                info.unhealthy = gpu.health.reason
                continue
            if gpu.index in vm_held:
                continue
            if gpu.mode == "full":
                group = grouped.get(gpu.index, f"-{gpu.index}") if node.device_groups else ""
                dom: DomainKey = (mname, nvlink_domain(node, gpu.index), group)
                info.domain = dom
                shared = nc.reserve is not None and model is not None
                fractions = [j for j in held_jobs if shared and is_fractional(j)]
                info.holders = {j.name for j in held_jobs if j not in fractions}
                lst = nc.domains.setdefault(dom, [])
                if fractions and not info.holders:
                    unit = self._open_dynamic(nc, info, gpu.index)
                    for job in fractions:
                        self._hold_unit(unit, job)
                elif not held_jobs:
                    lst.append(gpu.index)
            elif gpu.mode == "time-sliced":
                self._load_unit(nc, info, gpu, None, model, mname, held_jobs)
            elif gpu.mode == "mig" and model is not None:
                self._load_mig(nc, info, gpu, model, mname, held_jobs)

    def _load_unit(
        self,
        nc: NodeCap,
        info: GpuInfo,
        gpu: Gpu,
        start: int | None,
        model: GpuModel | None,
        mname: str,
        held: list[Job],
        profile: str = "",
        replicas: int | None = None,
    ) -> None:
        if model is None:
            return
        if start is None:
            memory, weight, reps = model.memory_mib / 1024, 1.0, gpu.replicas or 1
        else:
            memory, weight, reps = (
                instance_memory(model, profile),
                compute_share(model, profile),
                replicas or 1,
            )
        unit = TsUnit(gpu.index, start, mname, profile, memory, weight, 1.0, reps)
        exclusive = False
        for job in held:
            for slot in job.placement:
                if slot.node == nc.name and slot.gpu == gpu.index and slot.mig_start == start:
                    need = job_unit_need(job, unit)
                    unit.holders[job.name] = unit.holders.get(job.name, 0.0) + need
                    unit.residual -= need
                    unit.replicas_left -= 1
                    exclusive = exclusive or not job.shared
        if exclusive:
            unit.replicas_left = 0
        info.units[start] = unit
        nc.ts_units.append(unit)

    def _open_dynamic(self, nc: NodeCap, info: GpuInfo, gpu: int) -> TsUnit:
        """The shared unit of a full GPU on a dynamic-sharing node, opened (created on first use)."""
        unit = info.dynamic_unit
        if unit is None:
            model = get_catalog().model(info.model)
            usable = max(0.0, (model.memory_mib / 1024 if model is not None else 0.0) - (nc.reserve or 0.0))
            unit = TsUnit(gpu, None, info.model, "", usable, 1.0, 1.0, DYNAMIC_REPLICAS, dynamic=True)
            info.dynamic_unit = unit
            nc.ts_units.append(unit)
        unit.closed = False
        unit.residual, unit.replicas_left = 1.0, DYNAMIC_REPLICAS
        unit.holders.clear()
        info.units[None] = unit
        return unit

    @staticmethod
    def _hold_unit(unit: TsUnit, job: Job) -> None:
        """A fraction holds its share of a dynamically shared GPU (no replica count to take)."""
        need = job_unit_need(job, unit)
        unit.holders[job.name] = unit.holders.get(job.name, 0.0) + need
        unit.residual -= need

    def _load_mig(self, nc: NodeCap, info: GpuInfo, gpu: Gpu, model: GpuModel, mname: str, held: list[Job]) -> None:
        whole_holder = any(
            s.node == nc.name and s.gpu == gpu.index and s.mig_start is None for j in held for s in j.placement
        )
        for inst in gpu.mig or ():
            prof = model.mig_profile(inst.profile)
            if prof is None or inst.start is None:
                continue
            info.instances[inst.start] = prof.name
            if inst.split:
                continue  # a GI split into compute instances is not offered whole (placement.matches-request)
            owners = {
                j.name
                for j in held
                for s in j.placement
                if s.node == nc.name and s.gpu == gpu.index and s.mig_start == inst.start
            }
            if inst.replicas is not None:
                on = [j for j in held if j.name in owners]
                self._load_unit(nc, info, gpu, inst.start, model, mname, on, prof.name, inst.replicas)
                continue
            info.instance_holders[inst.start] = owners
            key = (mname, prof.name)
            nc.mig_share[key] = prof.compute_slices / model.compute_slices if model.compute_slices else 0.0
            members = nc.mig.setdefault(key, set())
            if not owners and not whole_holder:
                members.add((gpu.index, inst.start))

    # filing nodes in buckets -----------------------------------------------------------------------------
    def _file(self, nc: NodeCap) -> None:
        self._file_whole(nc)
        self._file_ts(nc)
        for (model, profile), members in nc.mig.items():
            for gpu, start in members:
                self._push_mig(nc, model, profile, gpu, start)

    def _file_whole(self, nc: NodeCap) -> None:
        if nc.whole_key is not None:
            old = self.whole.get(nc.whole_key)
            if old is not None:
                old.discard(nc.idx)
                if not old:
                    del self.whole[nc.whole_key]
            if nc.network is not None:
                nets = self.whole_net.get(nc.network, {})
                net_key = (nc.whole_key[0], nc.whole_key[2])
                net_old = nets.get(net_key)
                if net_old is not None:
                    net_old.discard(nc.idx)
                    if not net_old:
                        del nets[net_key]
        part = nc.whole_part()
        if not part:
            nc.whole_key = None
            return
        key = (part, nc.network is not None, nc.reserve)
        nc.whole_key = key
        self.whole.setdefault(key, Bucket()).add(nc.idx)
        if nc.network is not None:
            self.whole_net.setdefault(nc.network, {}).setdefault((part, nc.reserve), Bucket()).add(nc.idx)

    def _file_ts(self, nc: NodeCap) -> None:
        for k, unit in enumerate(nc.ts_units):
            self._file_unit(nc, k, unit)

    def _file_unit(self, nc: NodeCap, k: int, unit: TsUnit) -> None:
        uid = (nc.idx, k)
        if unit.key is not None:
            old = self.ts.get(unit.key)
            if old is not None:
                old.discard(uid)
                if not old:
                    del self.ts[unit.key]
            unit.key = None
        if unit.replicas_left > 0:
            state = unit.state()
            sid = self.state_ids.get(state)
            if sid is None:
                sid = self.state_ids[state] = len(self.states)
                self.states.append(state)
            unit.key = sid
            self.ts.setdefault(sid, Bucket()).add(uid)

    def unit(self, uid: UnitId) -> tuple[NodeCap, TsUnit]:
        nc = self.nodes[uid[0]]
        return nc, nc.ts_units[uid[1]]

    def _mig_key(self, nc: NodeCap, gpu: int) -> int:
        free = nc.free_instances(gpu)
        return free if self.policy == "binpack" else -free

    def _push_mig(self, nc: NodeCap, model: str, profile: str, gpu: int, start: int) -> None:
        heap = self.mig_heaps.setdefault((model, profile), [])
        heapq.heappush(heap, (self._mig_key(nc, gpu), nc.idx, gpu, start))

    def mig_top(self, model: str, profile: str) -> tuple[NodeCap, int, int] | None:
        heap = self.mig_heaps.get((model, profile))
        while heap:
            key, idx, gpu, start = heap[0]
            nc = self.nodes[idx]
            if (gpu, start) in nc.mig.get((model, profile), ()) and key == self._mig_key(nc, gpu):
                return nc, gpu, start
            heapq.heappop(heap)
        return None

    # taking and releasing --------------------------------------------------------------------------------
    def take_whole(self, nc: NodeCap, gpus: list[int], job: str) -> None:
        for g in gpus:
            info = nc.gpus[g]
            assert info.domain is not None
            nc.domains[info.domain].remove(g)
            info.holders.add(job)
        self._file_whole(nc)

    def take_mig(self, nc: NodeCap, gpu: int, start: int, job: str) -> None:
        info = nc.gpus[gpu]
        profile = info.instances[start]
        nc.mig[(info.model, profile)].discard((gpu, start))
        info.instance_holders.setdefault(start, set()).add(job)
        self._refresh_mig_gpu(nc, gpu)

    def _refresh_mig_gpu(self, nc: NodeCap, gpu: int) -> None:
        info = nc.gpus[gpu]
        for start, profile in info.instances.items():
            if (gpu, start) in nc.mig.get((info.model, profile), ()):
                self._push_mig(nc, info.model, profile, gpu, start)

    def take_unit(self, nc: NodeCap, unit: TsUnit, job: str, need: float) -> None:
        unit.holders[job] = unit.holders.get(job, 0.0) + need
        unit.residual -= need
        if not unit.dynamic:
            unit.replicas_left -= 1
        self._file_unit(nc, nc.ts_units.index(unit), unit)

    def open_shared(self, nc: NodeCap, gpu: int) -> TsUnit:
        """A fraction takes a free full GPU of a dynamic-sharing node: the GPU leaves the whole capacity and
        becomes a shared unit (filed once a holder is added with `take_unit`)."""
        info = nc.gpus[gpu]
        assert info.domain is not None
        nc.domains[info.domain].remove(gpu)
        unit = self._open_dynamic(nc, info, gpu)
        self._file_whole(nc)
        return unit

    def _close_shared(self, nc: NodeCap, info: GpuInfo, gpu: int) -> None:
        """The last fraction left a dynamically shared GPU: it is a free full GPU again."""
        unit = info.units.pop(None)
        unit.closed, unit.replicas_left, unit.residual = True, 0, 1.0
        if info.domain is not None and not info.holders:
            free = nc.domains.setdefault(info.domain, [])
            if gpu not in free:
                free.append(gpu)
                free.sort()

    def release(self, job: Job) -> None:
        """Give back everything a running job holds (it is being evicted)."""
        touched: set[str] = set()
        for slot in job.placement:
            nc = self.by_name.get(slot.node)
            info = nc.gpus.get(slot.gpu) if nc is not None else None
            if nc is None or info is None:
                continue
            touched.add(nc.name)
            self._release_slot(nc, info, slot, job.name)
        for name in touched:
            nc = self.by_name[name]
            if nc.idx >= 0:
                self._file_whole(nc)
                self._file_ts(nc)

    def _release_slot(self, nc: NodeCap, info: GpuInfo, slot: Slot, job: str) -> None:
        shared = info.units.get(None) if slot.mig_start is None else None
        if shared is not None and shared.dynamic and job in shared.holders:
            shared.residual += shared.holders.pop(job)
            if not shared.holders:
                self._close_shared(nc, info, slot.gpu)
            return
        if slot.mig_start is None and info.mode == "full" and info.domain is not None:
            info.holders.discard(job)
            free = nc.domains.setdefault(info.domain, [])
            if not info.holders and slot.gpu not in free:
                free.append(slot.gpu)
                free.sort()
            return
        unit = info.units.get(slot.mig_start)
        if unit is not None and job in unit.holders:
            unit.residual += unit.holders.pop(job)
            unit.replicas_left += 1
            return
        if slot.mig_start is not None and slot.mig_start in info.instances:
            owners = info.instance_holders.setdefault(slot.mig_start, set())
            owners.discard(job)
            if not owners:
                profile = info.instances[slot.mig_start]
                nc.mig.setdefault((info.model, profile), set()).add((slot.gpu, slot.mig_start))
                if nc.idx >= 0:
                    self._refresh_mig_gpu(nc, slot.gpu)

    def hold(self, job: Job) -> None:
        """Undo `release`: the job holds its slices again (an eviction that did not make room)."""
        touched: set[str] = set()
        for slot in job.placement:
            nc = self.by_name.get(slot.node)
            info = nc.gpus.get(slot.gpu) if nc is not None else None
            if nc is None or info is None:
                continue
            touched.add(nc.name)
            if slot.mig_start is None and info.dynamic_unit is not None and is_fractional(job):
                unit = info.units.get(None)
                if unit is None:  # the release closed it: the GPU is shared again
                    assert info.domain is not None
                    free = nc.domains.get(info.domain, [])
                    if slot.gpu in free:
                        free.remove(slot.gpu)
                    unit = self._open_dynamic(nc, info, slot.gpu)
                self._hold_unit(unit, job)
                continue
            if slot.mig_start is None and info.mode == "full" and info.domain is not None:
                info.holders.add(job.name)
                free = nc.domains.get(info.domain, [])
                if slot.gpu in free:
                    free.remove(slot.gpu)
                continue
            unit = info.units.get(slot.mig_start)
            if unit is not None:
                need = job_unit_need(job, unit)
                unit.holders[job.name] = unit.holders.get(job.name, 0.0) + need
                unit.residual -= need
                unit.replicas_left -= 1
                continue
            if slot.mig_start is not None and slot.mig_start in info.instances:
                info.instance_holders.setdefault(slot.mig_start, set()).add(job.name)
                profile = info.instances[slot.mig_start]
                nc.mig.get((info.model, profile), set()).discard((slot.gpu, slot.mig_start))
                if nc.idx >= 0:
                    self._refresh_mig_gpu(nc, slot.gpu)
        for name in touched:
            nc = self.by_name[name]
            if nc.idx >= 0:
                self._file_whole(nc)
                self._file_ts(nc)
