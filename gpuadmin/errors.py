"""One root for every error gpuadmin raises on purpose, each class carrying its exit code (DESIGN §8).

The CLI maps an error to its exit code in one place (`cli/main.py`); the console maps the same classes to
notifications. Every layer may import this module: it imports nothing of gpuadmin.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    """The exit codes scripts rely on; never reused for another meaning."""

    OK = 0
    REFUSED = 1  # the plan has violations
    BAD_INPUT = 2  # bad input or usage (with file:line where there is a file)
    CONFLICT = 3  # stale plan, lock held
    NOT_PERMITTED = 4  # role
    INTERRUPTED = 130


class GpuadminError(Exception):
    """Base of every deliberate failure. `lines()` is what an operator reads (stderr, or a notification)."""

    exit_code: ClassVar[ExitCode] = ExitCode.BAD_INPUT
    label: ClassVar[str] = ""  # the word before the message: "conflict", "not permitted", ...

    def lines(self) -> list[str]:
        """What stderr shows (the console shows the same lines in a notification)."""
        return [f"gpuadmin: {self.label}: {self}" if self.label else f"gpuadmin: {self}"]


__all__ = ["ExitCode", "GpuadminError"]
