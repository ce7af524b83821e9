"""Untrusted text made safe to print: names from inventories never become terminal escapes."""

from __future__ import annotations

import re
from typing import Any

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe(text: object) -> str:
    """Replace control, C1 and bidi-override characters with visible escapes (`\\x1b`, `\\u202e`)."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def cell_text(value: Any) -> str:
    """A listing's value as a table cell, the same in the CLI and the console: `-` for none, yes/no, `0.5`."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return safe(value)
