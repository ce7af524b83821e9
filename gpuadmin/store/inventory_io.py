"""Inventory files (DESIGN §3): read with every error located at file:line:column, and written back.

Reading is three stages, each reporting *all* of its problems in one `InputError`:

1. YAML (`yamlsafe.load_yaml`): syntax, encoding, duplicate keys, YAML 1.1 surprises, alias bombs. If this
   stage fails, the schema is not run on the broken data.
2. Schema: `Inventory.model_validate` once at the root (pydantic strict, unknown keys forbidden). Each
   pydantic error becomes a human message ("unknown field 'gpu'", "missing required field 'model'",
   "expected one of full, mig, ..., got 'MIG'", "'yes' is not a boolean: write true or false") located
   through the node tree.
3. References (`model.references.check_references`): dangling names, duplicates, unknown catalog models,
   each located by its path.

The success path does no per-node Python work beyond pydantic's own; marks are looked up only for errors.
`schema_diagnostics` is generic (any pydantic model over a `LoadedYaml`), so change files reuse it.
"""

from __future__ import annotations

import difflib
import math
import re
import types
import typing
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import ScalarNode

from gpuadmin.model.diagnostics import Diagnostic, InputError, PathPart
from gpuadmin.model.inventory import Inventory
from gpuadmin.model.references import check_references
from gpuadmin.store import yamlsafe
from gpuadmin.store.yamlsafe import YAML11_BOOLEANS, LoadedYaml, load_yaml, load_yaml_file

__all__ = [
    "dump_inventory",
    "inventory_data",
    "load_inventory",
    "parse_inventory",
    "schema_diagnostics",
    "validate_inventory",
]


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory file; `InputError` carries every diagnostic, sorted by line."""
    return validate_inventory(load_yaml_file(path))


_M = typing.TypeVar("_M", bound=BaseModel)


def load_model_file(path: str | Path, model: type[_M]) -> _M:
    """Any settings file read like an inventory: the safe loader, then `model`, every error located."""
    loaded = load_yaml_file(path)
    try:
        return model.model_validate(loaded.data)
    except ValidationError as exc:
        raise InputError(schema_diagnostics(exc, loaded, model)) from None


def parse_inventory(text: str | bytes, file: str = "<inventory>") -> Inventory:
    """Validate an inventory given as text (or bytes); `file` names it in diagnostics."""
    return validate_inventory(load_yaml(text, file))


def validate_inventory(loaded: LoadedYaml) -> Inventory:
    """Schema and reference checks of parsed YAML; `InputError` with every diagnostic, sorted by line."""
    try:
        inventory = Inventory.model_validate(loaded.data)
    except ValidationError as exc:
        raise InputError(schema_diagnostics(exc, loaded, Inventory)) from None
    problems = check_references(inventory)
    if problems:
        raise InputError(_sorted(loaded.locate(d) for d in problems))
    return inventory


# --- pydantic errors -> diagnostics ------------------------------------------------------------

_TYPE_NAMES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "a boolean (true or false)",
    "bool_parsing": "a boolean (true or false)",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "none_required": "null",
}


def _sorted(diagnostics: Iterator[Diagnostic] | list[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=lambda d: (d.line or 0, d.column or 0))


def _strip(tp: Any) -> Any:
    """`Annotated[X, ...]` -> X; `X | None` -> X."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp = get_args(tp)[0]
        elif origin is Union or origin is types.UnionType:
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _union_member(tp: Any, tag: PathPart) -> Any:
    """The member of a (discriminated) union whose tag field is the Literal `tag`, if any."""
    for member in get_args(tp):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for info in member.model_fields.values():
                literal = _strip(info.annotation)
                if get_origin(literal) is Literal and tag in get_args(literal):
                    return member
    return None


def _annotation_at(model: type[BaseModel], loc: tuple[PathPart, ...]) -> Any:
    """The declared type at pydantic's `loc` below `model` (None where it leaves the declared shape).

    A discriminated union's tag in `loc` (`changes.0.set-mig.node`) selects the union member.
    """
    tp: Any = model
    for part in loc:
        tp = _strip(tp)
        origin = get_origin(tp)
        if origin is Union or origin is types.UnionType:
            member = _union_member(tp, part)
            if member is not None:
                tp = member
                continue
            return None
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            info = tp.model_fields.get(str(part))
            if info is None:
                return None
            tp = info.annotation
        elif origin is list:
            tp = get_args(tp)[0]
        elif origin is dict:
            tp = get_args(tp)[1]
        else:
            return None
    return _strip(tp)


