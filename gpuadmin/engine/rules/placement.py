"""Placement rules (DESIGN §5 Placement): a running job's slices exist, are free and match its request;
exclusive jobs never land on a time-sliced replica; NVLink, RDMA and gang constraints hold; shared slices are
never oversubscribed. They judge running jobs, so `bind-job` is checked like any other change."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from gpuadmin.catalog import get_catalog
from gpuadmin.catalog.entities import GpuModel
from gpuadmin.engine.rules.base import GpuSite, Violation, gpu_target, job_target, rule
from gpuadmin.engine.rules.device_groups import nvlink_domain
from gpuadmin.engine.rules.nodes import (
    EPSILON,
    base_slots,
    holder_jobs,
    model_of,
    names,
    new_slots,
    slots_on,
)
from gpuadmin.engine.rules.vsphere import vm_gpus, vm_holders
from gpuadmin.engine.sharing import is_fractional, need, shares_dynamically, usable_gib
from gpuadmin.engine.state import GpuKey, View
from gpuadmin.model import Gpu, Job, MigInstance, Node, Slot
from gpuadmin.model.places import slice_place

SliceKind = Literal["whole", "replica", "instance", "instance-replica", "unusable"]


@dataclass(frozen=True, slots=True)
class Slice:
    """What one slot resolves to on its GPU."""

    kind: SliceKind
    gpu: Gpu
    instance: MigInstance | None = None
    dynamic: bool = False  # a full GPU of a dynamic-sharing node: fractions may share it (engine/sharing.py)

    @property
    def shareable(self) -> bool:
        return self.kind in ("replica", "instance-replica")

    @property
    def replicas(self) -> int | None:
        if self.kind == "replica":
            return self.gpu.replicas
        if self.kind == "instance-replica" and self.instance is not None:
            return self.instance.replicas
        return None

    def describe(self, slot: Slot) -> str:
        where = f"GPU {slot.gpu} of {slot.node}"
        if self.instance is not None:
            sliced = f", time-sliced ×{self.instance.replicas}" if self.instance.replicas else ""
            return f"MIG instance {self.instance.profile}@{self.instance.start}{sliced} of {where}"
        if self.kind == "replica":
            return f"a time-sliced replica of {where} (×{self.gpu.replicas})"
        if self.kind == "whole":
            return f"{where} (dynamic sharing)" if self.dynamic else where
        return f"{where} (mode {self.gpu.mode})"


def resolve(view: View, slot: Slot) -> Slice | None:
    """The slice a slot names, or None where the node, GPU or MIG instance does not exist."""
    return view.shared("slice", (slot.node, slot.gpu, slot.mig_start), lambda: _resolve(view, slot))


def _resolve(view: View, slot: Slot) -> Slice | None:
    found = view.gpu_at((slot.node, slot.gpu))
    if found is None:
        return None
    node, gpu = found
    if slot.mig_start is not None:
        if gpu.mode != "mig":
            return None
        inst = next((i for i in gpu.mig or () if i.start == slot.mig_start), None)
        if inst is None:
            return None
        return Slice("instance-replica" if inst.replicas is not None else "instance", gpu, inst)
    if gpu.mode == "full":
        return Slice("whole", gpu, dynamic=shares_dynamically(node, gpu))
    if gpu.mode == "time-sliced":
        return Slice("replica", gpu)
    return Slice("unusable", gpu)


def slice_memory_gib(model: GpuModel, found: Slice) -> float:
    total = model.memory_mib / 1024
    if found.instance is None:
        return total
    profile = model.mig_profile(found.instance.profile)
    if profile is None or not model.memory_slices:
        return 0.0
    if profile.memory_gib is not None:
        return profile.memory_gib
    return total * profile.memory_slices / model.memory_slices


def _running(view: View, name: str) -> Job | None:
    job = view.job(name)
    return job if job is not None and job.status == "running" else None


def _slot_text(slot: Slot, view: View | None = None) -> str:
    """The slot as a place (`node/gpu/profile@start`): the instance's profile from the view, else the base."""
    profile = None
    if slot.mig_start is not None and view is not None:
        for node in (view.node(slot.node), view.base.nodes.get(slot.node)):
            gpu = node.gpu(slot.gpu) if node is not None else None
            found = [i.profile for i in (gpu.mig or ()) if i.start == slot.mig_start] if gpu is not None else []
            if found:
                profile = found[0]
                break
    return slice_place(slot.node, slot.gpu, slot.mig_start, profile)


