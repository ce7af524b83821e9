"""Saved plan files (`plan --save`, `apply --plan`): written only as a new file of the caller's, read strictly.

A plan file often lives in a directory others may write (`/tmp`, a team's share). Writing through a file or
link someone put at the path would keep *their* ownership, and they could swap in other changes for an admin to
apply: so a plan is created exclusively (`O_EXCL`, which never follows a link), and `--force` replaces the path
by renaming a new file over it (the link itself, never its target). Reading reports who owns the file (the
kernel's word, which the file's own `author` field must agree with) and refuses anything that is not plain,
finite JSON of a bounded size and depth — every failure an `InputError` naming the file (exit 2).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuadmin.errors import Diagnostic, InputError

MAX_PLAN_BYTES = 256 * 1024 * 1024  # a plan of 100,000 submitted jobs is tens of MB
MAX_DEPTH = 64  # a plan is a few levels deep; Python's own parser would recurse until it crashed
_BRACKET_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


@dataclass(frozen=True)
class PlanFile:
    data: dict[str, Any]
    owner_uid: int  # who owns the file: what the kernel says, not what the file says


def write_plan_file(path: Path, data: dict[str, Any], *, force: bool = False) -> None:
    """Write `data` as a new plan file at `path`; an existing path (a file, a link, anything) is refused unless
    `force`, and then replaced by a rename, never written through."""
    text = (json.dumps(data, indent=2, allow_nan=False) + "\n").encode("utf-8")
    target = path if not force else path.parent / f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except FileExistsError:
        raise InputError([Diagnostic(
            "not saved: the path exists (gpuadmin never writes into a file or link it did not just create)",
            file=str(path), hint="pick a new name, or pass --force to replace it")]) from None
    except OSError as exc:
        raise _os_failure(path, "not saved", exc) from None
    try:
        try:
            os.write(fd, text)
            os.fsync(fd)
        finally:
            os.close(fd)
        if force:
            os.replace(target, path)
    except OSError as exc:
        if force:
            with contextlib.suppress(OSError):
                os.unlink(target)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)  # ours: made by the O_EXCL open above
        raise _os_failure(path, "not saved", exc) from None


def read_plan_file(path: Path) -> PlanFile:
    """A plan file's JSON object and its owner; refused (exit 2) unless it is a regular file of plain JSON with
    finite numbers, at most `MAX_DEPTH` levels deep and `MAX_PLAN_BYTES` long."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not hang the read
    except OSError as exc:
        raise _os_failure(path, "cannot read the saved plan", exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError([Diagnostic("not a saved gpuadmin plan: not a regular file", file=name)])
        if st.st_size > MAX_PLAN_BYTES:
            raise InputError([Diagnostic(f"not a saved gpuadmin plan: over {MAX_PLAN_BYTES} bytes", file=name)])
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_PLAN_BYTES:  # grown since the fstat
                raise InputError([Diagnostic(f"not a saved gpuadmin plan: over {MAX_PLAN_BYTES} bytes", file=name)])
            chunks.append(chunk)
    except OSError as exc:
        raise _os_failure(path, "cannot read the saved plan", exc) from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(raw, exc.start)
        raise InputError([Diagnostic("not a saved gpuadmin plan: not UTF-8 text", file=name, line=line,
                                     column=column)]) from None
    _check_depth(text, name)
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputError([Diagnostic(f"not a saved gpuadmin plan: {exc.msg}", file=name, line=exc.lineno,
                                     column=exc.colno)]) from None
    except ValueError as exc:  # a non-finite number, or an integer of more digits than Python converts
        raise InputError([Diagnostic(f"not a saved gpuadmin plan: {exc}", file=name)]) from None
    if not isinstance(data, dict):
        raise InputError([Diagnostic("not a saved gpuadmin plan: not a JSON object", file=name)])
    return PlanFile(data, st.st_uid)


def _check_depth(text: str, name: str) -> None:
    """Refuse nesting past `MAX_DEPTH` before parsing (the parser recurses once per level); brackets inside
    strings do not count."""
    depth = 0
    for token in _BRACKET_OR_STRING.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                start = token.start()
                line, column = text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)
                raise InputError([Diagnostic(f"not a saved gpuadmin plan: nested deeper than {MAX_DEPTH} levels",
                                             file=name, line=line, column=column)])
        elif char in "]}":
            depth -= 1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a plan holds")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"{literal[:40]} is out of range")
    return value


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    return raw.count(b"\n", 0, offset) + 1, offset - raw.rfind(b"\n", 0, offset)


def _os_failure(path: Path, what: str, exc: OSError) -> InputError:
    return InputError([Diagnostic(f"{what}: {exc.strerror or exc}", file=str(path))])
