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

import functools
import re
import unicodedata
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


# The console's own drawing characters as ASCII of the same width, for a terminal whose locale is not UTF-8 (LANG=C):
# Textual's borders and scrollbars, Rich's and Textual's ellipsis, the footer's key symbols, the plan's marks.
_ASCII_GLYPHS = {
    "\u2026": "~",  # … a cut cell or line
    "\u23ce": "<",  # ⏎ Enter
    "\u2191": "^", "\u2193": "v", "\u2190": "<", "\u2192": ">",  # ↑ ↓ ← →
    "\u232b": "<",  # ⌫
    "\u2717": "x", "\u2713": "v", "\u2714": "v", "\u2022": "*", "\u00b7": ".",  # ✗ ✓ ✔ • ·
    "\u2264": "<", "\u2265": ">", "\u00d7": "x", "\u2212": "-",  # ≤ ≥ × −
    "\u2013": "-", "\u2014": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " ",
    "\u2571": "/", "\u2572": "\\", "\u2573": "X",  # ╱ ╲ ╳
    "\u2591": ".", "\u2592": ":", "\u2593": "#", "\u2588": "#",  # ░ ▒ ▓ █
}
_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


@functools.lru_cache(maxsize=4096)
def _ascii_glyph(char: str) -> str:
    """One character in ASCII of the same number of cells: a drawing glyph as its look-alike (box drawing as
    `+ - |`, blocks as `#`, `|` or `-`), anything else — a letter of a name among them — as `?` per cell, so
    that a name the terminal cannot draw is shown as not drawn, never as another name."""
    if char in _ASCII_GLYPHS:
        return _ASCII_GLYPHS[char]
    name = unicodedata.name(char, "")
    if name.startswith("BOX DRAWINGS"):
        across = any(word in name for word in ("HORIZONTAL", "LEFT", "RIGHT"))
        down = any(word in name for word in ("VERTICAL", "UP", "DOWN"))
        return "+" if across == down else "-" if across else "|"
    if name.startswith(("LEFT ", "RIGHT ")) and "BLOCK" in name:
        return "|"  # ▏▎▍▌▋▊▉ ▐ ▕: Textual's tall and wide borders, a horizontal scrollbar's end
    if name.startswith(("UPPER ", "LOWER ")) and ("BLOCK" in name or "EIGHTH" in name):
        return "-"  # ▔ ▁▂▃▄▅▆▇ ▀ ▄: a border's top or bottom, a vertical scrollbar's end
    if unicodedata.combining(char):
        return ""  # drawn on the character before it: no cell of its own
    return "??" if unicodedata.east_asian_width(char) in ("W", "F") else "?"


def to_ascii(text: str) -> str:
    """`text` with every character above 0x7F replaced by ASCII of the same width (`_ascii_glyph`). What the
    console writes under a locale that is not UTF-8, or with `gpuadmin tui --ascii`."""
    return _NOT_ASCII.sub(lambda m: _ascii_glyph(m.group()), text)
