"""One root for every error gpuadmin raises on purpose, each class carrying its exit code (DESIGN §8), and
the located diagnostics of bad input (file:line:column and the dotted field path).

The CLI maps an error to its exit code in one place (`cli/main.py`); the console maps the same classes to
notifications. Every layer may import this module: it imports nothing of gpuadmin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar, Literal


class ExitCode(IntEnum):
    """The exit codes scripts rely on; never reused for another meaning."""

    OK = 0
    REFUSED = 1  # the plan has violations, or an export holds something its consumer refuses (a warning names it)
    BAD_INPUT = 2  # bad input or usage (with file:line where there is a file)
    CONFLICT = 3  # stale plan, lock held
    NOT_PERMITTED = 4  # role, or the OS: file modes, a read-only file system
    INTERNAL = 70  # a bug: an error no code above describes (sysexits' EX_SOFTWARE); never 1, which means "refused"
    STORAGE = 74  # the state's disk failed the write: full, over quota, an I/O error (sysexits' EX_IOERR)
    INTERRUPTED = 130


class GpuadminError(Exception):
    """Base of every deliberate failure. `lines()` is what an operator reads (stderr, or a notification)."""

    exit_code: ClassVar[ExitCode] = ExitCode.BAD_INPUT
    label: ClassVar[str] = ""  # the word before the message: "conflict", "not permitted", ...

    def lines(self) -> list[str]:
        """What stderr shows (the console shows the same lines in a notification)."""
        return [f"gpuadmin: {self.label}: {self}" if self.label else f"gpuadmin: {self}"]


PathPart = str | int
Kind = Literal["yaml", "schema", "reference", "rule"]


def dotted(path: tuple[PathPart, ...]) -> str:
    """`('nodes', 3, 'gpus', 1, 'mode')` -> `nodes[3].gpus[1].mode`."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:  # a name; or a key YAML read as a number or boolean (`1.: a`), which the message names as read
            out += f".{part}" if out else str(part)
    return out or "<root>"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    message: str
    path: tuple[PathPart, ...] = ()
    kind: Kind = "schema"
    file: str | None = None
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based
    hint: str | None = field(default=None)

    def located(self, file: str | None, line: int | None, column: int | None) -> Diagnostic:
        return Diagnostic(self.message, self.path, self.kind, file, line, column, self.hint)

    def __str__(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        # An argument error has no file and no field: the message alone, not `<input>: <root>: ...`.
        located = [part for part in (where, dotted(self.path) if self.path else "") if part]
        text = ": ".join([*located, self.message])
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class InputError(GpuadminError):
    """Bad input: every diagnostic of one file, reported together (exit code 2)."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(str(d) for d in diagnostics))

    def lines(self) -> list[str]:
        return [str(d) for d in self.diagnostics]


__all__ = ["Diagnostic", "ExitCode", "GpuadminError", "InputError", "PathPart", "dotted"]
