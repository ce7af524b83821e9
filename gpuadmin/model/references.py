"""Cross-reference checks of an inventory: names that must exist, and names and indexes that must be unique.

These need the catalog (GPU models, shapes) and the whole inventory, so they run after the schema. The
physical rules (MIG placements, vGPU sizes, quotas) belong to the engine's rule catalog, not here.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence

from gpuadmin.catalog import get_catalog
from gpuadmin.model.diagnostics import Diagnostic, PathPart, dotted
from gpuadmin.model.inventory import Inventory, Job, Node


def _duplicates(names: Sequence[str | int], path: Callable[[int], tuple[PathPart, ...]], what: str) -> list[Diagnostic]:
    """Each repeat of a name, at `path(i)` of the repeat. Paths are built only for repeats: an inventory
    has tens of thousands of names and almost never a duplicate."""
    if len(set(names)) == len(names):
        return []
    seen: dict[str | int, int] = {}
    out: list[Diagnostic] = []
    for i, name in enumerate(names):
        first = seen.setdefault(name, i)
        if first != i:
            out.append(Diagnostic(f"duplicate {what} {name!r} (first defined at {dotted(path(first))})", path(i),
                                  "reference"))
    return out


def node_references(node: Node, base: tuple[PathPart, ...] = ()) -> list[Diagnostic]:
    """What one node's fields name that does not exist, or names twice (its shape, GPU models, VMs, device
    groups); each path below `base`."""
    catalog = get_catalog()
    out: list[Diagnostic] = []
    if node.shape is not None and node.shape not in catalog.shapes:
        known = ", ".join(sorted(catalog.shapes))
        out.append(Diagnostic(f"unknown shape {node.shape!r}", (*base, "shape"), "reference",
                              hint=f"known shapes: {known}; or omit 'shape'"))
    out += _duplicates([g.index for g in node.gpus], lambda i: (*base, "gpus", i, "index"), "GPU index")
    modules = [(i, g.module_id) for i, g in enumerate(node.gpus) if g.module_id is not None]
    out += _duplicates([m for _, m in modules], lambda k: (*base, "gpus", modules[k][0], "module_id"),
                       "GPU module id")
    indexes = {g.index for g in node.gpus}
    vms = {vm.name for vm in node.vms}
    groups = {g.name for g in node.device_groups}
    for i, gpu in enumerate(node.gpus):
        path = (*base, "gpus", i)
        catalogued = catalog.model(gpu.model)
        if gpu.not_in_catalog is not None and catalogued is not None:
            out.append(Diagnostic(f"GPU model {gpu.model!r} is in the catalog (as {catalogued.name}) but the GPU is "
                                  "marked not_in_catalog", (*path, "not_in_catalog"), "reference",
                                  hint="drop 'not_in_catalog': the catalog's facts apply to this GPU"))
        elif gpu.not_in_catalog is None and catalogued is None:
            out.append(Diagnostic(f"unknown GPU model {gpu.model!r}", (*path, "model"), "reference",
                                  hint="models are catalog names such as H100-SXM5-80GB; "
                                       "`gpuadmin describe catalog` lists them; a product the catalog does "
                                       "not know is kept whole with 'not_in_catalog: {memory_mib: N}'"))
        for j, vgpu in enumerate(gpu.vgpus or ()):
            if vgpu.vm not in vms:
                out.append(Diagnostic(f"vGPU names VM {vgpu.vm!r}, which is not defined on node {node.name!r}",
                                      (*path, "vgpus", j, "vm"), "reference"))
        if gpu.vm is not None and gpu.vm not in vms:
            out.append(Diagnostic(f"passthrough GPU names VM {gpu.vm!r}, which is not defined on node "
                                  f"{node.name!r}", (*path, "vm"), "reference"))
    out += _duplicates([g.name for g in node.device_groups], lambda i: (*base, "device_groups", i, "name"),
                       "device group")
    for i, group in enumerate(node.device_groups):
        for j, index in enumerate(group.gpus):
            if index not in indexes:
                out.append(Diagnostic(f"device group {group.name!r} names GPU {index}, which node "
                                      f"{node.name!r} does not have", (*base, "device_groups", i, "gpus", j),
                                      "reference"))
    out += _duplicates([vm.name for vm in node.vms], lambda i: (*base, "vms", i, "name"), "VM")
    for i, vm in enumerate(node.vms):
        if vm.device_group is not None and vm.device_group not in groups:
            out.append(Diagnostic(f"VM {vm.name!r} names device group {vm.device_group!r}, which is not "
                                  f"defined on node {node.name!r}", (*base, "vms", i, "device_group"),
                                  "reference"))
        for j, index in enumerate(vm.gpus or ()):
            if index not in indexes:
                out.append(Diagnostic(f"VM {vm.name!r} names GPU {index}, which node {node.name!r} does not "
                                      "have", (*base, "vms", i, "gpus", j), "reference"))
    return out


def check_references(inv: Inventory) -> list[Diagnostic]:
    """Every dangling reference and duplicate name, each with the dotted path of the offending field."""
    out: list[Diagnostic] = []
    out += _duplicates([q.name for q in inv.queues], lambda i: ("queues", i, "name"), "queue")
    out += _duplicates([n.name for n in inv.nodes], lambda i: ("nodes", i, "name"), "node")
    out += _duplicates([j.name for j in inv.jobs], lambda i: ("jobs", i, "name"), "job")
    nodes = {n.name: n for n in inv.nodes}
    queues = {q.name for q in inv.queues}
    for i, node in enumerate(inv.nodes):
        out += node_references(node, ("nodes", i))
    vm_hosts = hosts_of_vms(inv.nodes)
    for i, job in enumerate(inv.jobs):
        out += job_references(job, ("jobs", i), nodes, queues, vm_hosts)
    return out


def hosts_of_vms(nodes: Iterable[Node]) -> dict[str, list[str]]:
    """Each VM's name → the nodes that define a VM of that name."""
    vm_hosts: dict[str, list[str]] = {}
    for node in nodes:
        for vm in node.vms:
            vm_hosts.setdefault(vm.name, []).append(node.name)
    return vm_hosts