def _file_loc(loc: tuple[PathPart, ...], data: Any, union_tags: Collection[str]) -> tuple[PathPart, ...]:
    """pydantic's `loc` without the union tags it inserts (they are not keys of the file)."""
    if not union_tags:
        return loc
    out: list[PathPart] = []
    for part in loc:
        if isinstance(part, str) and part in union_tags and not (isinstance(data, dict) and part in data):
            continue
        out.append(part)
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            data = None
    return tuple(out)


def _fields_at(model: type[BaseModel], loc: tuple[PathPart, ...]) -> list[str]:
    tp = _annotation_at(model, loc)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    return []


def _source(loaded: LoadedYaml, loc: tuple[PathPart, ...], at_key: bool) -> ScalarNode | None:
    """The scalar written at `loc` (its key with `at_key`), for quoting the file's own spelling."""
    node, covered, key_node = loaded.node_at(loc)
    if at_key:
        node = key_node  # type: ignore[assignment]
    return node if covered == len(loc) and isinstance(node, ScalarNode) else None


def _describe(value: Any, node: ScalarNode | None) -> str:
    """What was written, in the file's own spelling where there is one."""
    if isinstance(value, bool):
        return f"the boolean {node.value if node is not None else str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {node.value if node is not None else value}"
    if isinstance(value, float):
        return f"the number {node.value if node is not None else value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None:
        return "null (an empty value)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return repr(value)  # pragma: no cover - YAML yields nothing else


def _literal_values(model: type[BaseModel], loc: tuple[PathPart, ...], ctx: dict[str, Any]) -> list[Any]:
    tp = _annotation_at(model, loc)
    if get_origin(tp) is Literal:
        return list(get_args(tp))
    expected = str(ctx.get("expected", ""))
    return [m.group(1) if m.group(1) is not None else int(m.group(2))
            for m in re.finditer(r"'((?:[^'\\]|\\.)*)'|(-?\d+)", expected)]


def _show(value: Any) -> str:
    return str(value) if not isinstance(value, str) else value


_Message = tuple[str, str | None]  # the message, and a hint or None

_BOUNDS = {"greater_than_equal": ("ge", "at least"), "greater_than": ("gt", "greater than"),
           "less_than_equal": ("le", "at most"), "less_than": ("lt", "less than")}
_SIZES = {"string_too_short": ("min_length", "must be at least {} characters long"),
          "string_too_long": ("max_length", "must be at most {} characters long"),
          "too_short": ("min_length", "must have at least {} items"),
          "too_long": ("max_length", "must have at most {} items")}


def _message(error: Any, raw: tuple[PathPart, ...], loc: tuple[PathPart, ...], loaded: LoadedYaml,
             model: type[BaseModel], at_key: bool) -> _Message:
    """A message and hint for one pydantic error; `raw` is pydantic's loc, `loc` the file's path."""
    kind: str = error["type"]
    value = error.get("input")
    ctx: dict[str, Any] = error.get("ctx") or {}
    node = _source(loaded, loc, at_key)
    got = _describe(value, node)
    if kind == "extra_forbidden":
        return _unknown_field_message(str(loc[-1]) if loc else "?", _fields_at(model, raw[:-1]))
    if kind == "missing":
        return f"missing required field {_show(loc[-1]) if loc else '?'!r}", None
    if kind == "literal_error":
        return _literal_message(value, got, _literal_values(model, raw, ctx))
    if kind in ("bool_type", "bool_parsing") or kind in _TYPE_NAMES:
        return _type_message(kind, value, got, node)
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        bound = ctx.get(key)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"must be {words} {bound}, got {_show(node.value if node is not None else value)}", None
    if kind in _SIZES:
        return _size_message(kind, ctx, value), None
    if kind == "string_pattern_mismatch":
        return f"{value!r} does not match the expected form {ctx.get('pattern')}", None
    if kind in ("value_error", "assertion_error"):
        msg = str(error.get("msg", ""))
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        return msg, None
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return _union_tag_message(kind, ctx)
    if kind == "finite_number":
        return f"must be a finite number, got {got}", None
    return str(error.get("msg", kind)), None


