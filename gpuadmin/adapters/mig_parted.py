"""mig-parted `version: v1` configs, both ways.

Export (`export_mig_parted`): one config per node, `gpuadmin-<node>` (the value the planner puts in the
node's `nvidia.com/mig.config` label), with one entry per GPU index — `devices: [i]`, the model's PCI
id(s) as `device-filter` (`0xDDDD10DE`), `mig-enabled`, and the `mig-devices` counts — plus `all-disabled`,
which the labels name for nodes without MIG (a custom config replaces the GPU Operator's default one).

Import (`parse_mig_parted` + `mig_parted_layouts`): a plain config, or the GPU Operator's ConfigMap of one
(its `data.config.yaml`, the key mig-manager reads), is validated as mig-parted's own
`api/spec/v1` does it (version `v1`; `mig-configs` not empty, each config a non-empty list; per entry
`devices` `all` or a list of indices and `mig-enabled` required, `mig-devices` required with
`mig-enabled: true` and refused with `false`, profile strings that parse, counts ≥ 0, no unknown keys).
A config applied to a node gives each GPU the last entry that matches its index and its model's PCI id
(mig-parted walks the entries in order); the instances are placed with `engine.mig.place` — mig-parted
itself retries creation orders, gpuadmin searches placements.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuadmin.adapters._common import ConsumerRefusal, input_error, pci_filter_id, place_instances
from gpuadmin.catalog import GpuModel, get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.commands import mig_config_name
from gpuadmin.model import MigInstance, Node
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.store.yamlsafe import LoadedYaml, load_yaml, load_yaml_file

ALL_DISABLED = "all-disabled"
COMPUTE_INSTANCES_CHECK = "export.mig-parted.compute-instances"
MIG_MANAGER_KEY = "config.yaml"  # the ConfigMap key the GPU Operator's mig-manager reads
_FIELD = re.compile(r"^([0-9]+)(c|g|gb)$")
_ATTR = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)*$")
_DEVICE_ID = re.compile(r"^0[xX][0-9a-fA-F]{1,8}$|^[0-9]+$")


@dataclass(frozen=True, slots=True)
class MigProfileSpec:
    """A parsed profile string: `[<C>c.]<G>g.<GB>gb[(+|-)attr[,attr]]`."""

    c: int
    g: int
    gb: int
    attrs: tuple[str, ...]
    sign: str  # "+", "-" or ""

    @property
    def gi_name(self) -> str:
        """The GPU-instance profile (the compute-instance prefix dropped)."""
        suffix = f"{self.sign}{','.join(self.attrs)}" if self.attrs else ""
        return f"{self.g}g.{self.gb}gb{suffix}"


def parse_profile(text: str) -> MigProfileSpec:
    """Parse a MIG profile string as go-nvlib/mig-parted do; ValueError with their kind of reason."""
    if text == "":
        raise ValueError("empty MigProfile string")
    if "+" in text and "-" in text:
        raise ValueError("'+' and '-' attributes cannot both appear")
    sign = "+" if "+" in text else "-" if "-" in text else ""
    base, _, attr_text = text.partition(sign) if sign else (text, "", "")
    attrs: tuple[str, ...] = ()
    if sign:
        parts = attr_text.split(",")
        for a in parts:
            if a == "":
                raise ValueError("empty attribute in list")
            if a.strip() != a:
                raise ValueError("leading or trailing spaces in attribute")
            if a[0].isdigit():
                raise ValueError("attribute begins with a number")
            if not _ATTR.match(a):
                raise ValueError("non alpha-numeric character or digit in attribute")
        if len(set(parts)) != len(parts):
            raise ValueError("non unique attribute in list")
        attrs = tuple(parts)
    fields = base.split(".")
    if len(fields) not in (2, 3):
        raise ValueError("parsed wrong number of fields, expected 2 or 3")
    want = ("c", "g", "gb") if len(fields) == 3 else ("g", "gb")
    values: list[int] = []
    for part, unit in zip(fields, want, strict=True):
        match = _FIELD.match(part)
        if match is None or match.group(2) != unit:
            raise ValueError(f"malformed '%d{unit}' field {part!r}")
        values.append(int(match.group(1)))
    c, g, gb = values if len(values) == 3 else [values[0], *values]
    if c not in (1, 2, 3, 4, 6, 7, 8) or g not in (1, 2, 3, 4, 6, 7, 8):
        raise ValueError(f"unknown instance slice size in {text!r}")
    if c > g:
        raise ValueError(f"compute instance of {c} slices in a GPU instance of {g}")
    return MigProfileSpec(c, g, gb, attrs, sign)


@dataclass(frozen=True, slots=True)
class MigConfigEntry:
    devices: tuple[int, ...] | None  # None = all
    mig_enabled: bool
    mig_devices: dict[str, int]
    device_filter: tuple[str, ...]  # "0xDDDDVVVV" strings as written; empty = every device
    path: tuple[str | int, ...]

    def matches(self, index: int, model: GpuModel) -> bool:
        if self.devices is not None and index not in self.devices:
            return False
        if not self.device_filter:
            return True
        ids = {int(pci_filter_id(p), 16) for p in model.pci_device_ids}
        return any(_filter_value(f) in ids for f in self.device_filter)


def _filter_value(text: str) -> int:
    return int(text.split(":", 1)[0], 0)


@dataclass(frozen=True, slots=True)
class MigPartedSpec:
    configs: dict[str, list[MigConfigEntry]]
    file: str
    loaded: LoadedYaml | None = None

    def error(self, message: str, path: tuple[str | int, ...], hint: str | None = None) -> InputError:
        diagnostic = Diagnostic(message, path, "schema", self.file, hint=hint)
        if self.loaded is not None:
            diagnostic = self.loaded.locate(diagnostic)
        return InputError([diagnostic])


_Path = tuple[str | int, ...]
_Report = Callable[[str, _Path], None]  # records one diagnostic: the message and where


def _entry(raw: Any, path: _Path, errors: list[Diagnostic]) -> MigConfigEntry | None:
    def bad(message: str, where: _Path = path) -> None:
        errors.append(Diagnostic(message, where))

    if not isinstance(raw, dict):
        bad("an entry must be a mapping")
        return None
    for key in raw:
        if key not in ("device-filter", "devices", "mig-enabled", "mig-devices"):
            bad(f"unexpected field: {key}", (*path, str(key)))
    for required in ("devices", "mig-enabled"):
        if required not in raw:
            bad(f"missing required field: {required}")
    if any(e.path[: len(path)] == path for e in errors):
        return None
    filters = _device_filters(raw["device-filter"], (*path, "device-filter"), bad) if "device-filter" in raw else ()
    devices = _devices(raw["devices"], (*path, "devices"), bad)
    enabled = raw["mig-enabled"]
    if not isinstance(enabled, bool):
        bad("mig-enabled must be true or false", (*path, "mig-enabled"))
        return None
    mig_devices: dict[str, int] = {}
    if "mig-devices" in raw:
        value = raw["mig-devices"]
        if value is not None and not isinstance(value, dict):
            bad("mig-devices must be a mapping of profile to count", (*path, "mig-devices"))
            return None
        mig_devices = _mig_devices(value or {}, (*path, "mig-devices"), bad)
        if enabled is False and value:
            bad("MIG devices included when 'mig-enabled' is false", (*path, "mig-devices"))
    elif enabled:
        bad("missing required field 'mig-devices' when 'mig-enabled' is true")
    return MigConfigEntry(devices, enabled, mig_devices, filters, path)


def _device_filters(value: Any, where: _Path, bad: _Report) -> tuple[str, ...]:
    """`device-filter`: one PCI device id or a list of them (mig-parted's DeviceID syntax)."""
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
        bad("device-filter must be a string or a list of strings", where)
        return ()
    for v in listed:
        if not _DEVICE_ID.match(v.split(":", 1)[0]) or v.count(":") > 1:
            bad(f"unable to create DeviceID from string {v!r}", where)
    return tuple(v for v in listed if v)


def _devices(value: Any, where: _Path, bad: _Report) -> tuple[int, ...] | None:
    """`devices`: "all" (None) or a list of GPU indices."""
    if isinstance(value, str):
        if value != "all":
            bad(f"invalid string input for 'devices': {value}", where)
        return None
    if isinstance(value, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in value):
        return tuple(value)
    bad("devices must be 'all' or a list of GPU indices", where)
    return None


def _mig_devices(value: dict[Any, Any], where: _Path, bad: _Report) -> dict[str, int]:
    """`mig-devices`: profile → count; a bad profile or count is reported and left out."""
    out: dict[str, int] = {}
    for profile, count in value.items():
        at = (*where, str(profile))
        try:
            parse_profile(str(profile))
        except ValueError as exc:
            bad(f"error validating values in 'mig-devices' field: invalid format for '{profile}': {exc}", at)
            continue
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            bad(f"invalid count for '{profile}': {count!r}", at)
            continue
        out[str(profile)] = count
    return out


def _validate(loaded: LoadedYaml) -> MigPartedSpec:
    data = loaded.data
    errors: list[Diagnostic] = []
    if "version" not in data and data:
        errors.append(Diagnostic("unable to parse with missing 'version' field", ()))
    elif data.get("version") != "v1":
        errors.append(Diagnostic(f"unknown version: {data.get('version')}", ("version",)))
    for key in data:
        if key not in ("version", "mig-configs"):
            errors.append(Diagnostic(f"unexpected field: {key}", (str(key),)))
    configs: dict[str, list[MigConfigEntry]] = {}
    raw_configs = data.get("mig-configs")
    if "mig-configs" in data:
        if not isinstance(raw_configs, dict) or not raw_configs:
            errors.append(Diagnostic("at least one entry in 'mig-configs' is required", ("mig-configs",)))
        else:
            for name, entries in raw_configs.items():
                path: tuple[str | int, ...] = ("mig-configs", str(name))
                if not isinstance(entries, list) or not entries:
                    errors.append(Diagnostic(f"at least one entry in '{name}' is required", path))
                    continue
                parsed = [_entry(e, (*path, i), errors) for i, e in enumerate(entries)]
                configs[str(name)] = [e for e in parsed if e is not None]
    if errors:
        raise InputError([loaded.locate(e) for e in errors])
    return MigPartedSpec(configs, loaded.file, loaded)


def _config_of(loaded: LoadedYaml) -> LoadedYaml:
    """The mig-parted config of a file: the file itself, or — for the GPU Operator's ConfigMap form, the one
    `export_mig_parted_configmap` writes — its `data.config.yaml`, the only key mig-manager reads (the operator
    mounts a custom ConfigMap at /mig-parted-config and sets CONFIG_FILE=/mig-parted-config/config.yaml:
    NVIDIA/gpu-operator controllers/object_controls.go, TransformMigManager)."""
    if loaded.data.get("kind") != "ConfigMap":
        return loaded
    data = loaded.data.get("data")
    text = data.get(MIG_MANAGER_KEY) if isinstance(data, dict) else None
    if not isinstance(text, str):
        raise InputError([loaded.locate(Diagnostic(
            f"a mig-parted ConfigMap holds its config as a string under data.{MIG_MANAGER_KEY} "
            "(the file the GPU Operator's mig-manager reads)",
            ("data", MIG_MANAGER_KEY) if isinstance(data, dict) and MIG_MANAGER_KEY in data else ("data",),
        ))])
    return load_yaml(text, f"{loaded.file}:data.{MIG_MANAGER_KEY}")


def parse_mig_parted(text: str | bytes, file: str = "<mig-parted>") -> MigPartedSpec:
    """A mig-parted config, plain or as the GPU Operator's ConfigMap (`data.config.yaml`)."""
    return _validate(_config_of(load_yaml(text, file)))


def read_mig_parted(path: str | Path) -> MigPartedSpec:
    """A mig-parted config file, plain or as the GPU Operator's ConfigMap (`data.config.yaml`)."""
    return _validate(_config_of(load_yaml_file(path)))


# ------------------------------------------------------------------------------------------------ import


def entry_layout(
    spec: MigPartedSpec, entry: MigConfigEntry, model: GpuModel
) -> list[MigInstance] | None:
    """The placed MIG layout one entry gives a GPU of `model` (None: MIG disabled)."""
    if not entry.mig_enabled:
        return None
    profiles: list[str] = []
    cis: dict[str, list[list[str] | None]] = {}  # GI profile → the CI list of each of its GIs, in order
    for text, count in entry.mig_devices.items():
        parsed = parse_profile(text)
        name = parsed.gi_name
        if model.mig_profile(name) is None:
            raise spec.error(
                f"MIG profile {name!r} does not exist on {model.name}",
                (*entry.path, "mig-devices", text),
                hint="profiles: " + ", ".join(p.name for p in model.mig_profiles),
            )
        gi = model.mig_profile(name).name  # type: ignore[union-attr]
        profiles += [gi] * count
        # mig-parted creates one GI per count with one CI in it: `1c.3g.40gb` is a 3g GI holding a 1c CI
        ci = f"{parsed.c}c.{gi}" if parsed.c != parsed.g else None
        cis.setdefault(gi, []).extend([[ci] if ci else None] * count)
    instances = place_instances(model, profiles)
    if instances is None:
        wanted = ", ".join(f"{n} × {p}" for p, n in Counter(profiles).items())
        raise spec.error(f"{wanted} has no valid placement on {model.name}", (*entry.path, "mig-devices"))
    return [i.model_copy(update={"compute_instances": cis[i.profile].pop(0)}) for i in instances]


def _config_entries(spec: MigPartedSpec, config: str) -> list[MigConfigEntry]:
    entries = spec.configs.get(config)
    if entries is None:
        raise input_error(
            f"no mig-parted config named {config!r}",
            spec.file,
            path=("mig-configs",),
            hint="configs: " + ", ".join(sorted(spec.configs)),
        )
    return entries


def layouts_for_model(
    spec: MigPartedSpec, config: str, model: GpuModel, gpus: int = 1
) -> dict[int, list[MigInstance] | None]:
    """GPU index → layout (None: MIG off) for `gpus` GPUs of one model; GPUs no entry matches are absent."""
    entries = _config_entries(spec, config)
    out: dict[int, list[MigInstance] | None] = {}
    for index in range(gpus):
        matching = [e for e in entries if e.matches(index, model)]
        if matching:
            out[index] = entry_layout(spec, matching[-1], model)
    return out


def mig_parted_layouts(
    spec: MigPartedSpec, config: str, node: Node, warnings: list[str] | None = None
) -> dict[int, list[MigInstance] | None]:
    """GPU index → the layout `config` gives that GPU of `node` (None: MIG off); unmatched GPUs absent."""
    entries = _config_entries(spec, config)
    out: dict[int, list[MigInstance] | None] = {}
    for gpu in node.gpus:
        model = get_catalog().model(gpu.model)
        if model is None and gpu.not_in_catalog is not None:
            if warnings is not None:
                warnings.append(
                    f"{node.name} GPU {gpu.index}: {gpu.model!r} is not in the catalog; {config!r} is not "
                    "applied to it (MIG is refused on GPUs the catalog does not know)"
                )
            continue
        if model is None:
            raise input_error(f"{node.name} GPU {gpu.index}: unknown model {gpu.model!r}", spec.file)
        matching = [e for e in entries if e.matches(gpu.index, model)]
        if not matching:
            if warnings is not None:
                warnings.append(
                    f"{node.name} GPU {gpu.index}: no entry of {config!r} matches a {model.name}; "
                    "mig-parted leaves it as it is"
                )
            continue
        out[gpu.index] = entry_layout(spec, matching[-1], model)
    return out


def mig_parted_changes(
    spec: MigPartedSpec, config: str, node: Node, warnings: list[str] | None = None
) -> list[ch.SetMig | ch.SetMode]:
    """The change ops that give `node` the layouts of `config` (set-mig / set-mode full), for a plan."""
    changes: list[ch.SetMig | ch.SetMode] = []
    for index, layout in mig_parted_layouts(spec, config, node, warnings).items():
        gpu = node.gpu(index)
        if layout is None:
            if gpu is not None and gpu.mode == "mig":
                changes.append(ch.SetMode(op="set-mode", node=node.name, gpu=index, mode="full"))
        else:
            changes.append(ch.SetMig(op="set-mig", node=node.name, gpu=index, instances=layout))
    return changes


# ------------------------------------------------------------------------------------------------ export


def _device_key(node: Node, gpu_index: int, instance: MigInstance, warnings: list[str] | None) -> str:
    """The `mig-devices` key of one GI. mig-parted creates one GI per counted key, with one CI in it: a GI
    with its default CI is its profile, a GI holding exactly one narrower CI is that CI's `<C>c.<G>g.<GB>gb`
    name (a form mig-parted's parser takes, gpu-facts §2); a GI split into several CIs cannot be written —
    its GI is exported and the split is left to the node-side commands, with a warning."""
    cis = instance.compute_instances
    if not instance.split or not cis:
        return instance.profile
    if len(cis) == 1:
        return cis[0]
    if warnings is not None:  # applying the config would re-create the GI with one CI: the split would be lost
        warnings.append(ConsumerRefusal(COMPUTE_INSTANCES_CHECK, (
            f"{node.name} GPU {gpu_index}: mig-parted cannot express GPU instance {instance.profile}@"
            f"{instance.start} holding {len(cis)} compute instances ({', '.join(cis)}); exported the GPU "
            "instance alone — create its compute instances with the plan's nvidia-smi mig -cci lines"
        )))
    return instance.profile


def node_mig_config(node: Node, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """One node's mig-parted config: per GPU its device filter, `mig-enabled` and `mig-devices` (what
    `export_mig_parted` writes under `gpuadmin-<node>`, and the cluster executor under its own name)."""
    out: list[dict[str, Any]] = []
    for gpu in sorted(node.gpus, key=lambda g: g.index):
        model = get_catalog().model(gpu.model)
        entry: dict[str, Any] = {}
        if model is not None and model.pci_device_ids:
            entry["device-filter"] = [pci_filter_id(p) for p in model.pci_device_ids]
        elif gpu.not_in_catalog is not None and gpu.not_in_catalog.pci_device_id is not None:
            entry["device-filter"] = [pci_filter_id(gpu.not_in_catalog.pci_device_id)]
        entry["devices"] = [gpu.index]
        entry["mig-enabled"] = gpu.mode == "mig"
        if gpu.mode == "mig":
            counts = Counter(_device_key(node, gpu.index, i, warnings) for i in gpu.mig or ())
            entry["mig-devices"] = dict(sorted(counts.items(), key=_profile_order))
        out.append(entry)
    return out


def _profile_order(item: tuple[str, int]) -> tuple[int, str]:
    try:
        return (-parse_profile(item[0]).g, item[0])
    except ValueError:
        return (0, item[0])


def export_mig_parted(nodes: list[Node], warnings: list[str] | None = None) -> dict[str, Any]:
    """A mig-parted `version: v1` config: `gpuadmin-<node>` for every node with GPUs, and `all-disabled`.
    What mig-parted cannot express (a GI split into several compute instances) is a `ConsumerRefusal` in
    `warnings` (`export.mig-parted.compute-instances`): applied, the config would undo the split."""
    configs: dict[str, Any] = {ALL_DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for node in sorted(nodes, key=lambda n: n.name):
        if node.gpus:
            configs[mig_config_name(node.name)] = node_mig_config(node, warnings)
    return {"version": "v1", "mig-configs": configs}


def mig_config_label(node: Node) -> str:
    """The `nvidia.com/mig.config` value of a node: its own config with MIG, else `all-disabled`."""
    return mig_config_name(node.name) if any(g.mode == "mig" for g in node.gpus) else ALL_DISABLED


def export_mig_parted_configmap(
    nodes: list[Node], name: str = "gpuadmin-mig-parted-config", namespace: str = "gpu-operator"
) -> dict[str, Any]:
    """The config as the ConfigMap the GPU Operator's mig-manager reads (`migManager.config.name`)."""
    import yaml

    text = yaml.safe_dump(export_mig_parted(nodes), sort_keys=False, default_flow_style=None)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {MIG_MANAGER_KEY: text},
    }
