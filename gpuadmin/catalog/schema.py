"""The schema of the catalog's data files, as strict pydantic models, and the records each entry becomes.

Each file is validated as a whole (`GpusFile`, `MigFile`, `VgpuFile`, `PlatformsFile`): types, bounds, required
and unknown keys are declared on the fields; validators are kept to facts one field cannot state — a profile
name against its compute slices, placements against the table's grid, a naming total against the MiB, a
model's vGPU types against its MIG table and board. A validator reports its problem at the field it is about
(`_Problems`), so the loader can point at that field's line. Facts from another file (which MIG tables, vGPU
menus and GPU models exist) reach the validators through the validation context.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from gpuadmin.catalog.catalog import (
    HardwareVersionRow,
    NvswitchVgpuRules,
    PassthroughRow,
    StunTimeTable,
    VgpusPerVmRow,
    VsphereLimits,
    normalize_pci_device_id,
    normalize_product_name,
)
from gpuadmin.catalog.entities import (
    MEDIA_ENGINE_KINDS,
    Board,
    BoardNvlink,
    Confidence,
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

Loc = tuple[str | int, ...]


def _esxi_version(text: str) -> str:
    parse_esxi_version(text)  # ValueError names what is wrong with it
    return text


Text = Annotated[str, Field(pattern=r"\S")]  # a string with something in it
EsxiVersion = Annotated[str, Field(pattern=r"\S"), AfterValidator(_esxi_version)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
PciDeviceId = Annotated[str, Field(pattern=r"^0x[0-9A-F]{4}$")]  # "0x20B5": upper-case hex, vendor implied
BoardPrefix = Annotated[str, Field(pattern=r"^[^-a-z]*-$")]  # upper case, ending in its only '-': "A100X-"


class _Problems:
    """Problems a validator found, each at the field it is about; raised together as one ValidationError."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.details: list[InitErrorDetails] = []

    def add(self, loc: Loc, message: str, value: object = None) -> None:
        error = PydanticCustomError("catalog", "{message}", {"message": message})
        self.details.append(InitErrorDetails(type=error, loc=loc, input=value))

    def raise_any(self) -> None:
        if self.details:
            raise ValidationError.from_exception_data(self.title, self.details)


class _Strict(BaseModel):
    # strict: no coercion (true is not 1, 8 is not "8"); forbid: a typo must not silently drop a fact
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Sourced(_Strict):
    """An entry that carries its own provenance (`source`, `confidence`, optional `note`)."""

    source: Text
    confidence: Confidence
    note: str | None = None

    @property
    def provenance(self) -> Provenance:
        return Provenance(source=self.source, confidence=self.confidence, note=self.note or "")


class ProvenanceEntry(_Sourced):
    """A provenance on its own (`placements: {source, confidence}`)."""


def _duplicates(problems: _Problems, loc: tuple[str, ...], keys: list[Any], what: str) -> None:
    """Name the second and later entries of a list whose `keys` repeat (key None: the entry has none)."""
    seen: set[Any] = set()
    for index, key in enumerate(keys):
        if key in seen:
            problems.add((*loc, index), f"duplicate {what} {key!r}", key)
        seen.add(key)


def _context(info: ValidationInfo, key: str) -> Any:
    context: dict[str, Any] = info.context or {}
    return context[key]


# --- mig.yaml ------------------------------------------------------------------------------------------------


class EnginesEntry(_Strict):
    """`-lgip` engine counts, any subset (a missing count is unknown)."""

    dec: Count | None = None
    enc: Count | None = None
    jpg: Count | None = None
    ofa: Count | None = None
    ce: Count | None = None

    def record(self) -> MigEngines:
        return MigEngines(dec=self.dec, enc=self.enc, jpg=self.jpg, ofa=self.ofa, ce=self.ce)


class MediaBudgetEntry(_Sourced):
    dec: Count
    enc: Count
    jpg: Count
    ofa: Count


def profile_attributes(name: str) -> tuple[str, ...] | None:
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


