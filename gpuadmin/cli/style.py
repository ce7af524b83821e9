"""Colour and width on a terminal, written by hand (no Rich: the headless CLI starts without it).

Colour is on when stdout is a terminal, `NO_COLOR` is unset (https://no-color.org), `TERM` is not `dumb` and
`--no-color` was not given. It only ever repeats what the words say (a verdict, a status): never colour alone.
On a terminal, tables fit its width (see `output.table`); piped output is never touched.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TextIO

RESET = "\x1b[0m"
COLOURS = {"red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m", "bold": "\x1b[1m", "dim": "\x1b[2m"}

# a cell's word → its colour (the word stays; the colour repeats it)
WORDS = {
    "ready": "green", "running": "green", "applied": "green", "executed": "green", "allowed": "green",
    "ALLOWED": "green",
    "cordoned": "yellow", "draining": "yellow", "pending": "yellow", "preempted": "yellow", "stale": "yellow",
    "lock-held": "yellow", "partial": "yellow",
    "down": "red", "refused": "red", "REFUSED": "red", "failed": "red",
}
_enabled: bool | None = None


def configure(color: bool, stream: TextIO | None = None) -> None:
    """Decide once per command: `color` is False with --no-color or NO_COLOR (the Context's `color`)."""
    global _enabled
    stream = stream or sys.stdout
    _enabled = (color and not os.environ.get("NO_COLOR") and os.environ.get("TERM", "") != "dumb"
                and _isatty(stream))


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def enabled() -> bool:
    return bool(_enabled)


def paint(text: str, colour: str | None) -> str:
    if not _enabled or colour is None or not text:
        return text
    return f"{COLOURS[colour]}{text}{RESET}"


def word(text: str) -> str:
    """A status word in its colour (as it is when colour is off)."""
    return paint(text, WORDS.get(text.strip()))


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The terminal's width when `stream` is one (COLUMNS overrides, as shutil reads it); None when piped."""
    if not _isatty(stream or sys.stdout):
        return None
    return shutil.get_terminal_size((80, 24)).columns


def plan(text: str) -> str:
    """A plan's text with its verdict and violation marks coloured (the words are there either way)."""
    if not _enabled:
        return text
    out = []
    for line in text.split("\n"):
        if line.startswith("Plan against revision"):
            line = line.replace("ALLOWED", word("ALLOWED")).replace("REFUSED", word("REFUSED"))
        elif line.lstrip().startswith("✗ "):
            line = line.replace("✗", paint("✗", "red"), 1)
        out.append(line)
    return "\n".join(out)
