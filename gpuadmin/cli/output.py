"""Output formats of `get` and friends: table, wide, json, yaml, name. Data to stdout only."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

import yaml

from gpuadmin.render.text import safe


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return safe(value)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str], out: TextIO | None = None) -> None:
    """Plain aligned columns (no markup, no colour: a name is printed exactly, escapes made visible)."""
    out = out or sys.stdout
    widths = [len(c) for c in columns]
    for r in rows:  # two passes instead of holding every cell: 100,000 rows stay cheap
        for i, c in enumerate(columns):
            widths[i] = max(widths[i], len(_cell(r.get(c))))
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    for r in rows:
        out.write("  ".join(_cell(r.get(c)).ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")


def as_json(data: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n")


def json_list(head: dict[str, Any], key: str, items: Iterable[Any], out: TextIO | None = None) -> None:
    """`as_json({**head, key: list(items)})`, byte for byte, written item by item: a listing of 100,000 jobs
    never holds all its items, nor all its text, at once."""
    out = out or sys.stdout
    out.write("{\n")
    for name, value in head.items():
        out.write(f"  {json.dumps(name)}: " + _indent(json.dumps(value, indent=2, ensure_ascii=False), 2) + ",\n")
    out.write(f"  {json.dumps(key)}: [")
    first = True
    for item in items:
        out.write(("\n" if first else ",\n") + _indent(json.dumps(item, indent=2, ensure_ascii=False), 4, True))
        first = False
    out.write("]\n}\n" if first else "\n  ]\n}\n")


def _indent(text: str, spaces: int, first: bool = False) -> str:
    pad = " " * spaces
    lines = text.split("\n")
    return "\n".join(([pad + lines[0]] if first else [lines[0]]) + [pad + line for line in lines[1:]])


def yaml_list(head: dict[str, Any], key: str, items: Iterable[Any], out: TextIO | None = None) -> None:
    """`as_yaml({**head, key: list(items)})`, written item by item (see `json_list`)."""
    out = out or sys.stdout
    out.write(yaml.dump(head, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True,
                        default_flow_style=False))
    first = True
    for item in items:
        if first:
            out.write(f"{key}:\n")
            first = False
        out.write(yaml.dump([item], Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True,
                            default_flow_style=False))
    if first:
        out.write(f"{key}: []\n")


class _BlockDumper(yaml.CSafeDumper):
    """Multi-line strings as block scalars (`|-`), as NVIDIA's own ConfigMap examples write a config."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_BlockDumper.add_representer(str, _str)


def as_yaml(data: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True,
                                        default_flow_style=False))


def yaml_documents(items: list[Any], out: TextIO | None = None) -> None:
    (out or sys.stdout).write(yaml.dump_all(items, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True,
                                            default_flow_style=False))


def names(kind: str, values: Iterable[str], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    for value in values:
        out.write(f"{kind}/{safe(value)}\n")
