"""Untrusted text made safe to print: names from inventories never become terminal escapes.

`safe` is the one escaping function: every line gpuadmin writes to a terminal — tables, plans, descriptions,
diagnostics, warnings, errors, JSON and YAML documents — passes through it (the CLI's stderr as a whole, too:
`gpuadmin.cli.terminal.TerminalSafeStream`). What it escapes is what a terminal would act on or draw
misleadingly: C0 controls (ESC starts CSI/OSC sequences: clear screen, window title, OSC 52 clipboard writes),
DEL, the C1 controls (U+009B is an 8-bit CSI), the Unicode line and paragraph separators, the bidi
embeddings, overrides, isolates and marks that reorder the text around them, and the characters that draw as
nothing at all (zero-width space, joiners, word joiner, BOM, soft hyphen): `gpu\u200b-01` is not `gpu-01`,
and an operator must be able to see that.
"""

from __future__ import annotations

import re
from typing import Any

# bidi and invisible format characters: the part both patterns share
_INVISIBLE = r"\u00ad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff"
UNSAFE = re.compile(rf"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
# A JSON or YAML document's own line breaks structure it; every other character above is escaped. In JSON text
# they can only occur inside strings (json escapes C0 itself); YAML writers put text holding them in
# double-quoted scalars (`gpuadmin.cli.output`). `\uXXXX` is an escape both formats read back.
_UNSAFE_IN_DOCUMENT = re.compile(rf"[\x00-\x09\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")


def _python_escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe(text: object, *, document: bool = False) -> str:
    """Text with every character a terminal would act on written as a visible escape.

    Plain text (a table cell, a name in a message, a line of a diagnostic) gets Python's escapes, `\\x1b`,
    `\\u202e`, and is one line whatever it holds (`\\n` too). A JSON or YAML `document` keeps its line breaks and
    gets `\\u001b`, `\\u202e`: valid in a JSON string and a YAML double-quoted scalar, so that the document still
    reads back to the very characters it holds."""
    if document:
        return _UNSAFE_IN_DOCUMENT.sub(_json_escape, str(text))
    return UNSAFE.sub(_python_escape, str(text))


def safe_lines(text: object) -> str:
    """Text of several lines (an error report, a stream's chunk), each escaped by `safe`, its line breaks kept."""
    return "\n".join(safe(line) for line in str(text).split("\n"))


def needs_escaping(text: str) -> bool:
    """Whether `safe` would change this text: a YAML writer then puts it in a double-quoted scalar."""
    return _UNSAFE_IN_DOCUMENT.search(text) is not None


def cell_text(value: Any) -> str:
    """A listing's value as a table cell, the same in the CLI and the console: `-` for none, yes/no, `0.5`."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return safe(value)