class ProfileEntry(_Strict):
    name: Text
    id: Count
    g: Positive
    m: Positive
    inst: Positive
    starts: list[Count] = Field(min_length=1)
    gib: float | None  # required, null where the reference has "?"
    sms: Positive | None = None
    device_sms: Positive | None = None
    engines: EnginesEntry | None = None
    engines_prov: ProvenanceEntry | None = None
    prov: ProvenanceEntry | None = None
    placement_prov: ProvenanceEntry | None = None
    sms_prov: ProvenanceEntry | None = None
    memory_prov: ProvenanceEntry | None = None
    aliases: list[Text] = []

    @property
    def media_extensions(self) -> bool:
        return bool({"me", "me.all"} & set(profile_attributes(self.name) or ()))

    @model_validator(mode="after")
    def _consistent(self) -> ProfileEntry:
        problems = _Problems("MIG profile")
        name, g = self.name, self.g
        if name != name.lower() or not name[0].isdigit() or "g." not in name:
            problems.add(("name",), f"{name!r} is not a MIG profile name like '3g.40gb'", name)
        elif not name.startswith(f"{g}g."):
            problems.add(("name",), f"name {name!r} does not match g: {g}", name)
        attrs = profile_attributes(name)
        if attrs is None:
            problems.add(("name",), f"{name!r}: attributes must be '+a[,b]' or '-a' (e.g. +me, +me.all, +gfx, -me)",
                         name)
        if self.starts != sorted(set(self.starts)):
            problems.add(("starts",), f"'starts' must be increasing without repeats, got {self.starts}", self.starts)
        if self.media_extensions and self.inst != 1:
            problems.add(("inst",), "a profile with media extensions (+me, +me.all) has at most 1 instance", self.inst)
        if self.device_sms is not None and (self.sms is None or self.device_sms == self.sms):
            problems.add(("device_sms",), "'device_sms' is only for a device SM count that differs from a known 'sms'",
                         self.device_sms)
        for index, alias in enumerate(self.aliases):
            if alias != alias.lower() or not alias.startswith(f"{g}g.") or profile_attributes(alias) != attrs:
                problems.add(("aliases", index), f"alias {alias!r} must be a lower-case {g}g profile name with "
                                                 f"{name!r}'s attributes", alias)
        problems.raise_any()
        return self


