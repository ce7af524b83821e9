"""`kubectl get nodes -o json` (a v1 List of Nodes, or one Node) → Kubernetes nodes (`orchestrator:
kubernetes`) on `platform: baremetal` — a Node object does not say whether the machine under the kubelet is
bare metal; an ESXi host is never a Kubernetes node itself.

Read from each Node: `metadata.name`, `metadata.labels` (kept as they are), the `Ready` condition (not True →
state `down`), `spec.unschedulable` (→ state `cordoned`), `status.capacity` cpu and memory (a live cluster's
Nodes are read by `kube_cluster`, with `status.allocatable`), and the GPU Feature Discovery labels:

- `nvidia.com/gpu.product` → the catalog model (GFD writes the product name with '-' for spaces:
  `NVIDIA-H100-80GB-HBM3`); the suffixes `-SHARED`, `-MIG-<profile>` (single strategy) and `-MIG-INVALID` are
  stripped first;
- `nvidia.com/gpu.count` → the number of GPUs;
- `nvidia.com/mig.strategy` with `nvidia.com/mig-<profile>.count` (mixed) → the node's MIG instances; GFD
  counts them per node, not per GPU, so they are dealt to the GPUs (evenly where the counts divide, else
  first fit), each GPU's starts chosen with `engine.mig.place`. GFD builds these keys from the device
  plugin's resource name, `+` written `.` (`nvidia.com/mig-1g.10gb.me.count` is `1g.10gb+me`, `mig-1g.24gb.me.all`
  is `1g.24gb+me.all`, `mig-2g.48gb.gfx` is `2g.48gb+gfx`): the profile is the model's profile of that name;
- single strategy: the product's `-MIG-<profile>` suffix (named the same way); `gpu.count` then counts MIG
  devices, and the physical GPUs are those counts divided by what one GPU holds;
- `nvidia.com/gpu.replicas` (> 1) → time-sliced GPUs; `nvidia.com/mig-<profile>.replicas` (> 1) → the
  replicas of those MIG instances; `gpu.sharing-strategy: mps` → `sharing: mps`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from gpuadmin.adapters._common import (
    held_by_the_models,
    input_error,
    mig_profile_of_device_name,
    node_name_problem,
    place_instances,
)
from gpuadmin.catalog import MIG_RESOURCE_PREFIX, GpuModel, get_catalog
from gpuadmin.engine.mig import place
from gpuadmin.model import Gpu, MigInstance, Node, NotInCatalog
from gpuadmin.model.diagnostics import dotted as dotted_place
from gpuadmin.model.inventory import (
    MAX_CPUS,
    MAX_GPU_INDEX,
    MAX_GPU_MEMORY_GIB,
    MAX_NODE_MEMORY_GIB,
    MAX_REPLICAS,
    NodeState,
    SharingStrategy,
    decimal_at_most,
)

_MIG_COUNT = re.compile(rf"^{re.escape(MIG_RESOURCE_PREFIX)}(.+)\.count$")
_QTY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMGTPE]i?|[numk])?$")
_FACTORS = {
    None: 1,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "Ei": 1 << 60,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "m": 10**-3,
    "u": 10**-6,
    "n": 10**-9,
}
MAX_BYTES = 256 * 1024 * 1024


def _quantity(text: Any) -> float | None:
    """A Kubernetes quantity ("2113492Mi", "112", "500m") as a number, or None."""
    match = _QTY.match(str(text).strip()) if text is not None else None
    if match is None:
        return None
    return float(match.group(1)) * _FACTORS[match.group(2)]


def _model(product: str) -> tuple[GpuModel | None, str, str | None]:
    """The model of a GFD product string (None where the catalog does not know it), the product without
    GFD's suffixes, and the single-strategy MIG profile it names, if any."""
    base = product
    profile = None
    if base.endswith("-SHARED"):
        base = base[: -len("-SHARED")]
    if "-MIG-" in base:
        base, profile = base.split("-MIG-", 1)
        if profile == "INVALID":
            profile = None
    return get_catalog().model_by_product_name(base), base, profile