def _unknown_field_message(name: str, allowed: list[str]) -> _Message:
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    if close:
        return f"unknown field {name!r}", f"did you mean {close[0]!r}?"
    return f"unknown field {name!r}", ("allowed here: " + ", ".join(allowed)) if allowed else None


def _literal_message(value: Any, got: str, values: list[Any]) -> _Message:
    """One of a fixed set of values was expected; the hint names the likely slip (quotes, case, a typo)."""
    shown = ", ".join(_show(v) for v in values)
    got = repr(value) if isinstance(value, str) else got
    text = f"expected one of {shown}, got {got}" if len(values) > 1 else f"expected {shown}, got {got}"
    if not isinstance(value, str):
        return text, None
    if any(str(v) == value and not isinstance(v, str) for v in values):
        return text, "write it without quotes"
    if values:
        by_lower = {str(v).lower(): v for v in values}
        if value.lower() in by_lower:
            return text, f"values are case-sensitive: write {_show(by_lower[value.lower()])}"
        close = difflib.get_close_matches(value, [str(v) for v in values], n=1, cutoff=0.6)
        if close:
            return text, f"did you mean {close[0]}?"
    return text, None


def _type_message(kind: str, value: Any, got: str, node: ScalarNode | None) -> _Message:
    """A value of the wrong type; the hint says how to write it when the intent is plain."""
    if kind in ("bool_type", "bool_parsing"):
        if isinstance(value, str) and value.lower() in YAML11_BOOLEANS:
            return f"{value!r} is not a boolean: write true or false", None
        return f"expected a boolean (true or false), got {got}", None
    text = f"expected {_TYPE_NAMES[kind]}, got {got}"
    if kind == "string_type" and isinstance(value, int | float | bool) and node is not None:
        return text, f'quote it ("{node.value}") if it is meant as text'
    if kind in ("int_type", "float_type") and isinstance(value, str) and _looks_numeric(value):
        return text, "write the number without quotes"
    if kind == "int_type" and isinstance(value, float) and not isinstance(value, bool):
        return text, "write a whole number" if math.isfinite(value) else None
    return text, None


def _size_message(kind: str, ctx: dict[str, Any], value: Any) -> str:
    key, template = _SIZES[kind]
    if kind == "string_too_short" and ctx.get(key) == 1:
        return "must not be empty"
    text = template.format(ctx.get(key))
    return f"{text} (it has {len(str(value))})" if kind == "string_too_long" else text


def _union_tag_message(kind: str, ctx: dict[str, Any]) -> _Message:
    discriminator = str(ctx.get("discriminator", "")).strip("'")
    if kind == "union_tag_not_found":
        return f"missing required field {discriminator!r}", None
    tags = [t for t in re.findall(r"'((?:[^'\\]|\\.)*)'", str(ctx.get("expected_tags", "")))]
    tag = ctx.get("tag")
    close = difflib.get_close_matches(str(tag), tags, n=1, cutoff=0.6)
    return (f"unknown {discriminator} {tag!r}: expected one of {', '.join(tags)}",
            f"did you mean {close[0]}?" if close else None)


def _looks_numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def schema_diagnostics(exc: ValidationError, loaded: LoadedYaml, model: type[BaseModel], *,
                       union_tags: Collection[str] = ()) -> list[Diagnostic]:
    """Every error of a pydantic validation of `loaded.data` against `model`, located and sorted by line.

    `union_tags`: the tag values of discriminated unions in `model` (e.g. change `op`s); pydantic inserts
    the tag into error locations, and they are dropped before the location is looked up in the file.
    """
    out: list[Diagnostic] = []
    for error in exc.errors(include_url=False):
        raw: tuple[PathPart, ...] = tuple(error["loc"])
        at_key = error["type"] == "extra_forbidden"
        if raw and raw[-1] == "[key]":  # a dict key of the wrong type
            raw, at_key = raw[:-1], True
        loc = _file_loc(raw, loaded.data, union_tags)
        message, hint = _message(error, raw, loc, loaded, model, at_key)
        where = loc
        if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
            discriminator = str((error.get("ctx") or {}).get("discriminator", "")).strip("'")
            if error["type"] == "union_tag_invalid" and discriminator:
                where = (*loc, discriminator)  # point at the bad tag itself
        diagnostic = Diagnostic(message, loc, "schema", hint=hint)
        line, column = loaded.mark(where, at_key=at_key)
        out.append(diagnostic.located(loaded.file, line, column))
    return _sorted(out)