class MigTableEntry(_Sourced):
    memory_slices: Positive
    compute_slices: Positive
    max_instances: Positive
    min_driver: str | None = None
    placements: ProvenanceEntry
    sms: ProvenanceEntry
    memory: ProvenanceEntry
    engines: ProvenanceEntry | None = None  # the default source of the profiles' engine counts
    aliases: ProvenanceEntry | None = None  # where the profiles' second names come from
    media_budget: MediaBudgetEntry | None = None
    profiles: list[ProfileEntry]

    @model_validator(mode="after")
    def _profiles_fit_the_table(self) -> MigTableEntry:
        problems = _Problems("MIG table")
        names: list[str] = []
        for index, p in enumerate(self.profiles):
            at = ("profiles", index)
            if p.name in names:
                problems.add((*at, "name"), f"duplicate profile {p.name!r}", p.name)
            names.append(p.name)
            for alias_index, alias in enumerate(p.aliases):
                if alias in names:
                    problems.add((*at, "aliases", alias_index), f"alias {alias!r} is already a profile name or alias",
                                 alias)
                names.append(alias)
            if p.aliases and self.aliases is None:
                problems.add((*at, "aliases"), "'aliases' need the table's 'aliases' provenance (source/confidence)")
            if p.engines is not None and p.engines.record().known() and p.engines_prov is None and self.engines is None:
                problems.add((*at, "engines"), "engine counts need a source: give the table an 'engines' provenance "
                                               "or the profile an 'engines_prov'")
            if p.g > self.compute_slices:
                problems.add((*at, "g"), f"{p.g} compute slices exceed the table's {self.compute_slices}", p.g)
            if p.starts[-1] + p.m > self.memory_slices:
                problems.add((*at, "starts"),
                             f"placement {p.starts[-1]}:{p.m} runs past the {self.memory_slices} memory slices",
                             p.starts)
            if p.inst > self.max_instances:
                problems.add((*at, "inst"), f"{p.inst} instances exceed the table's {self.max_instances}", p.inst)
        _duplicates(problems, ("profiles",), [p.id for p in self.profiles], "profile id")
        self._check_media_budget(problems)
        problems.raise_any()
        return self

    def _check_media_budget(self, problems: _Problems) -> None:
        """Every profile states its media engines, and none alone exceeds the budget (else it could never be
        created)."""
        budget = self.media_budget
        if budget is None:
            return
        for p in self.profiles:
            engines = p.engines.record() if p.engines is not None else MigEngines()
            for kind in MEDIA_ENGINE_KINDS:
                need, have = engines.count(kind), getattr(budget, kind)
                if need is None:
                    problems.add(("media_budget",), f"{p.name} has no {kind} count: a media budget needs every "
                                                    "profile's")
                elif need > have:
                    problems.add(("media_budget", kind),
                                 f"{p.name} has {need} {kind}, more than the GPU's budget of {have}", have)

    def records(self) -> tuple[MigProfile, ...]:
        table = self.provenance
        alias_prov = self.aliases.provenance if self.aliases is not None else None
        engines_default = self.engines.provenance if self.engines is not None else None

        def override(entry: ProvenanceEntry | None, default: Provenance) -> Provenance:
            return entry.provenance if entry is not None else default

        return tuple(
            MigProfile(
                name=p.name,
                profile_id=p.id,
                compute_slices=p.g,
                memory_slices=p.m,
                max_instances=p.inst,
                starts=tuple(p.starts),
                media_extensions=p.media_extensions,
                memory_gib=p.gib,
                sms=p.sms,
                provenance=override(p.prov, table),
                placement_provenance=override(p.placement_prov, self.placements.provenance),
                sms_provenance=override(p.sms_prov, self.sms.provenance),
                memory_provenance=override(p.memory_prov, self.memory.provenance),
                aliases=tuple(p.aliases),
                alias_provenance=alias_prov if p.aliases else None,
                device_sms=p.device_sms,
                engines=p.engines.record() if p.engines is not None else MigEngines(),
                engines_provenance=p.engines_prov.provenance if p.engines_prov is not None else engines_default,
            )
            for p in self.profiles
        )

    def media_budget_record(self) -> MigEngines | None:
        b = self.media_budget
        return None if b is None else MigEngines(dec=b.dec, enc=b.enc, jpg=b.jpg, ofa=b.ofa)


class _DataFile(_Strict):
    version: int

    @model_validator(mode="after")
    def _version_one(self) -> _DataFile:
        if self.version != 1:
            problems = _Problems("catalog file")
            problems.add(("version",), f"unsupported version {self.version} (expected 1)", self.version)
            problems.raise_any()
        return self


class MigFile(_DataFile):
    tables: dict[str, MigTableEntry]


# --- vgpu.yaml -----------------------------------------------------------------------------------------------


class SeriesEntry(_Sourced):
    name: Text
    purpose: Text
    license: Text

    def record(self) -> VgpuSeries:
        return VgpuSeries(name=self.name, purpose=self.purpose, license=self.license, provenance=self.provenance)


class TimeSlicedRow(_Strict):
    fb: Positive
    equal: Positive
    mixed: Count | None = None  # None: unknown; 0: the GPU has no mixed-size mode (T4)
    series: str | None = None  # None: C
    # the row's own provenance, else the menu's (rows share one through YAML merge keys)
    source: Text | None = None
    confidence: Confidence | None = None
    note: str | None = None

    @property
    def kind(self) -> str:
        return self.series or "C"

    @model_validator(mode="after")
    def _consistent(self) -> TimeSlicedRow:
        problems = _Problems("time-sliced vGPU row")
        if self.mixed is not None and self.mixed > self.equal:
            problems.add(("mixed",), f"mixed-size max {self.mixed} exceeds equal-size max {self.equal}", self.mixed)
        own = (self.source is not None, self.confidence is not None)
        if own == (True, False):
            problems.add(("confidence",), "missing key 'confidence' (a row with its own 'source' needs one)")
        elif own == (False, True):
            problems.add(("source",), "missing key 'source' (a row with its own 'confidence' needs one)")
        elif own == (False, False) and self.note is not None:
            problems.add(("note",), "'note' without 'source'/'confidence'", self.note)
        problems.raise_any()
        return self

    def provenance(self, menu: Provenance) -> Provenance:
        if self.source is None or self.confidence is None:
            return menu
        return Provenance(source=self.source, confidence=self.confidence, note=self.note or "")


