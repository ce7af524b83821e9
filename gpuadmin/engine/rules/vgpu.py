"""vGPU rules (DESIGN §5 vGPU, gpu-facts §4.3–§4.4): types exist for the board, frame buffers fit,
equal-size vs mixed-size mode with the catalog's version thresholds, per-VM limits, MIG-backed types need
MIG geometry."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from gpuadmin.catalog import get_catalog
from gpuadmin.catalog.entities import GpuModel, VgpuType
from gpuadmin.engine import mig as layout
from gpuadmin.engine.rules.base import GpuSite, Violation, gpu_target, node_target, rule
from gpuadmin.engine.rules.nodes import model_of, names
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu, Node


def esxi_version(node: Node) -> str | None:
    return node.vsphere.version if node.vsphere is not None else None


def vgpu_types(gpu: Gpu, model: GpuModel | None) -> list[tuple[str, VgpuType]]:
    """(VM, type) of every vGPU on the GPU whose type the model's board offers, in order."""
    if model is None or gpu.mode != "vgpu":
        return []
    out: list[tuple[str, VgpuType]] = []
    for vgpu in gpu.vgpus or ():
        found = model.vgpu_type(vgpu.profile)
        if found is not None:
            out.append((vgpu.vm, found))
    return out


def _mib(value: int) -> str:
    return f"{value // 1024} GiB" if value % 1024 == 0 else f"{value} MiB"


@rule(
    "vgpu.not-dropped",
    "A VM loses a vGPU only when the plan removes it explicitly (remove-vgpu, or a restore that writes the GPU "
    "without it), never as a side effect of set-mode, set-mig or attach-vm; such a plan is destructive.",
    "gpu",
)
def not_dropped(view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    before = view.base_gpu(key)
    if before is None or not before.vgpus or view.node(key[0]) is None:
        return  # no vGPU to lose; or the node is removed, which is its own destructive removal
    found = site.found
    after = Counter((v.vm, v.profile) for v in (found[1].vgpus or () if found is not None else ()))
    lost = Counter((v.vm, v.profile) for v in before.vgpus) - after - view.vgpus_removed.get(key, Counter())
    if not lost:
        return
    now = f"in {found[1].mode} mode" if found is not None else "gone"
    yield Violation(
        "vgpu.not-dropped",
        gpu_target(*key),
        f"this plan would take {names(f'{vm} its {profile}' for vm, profile in sorted(lost.elements()))} away: "
        f"GPU {key[1]} of {key[0]} would be {now}, and those VMs would silently lose their vGPUs",
        "remove them explicitly in the same plan (op: remove-vgpu, for each): a destructive plan, confirmed by "
        "typing the node's name",
    )


@rule("vgpu.profile-exists", "Every vGPU type exists for the board of the GPU's model.", "gpu", gpu_modes=("vgpu",))
def profile_exists(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None or found[1].mode != "vgpu":
        return
    gpu = found[1]
    model = site.model
    if model is None and gpu.not_in_catalog is not None:
        yield Violation(
            "vgpu.profile-exists",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} ({gpu.model!r}) is not in the catalog: its vGPU types and frame-buffer "
            "limits cannot be checked, so vGPU is refused on it",
            "pass the GPU through whole (passthrough), or add the model to the catalog (gpuadmin/catalog/data)",
        )
        return
    if model is None:
        yield Violation(
            "vgpu.profile-exists",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} hosts vGPUs but its model {gpu.model!r} is not in the catalog",
            "fix the model name",
        )
        return
    for vgpu in gpu.vgpus or ():
        if model.vgpu_type(vgpu.profile) is not None:
            continue
        other = get_catalog().model_for_vgpu_type(vgpu.profile)
        offered = names(t.name for t in model.vgpu_types) or "none"
        where = (
            f" (it is a type of the {other.name} board)" if other is not None and other is not model else ""
        )
        yield Violation(
            "vgpu.profile-exists",
            gpu_target(*key),
            f"vGPU type {vgpu.profile} for VM {vgpu.vm} is not offered on {model.name} GPU {key[1]} "
            f"of {key[0]}{where}",
            f"types of {model.name}: {offered}",
        )


