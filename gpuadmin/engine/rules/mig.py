"""MIG rules (DESIGN §5 MIG): a MIG-mode GPU's layout is valid for its catalog model, and repartitioning never
silently kills the jobs on it. The geometry itself is `gpuadmin.engine.mig`; these rules name its findings."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from gpuadmin.catalog import get_catalog
from gpuadmin.engine import mig as layout
from gpuadmin.engine.rules.base import GpuSite, Violation, gpu_target, rule
from gpuadmin.engine.rules.nodes import names, slots_on
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu

_KIND_RULE: dict[layout.ProblemKind, str] = {
    "unknown-profile": "mig.profile-exists",
    "bad-start": "mig.placement-start",
    "overlap": "mig.no-overlap",
    "no-placement": "mig.no-overlap",
    "compute-slices": "mig.compute-slices",
    "instance-cap": "mig.instance-cap",
    "media-extensions": "mig.single-media-extension",
    "media-engines": "mig.media-engines",
}


@lru_cache(maxsize=16384)
def _problems(model_name: str, instances: tuple[layout.Request, ...]) -> tuple[layout.LayoutProblem, ...]:
    model = get_catalog().model(model_name)
    assert model is not None
    return tuple(layout.explain_layout(model, list(instances)))


def _layout_problems(site: GpuSite, rule_id: str) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None or found[1].mode != "mig":
        return
    _, gpu = found
    model = site.model
    if model is None or not model.mig_capable:
        return  # mig.model-supports-mig says so
    instances = tuple((i.profile, i.start) for i in gpu.mig or ())
    for problem in _problems(model.name, instances):
        if _KIND_RULE.get(problem.kind) == rule_id:
            yield Violation(
                rule_id,
                gpu_target(*key),
                f"{gpu.model} GPU {key[1]} on {key[0]}: {problem.message}",
                problem.hint,
            )


@rule("mig.model-supports-mig", "MIG mode only on a MIG-capable catalog model.", "gpu", gpu_modes=("mig",))
def model_supports_mig(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None or found[1].mode != "mig":
        return
    gpu = found[1]
    model = site.model
    if model is None and gpu.not_in_catalog is not None:
        yield Violation(
            "mig.model-supports-mig",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} ({gpu.model!r}) is not in the catalog: its MIG profiles and placements "
            "cannot be checked, so MIG is refused on it",
            "keep it whole (full or time-sliced), or add the model to the catalog (gpuadmin/catalog/data)",
        )
    elif model is None:
        yield Violation(
            "mig.model-supports-mig",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} is in MIG mode but its model {gpu.model!r} is not in the catalog",
            "fix the model name; `gpuadmin describe catalog` lists the models",
        )
    elif not model.mig_capable:
        capable = names(m.name for m in get_catalog().mig_capable_models())
        yield Violation(
            "mig.model-supports-mig",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} is in MIG mode, but its model {model.name} does not support MIG",
            f"use time-slicing on it instead; MIG-capable models: {capable}",
        )


@rule("mig.profile-exists", "Every MIG profile of a layout exists for the GPU's model.", "gpu", gpu_modes=("mig",))
def profile_exists(_view: View, site: GpuSite) -> Iterable[Violation]:
    return _layout_problems(site, "mig.profile-exists")


@rule("mig.placement-start", "Each MIG instance starts at one of its profile's placements.", "gpu", gpu_modes=("mig",))
def placement_start(_view: View, site: GpuSite) -> Iterable[Violation]:
    return _layout_problems(site, "mig.placement-start")


@rule(
    "mig.no-overlap",
    "MIG instances do not overlap in memory slices (instances without a start must fit).",
    "gpu", gpu_modes=("mig",),
)
def no_overlap(_view: View, site: GpuSite) -> Iterable[Violation]:
    return _layout_problems(site, "mig.no-overlap")


@rule("mig.compute-slices", "A layout's compute slices add up to at most the model's (7; A30 4).", "gpu",
      gpu_modes=("mig",))
def compute_slices(_view: View, site: GpuSite) -> Iterable[Violation]:
    return _layout_problems(site, "mig.compute-slices")


@rule("mig.instance-cap", "No MIG profile has more instances than its per-GPU cap.", "gpu", gpu_modes=("mig",))
def instance_cap(_view: View, site: GpuSite) -> Iterable[Violation]:
    return _layout_problems(site, "mig.instance-cap")


@rule("mig.single-media-extension", "At most one MIG instance with media extensions (+me) per GPU.", "gpu",
      gpu_modes=("mig",))
def single_media_extension(_view: View, site: GpuSite) -> Iterable[Violation]:
    return _layout_problems(site, "mig.single-media-extension")


@rule(
    "mig.media-engines",
    "The MIG instances' media engines (NVDEC/NVENC/JPEG/OFA) add up to at most the GPU's, where the catalog "
    "models them (RTX PRO 6000: +me.all takes them all).",
    "gpu", gpu_modes=("mig",),
)
def media_engines(_view: View, site: GpuSite) -> Iterable[Violation]:
    return _layout_problems(site, "mig.media-engines")


@rule(
    "mig.compute-instances",
    "A GPU instance's compute instances are CI profiles of that GI, within its compute slices.",
    "gpu", gpu_modes=("mig",),
)
def compute_instances(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None or found[1].mode != "mig":
        return
    gpu = found[1]
    model = site.model
    if model is None or not model.mig_capable:
        return
    for instance in gpu.mig or ():
        if instance.compute_instances is None:
            continue
        where = instance.where
        for problem in layout.compute_instance_problems(model, instance.profile, instance.compute_instances):
            yield Violation(
                "mig.compute-instances",
                gpu_target(*key),
                f"{gpu.model} GPU {key[1]} on {key[0]}, GPU instance {where}: {problem}",
                f"a {instance.profile} GPU instance holds <C>c.{instance.profile} compute instances "
                "whose C add up to at most its own",
            )


@rule(
    "mig.compute-instances-kubernetes",
    "On a Kubernetes node no GPU instance is split into compute instances: the GPU Operator's mig-manager "
    "makes one per GPU instance and the device plugin does not start beside a narrower one.",
    "gpu", gpu_modes=("mig",),
)
def compute_instances_kubernetes(_view: View, site: GpuSite) -> Iterable[Violation]:
    # NVIDIA/k8s-device-plugin internal/rm/rm.go names no resource for a MIG device whose compute instance
    # is narrower than its GPU instance (`info.C != info.G`), and device_map.go then refuses to start; the
    # mig-parted config the operator applies has no compute instances, so it would also undo the split
    key = site.key
    found = site.found
    if found is None or not found[0].kubernetes or found[1].mode != "mig":
        return
    for instance in found[1].mig or ():
        if not instance.split:
            continue
        where = instance.where
        yield Violation(
            "mig.compute-instances-kubernetes",
            gpu_target(*key),
            f"GPU instance {where} of GPU {key[1]} on Kubernetes node {key[0]} is split into compute instances "
            f"{', '.join(instance.compute_instances or ())}: the device plugin does not start on such a node, "
            "and the GPU Operator's mig-manager would recreate the GPU instance whole",
            f"keep the GPU instance whole (compute_instances: [{instance.profile}], or leave it out); split "
            "GPU instances only on nodes outside Kubernetes",
        )


@rule(
    "mig.compute-instances-kept",
    "A change that keeps a GPU instance split into compute instances names them; it never merges them "
    "silently.",
    "gpu",
)
def compute_instances_kept(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    pair = site.before_after
    if pair is None:
        return
    before, after = pair
    if before.mode != "mig" or after.mode != "mig":
        return  # leaving MIG is an explicit change of its own (mig.repartition-evicts judges its jobs)
    kept = {(i.start, i.profile): i for i in after.mig or () if i.start is not None}
    for old in before.mig or ():
        if not old.split or old.start is None:
            continue
        new = kept.get((old.start, old.profile))
        if new is None or new.compute_instances is not None:
            continue  # the GI is gone (a repartition), or the change names its compute instances
        yield Violation(
            "mig.compute-instances-kept",
            gpu_target(*key),
            f"GPU instance {old.profile}@{old.start} of GPU {key[1]} on {key[0]} holds compute instances "
            f"{', '.join(old.compute_instances or ())}; this change would merge them into one",
            f"list them in the change (compute_instances: [{', '.join(old.compute_instances or ())}]), or "
            f"write compute_instances: [{old.profile}] to merge them on purpose",
        )


def _instances(gpu: Gpu) -> dict[int, tuple[str, tuple[str, ...] | None]]:
    """start → (profile, compute instances): a GI whose CIs change loses what ran on the old ones."""
    if gpu.mode != "mig":
        return {}
    return {
        i.start: (i.profile, tuple(i.compute_instances) if i.split and i.compute_instances else None)
        for i in gpu.mig or ()
        if i.start is not None
    }


@rule(
    "mig.repartition-evicts",
    "Repartitioning a GPU (MIG layout, MIG on or off) evicts the jobs on changed slices in the same plan.",
    "gpu",
)
def repartition_evicts(view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    pair = site.before_after
    if pair is None:
        return
    before, after = pair
    if "mig" not in (before.mode, after.mode):
        return  # mode.change-evicts covers the other modes
    if before.mode == after.mode and _instances(before) == _instances(after):
        return
    old, new = _instances(before), _instances(after)
    hit: list[str] = []
    for name in sorted(view.holders(*key)):
        job = view.job(name)
        base_job = view.base.jobs.get(name)
        if job is None or job.status != "running" or base_job is None or base_job.status != "running":
            continue
        for slot in slots_on(job, *key):
            if slot not in base_job.placement:
                continue  # placed by this plan: judged by the placement rules
            if slot.mig_start is None:
                gone = before.mode != after.mode
                what = "the whole GPU"
            else:
                gone = after.mode != "mig" or new.get(slot.mig_start) != old.get(slot.mig_start)
                held = old.get(slot.mig_start)
                what = f"{held[0] if held else '?'}@{slot.mig_start}"
            if gone:
                hit.append(f"{name} ({what})")
    if hit:
        change = (
            f"changing GPU {key[1]} on {key[0]} from {before.mode} to {after.mode}"
            if before.mode != after.mode
            else f"repartitioning GPU {key[1]} on {key[0]}"
        )
        yield Violation(
            "mig.repartition-evicts",
            gpu_target(*key),
            f"{change} would destroy slices held by running job(s): {names(hit)}",
            "preempt those jobs in the same plan (or drain the node), or keep their instances",
        )