def job_references(job: Job, base: tuple[PathPart, ...], nodes: Mapping[str, Node], queues: Container[str],
                   vm_hosts: Mapping[str, list[str]]) -> list[Diagnostic]:
    """What one job names that does not exist (its queue, VM, GPU model, placement); each path below `base`."""
    out: list[Diagnostic] = []
    if job.vm is not None and len(vm_hosts.get(job.vm, ())) != 1:
        hosts = vm_hosts.get(job.vm, [])
        why = f"is defined on {len(hosts)} nodes ({', '.join(hosts)})" if hosts else "is not defined on any node"
        out.append(Diagnostic(f"job {job.name!r} names VM {job.vm!r}, which {why}", (*base, "vm"),
                              "reference", hint="a job runs in a VM that one vSphere host defines"))
    if job.queue not in queues:
        out.append(Diagnostic(f"job {job.name!r} names queue {job.queue!r}, which is not defined",
                              (*base, "queue"), "reference"))
    if job.request.model is not None and get_catalog().model(job.request.model) is None:
        out.append(Diagnostic(f"unknown GPU model {job.request.model!r}", (*base, "request", "model"),
                              "reference"))
    for j, slot in enumerate(job.placement):
        held = nodes.get(slot.node)
        if held is None:
            out.append(Diagnostic(f"placement names node {slot.node!r}, which is not defined",
                                  (*base, "placement", j, "node"), "reference"))
        elif held.gpu(slot.gpu) is None:
            out.append(Diagnostic(f"placement names GPU {slot.gpu} of node {slot.node!r}, which it does "
                                  "not have", (*base, "placement", j, "gpu"), "reference"))
    return out
