"""The MIG repartitioning remedy: a GPU whose valid layouts keep every held instance and add the requested
profile ("repartition n/3 to 3g.40gb@0, 3g.40gb@4 (no running job affected)").

Searching a layout means scanning every valid layout of the model (`mig.layouts_with`); a cluster of
thousands of MIG GPUs repeats few (model, kept instances) pairs, so each answer is memoised per
(model, profile, kept layout) — `first_layout` — and a search looks at no more than `SEARCH_CAP` distinct
pairs: past it, it stops and says so in the remedy text rather than spend seconds on a `get jobs`. The cap
counts distinct pairs looked at, cached or not, so the memo never changes an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.mig import Instance, Layout, layouts_with
from gpuadmin.engine.scheduler.filters import mig_profile_name
from gpuadmin.engine.scheduler.index import GpuInfo, NodeCap

SEARCH_CAP = 64  # distinct (model, kept layout) pairs one search looks at
FirstLayout = Callable[[str, str, tuple[Instance, ...]], Layout | None]
Remedy = tuple[str, tuple[dict[str, Any], ...]]


def scan_first_layout(model: str, profile: str, keep: tuple[Instance, ...]) -> Layout | None:
    """The best valid layout of `model` keeping `keep` and adding `profile` (the reference: a full scan)."""
    found = get_catalog().model(model)
    layouts = layouts_with(found, [profile], keep) if found is not None else []
    return layouts[0] if layouts else None


first_layout: FirstLayout = lru_cache(maxsize=4096)(scan_first_layout)


def _kept(info: GpuInfo) -> tuple[Instance, ...]:
    """The instances of a MIG GPU a repartition must keep: those a running job holds."""
    return tuple(sorted(((p, s) for s, p in info.instances.items()
                         if info.instance_holders.get(s) or (s in info.units and info.units[s].holders)),
                        key=lambda ps: ps[1]))


Candidate = tuple[NodeCap, int, str, str, tuple[Instance, ...]]  # node, GPU, model, profile, kept instances


def _candidates(nodes: list[NodeCap], models: list[str], profile: str, full_pass: bool) -> Iterator[Candidate]:
    catalog = get_catalog()
    for nc in nodes:
        for gpu in sorted(nc.gpus):
            info = nc.gpus[gpu]
            model = catalog.model(info.model)
            prof = mig_profile_name(info.model, profile)
            if (model is None or info.model not in models or not model.mig_capable or prof is None
                    or info.unhealthy is not None):  # a fenced GPU is repaired, not repartitioned
                continue
            if not full_pass and info.mode == "mig":
                yield nc, gpu, info.model, prof, _kept(info)
            elif full_pass and info.mode == "full" and info.domain is not None and not info.holders:
                yield nc, gpu, info.model, prof, ()


def repartition_remedy(nodes: list[NodeCap], models: list[str], profile: str,
                       layout_of: FirstLayout = first_layout, cap: int = SEARCH_CAP) -> Remedy | None:
    """A GPU to repartition for one more `profile` instance, MIG GPUs first (keeping what runs), then free
    full GPUs (enabling MIG); a remedy text without changes when the search stopped at `cap`."""
    looked: set[tuple[str, str, tuple[Instance, ...]]] = set()
    for full_pass in (False, True):
        for nc, gpu, model, prof, keep in _candidates(nodes, models, profile, full_pass):
            key = (model, prof, keep)
            if key not in looked:
                if len(looked) >= cap:
                    return (f"none found in the first {cap} distinct GPU layouts searched ; the search "
                            "stops there)", ())
                looked.add(key)
            layout = layout_of(*key)
            if layout is None:
                continue
            text = ", ".join(f"{p}@{s}" for p, s in layout)
            what = "enable MIG; no running job affected" if full_pass else "no running job affected"
            changes = ({"op": "set-mig", "node": nc.name, "gpu": gpu,
                        "instances": [{"profile": p, "start": s} for p, s in layout]},)
            return f"repartition {nc.name}/{gpu} to {text} ({what})", changes
    return None