class MigBackedRow(_Strict):
    slices: Positive
    fb: Positive
    max: Positive
    me: bool = False

    @property
    def profile_name(self) -> str:
        return f"{self.slices}g.{self.fb}gb" + ("+me" if self.me else "")


class MenuEntry(_Sourced):
    time_sliced: list[TimeSlicedRow]
    mig_backed: list[MigBackedRow]

    @model_validator(mode="after")
    def _distinct_types(self) -> MenuEntry:
        problems = _Problems("vGPU menu")
        _duplicates(problems, ("time_sliced",), [f"{r.fb}{r.kind}" for r in self.time_sliced], "type")
        problems.raise_any()
        return self

    def types(self, prefix: str, model_prov: Provenance) -> tuple[VgpuType, ...]:
        """A model's types: named from its board prefix; MIG-backed ones name the MIG profile they map to."""
        menu = self.provenance
        types: list[VgpuType] = []
        for row in self.time_sliced:
            row_prov = row.provenance(menu)
            # a model's uncertain board prefix makes all its types uncertain
            uncertain = model_prov.confidence == "uncertain" and row_prov.confidence != "uncertain"
            types.append(VgpuType(
                name=vgpu_type_name(prefix, row.fb, row.kind), series=row.kind, framebuffer_mib=row.fb * 1024,
                max_equal_size=row.equal, max_mixed_size=row.mixed, mig_profile=None,
                provenance=model_prov if uncertain else row_prov,
            ))
        for backed in self.mig_backed:
            types.append(VgpuType(
                name=vgpu_type_name(prefix, backed.fb, "C", mig_slices=backed.slices, media=backed.me),
                series="C", framebuffer_mib=backed.fb * 1024, max_equal_size=backed.max, max_mixed_size=None,
                mig_profile=backed.profile_name, provenance=menu,
            ))
        return tuple(types)


class VgpuFile(_DataFile):
    series: list[SeriesEntry]
    menus: dict[str, MenuEntry]

    @model_validator(mode="after")
    def _known_series(self) -> VgpuFile:
        problems = _Problems("vgpu.yaml")
        _duplicates(problems, ("series",), [s.name for s in self.series], "series")
        known = {s.name for s in self.series}
        for menu_name, menu in self.menus.items():
            for index, row in enumerate(menu.time_sliced):
                if row.kind not in known:
                    problems.add(("menus", menu_name, "time_sliced", index, "series"),
                                 f"unknown vGPU series {row.kind!r}", row.series)
        problems.raise_any()
        return self


# --- gpus.yaml -----------------------------------------------------------------------------------------------


class ValueEntry(_Sourced):
    value: Text


class OptionalCountEntry(_Sourced):
    value: Positive | None = None


class ProductNameEntry(_Sourced):
    name: Text


class PciIdsEntry(_Sourced):
    ids: list[PciDeviceId]


