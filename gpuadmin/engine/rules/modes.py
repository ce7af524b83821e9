"""Mode rules (DESIGN §5 Modes, gpu-facts §1.8): a GPU is in exactly one mode, a MIG-enabled GPU is never
offered whole, time-slicing has at least 2 replicas, one sharing strategy per node, MPS never on MIG."""

from __future__ import annotations

from collections.abc import Iterable

from gpuadmin.engine.rules.base import GpuSite, Violation, gpu_target, node_target, rule
from gpuadmin.engine.rules.nodes import EPSILON, base_slots, names, slots_on
from gpuadmin.engine.sharing import is_fractional, need, shares_dynamically, usable_gib
from gpuadmin.engine.state import View

# The device plugin refuses fewer ("number of replicas must be >= 2", gpu-facts §3.1): a software rule.
MIN_REPLICAS = 2

_MODE_FIELDS = {
    "mig": "mig",
    "replicas": "time-sliced",
    "sharing": "time-sliced",
    "vgpus": "vgpu",
    "vm": "passthrough",
}


@rule("mode.fields-match", "A GPU is in exactly one mode: only that mode's fields are set.", "gpu")
def fields_match(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None:
        return
    gpu = found[1]
    for field_name, mode in _MODE_FIELDS.items():
        if getattr(gpu, field_name) is not None and gpu.mode != mode:
            yield Violation(
                "mode.fields-match",
                gpu_target(*key),
                f"GPU {key[1]} on {key[0]} is in mode {gpu.mode} but has '{field_name}', "
                f"which belongs to mode {mode}",
                f"switch the GPU to {mode} with set-mode, or clear '{field_name}'",
            )
    if gpu.mode == "time-sliced" and gpu.replicas is None:
        yield Violation(
            "mode.fields-match",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} is time-sliced but has no replica count",
            "set it with set-time-slicing",
        )


@rule("mode.vsphere-only", "vGPU and passthrough modes exist only on vSphere hosts.", "gpu")
def vsphere_only(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None:
        return
    node, gpu = found
    if gpu.mode in ("vgpu", "passthrough") and node.platform != "vsphere":
        yield Violation(
            "mode.vsphere-only",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} is in {gpu.mode} mode, but {key[0]} is a {node.platform} node",
            "vGPUs and passthrough need platform: vsphere; use full, mig or time-sliced here",
        )


@rule("mode.mig-not-whole", "No job holds a MIG-enabled GPU whole.", "gpu", gpu_modes=("mig",))
def mig_not_whole(view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None or found[1].mode != "mig":
        return
    whole = []
    for name in sorted(view.holders(*key)):
        job = view.job(name)
        if (
            job is not None
            and job.status == "running"
            and any(s.mig_start is None for s in slots_on(job, *key))
        ):
            whole.append(name)
    if whole:
        yield Violation(
            "mode.mig-not-whole",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} is MIG-enabled but held whole by: {names(whole)}",
            "a MIG-enabled GPU is offered only as its instances; place the job on an instance "
            "(mig_start) or on a GPU in full mode",
        )


@rule("mode.time-slice-replicas", "Time-slicing (of a GPU or a MIG instance) has at least 2 replicas.", "gpu")
def time_slice_replicas(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None:
        return
    gpu = found[1]
    if gpu.mode == "time-sliced" and gpu.replicas is not None and gpu.replicas < MIN_REPLICAS:
        yield Violation(
            "mode.time-slice-replicas",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} is time-sliced with {gpu.replicas} replica(s); "
            f"at least {MIN_REPLICAS} are needed",
            f"use replicas ≥ {MIN_REPLICAS}, or set-mode full",
        )
    if gpu.mode == "mig":
        for inst in gpu.mig or ():
            if inst.replicas is not None and inst.replicas < MIN_REPLICAS:
                yield Violation(
                    "mode.time-slice-replicas",
                    gpu_target(*key),
                    f"MIG instance {inst.profile}@{inst.start} of GPU {key[1]} on {key[0]} is "
                    f"time-sliced with {inst.replicas} replica(s); at least {MIN_REPLICAS} are needed",
                    f"use replicas ≥ {MIN_REPLICAS}, or no time-slicing on the instance",
                )


