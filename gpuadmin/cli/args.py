"""Argument types for numbers given on the command line: each refuses, as a usage error (exit 2), what the
command cannot honour — `nan`, `inf`, negatives, and integers past their bound — instead of waiting forever
(`--wait nan`), reporting nonsense (`--wait -5` "waited -5 s") or crashing on a 20-digit revision.

No pydantic here: the parser is built on every start, before any command is chosen.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

#: The longest a command waits for another writer's lock: a day is far past any useful wait.
MAX_WAIT_S = 86_400.0
#: SQLite's largest integer: revisions and journal ids are stored as one.
MAX_REVISION = 2**63 - 1
#: The inventory's bound on an RDMA NIC's speed (`gpuadmin.model.inventory.MAX_NIC_GBPS`, which this module may
#: not import at start-up; tests/cli/test_numbers_cli.py holds the two equal).
MAX_NIC_GBPS = 100_000


def seconds(text: str) -> float:
    """A finite number of seconds from 0 to MAX_WAIT_S."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 <= value <= MAX_WAIT_S):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to {MAX_WAIT_S:g}")
    return value


def integer(low: int, high: int, what: str) -> Callable[[str], int]:
    """A decimal integer from `low` to `high`; its text is checked before conversion, so a 5,000-digit one
    is refused like any other (Python's `int()` would raise on it, in time that grows with its square)."""

    def parse(text: str) -> int:
        digits = text.strip().removeprefix("-").removeprefix("+")
        if digits.isascii() and digits.isdigit() and len(digits) <= len(str(max(abs(low), abs(high)))):
            value = int(text)
            if low <= value <= high:
                return value
        raise argparse.ArgumentTypeError(f"{_shown(text)} is not {what} (an integer from {low} to {high})")

    parse.__name__ = what  # argparse names the type in its own messages
    return parse


revision = integer(0, MAX_REVISION, "a revision")


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 24 else f"{text[:20]!r}... ({len(text):,} characters)"