def _deal(model: GpuModel, counts: Counter[str], gpus: int) -> list[list[str]] | None:
    """MIG profiles per GPU: an even split where every count divides, else first fit, largest first."""
    if gpus <= 0:
        return None
    if all(n % gpus == 0 for n in counts.values()):
        share = [p for p, n in sorted(counts.items()) for _ in range(n // gpus)]
        if place(model, [(p, None) for p in share]) is not None:
            return [list(share) for _ in range(gpus)]

    def size(profile: str) -> int:
        found = model.mig_profile(profile)
        return found.memory_slices if found is not None else 0

    order = sorted(counts.elements(), key=lambda p: (-size(p), p))
    per_gpu: list[list[str]] = [[] for _ in range(gpus)]
    for profile in order:
        for layout in per_gpu:
            if place(model, [(p, None) for p in [*layout, profile]]) is not None:
                layout.append(profile)
                break
        else:
            return None
    return per_gpu


def _per_gpu_capacity(model: GpuModel, profile: str) -> int:
    found = model.mig_profile(profile)
    if found is None:
        return 0
    n = found.max_instances
    while n > 0 and place(model, [(profile, None)] * n) is None:
        n -= 1
    return n


def node_state(item: dict[str, Any]) -> tuple[NodeState, str | None]:
    """A Node object's state and why it is down: a `Ready` condition whose status is not "True" (False: the
    kubelet says it is not ready; Unknown: the node controller stopped hearing from it) is `down`, with the
    condition's reason and message; else `spec.unschedulable` is `cordoned`. A Node without conditions (a
    hand-written file) is read as ready, as before."""
    conditions = (item.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") != "True":
        reason = str(ready.get("reason") or f"Ready={ready.get('status')}")
        message = str(ready.get("message") or "")
        return "down", f"{reason}: {message}" if message else reason
    return ("cordoned" if (item.get("spec") or {}).get("unschedulable") is True else "ready"), None


def _node(item: Any, index: int, file: str, warnings: list[str]) -> Node:
    where: tuple[str | int, ...] = ("items", index)
    return node_of_object(item, where, file, warnings, resources="capacity")


def node_of_object(item: Any, where: tuple[str | int, ...], file: str, warnings: list[str],
                   resources: Literal["capacity", "allocatable"]) -> Node:
    """One Node object as gpuadmin's node; `resources`: which of `status.capacity` (what a file import has
    always read) or `status.allocatable` (what the scheduler may hand out: capacity less the kubelet's and the
    system's reservations) gives its CPUs and memory. A NotReady node is `down` (`node_state`)."""
    if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
        raise input_error(f"{dotted_place(where)} is not a Node", file, path=where)
    metadata = item.get("metadata") or {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise input_error("a Node without metadata.name", file, path=(*where, "metadata", "name"))
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    status = item.get("status") or {}
    capacity = status.get(resources) or (status.get("capacity") or {})
    cpus = _capacity(capacity, "cpu", 1, MAX_CPUS, (*where, "status", resources), file)
    memory_gib = _capacity(capacity, "memory", 1 << 30, MAX_NODE_MEMORY_GIB, (*where, "status", resources), file)
    state, _ = node_state(item)
    gpus = _gpus(name, _Labels(labels, where, file), warnings)
    problem = node_name_problem(name, "kubernetes", bool(gpus))
    if problem is not None:
        raise input_error(problem, file, path=(*where, "metadata", "name"))
    return Node(
        name=name,
        platform="baremetal",
        orchestrator="kubernetes",
        labels=labels,
        state=state,
        gpus=gpus,
        cpus=cpus,
        memory_gib=memory_gib,
    )


class _Labels:
    """A node's labels, with the place they were read from, for integer labels checked against their bound."""

    def __init__(self, labels: dict[str, str], where: tuple[str | int, ...], file: str) -> None:
        self.labels, self.where, self.file = labels, where, file

    def integer(self, key: str, high: int, default: int = 0) -> int:
        """The label's integer, `default` where it is absent or not a number; an `InputError` naming the label
        where it is a number past `high` (a gpu.count of 10^30 once looped for ever)."""
        text = self.labels.get(key)
        if text is None or not (text.isascii() and text.isdigit()):
            return default
        value = decimal_at_most(text, high)
        if value is None:
            shown = text if len(text) <= 24 else f"{text[:20]}... ({len(text):,} digits)"
            raise input_error(f"label {key}={shown} is out of range (0 to {high:,})", self.file,
                              path=(*self.where, "metadata", "labels", key))
        return value


def _capacity(capacity: dict[str, Any], key: str, unit: int, high: int, where: tuple[str | int, ...],
              file: str) -> int | None:
    """A capacity quantity in `unit`s (at least 1), None where absent; an `InputError` past `high` units."""
    quantity = _quantity(capacity.get(key))
    if quantity is None:
        return None
    if not quantity / unit <= high:  # also refuses inf, which a quantity of 400 digits becomes
        raise input_error(f"{str(capacity.get(key))[:24]!r} is out of range (at most "
                          f"{high:,} {'GiB' if unit > 1 else 'CPUs'})", file,
                          path=(*where, key))
    return max(1, round(quantity / unit) if unit > 1 else int(quantity))


def _gpus(name: str, read: _Labels, warnings: list[str]) -> list[Gpu]:
    labels = read.labels
    product = labels.get("nvidia.com/gpu.product")
    if product is None:
        return []
    model, base, single_profile = _model(product)
    count = read.integer("nvidia.com/gpu.count", MAX_GPU_INDEX + 1)
    strategy = labels.get("nvidia.com/mig.strategy", "none")
    replicas = read.integer("nvidia.com/gpu.replicas", MAX_REPLICAS, 1)
    sharing: SharingStrategy | None = (
        "mps" if labels.get("nvidia.com/gpu.sharing-strategy") == "mps" else None
    )
    if model is None:
        ignored_mig = (single_profile or strategy) if strategy != "none" else None
        return _uncatalogued_gpus(name, read, base, count, replicas, sharing, ignored_mig, warnings)
    if product.endswith("-MIG-INVALID"):
        warnings.append(f"{name}: GFD reports an invalid single-strategy MIG setup; GPUs imported as full")
    if strategy == "single" and single_profile is not None:
        return _single_strategy_gpus(name, read, model, single_profile, count, replicas, warnings)
    mig_counts, mig_replicas = _mixed_mig_counts(name, read, model) if strategy == "mixed" else (Counter(), {})
    if mig_counts:
        return _dealt_mig_gpus(name, read, model, (mig_counts, mig_replicas), count, warnings)
    if replicas > 1:
        return [
            Gpu(index=i, model=model.name, mode="time-sliced", replicas=replicas, sharing=sharing)
            for i in range(count)
        ]
    return [Gpu(index=i, model=model.name) for i in range(count)]


def _uncatalogued_gpus(
    name: str, read: _Labels, base: str, count: int, replicas: int, sharing: SharingStrategy | None,
    ignored_mig: str | None, warnings: list[str],
) -> list[Gpu]:
    """A product the catalog does not know: whole GPUs with GFD's gpu.memory (MiB), as nvidia_smi does;
    `ignored_mig` names the MIG labels that cannot be read without the catalog."""
    memory = read.integer("nvidia.com/gpu.memory", MAX_GPU_MEMORY_GIB * 1024) or None
    warnings.append(
        f"{name}: GPU product {base!r} is not in the catalog: {count} GPU(s) imported whole"
        + (f" with {memory} MiB" if memory else " (no nvidia.com/gpu.memory label)")
        + ", marked not_in_catalog; their MIG and vGPU support cannot be checked, so MIG and vGPU changes "
        "on them are refused"
        + (f"; GFD's MIG labels ({ignored_mig}) are ignored" if ignored_mig is not None else "")
    )
    marker = NotInCatalog(memory_mib=memory)
    if replicas > 1:
        return [Gpu(index=i, model=base, mode="time-sliced", replicas=replicas, sharing=sharing,
                    not_in_catalog=marker) for i in range(count)]
    return [Gpu(index=i, model=base, not_in_catalog=marker) for i in range(count)]


def _single_strategy_gpus(
    name: str, read: _Labels, model: GpuModel, device: str, count: int, replicas: int, warnings: list[str]
) -> list[Gpu]:
    """The single MIG strategy: GFD shows `count` devices of one profile; they are packed onto as few GPUs."""
    profile = mig_profile_of_device_name(model, device)
    per_gpu = _per_gpu_capacity(model, profile) if profile is not None else 0
    if profile is None or per_gpu == 0:
        raise input_error(
            f"{name}: MIG profile {device!r} does not exist on {model.name}",
            read.file,
            path=(*read.where, "metadata", "labels", "nvidia.com/gpu.product"),
        )
    physical = -(-count // per_gpu)
    warnings.append(f"{name}: single MIG strategy: {count} × {profile} read as {physical} GPUs of {per_gpu}")
    out = []
    for i in range(physical):
        n = min(per_gpu, count - i * per_gpu)
        instances = place_instances(model, [profile] * n) or []
        if replicas > 1:
            instances = [MigInstance(profile=m.profile, start=m.start, replicas=replicas) for m in instances]
        out.append(Gpu(index=i, model=model.name, mode="mig", mig=instances))
    return out


def _mixed_mig_counts(name: str, read: _Labels, model: GpuModel) -> tuple[Counter[str], dict[str, int]]:
    """The mixed MIG strategy's labels: instances of each profile on the node, and each profile's replicas."""
    mig_counts: Counter[str] = Counter()
    mig_replicas: dict[str, int] = {}
    for key in read.labels:
        match = _MIG_COUNT.match(key)
        # at most 7 instances of a profile per GPU on every MIG-capable model
        per_node = read.integer(key, 7 * (MAX_GPU_INDEX + 1)) if match else 0
        if match is None or per_node <= 0:
            continue
        device = match.group(1)
        profile = mig_profile_of_device_name(model, device)
        if profile is None:
            raise input_error(
                f"{name}: MIG profile {device!r} does not exist on {model.name}",
                read.file,
                path=(*read.where, "metadata", "labels", key),
            )
        mig_counts[profile] = per_node
        mig_replicas[profile] = read.integer(f"{MIG_RESOURCE_PREFIX}{device}.replicas", MAX_REPLICAS, 1)
    return mig_counts, mig_replicas


def _dealt_mig_gpus(
    name: str, read: _Labels, model: GpuModel, mig: tuple[Counter[str], dict[str, int]], count: int,
    warnings: list[str],
) -> list[Gpu]:
    """GFD counts MIG instances per node: they are dealt to the `count` GPUs and placed on each."""
    mig_counts, mig_replicas = mig
    dealt = _deal(model, mig_counts, count)
    if dealt is None:
        raise input_error(
            f"{name}: {dict(mig_counts)} MIG instances do not fit {count} × {model.name}",
            read.file,
            path=(*read.where, "metadata", "labels"),
        )
    if count > 1:
        warnings.append(
            f"{name}: GFD counts MIG instances per node; dealt to the GPUs as "
            + "; ".join(f"GPU {i}: {'+'.join(p) or 'none'}" for i, p in enumerate(dealt))
        )
    out = []
    for i, profiles in enumerate(dealt):
        if not profiles:
            out.append(Gpu(index=i, model=model.name))
            continue
        placed = place_instances(model, profiles) or []
        # the placed instances as they are, unless time-sliced: one model each, not two (~14,000 a 1,024-node sync)
        instances = [
            MigInstance(profile=m.profile, start=m.start, replicas=mig_replicas[m.profile])
            if mig_replicas.get(m.profile, 1) > 1 else m
            for m in placed
        ]
        out.append(Gpu(index=i, model=model.name, mode="mig", mig=instances))
    return out


def parse_kube_nodes(text: str | bytes, file: str = "<nodes.json>") -> tuple[list[Node], list[str]]:
    """Nodes from `kubectl get nodes -o json` text, and warnings."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as bad:
        raise input_error(f"not JSON: {bad.msg}", file, bad.lineno, column=bad.colno) from None
    except UnicodeDecodeError as bad:
        raise input_error(f"not UTF-8: {bad.reason}", file) from None
    if not isinstance(data, dict):
        raise input_error("expected a Kubernetes List of Nodes (an object)", file, 1)
    if data.get("kind") == "Node":
        items = [data]
    elif data.get("kind") in ("List", "NodeList") and isinstance(data.get("items"), list):
        items = data["items"]
    else:
        raise input_error(
            f"expected kind List or NodeList with items, found kind {data.get('kind')!r}",
            file,
            1,
            hint="produce it with `kubectl get nodes -o json`",
        )
    warnings: list[str] = []
    nodes = [_node(item, i, file, warnings) for i, item in enumerate(items)]
    names = Counter(n.name for n in nodes)
    duplicates = sorted(n for n, c in names.items() if c > 1)
    if duplicates:
        raise input_error(f"duplicate node names: {', '.join(duplicates)}", file)
    return nodes, warnings


def read_kube_nodes(path: str | Path) -> tuple[list[Node], list[str]]:
    file = str(path)
    try:
        if Path(path).stat().st_size > MAX_BYTES:
            raise input_error(f"file is larger than {MAX_BYTES} bytes", file)
        data = Path(path).read_bytes()
    except OSError as exc:
        raise input_error(f"cannot read: {exc.strerror or exc}", file) from None
    with held_by_the_models(file):
        return parse_kube_nodes(data, file)


def import_kube_nodes(path: str | Path) -> list[Node]:
    """The nodes of a `kubectl get nodes -o json` file (warnings: `read_kube_nodes`)."""
    return read_kube_nodes(path)[0]
