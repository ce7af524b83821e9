"""Diagnostics: one problem found in an input, located by file, line, column and dotted path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpuadmin.errors import ExitCode, GpuadminError

PathPart = str | int
Kind = Literal["yaml", "schema", "reference", "rule"]


def dotted(path: tuple[PathPart, ...]) -> str:
    """`('nodes', 3, 'gpus', 1, 'mode')` -> `nodes[3].gpus[1].mode`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
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