class MemoryEntry(_Sourced):
    mib: Positive
    gb: Positive
    # a vGPU type may be as large as the card's nominal memory, which ECC and firmware reservations put above
    # the nvidia-smi total (an L40S-48C on a 46068 MiB L40S)
    board_gb: Positive | None = None

    @property
    def vgpu_ceiling_gb(self) -> int:
        return self.board_gb if self.board_gb is not None else self.gb

    @model_validator(mode="after")
    def _naming_total(self) -> MemoryEntry:
        problems = _Problems("memory")
        if -(-self.mib // 1024) != self.gb:
            problems.add(("gb",), f"naming total {self.gb} GB is not ceil({self.mib} MiB / 1024)", self.gb)
        if self.board_gb is not None and self.board_gb < self.gb:
            problems.add(("board_gb",), f"board_gb {self.board_gb} is below the naming total {self.gb} GB",
                         self.board_gb)
        problems.raise_any()
        return self


class NvlinkEntry(_Sourced):
    generation: Positive
    links: Positive
    bandwidth_gbs: Positive


class VgpuEntry(_Sourced):
    prefix: BoardPrefix
    menu: Text


class MigTableRecord:
    """A validated MIG table with its profile records, built once and shared by the models that name it."""

    __slots__ = ("entry", "profiles")

    def __init__(self, entry: MigTableEntry) -> None:
        self.entry = entry
        self.profiles = entry.records()


class ModelEntry(_Sourced):
    name: Text
    architecture: ValueEntry
    compute_capability: str | None = None
    product_names: list[ProductNameEntry] = Field(min_length=1)
    pci_device_ids: PciIdsEntry
    memory: MemoryEntry
    sms: OptionalCountEntry
    mig: str | None = None
    nvlink: NvlinkEntry | None = None
    vgpu: VgpuEntry | None = None

    @model_validator(mode="after")
    def _known_tables_and_fitting_types(self, info: ValidationInfo) -> ModelEntry:
        problems = _Problems("GPU model")
        tables: Mapping[str, MigTableRecord] = _context(info, "mig_tables")
        menus: Mapping[str, MenuEntry] = _context(info, "menus")
        table = tables.get(self.mig) if self.mig is not None else None
        if self.mig is not None and table is None:
            problems.add(("mig",), f"unknown MIG table {self.mig!r} (mig.yaml has {', '.join(sorted(tables))})",
                         self.mig)
        vgpu = self.vgpu
        menu = menus.get(vgpu.menu) if vgpu is not None else None
        if vgpu is not None and menu is None:
            problems.add(("vgpu", "menu"),
                         f"unknown vGPU menu {vgpu.menu!r} (vgpu.yaml has {', '.join(sorted(menus))})", vgpu.menu)
        if vgpu is not None and menu is not None and (self.mig is None or table is not None):
            profiles = {p.name: p for p in table.profiles} if table is not None else {}
            ceiling = self.memory.vgpu_ceiling_gb
            for vgpu_type in menu.types(vgpu.prefix, vgpu.provenance):
                profile = profiles.get(vgpu_type.mig_profile) if vgpu_type.mig_profile is not None else None
                if vgpu_type.mig_profile is not None and profile is None:
                    problems.add(("vgpu", "menu"), f"MIG-backed vGPU type {vgpu_type.name} maps to "
                                                   f"{vgpu_type.mig_profile}, which the model lacks", vgpu.menu)
                elif profile is not None and vgpu_type.max_equal_size > profile.max_instances:
                    problems.add(("vgpu", "menu"), f"{vgpu_type.name}: max {vgpu_type.max_equal_size} exceeds "
                                                   f"{profile.name}'s {profile.max_instances} instances", vgpu.menu)
                if vgpu_type.framebuffer_mib > ceiling * 1024:
                    problems.add(("vgpu", "menu"), f"{vgpu_type.name}: {vgpu_type.framebuffer_mib} MiB exceeds the "
                                                   f"{ceiling} GB board", vgpu.menu)
        problems.raise_any()
        return self

    def record(self, tables: Mapping[str, MigTableRecord], menus: Mapping[str, MenuEntry]) -> GpuModel:
        table = tables[self.mig] if self.mig is not None else None
        mig = table.entry if table is not None else None
        fields: dict[str, Provenance] = {
            "architecture": self.architecture.provenance,
            "pci_device_ids": self.pci_device_ids.provenance,
            "memory": self.memory.provenance,
            "sms": self.sms.provenance,
        }
        if mig is not None:
            fields["mig"] = mig.provenance
            if mig.media_budget is not None:
                fields["mig_media_budget"] = mig.media_budget.provenance
        if self.nvlink is not None:
            fields["nvlink"] = self.nvlink.provenance
        vgpu_types: tuple[VgpuType, ...] = ()
        if self.vgpu is not None:
            fields["vgpu_prefix"] = self.vgpu.provenance
            vgpu_types = menus[self.vgpu.menu].types(self.vgpu.prefix, self.vgpu.provenance)
        nvlink = self.nvlink
        return GpuModel(
            name=self.name,
            product_names=tuple(p.name for p in self.product_names),
            pci_device_ids=tuple(self.pci_device_ids.ids),
            architecture=self.architecture.value,
            memory_mib=self.memory.mib,
            memory_gb=self.memory.gb,
            sms=self.sms.value,
            mig_capable=mig is not None,
            memory_slices=mig.memory_slices if mig else 0,
            compute_slices=mig.compute_slices if mig else 0,
            max_mig_instances=mig.max_instances if mig else 0,
            nvlink=None if nvlink is None else NvlinkSpec(
                generation=nvlink.generation, links=nvlink.links, bandwidth_gbs=nvlink.bandwidth_gbs,
                provenance=nvlink.provenance),
            vgpu_prefix=self.vgpu.prefix if self.vgpu is not None else None,
            mig_profiles=table.profiles if table is not None else (),
            vgpu_types=vgpu_types,
            provenance=self.provenance,
            compute_capability=self.compute_capability,
            mig_min_driver=mig.min_driver if mig else None,
            mig_media_budget=mig.media_budget_record() if mig else None,
            field_provenance=MappingProxyType(fields),
            product_name_provenance=MappingProxyType({p.name: p.provenance for p in self.product_names}),
        )


class GpusFile(_DataFile):
    models: list[ModelEntry]

    @model_validator(mode="after")
    def _one_model_per_key(self) -> GpusFile:
        """No name, PCI id, product name or board prefix claimed by two models (as `Catalog.build` indexes
        them), reported at the second claim."""
        problems = _Problems("gpus.yaml")
        claimed: dict[tuple[str, str], str] = {}

        def claim(loc: Loc, what: str, key: str, model: str) -> None:
            other = claimed.setdefault((what, key), model)
            if other != model:
                problems.add(loc, f"{what} {key!r} is claimed by both {other} and {model}", key)

        for index, m in enumerate(self.models):
            at = ("models", index)
            claim((*at, "name"), "catalog name", m.name.lower(), m.name)
            for i, pci in enumerate(m.pci_device_ids.ids):
                claim((*at, "pci_device_ids", "ids", i), "PCI device id", normalize_pci_device_id(pci) or pci, m.name)
            for i, product in enumerate(m.product_names):
                claim((*at, "product_names", i, "name"), "product name", normalize_product_name(product.name),
                      m.name)
            if m.vgpu is not None:
                claim((*at, "vgpu", "prefix"), "vGPU board prefix", m.vgpu.prefix.upper(), m.name)
        _duplicates(problems, ("models",), [m.name for m in self.models], "model")
        problems.raise_any()
        return self


# --- platforms.yaml ------------------------------------------------------------------------------------------


class PassthroughEntry(_Sourced):
    min_esxi: EsxiVersion
    min_hardware_version: Positive
    limit: Positive

    def record(self) -> PassthroughRow:
        return PassthroughRow(min_esxi=self.min_esxi, min_hardware_version=self.min_hardware_version,
                              limit=self.limit, provenance=self.provenance)


class HardwareVersionEntry(_Sourced):
    min_esxi: EsxiVersion
    hardware_version: Positive

    def record(self) -> HardwareVersionRow:
        return HardwareVersionRow(min_esxi=self.min_esxi, hardware_version=self.hardware_version,
                                  provenance=self.provenance)


class VgpusPerVmEntry(_Sourced):
    min_esxi: EsxiVersion
    limit: Positive
    full_framebuffer_only: bool

    def record(self) -> VgpusPerVmRow:
        return VgpusPerVmRow(min_esxi=self.min_esxi, limit=self.limit,
                             full_framebuffer_only=self.full_framebuffer_only, provenance=self.provenance)


class SinceEntry(_Sourced):
    value: EsxiVersion


class MixedSizesSinceEntry(SinceEntry):
    min_vgpu_release: Positive


class GroupSizesEntry(_Sourced):
    value: list[Count] = Field(min_length=1)

    @model_validator(mode="after")
    def _increasing(self) -> GroupSizesEntry:
        if any(s < 2 for s in self.value) or self.value != sorted(set(self.value)):
            problems = _Problems("device group sizes")
            problems.add(("value",), f"device group sizes must be increasing and ≥ 2, got {self.value}", self.value)
            problems.raise_any()
        return self


class NvswitchEntry(_Sourced):
    time_sliced_vgpu: bool
    mig_backed_vgpu: bool
    plain_passthrough: bool


class StunTimesEntry(_Sourced):
    reference_gbps: Positive
    rows: list[Annotated[list[Positive], Field(min_length=2, max_length=2)]] = Field(min_length=2)

    @model_validator(mode="after")
    def _increasing(self) -> StunTimesEntry:
        sizes = [gib for gib, _ in self.rows]
        stuns = [s for _, s in self.rows]
        if sizes != sorted(set(sizes)) or stuns != sorted(stuns):
            problems = _Problems("vmotion stun times")
            problems.add(("rows",), f"stun rows must grow with the frame buffer, got {self.rows}", self.rows)
            problems.raise_any()
        return self

    def record(self) -> StunTimeTable:
        return StunTimeTable(reference_gbps=self.reference_gbps, rows=tuple((gib, s) for gib, s in self.rows),
                             provenance=self.provenance)


class VsphereEntry(_Strict):
    passthrough_devices_per_vm: list[PassthroughEntry] = Field(min_length=1)
    max_hardware_version: list[HardwareVersionEntry] = Field(min_length=1)
    vgpus_per_vm: list[VgpusPerVmEntry] = Field(min_length=1)
    mixed_vgpu_types_since: SinceEntry
    mixed_vgpu_sizes_since: MixedSizesSinceEntry
    device_groups_since: SinceEntry
    nvswitch_device_groups_since: SinceEntry
    device_group_sizes: GroupSizesEntry
    nvswitch: NvswitchEntry
    vmotion_stun_times: StunTimesEntry

    @model_validator(mode="after")
    def _rows_in_esxi_order(self) -> VsphereEntry:
        problems = _Problems("vsphere")
        rows: dict[str, list[str]] = {
            "passthrough_devices_per_vm": [r.min_esxi for r in self.passthrough_devices_per_vm],
            "max_hardware_version": [r.min_esxi for r in self.max_hardware_version],
            "vgpus_per_vm": [r.min_esxi for r in self.vgpus_per_vm],
        }
        for key, versions in rows.items():
            parsed = [parse_esxi_version(v) for v in versions]
            for index in range(1, len(parsed)):
                if parsed[index] < parsed[index - 1]:
                    problems.add((key, index, "min_esxi"), f"{key!r} rows must be in increasing ESXi order "
                                                           f"({versions[index]} after {versions[index - 1]})",
                                 versions[index])
        problems.raise_any()
        return self

    def record(self) -> VsphereLimits:
        nvs = self.nvswitch
        return VsphereLimits(
            passthrough_rows=tuple(r.record() for r in self.passthrough_devices_per_vm),
            hardware_version_rows=tuple(r.record() for r in self.max_hardware_version),
            vgpus_per_vm_rows=tuple(r.record() for r in self.vgpus_per_vm),
            mixed_vgpu_types_since=self.mixed_vgpu_types_since.value,
            mixed_vgpu_types_provenance=self.mixed_vgpu_types_since.provenance,
            mixed_vgpu_sizes_since=self.mixed_vgpu_sizes_since.value,
            mixed_vgpu_sizes_min_vgpu_release=self.mixed_vgpu_sizes_since.min_vgpu_release,
            mixed_vgpu_sizes_provenance=self.mixed_vgpu_sizes_since.provenance,
            device_groups_since=self.device_groups_since.value,
            device_groups_provenance=self.device_groups_since.provenance,
            nvswitch_device_groups_since=self.nvswitch_device_groups_since.value,
            nvswitch_device_groups_provenance=self.nvswitch_device_groups_since.provenance,
            device_group_sizes=tuple(self.device_group_sizes.value),
            device_group_sizes_provenance=self.device_group_sizes.provenance,
            nvswitch=NvswitchVgpuRules(time_sliced_vgpu=nvs.time_sliced_vgpu, mig_backed_vgpu=nvs.mig_backed_vgpu,
                                       plain_passthrough=nvs.plain_passthrough, provenance=nvs.provenance),
            vmotion_stun_times=self.vmotion_stun_times.record(),
        )


class PartitionEntry(_Strict):
    id: Count
    gpus: list[Count]


class FmPartitionsEntry(_Sourced):
    partitions: list[PartitionEntry]


class BoardEntry(_Sourced):
    name: Text
    gpu_models: list[Text]
    gpus: Positive
    nvlink: BoardNvlink
    nvswitches: Count
    nvlink_links_per_gpu: Positive
    nvlink_bandwidth_gbs: Positive
    nvswitch_pci_id: str | None = None
    topo_matrix: str | None = None
    fm_partitions: FmPartitionsEntry | None = None

    @model_validator(mode="after")
    def _switches_and_partitions(self, info: ValidationInfo) -> BoardEntry:
        problems = _Problems("board")
        models: Mapping[str, GpuModel] = _context(info, "models")
        for index, model in enumerate(self.gpu_models):
            if model not in models:
                problems.add(("gpu_models", index), f"unknown GPU model {model!r}", model)
        if (self.nvlink == "nvswitch") != (self.nvswitches > 0):
            problems.add(("nvswitches",), f"nvlink {self.nvlink} with {self.nvswitches} NVSwitches", self.nvswitches)
        partitions = self.fm_partitions.partitions if self.fm_partitions is not None else []
        for index, part in enumerate(partitions):
            gpus = part.gpus
            if len(gpus) < 2 or len(set(gpus)) != len(gpus) or not all(1 <= g <= self.gpus for g in gpus):
                problems.add(("fm_partitions", "partitions", index, "gpus"),
                             f"a partition lists 2 or more distinct GPUs among 1..{self.gpus}, got {gpus}", gpus)
        _duplicates(problems, ("fm_partitions", "partitions"), [p.id for p in partitions], "partition id")
        problems.raise_any()
        return self

    def record(self) -> Board:
        parts = self.fm_partitions
        return Board(
            name=self.name, gpu_models=tuple(self.gpu_models), gpus=self.gpus, nvlink=self.nvlink,
            nvswitches=self.nvswitches, provenance=self.provenance, nvlink_links_per_gpu=self.nvlink_links_per_gpu,
            nvlink_bandwidth_gbs=self.nvlink_bandwidth_gbs, nvswitch_pci_id=self.nvswitch_pci_id,
            topo_matrix=self.topo_matrix,
            fm_partitions=() if parts is None else tuple(
                FmPartition(id=p.id, gpus=tuple(sorted(p.gpus))) for p in parts.partitions),
            fm_partitions_provenance=None if parts is None else parts.provenance,
        )


class ShapeEntry(_Sourced):
    name: Text
    gpu_model: Text
    gpus: Positive
    rdma_nics: Count
    rdma_gbps: Count
    cpus: Positive
    memory_gib: Positive
    nvlink: NvlinkKind

    @model_validator(mode="after")
    def _known_model(self, info: ValidationInfo) -> ShapeEntry:
        if self.gpu_model not in _context(info, "models"):
            problems = _Problems("shape")
            problems.add(("gpu_model",), f"unknown GPU model {self.gpu_model!r}", self.gpu_model)
            problems.raise_any()
        return self

    def record(self) -> Shape:
        return Shape(name=self.name, gpu_model=self.gpu_model, gpus=self.gpus, rdma_nics=self.rdma_nics,
                     rdma_gbps=self.rdma_gbps, cpus=self.cpus, memory_gib=self.memory_gib, nvlink=self.nvlink,
                     provenance=self.provenance)


class PlatformsFile(_DataFile):
    vsphere: VsphereEntry
    boards: list[BoardEntry]
    shapes: list[ShapeEntry]

    @model_validator(mode="after")
    def _distinct_names(self) -> PlatformsFile:
        problems = _Problems("platforms.yaml")
        _duplicates(problems, ("boards",), [b.name for b in self.boards], "board")
        _duplicates(problems, ("shapes",), [s.name for s in self.shapes], "shape")
        problems.raise_any()
        return self