@rule("vgpu.framebuffer", "The vGPUs' frame buffers add up to at most the GPU's.", "gpu")
def framebuffer(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None:
        return
    gpu = found[1]
    model = site.model
    types = vgpu_types(gpu, model)
    if model is None or not types:
        return
    capacity = model.vgpu_framebuffer_mib or model.memory_mib
    total = sum(t.framebuffer_mib for _, t in types)
    if total > capacity:
        parts = " + ".join(t.name for _, t in types)
        yield Violation(
            "vgpu.framebuffer",
            gpu_target(*key),
            f"vGPU frame buffers on {model.name} GPU {key[1]} of {key[0]} add up to {_mib(total)} "
            f"({parts}), the GPU has {_mib(capacity)}",
            "remove a vGPU or use smaller types",
        )


@rule(
    "vgpu.equal-size",
    "The first vGPU fixes the size (and, before the type threshold, the type); mixed sizes from the size "
    "threshold, at the lower per-type maximums.",
    "gpu",
)
def equal_size(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None:
        return
    node, gpu = found
    model = site.model
    types = [(vm, t) for vm, t in vgpu_types(gpu, model) if not t.mig_backed]
    if model is None or not types:
        return
    limits = get_catalog().vsphere
    version = esxi_version(node)
    target = gpu_target(*key)
    where = f"{model.name} GPU {key[1]} of {key[0]}"
    first_vm, first = types[0]
    counts = Counter(t.name for _, t in types)
    by_name = {t.name: t for _, t in types}
    sizes = {t.framebuffer_mib for _, t in types}
    if len(sizes) > 1:
        odd = next(t for _, t in types if t.framebuffer_mib != first.framebuffer_mib)
        if version is None or not limits.allows_mixed_vgpu_sizes(version):
            yield Violation(
                "vgpu.equal-size",
                target,
                f"{where} is in equal-size mode: the first vGPU ({first.name} for {first_vm}) fixes "
                f"the size at {_mib(first.framebuffer_mib)}, but {odd.name} is "
                f"{_mib(odd.framebuffer_mib)}; mixed sizes need ESXi ≥ {limits.mixed_vgpu_sizes_since} "
                f"(this host runs {version or 'no ESXi'})",
                f"use {_mib(first.framebuffer_mib)} types on this GPU, or upgrade the host to "
                f"{limits.mixed_vgpu_sizes_since}+ for mixed-size mode",
            )
            return
        for name, count in sorted(counts.items()):
            cap = by_name[name].max_mixed_size
            if cap is None:
                yield Violation(
                    "vgpu.equal-size",
                    target,
                    f"{where} is in mixed-size mode, and no mixed-size maximum is known for {name}",
                    "use a type with a documented mixed-size maximum, or one size on this GPU",
                )
            elif cap == 0:
                yield Violation(
                    "vgpu.equal-size",
                    target,
                    f"{where} would need mixed-size mode for {name}, and {model.name} has no mixed-size mode",
                    f"use {_mib(first.framebuffer_mib)} types on this GPU",
                )
                return
            elif count > cap:
                yield Violation(
                    "vgpu.equal-size",
                    target,
                    f"{where} is in mixed-size mode: {count} × {name}, at most {cap} in mixed-size mode",
                    f"use at most {cap} × {name} here, or one size (equal-size mode allows "
                    f"{by_name[name].max_equal_size})",
                )
        return
    if len(counts) > 1 and (version is None or not limits.allows_mixed_vgpu_types(version)):
        odd = next(t for _, t in types if t.name != first.name)
        yield Violation(
            "vgpu.equal-size",
            target,
            f"{where}: the first vGPU ({first.name} for {first_vm}) fixes the type, but {odd.name} is "
            f"another; different types of one size need ESXi ≥ {limits.mixed_vgpu_types_since} "
            f"(this host runs {version or 'no ESXi'})",
            f"use {first.name} for every vGPU on this GPU",
        )
        return
    cap = min(t.max_equal_size for t in by_name.values())
    if len(types) > cap:
        yield Violation(
            "vgpu.equal-size",
            target,
            f"{where} holds {len(types)} vGPUs of {_mib(first.framebuffer_mib)} "
            f"({names(sorted(counts))}), at most {cap} in equal-size mode",
            f"use at most {cap}, or a smaller type",
        )


def _per_vm(node: Node) -> dict[str, list[tuple[Gpu, GpuModel | None, str]]]:
    out: dict[str, list[tuple[Gpu, GpuModel | None, str]]] = {}
    for gpu in node.gpus:
        if gpu.mode != "vgpu":
            continue
        model = model_of(gpu)
        for vgpu in gpu.vgpus or ():
            out.setdefault(vgpu.vm, []).append((gpu, model, vgpu.profile))
    return out


@rule(
    "vgpu.max-per-vm",
    "A VM holds at most the catalog's vGPUs per VM for its ESXi version (8 on vSphere 8).",
    "node",
)
def max_per_vm(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    version = esxi_version(node) if node is not None else None
    if node is None or version is None:
        return
    try:
        limit = get_catalog().vsphere.vgpus_per_vm(version)
    except ValueError:
        return  # vsphere.hardware-version reports an ESXi version the catalog does not cover
    for vm, held in sorted(_per_vm(node).items()):
        if len(held) > limit:
            yield Violation(
                "vgpu.max-per-vm",
                node_target(name),
                f"VM {vm} on {name} holds {len(held)} vGPUs, at most {limit} on ESXi {version}",
                "remove vGPUs from the VM, or use fewer larger ones",
            )


@rule("vgpu.one-board-and-series-per-vm", "A VM's vGPUs are all of one board type and one series.", "node")
def one_board_and_series(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None:
        return
    for vm, held in sorted(_per_vm(node).items()):
        boards: dict[str, list[str]] = {}
        series: dict[str, list[str]] = {}
        for gpu, model, profile in held:
            if model is None:
                continue
            boards.setdefault(model.vgpu_prefix or model.name, []).append(f"GPU {gpu.index}")
            found = model.vgpu_type(profile)
            if found is not None:
                series.setdefault(found.series, []).append(found.name)
        if len(boards) > 1:
            detail = "; ".join(f"{b.rstrip('-')}: {names(w)}" for b, w in sorted(boards.items()))
            yield Violation(
                "vgpu.one-board-and-series-per-vm",
                node_target(name),
                f"VM {vm} on {name} has vGPUs of {len(boards)} board types ({detail})",
                "give a multi-vGPU VM vGPUs of one board type only",
            )
        if len(series) > 1:
            detail = "; ".join(f"{s}: {names(t)}" for s, t in sorted(series.items()))
            yield Violation(
                "vgpu.one-board-and-series-per-vm",
                node_target(name),
                f"VM {vm} on {name} has vGPUs of {len(series)} series ({detail})",
                "give a multi-vGPU VM vGPUs of one series only",
            )


@rule(
    "vgpu.multi-vgpu-full-framebuffer",
    "Where the catalog says so (vSphere 7.x), multi-vGPU VMs use only full-frame-buffer C-series vGPUs.",
    "node",
)
def multi_vgpu_full_framebuffer(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    version = esxi_version(node) if node is not None else None
    if node is None or version is None:
        return
    try:
        full_only = get_catalog().vsphere.multi_vgpu_full_framebuffer_only(version)
    except ValueError:
        return
    if not full_only:
        return
    for vm, held in sorted(_per_vm(node).items()):
        if len(held) < 2:
            continue
        partial = []
        for gpu, model, profile in held:
            found = model.vgpu_type(profile) if model is not None else None
            full = model.vgpu_framebuffer_mib if model is not None else None
            if found is not None and (
                found.series != "C" or found.mig_backed or found.framebuffer_mib != full
            ):
                partial.append(f"{found.name} on GPU {gpu.index}")
        if partial:
            yield Violation(
                "vgpu.multi-vgpu-full-framebuffer",
                node_target(name),
                f"VM {vm} on {name} has {len(held)} vGPUs, and on ESXi {version} a multi-vGPU VM takes "
                f"only full-frame-buffer C-series vGPUs; not full: {names(partial)}",
                "use the full-frame-buffer C type for each vGPU, or upgrade the host to vSphere 8",
            )


@rule(
    "vgpu.mig-backed-needs-mig",
    "MIG-backed vGPU types need a MIG-capable GPU whose vGPUs are all MIG-backed and form one MIG layout.",
    "gpu",
)
def mig_backed_needs_mig(_view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = site.found
    if found is None:
        return
    gpu = found[1]
    model = site.model
    types = [t for _, t in vgpu_types(gpu, model)]
    backed = [t for t in types if t.mig_backed]
    if model is None or not backed:
        return
    target = gpu_target(*key)
    where = f"{model.name} GPU {key[1]} of {key[0]}"
    sliced = [t.name for t in types if not t.mig_backed]
    if sliced:
        yield Violation(
            "vgpu.mig-backed-needs-mig",
            target,
            f"{where} mixes MIG-backed vGPUs ({names(t.name for t in backed)}) with time-sliced ones "
            f"({names(sliced)}); a GPU in MIG mode serves only MIG-backed vGPUs",
            "use only MIG-backed or only time-sliced types on one GPU",
        )
        return
    if not model.mig_capable:
        yield Violation(
            "vgpu.mig-backed-needs-mig",
            target,
            f"{where} is not MIG-capable, so it cannot serve MIG-backed vGPUs "
            f"({names(t.name for t in backed)})",
            "use time-sliced types on it",
        )
        return
    counts = Counter(t.name for t in backed)
    for t in {t.name: t for t in backed}.values():
        if counts[t.name] > t.max_equal_size:
            yield Violation(
                "vgpu.mig-backed-needs-mig",
                target,
                f"{where} holds {counts[t.name]} × {t.name}, at most {t.max_equal_size} per GPU",
                f"use at most {t.max_equal_size}",
            )
    profiles: list[layout.Request] = [(t.mig_profile or "", None) for t in backed]
    if layout.place(model, profiles) is None:
        problems = layout.explain_layout(model, profiles)
        reason = problems[0].message if problems else "they do not fit one layout"
        yield Violation(
            "vgpu.mig-backed-needs-mig",
            target,
            f"the MIG instances behind the vGPUs of {where} "
            f"({names(p for p, _ in profiles)}) are not a valid MIG layout: {reason}",
            "remove a vGPU or use smaller MIG-backed types",
        )