@rule(
    "placement.slot-exists",
    "Every slot of a running job names an existing node, GPU and MIG instance.",
    "job",
)
def slot_exists(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None:
        return
    for slot in job.placement:
        if resolve(view, slot) is not None:
            continue  # the slice exists (the lookup the other placement rules share); below, what is missing
        node = view.node(slot.node)
        found = view.gpu_at((slot.node, slot.gpu))
        gpu = found[1] if found is not None else None
        if node is None and slot.node in view.base.nodes:  # a remove-node (or a restore) in this plan
            problem, hint = f"this plan removes node {slot.node}", _stop_first(job)
        elif node is None:
            problem, hint = f"node {slot.node} does not exist", "bind the job to an existing node"
        elif gpu is None:
            problem, hint = (
                f"node {slot.node} has no GPU {slot.gpu}",
                f"GPUs of {slot.node}: " + names(str(g.index) for g in node.gpus),
            )
        else:  # the GPU is there, so the slot names a MIG instance it does not have
            if gpu.mode != "mig":
                problem = f"GPU {slot.gpu} of {slot.node} is in {gpu.mode} mode and has no MIG instances"
            else:
                problem = f"GPU {slot.gpu} of {slot.node} has no MIG instance starting at {slot.mig_start}"
            layout = names(i.where for i in gpu.mig or ()) or "none"
            hint = f"instances there: {layout}"
        yield Violation(
            "placement.slot-exists",
            job_target(name),
            f"job {name} holds {_slot_text(slot, view)}, but {problem}",
            hint,
        )


def _stop_first(job: Job) -> str:
    """How a job stops before the node it runs on is removed."""
    if job.preemptible:
        return "preempt the job first (preempt-job), or drain the node"
    return "it is non-preemptible: it completes first, or an admin preempts it (preempt-job, override: true, a reason)"


def _overlap(a: Slot, b: Slot) -> bool:
    return a.mig_start is None or b.mig_start is None or a.mig_start == b.mig_start


@rule(
    "placement.slot-free",
    "A whole GPU or MIG instance is held by one job only; shared replicas are held by "
    "non-exclusive jobs only.",
    "job",
)
def slot_free(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None:
        return
    seen: set[tuple[str, int, int | None]] = set()
    held_before = base_slots(view, name)
    for slot in job.placement:
        key = (slot.node, slot.gpu, slot.mig_start)
        is_new = key not in held_before
        if key in seen:
            yield Violation(
                "placement.slot-free",
                job_target(name),
                f"job {name} lists {_slot_text(slot, view)} twice",
                "list each slice once",
            )
            continue
        seen.add(key)
        found = resolve(view, slot)
        if found is None:
            continue
        for other in holder_jobs(view, slot.node, slot.gpu):
            if other.name == name or (job.vm is not None and other.vm is not None and job.vm != other.vm):
                continue  # jobs in two VMs that share a GPU through vGPUs each hold their own VM's vGPU
            theirs_old = None if is_new else base_slots(view, other.name)  # read only for a slot held before
            for theirs in slots_on(other, slot.node, slot.gpu):
                if not _overlap(slot, theirs):
                    continue
                if theirs_old is not None and (theirs.node, theirs.gpu, theirs.mig_start) not in theirs_old:
                    continue  # the newcomer's violation names this conflict
                if found.dynamic and (is_fractional(job) or is_fractional(other)):
                    continue  # fractions share it; a whole job among them is placement.dynamic-share's
                sharing = found.shareable and slot.mig_start == theirs.mig_start
                if sharing and job.shared and other.shared:
                    continue
                why = (
                    "one of them is exclusive (isolation: exclusive, the default for a whole-GPU or MIG request)"
                    if sharing
                    else "it is not a shared (time-sliced) slice"
                )
                yield Violation(
                    "placement.slot-free",
                    job_target(name),
                    f"job {name} holds {found.describe(slot)}, which job {other.name} also holds "
                    f"({_slot_text(theirs, view)}); {why}",
                    "choose a free slice; `gpuadmin get slices` shows the holders",
                )


def _kind_mismatch(job: Job, found: Slice, slot: Slot, model: GpuModel | None) -> str | None:
    req = job.request
    if job.vm is not None:
        return None  # a job inside a VM holds the VM's GPUs, whatever their mode: placement.vm-gpus judges
    if found.kind == "unusable":
        return f"GPU {slot.gpu} of {slot.node} is in {found.gpu.mode} mode and serves VMs, not jobs"
    if req.kind == "gpus":
        if found.kind in ("instance", "instance-replica"):
            return f"it asks for whole GPUs but holds {found.describe(slot)}"
        if found.kind == "replica" and not job.shared:
            return (
                f"it asks for a whole GPU but holds {found.describe(slot)} "
                "(isolation: shared lets a GPU request take a replica)"
            )
        return None
    if req.kind == "mig":
        if found.instance is None:
            return f"it asks for a MIG {req.mig} instance but holds {found.describe(slot)}"
        wanted = model.mig_profile(req.mig or "") if model is not None else None
        have = model.mig_profile(found.instance.profile) if model is not None else None
        if wanted is None or have is None or wanted.name != have.name:
            return f"it asks for MIG {req.mig} but holds {found.describe(slot)}"
        if found.instance.split:
            return (
                f"it asks for MIG {req.mig} but {found.describe(slot)} is split into compute instances "
                f"({', '.join(found.instance.compute_instances or ())}); jobs are placed on whole GPU instances"
            )
        return None
    # fraction / gpu_memory_gib: a time-sliced GPU or MIG instance, or a full GPU of a dynamic-sharing node
    if not found.shareable and not found.dynamic:
        amount = f"{req.fraction} of a GPU" if req.fraction is not None else f"{req.gpu_memory_gib} GiB"
        return (
            f"it asks for {amount}, which needs a time-sliced GPU or MIG instance, or a full GPU of a node "
            f"with dynamic sharing (sharing: {{fractions: dynamic}}), but holds {found.describe(slot)}"
        )
    return None


@rule(
    "placement.matches-request",
    "A running job's slots match its request: count, slice kind, MIG profile and model.",
    "job",
)
def matches_request(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None:
        return
    req = job.request
    target = job_target(name)
    want = req.gpus * req.nodes if req.gpus is not None else 1
    if len(job.placement) != want:
        shape = (
            f"{req.gpus} GPU(s) × {req.nodes} node(s)" if req.gpus is not None else f"one {req.kind} slice"
        )
        yield Violation(
            "placement.matches-request",
            target,
            f"job {name} holds {len(job.placement)} slot(s) but requests {want} ({shape})",
            "bind exactly the requested number of slices",
        )
    for slot in job.placement:
        found = resolve(view, slot)
        if found is None:
            continue  # placement.slot-exists
        model = model_of(found.gpu)
        if req.model is not None:
            wanted = get_catalog().model(req.model)
            if found.gpu.model != req.model and (wanted is None or wanted is not model):
                yield Violation(
                    "placement.matches-request",
                    target,
                    f"job {name} requests model {req.model} but holds {_slot_text(slot, view)}, a "
                    f"{found.gpu.model}",
                    f"place it on a {req.model}",
                )
        problem = _kind_mismatch(job, found, slot, model)
        if problem is not None:
            yield Violation(
                "placement.matches-request",
                target,
                f"job {name}: {problem}",
                "bind the job to a slice of the kind it requests",
            )


@rule(
    "placement.dynamic-share",
    "A dynamically shared GPU holds fractions or one whole-GPU job, never both: a whole-GPU or exclusive job "
    "takes it only when the last fraction has left, and fractions never join a GPU a whole job holds.",
    "job",
)
def dynamic_share(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None:
        return
    held_before = base_slots(view, name)
    for slot in job.placement:
        if slot.mig_start is not None:
            continue
        found = resolve(view, slot)
        if found is None or not found.dynamic:
            continue
        is_new = (slot.node, slot.gpu, None) not in held_before
        # Reported on the newcomer; where both arrive in one plan, on the whole-GPU job (it is the one that
        # must wait for a free GPU).
        others = [
            o for o in holder_jobs(view, slot.node, slot.gpu)
            if o.name != name and is_fractional(o) != is_fractional(job)
            and ((is_new and not is_fractional(job))
                 or (slot.node, slot.gpu, None) in base_slots(view, o.name))
        ]
        if not others:
            continue
        who = names(o.name for o in others)
        if is_fractional(job):
            yield Violation(
                "placement.dynamic-share",
                job_target(name),
                f"job {name} asks for part of {found.describe(slot)}, but whole-GPU job {who} holds it",
                f"bind it to a GPU that is free or already shared; {_free_gpus_hint(view, slot.node)}",
            )
            continue
        yield Violation(
            "placement.dynamic-share",
            job_target(name),
            f"job {name} needs {found.describe(slot)} whole, but fractions hold it ({who})",
            f"preempt {who} in the same plan (preempt-job), or wait until they finish; "
            f"{_free_gpus_hint(view, slot.node)}",
        )


def _free_gpus_hint(view: View, node_name: str) -> str:
    node = view.node(node_name)
    free = [str(g.index) for g in node.gpus if g.mode == "full" and not view.holders(node_name, g.index)] \
        if node is not None else []
    return f"free full GPUs on {node_name}: {names(free)}" if free else f"{node_name} has no free full GPU"


@rule(
    "placement.exclusive-not-shared",
    "An exclusive job (isolation: exclusive, or no isolation on a whole-GPU or MIG request) never holds a "
    "time-sliced replica; a GPU or MIG instance it holds is not time-sliced under it.",
    "job",
)
def exclusive_not_shared(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None or job.shared:
        return
    for slot in job.placement:
        found = resolve(view, slot)
        if found is not None and found.shareable:
            yield Violation(
                "placement.exclusive-not-shared",
                job_target(name),
                f"job {name} is exclusive{_why_exclusive(job)} but holds {found.describe(slot)}, which other "
                "jobs may share",
                "place it on a whole GPU or an unshared MIG instance; time-slice a slice only once its exclusive "
                "holder is preempted (preempt-job in the same plan)",
            )


def _why_exclusive(job: Job) -> str:
    return " (isolation: exclusive)" if job.isolation == "exclusive" else " (the default without isolation: shared)"


@rule(
    "placement.non-preemptible-kept",
    "A running non-preemptible job keeps its slots: no plan evicts or moves it (preempt-job, a restore, an undo), "
    "short of an admin's preempt-job with override: true and a reason.",
    "job",
)
def non_preemptible_kept(view: View, name: str) -> Iterable[Violation]:
    before = view.base.jobs.get(name)
    if before is None or before.status != "running" or before.preemptible or name in view.overridden:
        return
    after = view.job(name)
    if after is None:
        return  # cancelled: the job ends, nobody preempts it
    if after.status == "running" and base_slots(view, name) == {(s.node, s.gpu, s.mig_start) for s in after.placement}:
        return
    yield Violation(
        "placement.non-preemptible-kept",
        job_target(name),
        f"job {name} is non-preemptible and running; this plan would "
        + ("move it to other slices" if after.status == "running" else f"stop it (status {after.status})"),
        f"leave it running; an admin may stop it with op: preempt-job, name: {name}, override: true, "
        "reason: WHY (journaled)",
    )


@rule(
    "placement.nvlink-domain",
    "An nvlink job's GPUs on a node share one NVLink domain, and one device group where the node has groups.",
    "job",
)
def nvlink(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None or not job.request.nvlink:
        return
    per_node: dict[str, list[int]] = {}
    for slot in job.placement:
        per_node.setdefault(slot.node, []).append(slot.gpu)
    for node_name, indexes in sorted(per_node.items()):
        node = view.node(node_name)
        if node is None or len(set(indexes)) < 2:
            continue
        gpus = names(str(i) for i in sorted(set(indexes)))
        domains = {nvlink_domain(node, i) for i in indexes}
        if len(domains) > 1:
            yield Violation(
                "placement.nvlink-domain",
                job_target(name),
                f"job {name} needs NVLink, but its GPUs {gpus} on {node_name} span {len(domains)} NVLink "
                f"domains ({node_name} has nvlink: {node.nvlink_kind})",
                "place it on GPUs of one NVSwitch board or one bridged pair",
            )
            continue
        if node.device_groups:
            groups = {g.name for g in node.device_groups for i in indexes if i in g.gpus}
            inside = all(any(i in g.gpus for g in node.device_groups) for i in indexes)
            if len(groups) != 1 or not inside or not _one_group_holds(node, indexes):
                yield Violation(
                    "placement.nvlink-domain",
                    job_target(name),
                    f"job {name} needs NVLink, but its GPUs {gpus} on {node_name} are not all in one "
                    f"device group (NVLinks between groups are not trained)",
                    "place it on GPUs of one device group",
                )


def _one_group_holds(node: Node, indexes: list[int]) -> bool:
    return any(set(indexes) <= set(g.gpus) for g in node.device_groups)


@rule("placement.rdma", "An rdma job runs only on nodes with RDMA NICs, all on one RDMA network.", "job")
def rdma(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None or not job.request.rdma:
        return
    networks: dict[str, list[str]] = {}
    for node_name in sorted({s.node for s in job.placement}):
        node = view.node(node_name)
        if node is None:
            continue
        if node.rdma is None:
            yield Violation(
                "placement.rdma",
                job_target(name),
                f"job {name} needs RDMA, but node {node_name} has no RDMA NICs",
                "place it on nodes with an rdma: section",
            )
        else:
            networks.setdefault(node.rdma.network, []).append(node_name)
    if len(networks) > 1:
        detail = "; ".join(f"{net}: {names(ns)}" for net, ns in sorted(networks.items()))
        yield Violation(
            "placement.rdma",
            job_target(name),
            f"job {name} spans {len(networks)} RDMA networks ({detail})",
            "place all its nodes on one RDMA network",
        )


@rule(
    "placement.gang-whole",
    "A gang of nodes: N spans exactly N nodes with `gpus` distinct GPUs on each.",
    "job",
)
def gang_whole(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None or job.request.gpus is None:
        return
    req = job.request
    per_node: dict[str, set[int]] = {}
    for slot in job.placement:
        per_node.setdefault(slot.node, set()).add(slot.gpu)
    uneven = {n: len(g) for n, g in per_node.items() if len(g) != req.gpus}
    if len(per_node) != req.nodes or uneven:
        spread = names(f"{n}: {len(g)}" for n, g in sorted(per_node.items()))
        yield Violation(
            "placement.gang-whole",
            job_target(name),
            f"job {name} wants {req.gpus} GPU(s) on each of {req.nodes} node(s), but holds {spread}",
            "bind the whole gang at once: the same number of GPUs on each of its nodes",
        )


# The modes whose slices `resolve` can make shareable (a replica, a MIG instance's replica); a full GPU shares only
# on a dynamic-sharing node.
_SHAREABLE_MODES = frozenset({"time-sliced", "mig"})


@rule(
    "placement.no-oversubscription",
    "Shared slices are never oversubscribed: holders ≤ replicas, and one combined share ≤ the slice (a fraction "
    "takes f of it, a memory request g GiB / its memory).",
    "gpu",
)
def no_oversubscription(view: View, site: GpuSite) -> Iterable[Violation]:
    if site.found is None:
        return ()
    node, gpu = site.found
    if not shares_dynamically(node, gpu) and gpu.mode not in _SHAREABLE_MODES:
        return ()  # every slot here resolves to a whole or unusable slice, or to none: nothing is shared
    return _oversubscription(view, site, node, gpu)


def _oversubscription(view: View, site: GpuSite, node: Node, gpu: Gpu) -> Iterable[Violation]:
    """no-oversubscription's judgement of a GPU that exists, on any GPU (tests call it where the rule skips)."""
    key = site.key
    model = site.model
    per_slice: dict[int | None, list[tuple[Job, Slot]]] = {}
    for job in site.holders:
        for slot in slots_on(job, *key):
            per_slice.setdefault(slot.mig_start, []).append((job, slot))
    if shares_dynamically(node, gpu) and per_slice.get(None):
        yield from _dynamic_oversubscription(node, gpu, key, [j for j, _ in per_slice[None] if is_fractional(j)])
        return
    for _, held in sorted(per_slice.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        found = resolve(view, held[0][1])
        if found is None or not found.shareable:
            continue
        where = found.describe(held[0][1])
        replicas = found.replicas
        if replicas is not None and len(held) > replicas:
            yield Violation(
                "placement.no-oversubscription",
                gpu_target(*key),
                f"{len(held)} jobs share {where}, which has {replicas} replicas "
                f"({names(j.name for j, _ in held)})",
                "raise the replica count with set-time-slicing, or move a job",
            )
        who = names(j.name for j, _ in held)
        memory = slice_memory_gib(model, found) if model is not None else 0.0
        # One combined share, as on a dynamically shared GPU and in the scheduler: a fraction takes f of the
        # slice, a memory request g / memory of it; whole-slice sharers (isolation: shared) take a replica only.
        taken = sum(need(j, memory) for j, _ in held if is_fractional(j))
        if taken > 1 + EPSILON:
            fractions = sum(j.request.fraction or 0.0 for j, _ in held)
            gib = sum(j.request.gpu_memory_gib or 0.0 for j, _ in held)
            yield Violation(
                "placement.no-oversubscription",
                gpu_target(*key),
                f"{where} is oversubscribed: its holders take {taken:.3g} of it ({fractions:g} in fractions, "
                f"{gib:g} GiB of its {memory:.1f} GiB as memory requests) ({who})",
                "move a job to another slice, or shrink a request",
            )


def _dynamic_oversubscription(node: Node, gpu: Gpu, key: GpuKey, fractions: list[Job]) -> Iterable[Violation]:
    """Fractions on a dynamically shared GPU: compute shares add up to ≤ 1, memory to ≤ the GPU's memory less
    the reserved slice (one sum: a fraction takes f of both, a memory request g GiB of g / usable)."""
    if not fractions:
        return
    usable = usable_gib(node, gpu)
    total = sum(need(j, usable) for j in fractions)
    if total <= 1 + EPSILON:
        return
    reserved = node.sharing.reserved_gib if node.sharing is not None else 0.0
    yield Violation(
        "placement.no-oversubscription",
        gpu_target(*key),
        f"GPU {key[1]} of {key[0]} (dynamic sharing) is oversubscribed: its fractions take {total:.3g} of it, "
        f"{total * usable:.1f} GiB of the {usable:.1f} GiB left after the {reserved:g} GiB reserved "
        f"({names(j.name for j in fractions)})",
        "move a fraction to another GPU, or shrink a request",
    )


def _fmt(amount: float) -> str:
    return f"{amount:g}"


@rule(
    "placement.cpu-memory-fit",
    "The CPUs and memory the running jobs on a node request (per node of a gang) fit the node's `cpus` and "
    "`memory_gib`; a node without them is not checked.",
    "node",
)
def cpu_memory_fit(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or (node.cpus is None and node.memory_gib is None):
        return
    # only the jobs that ask for CPUs or memory count; most ask for neither, so look no further for them
    asking: dict[str, Job] = {}
    for gpu in node.gpus:
        for holder in view.holders(name, gpu.index):
            job = view.job(holder) if holder not in asking else None
            if job is not None and job.status == "running" and (
                job.request.cpus is not None or job.request.memory_gib is not None
            ):
                asking[holder] = job
    jobs = [asking[n] for n in sorted(asking)]
    for what, have, asked in (
        ("CPUs", node.cpus, [(j.name, j.request.cpus) for j in jobs]),
        ("GiB of memory", node.memory_gib, [(j.name, j.request.memory_gib) for j in jobs]),
    ):
        wanted = [(n, a) for n, a in asked if a is not None]
        total = sum(a for _, a in wanted)
        if have is not None and total > have + EPSILON:
            yield Violation(
                "placement.cpu-memory-fit",
                f"node/{name}",
                f"the jobs on {name} request {_fmt(total)} {what}, it has {have} "
                f"({names(f'{n}: {_fmt(a)}' for n, a in wanted)})",
                "place a job on another node, or shrink its request",
            )


@rule(
    "placement.node-affinity",
    "A job is placed only on nodes whose labels match its `node_selector` and `node_affinity` (checked when "
    "it is placed: a later label change does not evict it, as in Kubernetes).",
    "job",
)
def node_affinity(view: View, name: str) -> Iterable[Violation]:
    job = view.job(name)
    if job is None or not (job.node_selector or job.node_affinity):
        return
    for node_name in sorted({s.node for s in new_slots(view, job)}):
        node = view.node(node_name)
        why = job.label_mismatch(node.labels) if node is not None else None
        if why is not None:
            yield Violation(
                "placement.node-affinity",
                job_target(name),
                f"job {name} is placed on {node_name}, which does not match its {why}",
                "place it on a node whose labels match (`gpuadmin get nodes -l KEY=VALUE`)",
            )


@rule(
    "placement.vm-gpus",
    "A job with `vm` holds only GPUs that VM holds (passthrough, its device group, or its vGPUs); a job "
    "without `vm` never holds a GPU a VM holds.",
    "job",
)
def vm_placement(view: View, name: str) -> Iterable[Violation]:
    job = _running(view, name)
    if job is None:
        return
    for node_name in sorted({s.node for s in job.placement}):
        node = view.node(node_name)
        if node is None or (job.vm is None and not node.vms):
            continue  # placement.slot-exists; or no VM on the node to keep a job off
        indexes = sorted({s.gpu for s in job.placement if s.node == node_name})
        if job.vm is not None:
            vm = next((v for v in node.vms if v.name == job.vm), None)
            allowed = set(vm_gpus(node, vm)) if vm is not None else set()
            outside = [i for i in indexes if i not in allowed]
            if vm is None:
                yield Violation(
                    "placement.vm-gpus",
                    job_target(name),
                    f"job {name} runs in VM {job.vm}, which is not on {node_name}",
                    "place it on the host that runs the VM",
                )
            elif outside:
                yield Violation(
                    "placement.vm-gpus",
                    job_target(name),
                    f"job {name} runs in VM {job.vm} but holds GPU(s) {names(map(str, outside))} of {node_name}, "
                    f"which the VM does not hold (it holds {names(map(str, sorted(allowed))) or 'none'})",
                    "bind it to GPUs of its VM",
                )
            continue
        held = vm_holders(node) if node.vms else {}
        for index in indexes:
            if index in held:
                yield Violation(
                    "placement.vm-gpus",
                    job_target(name),
                    f"job {name} holds GPU {index} of {node_name}, which VM {held[index]} holds",
                    f"only a job with vm: {held[index]} runs there; place this one elsewhere",
                )


@rule(
    "placement.gpu-healthy",
    "A GPU fenced as unhealthy (`set-gpu-health`) takes no new placements; the jobs already on it keep "
    "running, as on a cordoned node.",
    "job",
)
def gpu_healthy(view: View, name: str) -> Iterable[Violation]:
    job = view.job(name)
    if job is None:
        return
    seen: set[tuple[str, int]] = set()
    for slot in new_slots(view, job):
        found = view.gpu_at((slot.node, slot.gpu))
        health = found[1].health if found is not None else None
        if health is None or (slot.node, slot.gpu) in seen:
            continue
        seen.add((slot.node, slot.gpu))
        fenced = f" by {health.by}" if health.by else ""
        yield Violation(
            "placement.gpu-healthy",
            job_target(name),
            f"job {name} would be placed on GPU {slot.gpu} of {slot.node}, which is fenced as unhealthy{fenced}: "
            f"{health.reason}",
            "place the job on a healthy GPU; an admin clears the fence after the repair "
            f"(gpuadmin gpu-health {gpu_target(slot.node, slot.gpu)} healthy)",
        )
