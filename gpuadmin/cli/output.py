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
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    out.write("\n".join(lines) + "\n")


def as_json(data: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n")


def as_yaml(data: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True,
                        default_flow_style=False))


def names(kind: str, values: Iterable[str], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    for value in values:
        out.write(f"{kind}/{safe(value)}\n")
