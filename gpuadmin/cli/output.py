"""Output formats of `get` and friends: table, wide, json, yaml, name. Data to stdout only.

Every format passes its text through `gpuadmin.render.text.safe`: a table cell or a name as a visible escape
(`\x1b`), a JSON or YAML document with that format's own escapes (`\u001b`, `\u202e`), so that it still reads
back to the exact names it holds. Diagnostics go to stderr through `TerminalSafeStream`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

import yaml

from gpuadmin.render.columns import Align, Column, drop_order
from gpuadmin.render.text import cell_text, needs_escaping, safe

MIN_WIDTH = 8  # a truncated column keeps at least this much (or its header)


def cells(text: str) -> int:
    """The terminal cells `text` takes: a CJK character or an emoji two, a combining mark none (wcwidth, as
    Harlequin measures); a character it cannot measure (a control: `safe` has escaped them all) counts one."""
    from wcwidth import wcswidth, wcwidth  # here: its tables take ~60 ms to import, which -o json never needs

    width = wcswidth(text)
    return width if width >= 0 else sum(w if (w := wcwidth(ch)) >= 0 else 1 for ch in text)


def fit(widths: list[int], columns: Sequence[Column], width: int) -> list[int]:
    """Column widths that fit `width`: the columns of the lowest priority (`Column.priority`, the rightmost
    first among equals) are truncated first, down to MIN_WIDTH or their header; then dropped (width 0) in the
    same order, the first column always kept."""
    widths = list(widths)
    order = drop_order(columns)

    def total() -> int:
        shown = [w for w in widths if w]
        return sum(shown) + 2 * (len(shown) - 1)

    for i in [*order, 0]:
        over = total() - width
        if over <= 0:
            return widths
        widths[i] = max(min(widths[i], max(cells(columns[i].name), MIN_WIDTH)), widths[i] - over)
    for i in order:
        if total() <= width:
            break
        widths[i] = 0
    return widths


def _clip(text: str, w: int) -> tuple[str, int]:
    """`text` in at most `w` cells, cut with `…` (a wide character that would straddle the edge goes too), and
    the cells it then takes."""
    used = cells(text)
    if used <= w:
        return text, used
    kept, used = [], 0
    for ch in text:
        if used + cells(ch) > w - 1:
            break
        kept.append(ch)
        used += cells(ch)
    return "".join(kept) + "…", used + 1


def table(rows: Sequence[dict[str, Any]], columns: Sequence[Column], out: TextIO | None = None,
          width: int | None = None) -> None:
    """Aligned columns (numbers to the right), measured in terminal cells; a name is printed exactly, escapes
    made visible. On a terminal (`width`), the lowest-priority columns are truncated with `…`, then dropped,
    so that no line wraps; status words are coloured when colour is on (the word is always there: never colour
    alone). Piped output is whole and plain.

    A cell of ASCII text is measured by its length, without a call to `cells`: `safe` has escaped every control,
    so each of its characters takes one cell (held equal to `cells` by tests/cli/test_columns.py); 100,000 rows
    of seven cells would otherwise cost a second of calls."""
    from gpuadmin.cli import style

    out = out or sys.stdout
    names = [c.name for c in columns]
    widths = [cells(c) for c in names]
    for r in rows:  # two passes instead of holding every cell: 100,000 rows stay cheap
        for i, c in enumerate(names):
            text = cell_text(r.get(c))
            widths[i] = max(widths[i], len(text) if text.isascii() else cells(text))
    if width is not None:
        widths = fit(widths, columns, width)
    paint = style.enabled()
    right = [c.align is Align.RIGHT for c in columns]

    def line(values: Iterable[str], colour: bool) -> str:
        parts = []
        for v, w, to_right in zip(values, widths, right, strict=True):
            if w:
                shown, used = (v, len(v)) if v.isascii() and len(v) <= w else _clip(v, w)
                pad = " " * (w - used)
                if colour:
                    shown = style.word(shown)
                parts.append(pad + shown if to_right else shown + pad)
        return "  ".join(parts).rstrip() + "\n"

    out.write(line(names, False))
    for r in rows:
        out.write(line((cell_text(r.get(c)) for c in names), paint))


def as_json(data: Any, out: TextIO | None = None) -> None:
    """JSON output is JSON: a non-finite number (`Infinity`, `NaN`: no JSON reader takes them) is refused
    with ValueError, never printed; the schemas keep every input number finite, so none reaches here. Text that
    could act on a terminal is escaped (`safe`), the document staying valid JSON."""
    text = json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False)
    (out or sys.stdout).write(safe(text, document=True) + "\n")


def json_list(head: dict[str, Any], key: str, items: Iterable[Any], out: TextIO | None = None) -> None:
    """`as_json({**head, key: list(items)})`, byte for byte, written item by item: a listing of 100,000 jobs
    never holds all its items, nor all its text, at once."""
    out = out or sys.stdout
    out.write("{\n")
    for name, value in head.items():
        out.write(f"  {json.dumps(name)}: {safe(_nested_json(value, '  '), document=True)},\n")
    out.write(f"  {json.dumps(key)}: [")
    first = True
    for item in items:
        out.write(("\n    " if first else ",\n    ") + safe(_nested_json(item, "    "), document=True))
        first = False
    out.write("]\n}\n" if first else "\n  ]\n}\n")


def _nested_json(value: Any, pad: str) -> str:
    """`value` as `as_json` writes it at depth `pad`: every line after the first indented by `pad` (a JSON
    string never holds a raw line break, so each one is the indent's)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    return text.replace("\n", "\n" + pad)


def yaml_list(head: dict[str, Any], key: str, items: Iterable[Any], out: TextIO | None = None) -> None:
    """`as_yaml({**head, key: list(items)})`, written item by item (see `json_list`)."""
    out = out or sys.stdout
    # A text that ends in kept line breaks (`|+`) leaves the document open: libyaml's dumper then ends the
    # document with "...", which one dump of the whole document writes once, at its very end (whatever
    # follows the text); so each part's closing "..." is held back and written once after the last.
    open_ended = False

    def write(data: Any) -> None:
        nonlocal open_ended
        text = _yaml_text(yaml.dump, data)
        if text.endswith("\n...\n"):
            open_ended = True
            text = text.removesuffix("...\n")
        out.write(text)

    write(head)
    first = True
    for item in items:
        if first:
            out.write(f"{key}:\n")
            first = False
        write([item])
    if first:
        out.write(f"{key}: []\n")
    if open_ended:
        out.write("...\n")


class _BlockDumper(yaml.CSafeDumper):
    """Multi-line strings as block scalars (`|-`), as NVIDIA's own ConfigMap examples write a config; text that
    holds a character a terminal would act on in a double-quoted scalar, the one style with escapes."""


def _str(dumper: _BlockDumper, value: str) -> yaml.Node:
    style = '"' if needs_escaping(value) else "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def _yaml_text(dump: Callable[..., str], data: Any) -> str:
    """YAML text with no raw terminal escape: libyaml escapes the C0 and C1 controls of a double-quoted scalar
    but writes the bidi controls as they are (they are printable to YAML); `safe` escapes those."""
    text = dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return safe(text, document=True)


def as_yaml(data: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(_yaml_text(yaml.dump, data))


def yaml_documents(items: list[Any], out: TextIO | None = None) -> None:
    (out or sys.stdout).write(_yaml_text(yaml.dump_all, items))


NAMES_PER_WRITE = 4096  # 100,000 names in 25 writes, not 100,000: each write is a call through the text layer


def names(kind: str, values: Iterable[str], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    batch: list[str] = []
    for value in values:
        batch.append(f"{kind}/{safe(value)}\n")
        if len(batch) == NAMES_PER_WRITE:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch))
