"""What the console's edit forms offer: MIG layouts and free starts, and the names a form picks from."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.mig import free_starts
from gpuadmin.model import Node
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.inventory import DEFAULT_RESERVED_GIB
from gpuadmin.render.overview import holders_by_slice
from gpuadmin.service.caller import use_case
from gpuadmin.service.core import ServiceCore

# NVIDIA's mig-parted default config (Apache-2.0), shipped for the named layouts the MIG form offers
MIG_PARTED_DEFAULTS = Path(__file__).resolve().parents[1] / "samples" / "mig-parted-config-default.yaml"


class FormQueries(ServiceCore):
    """What the console's edit forms offer to pick from."""

    @use_case("read")
    def mig_form(self, node_name: str, gpu_index: int) -> dict[str, Any]:
        """A GPU's MIG choices: its model's profiles, its current layout with each instance's running holders
        (`holders`: [profile, start, [job, ...]], what the form draws and what removing an instance evicts), and
        the named layouts (NVIDIA's mig-parted default config: all-1g.10gb, all-balanced, ...) that the model
        supports."""
        node, gpu, model = self._mig_capable(node_name, gpu_index)
        by_slice = holders_by_slice(self.view(), node, gpu) if gpu.mode == "mig" else {}
        return {
            "node": node.name, "gpu": gpu.index, "model": model.name,
            "memory_slices": model.memory_slices, "compute_slices": model.compute_slices,
            "profiles": [{"name": p.name, "memory_slices": p.memory_slices, "compute_slices": p.compute_slices,
                          "max_instances": p.max_instances} for p in model.mig_profiles],
            "current": [[i.profile, i.start] for i in gpu.mig or () if i.start is not None]
            if gpu.mode == "mig" else [],
            "holders": [[i.profile, i.start, [job.name for job in by_slice[i.start]]]
                        for i in gpu.mig or () if i.start in by_slice] if gpu.mode == "mig" else [],
            "named": named_mig_layouts(model.name),
        }

    @use_case("read")
    def mig_free_starts(self, node_name: str, gpu_index: int, layout: Sequence[tuple[str, int]],
                        profile: str) -> list[int]:
        """Where one more `profile` instance fits beside `layout` on this GPU: what the form offers next."""
        _, _, model = self._mig_capable(node_name, gpu_index)
        return free_starts(model, [(p, int(start)) for p, start in layout], profile)

    def _mig_capable(self, node_name: str, gpu_index: int) -> tuple[Node, Any, Any]:
        node = self.state.nodes.get(node_name)
        gpu = node.gpu(gpu_index) if node is not None else None
        if node is None or gpu is None:
            raise InputError([Diagnostic(f"GPU {node_name}/{gpu_index} not found")])
        model = get_catalog().model(gpu.model)
        if model is None or not model.mig_capable:
            raise InputError([Diagnostic(f"{gpu.model} does not support MIG")])
        return node, gpu, model

    @use_case("read")
    def choices(self, node_name: str | None = None) -> dict[str, Any]:
        """The names a form offers to pick from: queues, and on a node its VMs, device groups, GPUs, the
        vGPU types of its boards and its dynamic sharing (None: off) with the inventory's default reserve, which the
        sharing form starts from."""
        catalog = get_catalog()
        out: dict[str, Any] = {"queues": sorted(self.state.queues), "shapes": sorted(catalog.shapes),
                               "models": sorted(catalog.gpu_models)}
        node = self.state.nodes.get(node_name) if node_name else None
        if node is not None:
            out["vms"] = [vm.name for vm in node.vms]
            out["device_groups"] = [g.name for g in node.device_groups]
            out["gpus"] = [g.index for g in node.gpus]
            types: dict[str, list[str]] = {}
            for gpu in node.gpus:
                model = catalog.model(gpu.model)
                if model is not None:
                    types.setdefault(gpu.model, [v.name for v in model.vgpu_types])
            out["vgpu_types"] = types
            out["sharing"] = None if node.sharing is None else node.sharing.model_dump(mode="json")
            out["reserved_gib_default"] = DEFAULT_RESERVED_GIB
        return out



@functools.cache
def named_mig_layouts(model_name: str) -> dict[str, list[list[Any]]]:
    """NVIDIA's mig-parted default configs that give a GPU of this model a MIG layout, placed."""
    from gpuadmin import adapters

    model = get_catalog().model(model_name)
    if model is None:
        return {}
    spec = adapters.read_mig_parted(MIG_PARTED_DEFAULTS)
    out: dict[str, list[list[Any]]] = {}
    for config in spec.configs:
        try:
            layout = adapters.layouts_for_model(spec, config, model).get(0)
        except InputError:  # a config for another family (its profiles do not exist on this model)
            continue
        if layout:
            out[config] = [[i.profile, i.start] for i in layout]
    return out


