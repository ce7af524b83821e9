"""Load the catalog's YAML data files (gpuadmin/catalog/data/*.yaml) into the record types.

The files are parsed once per process (`get_catalog` is cached) with libyaml's C safe loader. Every entry
is validated as it is read: a missing or unknown key, a wrong type, a confidence outside the four marks, a
profile whose placements do not fit its model's grid — each fails with a `CatalogError` naming the file and
the entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar, cast

import yaml

from gpuadmin.catalog.catalog import (
    Catalog,
    HardwareVersionRow,
    NvswitchVgpuRules,
    PassthroughRow,
    VgpusPerVmRow,
    VsphereLimits,
)
from gpuadmin.catalog.entities import (
    CONFIDENCES,
    ENGINE_KINDS,
    MEDIA_ENGINE_KINDS,
    Board,
    BoardNvlink,
    FmPartition,
    GpuModel,
    MigEngines,
    MigProfile,
    NvlinkKind,
    NvlinkSpec,
    Provenance,
    Shape,
    VgpuSeries,
    VgpuType,
)
from gpuadmin.catalog.naming import parse_esxi_version, vgpu_type_name

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

DATA_FILES = ("gpus.yaml", "mig.yaml", "vgpu.yaml", "platforms.yaml")

T = TypeVar("T")


class CatalogError(ValueError):
    """A catalog data file is malformed; the message names the file and the entry."""


class _Entry:
    """A mapping from a data file, with the file name and the dotted path of where it sits, for errors."""

    __slots__ = ("_data", "_used", "file", "path")

    def __init__(self, data: object, file: str, path: str) -> None:
        self.file = file
        self.path = path
        if not isinstance(data, dict):
            raise self.error(f"expected a mapping, got {type(data).__name__}")
        self._data: dict[str, object] = data
        self._used: set[str] = set()

    def error(self, message: str) -> CatalogError:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return CatalogError(f"{where}: {message}")

    def has(self, key: str) -> bool:
        return key in self._data

    def raw(self, key: str) -> object:
        if key not in self._data:
            raise self.error(f"missing key {key!r}")
        self._used.add(key)
        return self._data[key]

    def get(self, key: str, default: object = None) -> object:
        self._used.add(key)
        return self._data.get(key, default)

    def _typed(self, key: str, value: object, kind: type[T], what: str) -> T:
        # bool is an int subclass: never accept True for an int field
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(f"{key!r} must be {what}, got {value!r}")
        return value

    def str_(self, key: str) -> str:
        value = self._typed(key, self.raw(key), str, "a string")
        if not value.strip():
            raise self.error(f"{key!r} must not be empty")
        return value

    def opt_str(self, key: str, default: str | None = None) -> str | None:
        value = self.get(key, default)
        return None if value is None else self._typed(key, value, str, "a string")

    def int_(self, key: str, minimum: int | None = 0) -> int:
        value = self._typed(key, self.raw(key), int, "an integer")
        if minimum is not None and value < minimum:
            raise self.error(f"{key!r} must be ≥ {minimum}, got {value}")
        return value

    def opt_int(self, key: str, minimum: int = 0) -> int | None:
        value = self.raw(key) if self.has(key) else None
        if value is None:
            return None
        value = self._typed(key, value, int, "an integer or null")
        if value < minimum:
            raise self.error(f"{key!r} must be ≥ {minimum}, got {value}")
        return value

    def opt_float(self, key: str) -> float | None:
        value = self.raw(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"{key!r} must be a number or null, got {value!r}")
        return float(value)

    def bool_(self, key: str, default: bool | None = None) -> bool:
        if default is not None and not self.has(key):
            self._used.add(key)
            return default
        return self._typed(key, self.raw(key), bool, "true or false")

    def list_(self, key: str) -> list[object]:
        return self._typed(key, self.raw(key), list, "a list")

    def int_list(self, key: str) -> tuple[int, ...]:
        items = self.list_(key)
        out: list[int] = []
        for item in items:
            if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                raise self.error(f"{key!r} must list non-negative integers, got {item!r}")
            out.append(item)
        return tuple(out)

    def str_list(self, key: str) -> tuple[str, ...]:
        items = self.list_(key)
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise self.error(f"{key!r} must list non-empty strings, got {item!r}")
        return tuple(cast(list[str], items))

    def child(self, key: str) -> _Entry:
        return _Entry(self.raw(key), self.file, f"{self.path}.{key}" if self.path else key)

    def opt_child(self, key: str) -> _Entry | None:
        value = self.raw(key) if self.has(key) else None
        return None if value is None else _Entry(value, self.file, f"{self.path}.{key}" if self.path else key)

    def items(self, key: str, label: Callable[[object], str] | None = None) -> list[_Entry]:
        """The entries of a list of mappings, each with a path naming it (by its `name` where it has one)."""
        out = []
        for i, item in enumerate(self.list_(key)):
            name = item.get("name") if isinstance(item, dict) else None
            tag = f"[{i}]" if name is None else f"[{i}:{name}]"
            out.append(_Entry(item, self.file, f"{self.path}.{key}{tag}" if self.path else f"{key}{tag}"))
        return out

    def mapping(self, key: str) -> dict[str, _Entry]:
        value = self._typed(key, self.raw(key), dict, "a mapping")
        out = {}
        for name, item in value.items():
            if not isinstance(name, str):
                raise self.error(f"{key!r}: keys must be strings, got {name!r}")
            out[name] = _Entry(item, self.file, f"{self.path}.{key}.{name}" if self.path else f"{key}.{name}")
        return out

    def provenance(self, default: Provenance | None = None) -> Provenance:
        """`source` / `confidence` / optional `note` of this entry, or `default` where it has none."""
        if default is not None and not self.has("source") and not self.has("confidence"):
            self.get("note")
            if self.has("note"):
                raise self.error("'note' without 'source'/'confidence'")
            return default
        source = self.str_("source")
        confidence = self.str_("confidence")
        if confidence not in CONFIDENCES:
            raise self.error(f"confidence must be one of {', '.join(CONFIDENCES)}, got {confidence!r}")
        note = self.opt_str("note") or ""
        return Provenance(source=source, confidence=confidence, note=note)

    def done(self) -> None:
        """Refuse keys nobody read: a typo in a data file must not silently drop a fact."""
        unknown = sorted(set(self._data) - self._used)
        if unknown:
            raise self.error(f"unknown key(s): {', '.join(map(repr, unknown))}")


def _read_file(base: Traversable, name: str) -> _Entry:
    try:
        text = base.joinpath(name).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise CatalogError(f"{name}: catalog data file missing ({base})") from exc
    try:
        data = yaml.load(text, Loader=_Loader)  # the C *safe* loader
    except yaml.YAMLError as exc:
        raise CatalogError(f"{name}: not valid YAML: {exc}") from exc
    root = _Entry(data, name, "")
    if root.int_("version") != 1:
        raise root.error("unsupported version (expected 1)")
    return root


def _prov_override(entry: _Entry, key: str, default: Provenance) -> Provenance:
    sub = entry.opt_child(key)
    if sub is None:
        return default
    prov = sub.provenance()
    sub.done()
    return prov


class _MigTable:
    __slots__ = (
        "compute_slices",
        "max_instances",
        "media_budget",
        "media_budget_provenance",
        "memory_slices",
        "min_driver",
        "profiles",
        "provenance",
    )

    def __init__(
        self,
        memory_slices: int,
        compute_slices: int,
        max_instances: int,
        min_driver: str | None,
        profiles: tuple[MigProfile, ...],
        provenance: Provenance,
        media_budget: tuple[MigEngines, Provenance] | None = None,
    ) -> None:
        self.memory_slices = memory_slices
        self.compute_slices = compute_slices
        self.max_instances = max_instances
        self.min_driver = min_driver
        self.profiles = profiles
        self.provenance = provenance
        self.media_budget = media_budget[0] if media_budget else None
        self.media_budget_provenance = media_budget[1] if media_budget else None


def _engines(entry: _Entry, kinds: tuple[str, ...]) -> MigEngines:
    """`{dec: 1, enc: 0, jpg: 1, ofa: 0, ce: 1}` (any subset of `kinds`; a count is 0 or more)."""
    counts = {kind: entry.opt_int(kind) for kind in kinds}
    return MigEngines(**counts)


def _media_budget(table: _Entry, profiles: list[MigProfile]) -> tuple[MigEngines, Provenance] | None:
    """The table's per-GPU media-engine budget (`media_budget:`), checked against its profiles: every
    profile states its media engines, and none alone exceeds the budget (else it could never be created)."""
    sub = table.opt_child("media_budget")
    if sub is None:
        return None
    budget = _engines(sub, MEDIA_ENGINE_KINDS)
    prov = sub.provenance()
    sub.done()
    missing = [k for k in MEDIA_ENGINE_KINDS if budget.count(k) is None]
    if missing:
        raise sub.error(f"a media budget gives every media engine count (missing {', '.join(missing)})")
    for profile in profiles:
        for kind in MEDIA_ENGINE_KINDS:
            need, have = profile.engines.count(kind), budget.count(kind)
            if need is None:
                raise sub.error(f"{profile.name} has no {kind} count: a media budget needs every profile's")
            if have is not None and need > have:
                raise sub.error(f"{profile.name} has {need} {kind}, more than the GPU's budget of {have}")
    return budget, prov


def _profile_attributes(name: str) -> tuple[str, ...] | None:
    """The attributes of a GI profile name: "1g.24gb+me.all" → ("me.all",), "1g.24gb-me" → ("-me",),
    "3g.40gb" → (); None where `+` and `-` are mixed (NVLIB's parser refuses that, gpu-facts §1.2)."""
    plus, minus = "+" in name, "-" in name
    if plus and minus:
        return None
    if plus:
        return tuple(a for a in name.split("+", 1)[1].split(",") if a)
    if minus:
        return ("-" + name.split("-", 1)[1],)
    return ()


def _load_mig(root: _Entry) -> dict[str, _MigTable]:
    tables: dict[str, _MigTable] = {}
    for table_name, t in root.mapping("tables").items():
        prov = t.provenance()
        grid = t.int_("memory_slices", 1)
        compute = t.int_("compute_slices", 1)
        max_inst = t.int_("max_instances", 1)
        min_driver = t.opt_str("min_driver")
        defaults = {}
        for key in ("placements", "sms", "memory"):
            sub = t.child(key)
            defaults[key] = sub.provenance()
            sub.done()
        alias_entry = t.opt_child("aliases")  # where the table's second names come from
        alias_prov = None
        if alias_entry is not None:
            alias_prov = alias_entry.provenance()
            alias_entry.done()
        engines_default: Provenance | None = None
        engines_sub = t.opt_child("engines")
        if engines_sub is not None:
            engines_default = engines_sub.provenance()
            engines_sub.done()
        profiles: list[MigProfile] = []
        seen_names: set[str] = set()
        seen_ids: set[int] = set()
        for p in t.items("profiles"):
            name = p.str_("name")
            pid = p.int_("id")
            g = p.int_("g", 1)
            m = p.int_("m", 1)
            inst = p.int_("inst", 1)
            starts = p.int_list("starts")
            gib = p.opt_float("gib")
            sms = p.opt_int("sms", 1)
            device_sms = p.opt_int("device_sms", 1)
            engines_entry = p.opt_child("engines")
            engines = MigEngines()
            if engines_entry is not None:
                engines = _engines(engines_entry, ENGINE_KINDS)
                engines_entry.done()
            profile_prov = _prov_override(p, "prov", prov)
            placement_prov = _prov_override(p, "placement_prov", defaults["placements"])
            sms_prov = _prov_override(p, "sms_prov", defaults["sms"])
            memory_prov = _prov_override(p, "memory_prov", defaults["memory"])
            aliases = p.str_list("aliases") if p.has("aliases") else ()
            engines_prov = engines_default
            if p.has("engines_prov"):  # its own source/confidence: the table's default is not needed
                engines_prov = _prov_override(p, "engines_prov", engines_default or prov)
            p.done()
            if engines.known() and engines_prov is None:
                raise p.error("engine counts need a source: give the table an 'engines' provenance or "
                              "the profile an 'engines_prov'")
            if device_sms is not None and (sms is None or device_sms == sms):
                raise p.error("'device_sms' is only for a device SM count that differs from a known 'sms'")
            if name != name.lower() or not name[0].isdigit() or "g." not in name:
                raise p.error(f"{name!r} is not a MIG profile name like '3g.40gb'")
            if name in seen_names:
                raise p.error(f"duplicate profile {name!r}")
            if pid in seen_ids:
                raise p.error(f"duplicate profile id {pid}")
            seen_names.add(name)
            seen_ids.add(pid)
            if aliases and alias_prov is None:
                raise p.error("'aliases' need the table's 'aliases' provenance (source/confidence)")
            for alias in aliases:
                if alias in seen_names:
                    raise p.error(f"alias {alias!r} is already a profile name or alias")
                if alias != alias.lower() or not alias.startswith(f"{g}g.") or (
                    _profile_attributes(alias) != _profile_attributes(name)
                ):
                    raise p.error(f"alias {alias!r} must be a lower-case {g}g profile name with {name!r}'s attributes")
                seen_names.add(alias)
            if not name.startswith(f"{g}g."):
                raise p.error(f"name {name!r} does not match g: {g}")
            if g > compute:
                raise p.error(f"{g} compute slices exceed the table's {compute}")
            if not starts:
                raise p.error("'starts' must not be empty")
            if list(starts) != sorted(set(starts)):
                raise p.error(f"'starts' must be increasing without repeats, got {list(starts)}")
            if starts[-1] + m > grid:
                raise p.error(f"placement {starts[-1]}:{m} runs past the {grid} memory slices")
            attrs = _profile_attributes(name)
            if attrs is None:
                raise p.error(f"{name!r}: attributes must be '+a[,b]' or '-a' (e.g. +me, +me.all, +gfx, -me)")
            media = bool({"me", "me.all"} & set(attrs))
            if media and inst != 1:
                raise p.error("a profile with media extensions (+me, +me.all) has at most 1 instance")
            if inst > max_inst:
                raise p.error(f"{inst} instances exceed the table's {max_inst}")
            profiles.append(
                MigProfile(
                    name=name,
                    profile_id=pid,
                    compute_slices=g,
                    memory_slices=m,
                    max_instances=inst,
                    starts=starts,
                    media_extensions=media,
                    memory_gib=gib,
                    sms=sms,
                    provenance=profile_prov,
                    placement_provenance=placement_prov,
                    sms_provenance=sms_prov,
                    memory_provenance=memory_prov,
                    aliases=aliases,
                    alias_provenance=alias_prov if aliases else None,
                    device_sms=device_sms,
                    engines=engines,
                    engines_provenance=engines_prov,
                )
            )
        budget = _media_budget(t, profiles)
        t.done()
        tables[table_name] = _MigTable(grid, compute, max_inst, min_driver, tuple(profiles), prov, budget)
    root.done()
    return tables


class _VgpuMenu:
    __slots__ = ("mig_backed", "provenance", "time_sliced")

    def __init__(
        self,
        provenance: Provenance,
        time_sliced: list[tuple[int, str, int, int | None, Provenance]],
        mig_backed: list[tuple[int, int, int, bool]],
    ) -> None:
        self.provenance = provenance
        self.time_sliced = time_sliced
        self.mig_backed = mig_backed


def _load_vgpu(root: _Entry) -> tuple[dict[str, VgpuSeries], dict[str, _VgpuMenu]]:
    series: dict[str, VgpuSeries] = {}
    for s in root.items("series"):
        name = s.str_("name")
        if name in series:
            raise s.error(f"duplicate series {name!r}")
        series[name] = VgpuSeries(
            name=name, purpose=s.str_("purpose"), license=s.str_("license"), provenance=s.provenance()
        )
        s.done()
    menus: dict[str, _VgpuMenu] = {}
    for menu_name, m in root.mapping("menus").items():
        prov = m.provenance()
        sliced: list[tuple[int, str, int, int | None, Provenance]] = []
        for row in m.items("time_sliced"):
            fb = row.int_("fb", 1)
            kind = row.opt_str("series", "C") or "C"
            if kind not in series:
                raise row.error(f"unknown vGPU series {kind!r}")
            equal = row.int_("equal", 1)
            mixed = row.opt_int("mixed", 0)  # 0: the GPU has no mixed-size mode (T4)
            row_prov = row.provenance(default=prov)
            row.done()
            if mixed is not None and mixed > equal:
                raise row.error(f"mixed-size max {mixed} exceeds equal-size max {equal}")
            if any(fb == f and kind == k for f, k, *_ in sliced):
                raise row.error(f"duplicate {fb}{kind} type")
            sliced.append((fb, kind, equal, mixed, row_prov))
        backed: list[tuple[int, int, int, bool]] = []
        for row in m.items("mig_backed"):
            backed.append(
                (row.int_("slices", 1), row.int_("fb", 1), row.int_("max", 1), row.bool_("me", False))
            )
            row.done()
        m.done()
        menus[menu_name] = _VgpuMenu(prov, sliced, backed)
    root.done()
    return series, menus


def _vgpu_types(
    model_entry: _Entry, prefix: str, menu: _VgpuMenu, prov: Provenance, mig: _MigTable | None
) -> tuple[VgpuType, ...]:
    types: list[VgpuType] = []
    for fb, kind, equal, mixed, row_prov in menu.time_sliced:
        # a model's uncertain board prefix makes all its types uncertain
        p = row_prov if prov.confidence != "uncertain" or row_prov.confidence == "uncertain" else prov
        types.append(
            VgpuType(
                name=vgpu_type_name(prefix, fb, kind),
                series=kind,
                framebuffer_mib=fb * 1024,
                max_equal_size=equal,
                max_mixed_size=mixed,
                mig_profile=None,
                provenance=p,
            )
        )
    for slices, fb, max_count, media in menu.mig_backed:
        profile_name = f"{slices}g.{fb}gb" + ("+me" if media else "")
        name = vgpu_type_name(prefix, fb, "C", mig_slices=slices, media=media)
        profile = None if mig is None else next((p for p in mig.profiles if p.name == profile_name), None)
        if profile is None:
            raise model_entry.error(
                f"MIG-backed vGPU type {name} maps to {profile_name}, which the model lacks"
            )
        if max_count > profile.max_instances:
            raise model_entry.error(
                f"{name}: max {max_count} exceeds {profile_name}'s {profile.max_instances} instances"
            )
        types.append(
            VgpuType(
                name=name,
                series="C",
                framebuffer_mib=fb * 1024,
                max_equal_size=max_count,
                max_mixed_size=None,
                mig_profile=profile_name,
                provenance=menu.provenance,
            )
        )
    return tuple(types)


def _load_models(
    root: _Entry, mig_tables: Mapping[str, _MigTable], menus: Mapping[str, _VgpuMenu]
) -> dict[str, GpuModel]:
    models: dict[str, GpuModel] = {}
    for e in root.items("models"):
        name = e.str_("name")
        if name in models:
            raise e.error(f"duplicate model {name!r}")
        prov = e.provenance()
        fields: dict[str, Provenance] = {}

        arch = e.child("architecture")
        architecture = arch.str_("value")
        fields["architecture"] = arch.provenance()
        arch.done()
        compute_capability = e.opt_str("compute_capability")

        product_names: list[str] = []
        product_prov: dict[str, Provenance] = {}
        for pn in e.items("product_names"):
            product = pn.str_("name")
            product_names.append(product)
            product_prov[product] = pn.provenance()
            pn.done()
        if not product_names:
            raise e.error("'product_names' must not be empty")

        pci = e.child("pci_device_ids")
        pci_ids = pci.str_list("ids")
        fields["pci_device_ids"] = pci.provenance()
        pci.done()
        for dev in pci_ids:
            if len(dev) != 6 or not dev.startswith("0x") or dev[2:] != dev[2:].upper():
                raise pci.error(f"PCI device id {dev!r} must be written like '0x20B5'")
            try:
                int(dev, 16)
            except ValueError:
                raise pci.error(f"PCI device id {dev!r} is not hexadecimal") from None

        mem = e.child("memory")
        memory_mib = mem.int_("mib", 1)
        memory_gb = mem.int_("gb", 1)
        # a vGPU type may be as large as the card's nominal memory, which ECC and firmware reservations
        # put above the nvidia-smi total (an L40S-48C on a 46068 MiB L40S)
        board_gb = mem.opt_int("board_gb", 1)
        fields["memory"] = mem.provenance()
        mem.done()
        if -(-memory_mib // 1024) != memory_gb:
            raise mem.error(f"naming total {memory_gb} GB is not ceil({memory_mib} MiB / 1024)")
        if board_gb is not None and board_gb < memory_gb:
            raise mem.error(f"board_gb {board_gb} is below the naming total {memory_gb} GB")
        vgpu_ceiling_gb = board_gb if board_gb is not None else memory_gb

        sm = e.child("sms")
        sms = sm.opt_int("value", 1)
        fields["sms"] = sm.provenance()
        sm.done()

        mig_name = e.opt_str("mig")
        mig = None
        if mig_name is not None:
            mig = mig_tables.get(mig_name)
            if mig is None:
                raise e.error(
                    f"unknown MIG table {mig_name!r} (mig.yaml has {', '.join(sorted(mig_tables))})"
                )
            fields["mig"] = mig.provenance
            if mig.media_budget_provenance is not None:
                fields["mig_media_budget"] = mig.media_budget_provenance

        nvlink = None
        nv = e.opt_child("nvlink")
        if nv is not None:
            nvlink = NvlinkSpec(
                generation=nv.int_("generation", 1),
                links=nv.int_("links", 1),
                bandwidth_gbs=nv.int_("bandwidth_gbs", 1),
                provenance=nv.provenance(),
            )
            nv.done()
            fields["nvlink"] = nvlink.provenance

        prefix = None
        vgpu_types: tuple[VgpuType, ...] = ()
        vg = e.opt_child("vgpu")
        if vg is not None:
            prefix = vg.str_("prefix")
            if not prefix.endswith("-") or "-" in prefix[:-1] or prefix != prefix.upper():
                raise vg.error(
                    f"board prefix {prefix!r} must be upper case and end in its only '-', like 'A100X-'"
                )
            menu_name = vg.str_("menu")
            vgpu_prov = vg.provenance()
            vg.done()
            menu = menus.get(menu_name)
            if menu is None:
                raise vg.error(f"unknown vGPU menu {menu_name!r} (vgpu.yaml has {', '.join(sorted(menus))})")
            fields["vgpu_prefix"] = vgpu_prov
            vgpu_types = _vgpu_types(e, prefix, menu, vgpu_prov, mig)
            for t in vgpu_types:
                if t.framebuffer_mib > vgpu_ceiling_gb * 1024:
                    raise vg.error(f"{t.name}: {t.framebuffer_mib} MiB exceeds the {vgpu_ceiling_gb} GB board")
        e.done()

        models[name] = GpuModel(
            name=name,
            product_names=tuple(product_names),
            pci_device_ids=pci_ids,
            architecture=architecture,
            memory_mib=memory_mib,
            memory_gb=memory_gb,
            sms=sms,
            mig_capable=mig is not None,
            memory_slices=mig.memory_slices if mig else 0,
            compute_slices=mig.compute_slices if mig else 0,
            max_mig_instances=mig.max_instances if mig else 0,
            nvlink=nvlink,
            vgpu_prefix=prefix,
            mig_profiles=mig.profiles if mig else (),
            vgpu_types=vgpu_types,
            provenance=prov,
            compute_capability=compute_capability,
            mig_min_driver=mig.min_driver if mig else None,
            mig_media_budget=mig.media_budget if mig else None,
            field_provenance=MappingProxyType(fields),
            product_name_provenance=MappingProxyType(product_prov),
        )
    root.done()
    return models


def _esxi(entry: _Entry, key: str) -> str:
    value = entry.str_(key)
    try:
        parse_esxi_version(value)
    except ValueError as exc:
        raise entry.error(str(exc)) from None
    return value


def _since(parent: _Entry, key: str, extra: tuple[str, ...] = ()) -> tuple[str, Provenance, dict[str, int]]:
    e = parent.child(key)
    value = _esxi(e, "value")
    ints = {k: e.int_(k, 1) for k in extra}
    prov = e.provenance()
    e.done()
    return value, prov, ints


def _sorted_rows(entry: _Entry, key: str, rows: list[T], version_of: Callable[[T], str]) -> tuple[T, ...]:
    versions = [parse_esxi_version(version_of(r)) for r in rows]
    if not rows:
        raise entry.error(f"{key!r} must not be empty")
    if versions != sorted(versions):
        raise entry.error(f"{key!r} rows must be in increasing ESXi order")
    return tuple(rows)


def _load_vsphere(v: _Entry) -> VsphereLimits:
    passthrough = []
    for r in v.items("passthrough_devices_per_vm"):
        passthrough.append(
            PassthroughRow(
                min_esxi=_esxi(r, "min_esxi"),
                min_hardware_version=r.int_("min_hardware_version", 1),
                limit=r.int_("limit", 1),
                provenance=r.provenance(),
            )
        )
        r.done()
    hardware = []
    for r in v.items("max_hardware_version"):
        hardware.append(
            HardwareVersionRow(
                min_esxi=_esxi(r, "min_esxi"),
                hardware_version=r.int_("hardware_version", 1),
                provenance=r.provenance(),
            )
        )
        r.done()
    per_vm = []
    for r in v.items("vgpus_per_vm"):
        per_vm.append(
            VgpusPerVmRow(
                min_esxi=_esxi(r, "min_esxi"),
                limit=r.int_("limit", 1),
                full_framebuffer_only=r.bool_("full_framebuffer_only"),
                provenance=r.provenance(),
            )
        )
        r.done()
    types_since, types_prov, _ = _since(v, "mixed_vgpu_types_since")
    sizes_since, sizes_prov, sizes_extra = _since(v, "mixed_vgpu_sizes_since", ("min_vgpu_release",))
    groups_since, groups_prov, _ = _since(v, "device_groups_since")
    nvs_groups_since, nvs_groups_prov, _ = _since(v, "nvswitch_device_groups_since")
    sizes_entry = v.child("device_group_sizes")
    sizes = sizes_entry.int_list("value")
    if not sizes or any(s < 2 for s in sizes) or list(sizes) != sorted(set(sizes)):
        raise sizes_entry.error(f"device group sizes must be increasing and ≥ 2, got {list(sizes)}")
    sizes_entry_prov = sizes_entry.provenance()
    sizes_entry.done()
    nvs = v.child("nvswitch")
    nvswitch = NvswitchVgpuRules(
        time_sliced_vgpu=nvs.bool_("time_sliced_vgpu"),
        mig_backed_vgpu=nvs.bool_("mig_backed_vgpu"),
        plain_passthrough=nvs.bool_("plain_passthrough"),
        provenance=nvs.provenance(),
    )
    nvs.done()
    limits = VsphereLimits(
        passthrough_rows=_sorted_rows(v, "passthrough_devices_per_vm", passthrough, lambda r: r.min_esxi),
        hardware_version_rows=_sorted_rows(v, "max_hardware_version", hardware, lambda r: r.min_esxi),
        vgpus_per_vm_rows=_sorted_rows(v, "vgpus_per_vm", per_vm, lambda r: r.min_esxi),
        mixed_vgpu_types_since=types_since,
        mixed_vgpu_types_provenance=types_prov,
        mixed_vgpu_sizes_since=sizes_since,
        mixed_vgpu_sizes_min_vgpu_release=sizes_extra["min_vgpu_release"],
        mixed_vgpu_sizes_provenance=sizes_prov,
        device_groups_since=groups_since,
        device_groups_provenance=groups_prov,
        nvswitch_device_groups_since=nvs_groups_since,
        nvswitch_device_groups_provenance=nvs_groups_prov,
        device_group_sizes=sizes,
        device_group_sizes_provenance=sizes_entry_prov,
        nvswitch=nvswitch,
    )
    v.done()
    return limits


_SHAPE_NVLINK: tuple[NvlinkKind, ...] = ("nvswitch", "pairs", "none")
_BOARD_NVLINK: tuple[BoardNvlink, ...] = ("nvswitch", "direct")


def _fm_partitions(entry: _Entry, board: Board) -> tuple[FmPartition, ...]:
    """A board's Fabric Manager partitions: ids unique, GPUs within the board's physical ids 1…gpus."""
    out: list[FmPartition] = []
    for item in entry.items("partitions"):
        gpus = item.int_list("gpus")
        if len(gpus) < 2 or len(set(gpus)) != len(gpus) or not all(1 <= g <= board.gpus for g in gpus):
            raise item.error(f"a partition lists 2 or more distinct GPUs among 1..{board.gpus}, got {list(gpus)}")
        out.append(FmPartition(id=item.int_("id"), gpus=tuple(sorted(gpus))))
        item.done()
    if len({p.id for p in out}) != len(out):
        raise entry.error("duplicate partition id")
    return tuple(out)


def _load_platforms(
    root: _Entry, models: Mapping[str, GpuModel]
) -> tuple[VsphereLimits, dict[str, Board], dict[str, Shape]]:
    vsphere = _load_vsphere(root.child("vsphere"))
    boards: dict[str, Board] = {}
    for b in root.items("boards"):
        name = b.str_("name")
        gpu_models = b.str_list("gpu_models")
        for m in gpu_models:
            if m not in models:
                raise b.error(f"unknown GPU model {m!r}")
        nvlink = b.str_("nvlink")
        if nvlink not in _BOARD_NVLINK:
            raise b.error(f"nvlink must be one of {', '.join(_BOARD_NVLINK)}, got {nvlink!r}")
        nvswitches = b.int_("nvswitches")
        if (nvlink == "nvswitch") != (nvswitches > 0):
            raise b.error(f"nvlink {nvlink} with {nvswitches} NVSwitches")
        board = Board(
            name=name,
            gpu_models=gpu_models,
            gpus=b.int_("gpus", 1),
            nvlink=nvlink,
            nvswitches=nvswitches,
            provenance=b.provenance(),
            nvlink_links_per_gpu=b.int_("nvlink_links_per_gpu", 1),
            nvlink_bandwidth_gbs=b.int_("nvlink_bandwidth_gbs", 1),
            nvswitch_pci_id=b.opt_str("nvswitch_pci_id"),
            topo_matrix=b.opt_str("topo_matrix"),
        )
        parts = b.opt_child("fm_partitions")
        if parts is not None:
            board = replace(
                board, fm_partitions=_fm_partitions(parts, board), fm_partitions_provenance=parts.provenance()
            )
            parts.done()
        b.done()
        if name in boards:
            raise b.error(f"duplicate board {name!r}")
        boards[name] = board
    shapes: dict[str, Shape] = {}
    for s in root.items("shapes"):
        name = s.str_("name")
        gpu_model = s.str_("gpu_model")
        if gpu_model not in models:
            raise s.error(f"unknown GPU model {gpu_model!r}")
        nvlink = s.str_("nvlink")
        if nvlink not in _SHAPE_NVLINK:
            raise s.error(f"nvlink must be one of {', '.join(_SHAPE_NVLINK)}, got {nvlink!r}")
        shape = Shape(
            name=name,
            gpu_model=gpu_model,
            gpus=s.int_("gpus", 1),
            rdma_nics=s.int_("rdma_nics"),
            rdma_gbps=s.int_("rdma_gbps"),
            cpus=s.int_("cpus", 1),
            memory_gib=s.int_("memory_gib", 1),
            nvlink=nvlink,
            provenance=s.provenance(),
        )
        s.done()
        if name in shapes:
            raise s.error(f"duplicate shape {name!r}")
        shapes[name] = shape
    root.done()
    return vsphere, boards, shapes


def default_data_dir() -> Traversable:
    """The data files shipped in the package (gpuadmin/catalog/data)."""
    return resources.files("gpuadmin.catalog").joinpath("data")


def load_catalog(data_dir: Traversable | Path | None = None) -> Catalog:
    """Parse and validate the four data files (uncached; `get_catalog` is the cached entry point).

    `data_dir` defaults to the package's own data; tests pass a copy to check that broken files are refused.
    """
    base: Traversable = default_data_dir() if data_dir is None else data_dir
    mig_tables = _load_mig(_read_file(base, "mig.yaml"))
    series, menus = _load_vgpu(_read_file(base, "vgpu.yaml"))
    models = _load_models(_read_file(base, "gpus.yaml"), mig_tables, menus)
    vsphere, boards, shapes = _load_platforms(_read_file(base, "platforms.yaml"), models)
    try:
        return Catalog.build(models, shapes, boards, series, vsphere)
    except ValueError as exc:
        raise CatalogError(f"gpus.yaml: {exc}") from exc


@functools.cache
def get_catalog() -> Catalog:
    """The catalog, parsed once per process."""
    return load_catalog()
