"""Load the catalog's YAML data files (gpuadmin/catalog/data/*.yaml) into the record types.

The files are parsed once per process (`get_catalog` is cached) with libyaml's C safe loader and validated by
the strict pydantic models of `gpuadmin.catalog.schema`. Every problem of a file is reported in one
`CatalogError`, each line naming the file, the line and column, and the entry and field
(`mig.yaml:31:64: tables.a100-40gb.profiles[4:3g.20gb].starts: placement 6:4 runs past the 8 memory slices`).
The lines are looked up only when there is an error: the file is composed again into YAML nodes then.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gpuadmin.catalog.catalog import Catalog
from gpuadmin.catalog.schema import GpusFile, MigFile, MigTableRecord, PlatformsFile, VgpuFile

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

DATA_FILES = ("gpus.yaml", "mig.yaml", "vgpu.yaml", "platforms.yaml")

FileModel = TypeVar("FileModel", bound=BaseModel)


class CatalogError(ValueError):
    """A catalog data file is malformed; each line of the message names the file, line, entry and field."""


class _DataFile:
    """One data file: its name, text and parsed data (a mapping), for validating it and locating errors."""

    __slots__ = ("data", "name", "text")

    def __init__(self, base: Traversable, name: str) -> None:
        self.name = name
        try:
            self.text = base.joinpath(name).read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise CatalogError(f"{name}: catalog data file missing ({base})") from exc
        try:
            self.data: object = yaml.load(self.text, Loader=_Loader)  # the C *safe* loader
        except yaml.YAMLError as exc:
            raise CatalogError(f"{name}: not valid YAML: {exc}") from exc
        if not isinstance(self.data, dict):
            raise CatalogError(f"{name}:1:1: expected a mapping with 'version: 1', got {type(self.data).__name__}")

    def validate(self, model: type[FileModel], context: Mapping[str, object] | None = None) -> FileModel:
        try:
            return model.model_validate(self.data, strict=True, context=context)
        except ValidationError as exc:
            raise CatalogError("\n".join(self._located(exc))) from None

    def _located(self, exc: ValidationError) -> list[str]:
        """One line per problem, `file:line:column: entry.field: message`. A value that entries take from one
        YAML anchor (`<<: *anchor`) is wrong in all of them: it is reported once, where the anchor writes it."""
        root = yaml.compose(self.text, Loader=_Loader)
        assert root is not None  # the text was read as a mapping
        found: dict[tuple[int, int, str], list[str]] = {}
        for error in exc.errors(include_url=False):
            loc: tuple[str | int, ...] = tuple(error["loc"])
            node, key_node = _node_at(root, loc)
            at = key_node if key_node is not None and error["type"] == "extra_forbidden" else node
            found.setdefault((at.start_mark.line, at.start_mark.column, _message(error)), []).append(
                _labelled(self.data, loc))
        lines = []
        for (line, column, message), paths in found.items():
            shared = f" (and {len(paths) - 1} more entries that take this value from the same YAML anchor)"
            lines.append(f"{self.name}:{line + 1}:{column + 1}: {paths[0]}: {message}{shared if paths[1:] else ''}")
        return lines


def _node_at(root: Node, loc: tuple[str | int, ...]) -> tuple[Node, Node | None]:
    """The node at `loc`, or the deepest one along it that the file has (a missing key: its mapping), and the
    key node of the last step. A key a row takes from a YAML merge (`<<: *anchor`) is found in the anchor."""
    node, key_node = root, None
    for part in loc:
        child: tuple[Node, Node | None] | None = None
        if isinstance(node, MappingNode):
            child = _mapping_child(node, str(part))
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part], None
        if child is None:
            return node, None
        node, key_node = child
    return node, key_node


def _mapping_child(node: MappingNode, key: str) -> tuple[Node, Node] | None:
    merged: list[MappingNode] = []
    for k, v in node.value:
        if isinstance(k, ScalarNode) and k.value == key and k.tag != "tag:yaml.org,2002:merge":
            return v, k
        if isinstance(k, ScalarNode) and k.tag == "tag:yaml.org,2002:merge":
            merged += [v] if isinstance(v, MappingNode) else [m for m in v.value if isinstance(m, MappingNode)]
    for source in merged:
        found = _mapping_child(source, key)
        if found is not None:
            return found
    return None


def _labelled(data: object, loc: tuple[str | int, ...]) -> str:
    """The dotted path of `loc`, list entries labelled with their name: `models[3:A30].memory.gb`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            item = data[part] if isinstance(data, list) and 0 <= part < len(data) else None
            name = item.get("name") if isinstance(item, dict) else None
            out += f"[{part}]" if name is None else f"[{part}:{name}]"
            data = item
        else:
            out += f".{part}" if out else part
            data = data.get(part) if isinstance(data, dict) else None
    return out or "<root>"


_TYPE_NAMES = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}
_PATTERN_MEANINGS = {
    r"\S": "must not be empty",
    r"^0x[0-9A-F]{4}$": "must be a PCI device id written like '0x20B5'",
    r"^[^-a-z]*-$": "must be upper case and end in its only '-', like 'A100X-'",
}


def _message(error: Any) -> str:
    """pydantic's error in the catalog's words: what the field must be, and what it was."""
    kind, value = error["type"], error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "missing key"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}, got {value!r}"
    if kind in ("greater_than_equal", "too_short"):
        least = ctx.get("ge", ctx.get("min_length"))
        return f"must be ≥ {least}, got {value!r}" if kind == "greater_than_equal" else \
            f"must have at least {least} item(s)"
    if kind == "literal_error":
        return f"must be {ctx.get('expected')}, got {value!r}"
    if kind == "string_pattern_mismatch":
        return f"{_PATTERN_MEANINGS.get(str(ctx.get('pattern')), 'is malformed')}, got {value!r}"
    if kind == "value_error":
        return f"{ctx.get('error')}, got {value!r}"
    return str(error["msg"])


def default_data_dir() -> Traversable:
    """The data files shipped in the package (gpuadmin/catalog/data)."""
    return resources.files("gpuadmin.catalog").joinpath("data")


def load_catalog(data_dir: Traversable | Path | None = None) -> Catalog:
    """Parse and validate the four data files (uncached; `get_catalog` is the cached entry point).

    `data_dir` defaults to the package's own data; tests pass a copy to check that broken files are refused.
    """
    base: Traversable = default_data_dir() if data_dir is None else data_dir
    mig = _DataFile(base, "mig.yaml").validate(MigFile)
    tables = {name: MigTableRecord(table) for name, table in mig.tables.items()}
    vgpu = _DataFile(base, "vgpu.yaml").validate(VgpuFile)
    gpus = _DataFile(base, "gpus.yaml").validate(GpusFile, {"mig_tables": tables, "menus": vgpu.menus})
    models = {m.name: m.record(tables, vgpu.menus) for m in gpus.models}
    platforms = _DataFile(base, "platforms.yaml").validate(PlatformsFile, {"models": models})
    return Catalog.build(
        models,
        {s.name: s.record() for s in platforms.shapes},
        {b.name: b.record() for b in platforms.boards},
        {s.name: s.record() for s in vgpu.series},
        platforms.vsphere.record(),
    )


@functools.cache
def get_catalog() -> Catalog:
    """The catalog, parsed once per process."""
    return load_catalog()