# --- writing ------------------------------------------------------------

_WIDTH = 110
_PLAIN_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/+@]*")
_RESERVED = frozenset({"yes", "no", "on", "off", "y", "n", "true", "false", "null", "~"})
_STR_TAG = "tag:yaml.org,2002:str"


_YAML11 = yaml.resolver.Resolver()  # PyYAML's own (YAML 1.1) resolver: what other readers would make of it


def _plain_ok(text: str) -> bool:
    """A string that reads back as the same string here *and* under YAML 1.1 readers, without quotes."""
    if not _PLAIN_RE.fullmatch(text) or text.lower() in _RESERVED:
        return False
    return (yamlsafe.resolve_plain(text) == _STR_TAG
            and _YAML11.resolve(ScalarNode, text, (True, False)) == _STR_TAG)  # type: ignore[no-untyped-call]


def _quote(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable() and ch not in "\u2028\u2029\u0085\ufeff":
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                       else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):  # the schema refuses it on reading: an inventory that would not load back
            raise ValueError(f"{value!r} is not finite: an inventory holds finite numbers only")
        return repr(value)
    text = str(value)
    return text if _plain_ok(text) else _quote(text)


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_scalar(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def _emit(value: Any, indent: int, lines: list[str], prefix: str, *, block: bool = False) -> None:
    """Write `value` after `prefix` (`key:` whose key starts at column `indent`): in flow style on that line
    if it fits (and `block` is not asked for), else in block style below it."""
    if not isinstance(value, dict | list) or not value:
        lines.append(f"{prefix} {_flow(value)}")
        return
    flow = _flow(value)
    if len(prefix) + 1 + len(flow) <= _WIDTH and not block:
        lines.append(f"{prefix} {flow}")
        return
    lines.append(prefix)
    if isinstance(value, list):
        for item in value:
            _emit_item(item, indent + 2, lines)
        return
    pad = " " * (indent + 2)
    for k, v in value.items():
        _emit(v, indent + 2, lines, f"{pad}{_scalar(k)}:")


def _emit_item(item: Any, indent: int, lines: list[str]) -> None:
    """A list item at `indent`: `- {flow}` if it fits, else `- key: ...` with the rest of the keys below."""
    pad = " " * indent
    if not isinstance(item, dict) or not item:
        _emit(item, indent, lines, f"{pad}-")
        return
    flow = _flow(item)
    if indent + 2 + len(flow) <= _WIDTH:
        lines.append(f"{pad}- {flow}")
        return
    first = True
    for k, v in item.items():
        lead = f"{pad}- " if first else f"{pad}  "
        _emit(v, indent + 2, lines, f"{lead}{_scalar(k)}:")
        first = False


def inventory_data(inventory: Inventory, *, mode: Literal["python", "json"] = "json") -> dict[str, Any]:
    """The inventory as plain data (what `export inventory -o json` prints, and what `dump_inventory` writes as
    YAML): fields in model order, defaults left out."""
    data = inventory.model_dump(mode=mode, exclude_defaults=True)
    data.setdefault("version", inventory.version)  # a Literal with no default is never excluded; be explicit
    return data


def dump_inventory(inventory: Inventory) -> str:
    """A deterministic YAML rendering: fields in model order, defaults left out, small mappings on one line.

    `parse_inventory(dump_inventory(inv)) == inv` for every valid inventory.
    """
    data = inventory_data(inventory, mode="python")
    lines: list[str] = []
    for key, value in data.items():
        # the top-level lists (queues, nodes, jobs) are always blocks: one item per line, easy to diff
        _emit(value, 0, lines, f"{_scalar(key)}:", block=isinstance(value, list))
    return "\n".join(lines) + "\n"
