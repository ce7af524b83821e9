"""Errors of the SQLite state store. Front ends map them to exit codes (DESIGN §8): a conflict
(`StaleRevision`, `LockHeld`, `StateBusy`) is exit 3; a missing or broken state is a usage error (exit 2); a
state the OS will not let this user write (modes, a read-only file system) is exit 4; a disk that fails the
write (full, over quota, an I/O error) is exit 74. `from_os_error` and `from_sqlite_error` turn what the OS and
SQLite raise into these, so no write failure reaches a user as a traceback."""

from __future__ import annotations

import errno
import os
import re
import resource
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from gpuadmin.errors import ExitCode, GpuadminError


class StoreError(GpuadminError):
    """Base class of every error the store raises on purpose: a missing or broken state (exit 2)."""


class StateMissing(StoreError):
    """There is no state at the given directory (nothing was created there yet)."""


class StateExists(StoreError):
    """`Store.create` was asked to create a state where one already exists (use force to replace it)."""


class StateCorrupt(StoreError):
    """The state database is unreadable, of an unknown schema, or holds rows that do not validate."""


class StateTooNew(StateCorrupt):
    """The state's schema is newer than this gpuadmin reads (a newer gpuadmin wrote it): exit 2, nothing touched.
    A `StateCorrupt` to whoever catches that, though the file is whole: this code cannot read it."""


class StateReadOnly(StoreError):
    """The OS does not let this user write (or read) the state — file modes, not roles: exit 4."""

    exit_code = ExitCode.NOT_PERMITTED
    label = "not permitted"


class StateStorageFailed(StoreError):
    """The disk failed a write of the state: full, over quota, over the file size limit, or an I/O error. SQLite
    rolls the transaction back, so the state is as it was."""

    exit_code = ExitCode.STORAGE
    label = "storage failed"


class UnsafeStateFile(StoreError):
    """A file gpuadmin writes in a state directory is not the plain file it made: a symbolic link, a hard link,
    a directory, a FIFO, or a file of another user. Written to, it could hit any file on the host."""


class StateBusy(StoreError):
    """SQLite's own write lock stayed busy past the busy timeout (another writer is mid-transaction)."""

    exit_code = ExitCode.CONFLICT
    label = "conflict"


class StaleRevision(StoreError):
    """The state moved since the plan was made: the plan's base revision is no longer the current one."""

    exit_code = ExitCode.CONFLICT
    label = "conflict"

    def __init__(self, current: int, base: int) -> None:
        self.current = current
        self.base = base
        super().__init__(
            f"stale plan: it was made on revision {base}, but the state is now at revision {current}; "
            "plan again"
        )


@dataclass(frozen=True)
class LockHolder:
    """Who holds the write lock, as the holder wrote it into `<state_dir>/lock`."""

    actor: str
    uid: int
    pid: int
    host: str
    command: str
    since: str  # ISO-8601 UTC, e.g. 2026-05-01T12:01:03Z

    def describe(self) -> str:
        """`alice (pid 4242 on bastion-1, gpuadmin apply, since 12:01:03Z)`."""
        since = self.since
        if "T" in since:
            since = since.split("T", 1)[1]
            if "." in since:  # drop fractions of a second
                since = since.split(".", 1)[0] + "Z"
        return f"{self.actor} (pid {self.pid} on {self.host}, {self.command}, since {since})"


class LockHeld(StoreError):
    """Another process holds the state's write lock. `holder` is None only when it could not be read."""

    exit_code = ExitCode.CONFLICT
    label = "conflict"

    def __init__(self, holder: LockHolder | None) -> None:
        self.holder = holder
        if holder is None:
            message = "state is locked by another process (its holder could not be read)"
        else:
            message = f"state is locked by {holder.describe()}"
        super().__init__(message)


_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}  # EFBIG: over RLIMIT_FSIZE or the file system's limit
_READ_ONLY = {errno.EACCES, errno.EPERM}
_LOW_SPACE = 1 << 20  # a commit of a few hundred rows needs this much WAL; below it, "full" is the likely cause


def storage_cause(directory: Path) -> str | None:
    """Why writes in `directory` may fail, where it can be told: its file system full or read-only, or this
    process's file size limit (`ulimit -f`). SQLite reports most of these as a bare "disk I/O error"."""
    try:
        fs = os.statvfs(directory)
    except OSError:
        fs = None
    if fs is not None and fs.f_flag & os.ST_RDONLY:
        return "its file system is read-only"
    if fs is not None and fs.f_bavail * fs.f_frsize < _LOW_SPACE:
        return f"its file system is full ({fs.f_bavail * fs.f_frsize // 1024} KiB free)"
    limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if limit != resource.RLIM_INFINITY:
        return f"this process may not write files past {limit} bytes (ulimit -f)"
    return None


def _cannot_write(where: Path | str, directory: Path, fallback: str, *, read_only: bool = False) -> StoreError:
    cause = storage_cause(directory) or fallback
    if read_only or cause == "its file system is read-only":
        return StateReadOnly(f"{where}: cannot write the state: {cause}; nothing was changed")
    return StateStorageFailed(f"{where}: cannot write the state: {cause}; nothing was changed")


def from_os_error(where: Path, exc: OSError) -> StoreError:
    """What an OS error while writing the state file `where` means to an operator, as one line."""
    why = exc.strerror or str(exc)
    if exc.errno == errno.EROFS:
        return StateReadOnly(f"{where}: cannot write the state: its file system is read-only; nothing was changed")
    if exc.errno in _READ_ONLY:
        return StateReadOnly(f"{where}: you may not write this state ({why}); nothing was changed")
    if exc.errno in _NO_SPACE:
        return _cannot_write(where, where.parent, why.lower())
    return StateStorageFailed(f"{where}: cannot write the state: {why}; nothing was changed")


# SQLite's primary result codes (the low byte of an extended code), https://sqlite.org/rescode.html
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_IOERR = 5, 6, 8, 10
_SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 11, 13, 14, 26
_UNDECODABLE = re.compile(r"^Could not decode to UTF-8 column '([^']*)'")


def from_sqlite_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """What an error SQLite raised on the state database at `path` means to an operator, as one line (SQLite's
    own message is fixed text; a row's text never goes into it)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    undecodable = _UNDECODABLE.match(str(exc))
    if undecodable:  # Python's, not SQLite's: its message carries the row's bytes, which are not shown
        return StateCorrupt(f"{path}: not a readable gpuadmin state (a row's {undecodable.group(1)!r} is not "
                            "UTF-8 text)")
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if primary == _SQLITE_FULL:
        return _cannot_write(path, path.parent, "the disk is full")
    if primary == _SQLITE_IOERR:
        return _cannot_write(path, path.parent, detail)
    if primary == _SQLITE_READONLY:
        return _cannot_write(path, path.parent, f"{detail} (a read-only file or directory)", read_only=True)
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StateBusy(f"{path}: the database stayed busy ({detail})")
    if primary == _SQLITE_CANTOPEN:
        return StoreError(f"{path}: cannot open the state database ({detail})")
    return StateCorrupt(f"{path}: not a readable gpuadmin state ({detail})")
