"""A node as the console draws it: each GPU's slices with their holders, its device groups, NVLink domain
and NICs. Plain data (no Rich, no Textual): the console draws it, `describe node -o json` could print it.

A MIG layout is given as memory-slice spans and compute-slice spans: on H100 and A100 (8 memory slices,
7 compute) and A30 (4 and 4) an instance starting at memory slice `s` takes compute slices `s .. s+c-1`,
which is how NVIDIA's placement diagrams draw them.
"""

from __future__ import annotations

from typing import Any

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu, Job, Node
from gpuadmin.render.overview import dynamic_share, holders_by_slice


def _share(job: Job) -> float:
    """The part of a GPU (or of a MIG instance) a holder has: its fraction, else all of it."""
    return job.request.fraction if job.request.fraction is not None else 1.0


def gpu_board(view: View, node: Node, gpu: Gpu) -> dict[str, Any]:
    model = get_catalog().model(gpu.model)
    by_slice = holders_by_slice(view, node, gpu)
    board: dict[str, Any] = {
        "index": gpu.index, "model": gpu.model, "mode": gpu.mode,
        "memory_slices": model.memory_slices if model else 0,
        "compute_slices": model.compute_slices if model else 0,
        "memory_gib": round(model.memory_mib / 1024, 1) if model else None,
        "instances": [], "holders": [], "replicas": None, "vgpus": [], "vm": gpu.vm,
    }
    if gpu.mode == "mig":
        for inst in gpu.mig or ():
            profile = model.mig_profile(inst.profile) if model else None
            on = [j.name for j in by_slice.get(inst.start, ())]
            board["instances"].append({
                "profile": inst.profile, "start": inst.start,
                "memory_slices": profile.memory_slices if profile else 1,
                "compute_slices": profile.compute_slices if profile else 1,
                "replicas": inst.replicas, "holders": on,
            })
    elif gpu.mode == "vgpu":
        board["vgpus"] = [{"vm": v.vm, "profile": v.profile} for v in gpu.vgpus or ()]
    elif (shared := dynamic_share(view, node, gpu)) is not None:
        # a dynamically shared GPU: each fraction's share and GiB, and what is left of the usable memory
        board["holders"] = [{"job": name, "share": share, "gib": gib} for name, share, gib in shared.holders]
        board["dynamic"] = {"used": round(shared.used, 3), "left_gib": round(shared.left_gib, 1),
                            "reserved_gib": shared.reserved_gib}
    else:
        board["replicas"] = gpu.replicas
        board["holders"] = [{"job": j.name, "share": _share(j)} for j in by_slice.get(None, ())]
    return board


def _domains(node: Node) -> list[list[int]]:
    """NVLink domains: the whole board on NVSwitch or a direct mesh, bridged pairs (0-1, 2-3, ...), else one
    GPU each."""
    indexes = [g.index for g in node.gpus]
    if node.nvlink_kind in ("nvswitch", "mesh"):
        return [indexes] if indexes else []
    if node.nvlink_kind == "pairs":
        return [indexes[i:i + 2] for i in range(0, len(indexes), 2)]
    return [[i] for i in indexes]


def node_board(view: View, node: Node) -> dict[str, Any]:
    vm_of_group = {vm.device_group: vm.name for vm in node.vms if vm.device_group}
    nics_per_gpu = None
    if node.rdma and node.gpus and node.rdma.nics % len(node.gpus) == 0:
        nics_per_gpu = node.rdma.nics // len(node.gpus)
    return {
        "name": node.name, "platform": node.platform, "orchestrator": node.orchestrator, "state": node.state,
        "shape": node.shape,
        "nvlink": node.nvlink_kind, "domains": _domains(node),
        "rdma": None if node.rdma is None else {"nics": node.rdma.nics, "gbps": node.rdma.gbps,
                                                "network": node.rdma.network},
        # the inventory records how many NICs a node has, not which GPU each sits next to: an even split
        "nics_per_gpu": nics_per_gpu,
        "device_groups": [{"name": g.name, "gpus": list(g.gpus), "vm": vm_of_group.get(g.name)}
                          for g in node.device_groups],
        "vms": [{"name": vm.name, "hardware_version": vm.hardware_version, "device_group": vm.device_group,
                 "gpus": list(vm.gpus or ())} for vm in node.vms],
        "gpus": [gpu_board(view, node, g) for g in node.gpus],
    }


__all__ = ["gpu_board", "node_board"]