@rule(
    "mode.one-sharing-strategy-per-node",
    "MPS and time-slicing are not mixed on one node, and MPS is never used on MIG.",
    "node",
)
def one_sharing_strategy(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None:
        return
    users: dict[str, list[str]] = {}
    for gpu in node.gpus:
        if gpu.mode == "time-sliced":
            users.setdefault(gpu.sharing or "time-slicing", []).append(f"GPU {gpu.index}")
        if gpu.mode == "mig":
            if gpu.sharing == "mps":
                yield Violation(
                    "mode.one-sharing-strategy-per-node",
                    node_target(name),
                    f"GPU {gpu.index} on {name} is MIG-enabled and set to MPS; MPS is not "
                    "supported on MIG-enabled devices",
                    "time-slice the MIG instances instead, or leave MIG",
                )
            sliced = [
                f"GPU {gpu.index} {i.where}" for i in gpu.mig or () if i.replicas is not None
            ]
            if sliced:
                users.setdefault("time-slicing", []).extend(sliced)
    if len(users) > 1:
        detail = "; ".join(f"{strategy}: {names(where)}" for strategy, where in sorted(users.items()))
        yield Violation(
            "mode.one-sharing-strategy-per-node",
            node_target(name),
            f"node {name} mixes sharing strategies ({detail}); the device plugin takes one per node",
            "use either MPS or time-slicing for every shared GPU of the node",
        )


@rule(
    "mode.change-evicts",
    "Changing the mode of a GPU that jobs hold evicts those jobs in the same plan, never silently.",
    "gpu",
)
def change_evicts(view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    pair = site.before_after
    if pair is None:
        return
    before, after = pair
    if "mig" in (before.mode, after.mode) or before.mode == after.mode:
        return  # same mode: oversubscription rules judge replica counts; MIG: mig.repartition-evicts
    hit: list[str] = []
    for job_name in sorted(view.holders(*key)):
        job = view.job(job_name)
        base_job = view.base.jobs.get(job_name)
        if job is None or job.status != "running" or base_job is None or base_job.status != "running":
            continue
        if any(slot in base_job.placement for slot in slots_on(job, *key)):
            hit.append(job_name)
    if hit:
        yield Violation(
            "mode.change-evicts",
            gpu_target(*key),
            f"changing GPU {key[1]} on {key[0]} from {before.mode} to {after.mode} would take it from "
            f"running job(s): {names(hit)}",
            "preempt those jobs in the same plan (or drain the node) first",
        )


@rule(
    "mode.sharing-reserve",
    "On a dynamic-sharing node the reserved memory per shared GPU is less than every full GPU's memory.",
    "node",
)
def sharing_reserve(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or node.sharing is None:
        return
    starved = [g for g in node.gpus if shares_dynamically(node, g) and usable_gib(node, g) <= 0]
    if starved:
        yield Violation(
            "mode.sharing-reserve",
            node_target(name),
            f"{name} reserves {node.sharing.reserved_gib:g} GiB per shared GPU, which leaves nothing for "
            f"fractions on GPU(s) {names(str(g.index) for g in starved)} ({names(sorted({g.model for g in starved}))})",
            "lower sharing.reserved_gib (default 0.5 GiB)",
        )


@rule(
    "mode.sharing-change-evicts",
    "Turning a node's dynamic sharing off, or raising its reserve past what the running fractions take, evicts "
    "those fractions in the same plan, never silently.",
    "gpu",
)
def sharing_change_evicts(view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    base_node = view.base.nodes.get(key[0])
    if found is None or base_node is None:
        return
    node, gpu = found
    if node.sharing == base_node.sharing or gpu.mode != "full":
        return  # a mode change is mode.change-evicts's
    if not shares_dynamically(base_node, base_node.gpu(key[1])):
        return
    # fractions that held the GPU before this plan and still do: the ones the change would strand
    kept = [job for job in site.holders
            if is_fractional(job) and (key[0], key[1], None) in base_slots(view, job.name)]
    if not kept:
        return
    who = names(job.name for job in kept)
    evict = f"preempt {who} in the same plan (op: preempt-job) or drain {key[0]} first"
    if not shares_dynamically(node, gpu):
        yield Violation(
            "mode.sharing-change-evicts",
            gpu_target(*key),
            f"turning dynamic sharing off on {key[0]} would strand the fraction(s) on GPU {key[1]}: {who}",
            evict,
        )
        return
    usable = usable_gib(node, gpu)
    taken = sum(need(job, usable) for job in kept)
    if taken <= 1 + EPSILON:
        return
    assert node.sharing is not None and base_node.sharing is not None
    yield Violation(
        "mode.sharing-change-evicts",
        gpu_target(*key),
        f"raising the reserve on {key[0]} from {base_node.sharing.reserved_gib:g} to {node.sharing.reserved_gib:g} "
        f"GiB per shared GPU leaves fractions {usable:.1f} GiB of GPU {key[1]}, less than its running ones take "
        f"({taken * usable:.1f} GiB: {who})",
        f"{evict}, or keep reserved_gib at {base_node.sharing.reserved_gib:g} GiB",
    )
