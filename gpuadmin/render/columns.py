"""The typed column model of every listing: each column's kind is declared once, here, and every front end reads it.

As k9s declares a resource's header once (`render.HeaderColumn`: its alignment, whether it is wide-only, whether
it holds a time or a capacity), a `Column` says what its values are (`Kind`), and from that alone follow how
it sorts (`Column.sort_key`: AGE by its seconds, not as text), how it aligns (numbers to the right), and the
JSON type of its value in the output models (`gpuadmin.render.output_models`). Its `priority` says which
columns a narrow terminal gives up first, and `wide` that it shows only with `-o wide`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Kind(StrEnum):
    TEXT = "text"  # names, states, descriptions: by their text, any case
    NUMBER = "number"  # counts and amounts held as numbers: numerically
    DURATION = "duration"  # kubectl's AGE (`42s`, `7m`, `3h`, `12d`): by the time it spells
    QUANTITY = "quantity"  # an amount with its unit in the text (`4 GPU 80 GiB`, `2 GPUs x2 nodes`): by its number
    PLACEMENT = "placement"  # `node-2/0-7`, `node-10/1/3g.40gb@4`: by name, the numbers in it numerically


class Align(StrEnum):
    LEFT = "left"
    RIGHT = "right"


_NONE = (2, "")  # a value that is not there ("-", None) sorts after every value
_DURATION = re.compile(r"(\d+)([smhd])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_LEADING_NUMBER = re.compile(r"\s*(\d+(?:\.\d+)?)")
_DIGITS = re.compile(r"(\d+)")


def any_key(value: Any) -> tuple[int, Any]:
    """The key of a value of no declared kind: numbers before text, numerically; `None` and "-" last."""
    if value is None or value == "-":
        return _NONE
    if isinstance(value, bool):
        return (1, str(value))
    if isinstance(value, int | float):
        return (0, value)
    return (1, str(value).casefold())


def duration_key(value: Any) -> tuple[int, Any]:
    """`45s` < `10m` < `2h` < `1d` < `3d` (a duration of several units, `1d2h`, adds them up)."""
    parts = _DURATION.findall(str(value)) if value is not None else []
    if not parts:
        return any_key(value)
    return (0, sum(int(n) * _SECONDS[unit] for n, unit in parts))


def quantity_key(value: Any) -> tuple[int, Any]:
    """By the leading number, then the rest of the text (the unit): `1 GPU` < `2 GPUs` < `10 GiB`."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, (float(value), ""))
    match = _LEADING_NUMBER.match(str(value)) if value is not None else None
    if match is None:
        return any_key(value)
    return (0, (float(match.group(1)), str(value)[match.end():].casefold()))


def natural_key(value: Any) -> tuple[int, Any]:
    """Text with its digit runs compared as numbers: `node-2/0-7` < `node-10/0`."""
    if value is None or value == "-":
        return _NONE
    # split on digit runs: text at the even places and numbers at the odd ones, so any two keys compare
    return (1, tuple(int(p) if i % 2 else p.casefold() for i, p in enumerate(_DIGITS.split(str(value)))))


_SORT_KEYS: dict[Kind, Callable[[Any], tuple[int, Any]]] = {
    Kind.TEXT: any_key, Kind.NUMBER: any_key, Kind.DURATION: duration_key, Kind.QUANTITY: quantity_key,
    Kind.PLACEMENT: natural_key,
}
_JSON_TYPES: dict[Kind, Any] = {
    Kind.TEXT: str, Kind.NUMBER: int, Kind.DURATION: str, Kind.QUANTITY: str, Kind.PLACEMENT: str,
}


@dataclass(frozen=True)
class Column:
    """One column of a listing.

    `priority`: a narrow terminal truncates, then drops, the columns of the lowest priority first (among equal
    priorities the rightmost first); the first column always shows. `wide`: only in `-o wide`. `hidden`: in
    the data (JSON and YAML, selectors, the console) but in no CLI table. `json_type`: the type of its value
    in JSON output where the kind's default (a whole number, or text) is not it, e.g. `float | None`."""

    name: str
    kind: Kind = Kind.TEXT
    priority: int = 0
    wide: bool = False
    hidden: bool = False
    json_type: Any = None

    @property
    def align(self) -> Align:
        return Align.RIGHT if self.kind is Kind.NUMBER else Align.LEFT

    @property
    def sort_key(self) -> Callable[[Any], tuple[int, Any]]:
        return _SORT_KEYS[self.kind]

    @property
    def value_type(self) -> Any:
        return self.json_type if self.json_type is not None else _JSON_TYPES[self.kind]


def text(name: str, **flags: Any) -> Column:
    return Column(name, Kind.TEXT, **flags)


def number(name: str, json_type: Any = int, **flags: Any) -> Column:
    return Column(name, Kind.NUMBER, json_type=json_type, **flags)


def drop_order(columns: Sequence[Column]) -> list[int]:
    """The positions of `columns` in the order a narrow terminal gives them up: lowest priority first, the
    rightmost first among equals; the first column never (it is not in the list)."""
    return sorted(range(1, len(columns)), key=lambda i: (columns[i].priority, -i))


__all__ = ["Align", "Column", "Kind", "any_key", "drop_order", "duration_key", "natural_key", "number",
           "quantity_key", "text"]
