"""Errors of the SQLite state store. Front ends map them to exit codes (DESIGN §8): a conflict
(`StaleRevision`, `LockHeld`, `StateBusy`) is exit 3; a missing or broken state is a usage error (exit 2)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuadmin.errors import ExitCode, GpuadminError


class StoreError(GpuadminError):
    """Base class of every error the store raises on purpose: a missing or broken state (exit 2)."""


class StateMissing(StoreError):
    """There is no state at the given directory (nothing was created there yet)."""


class StateExists(StoreError):
    """`Store.create` was asked to create a state where one already exists (use force to replace it)."""


class StateCorrupt(StoreError):
    """The state database is unreadable, of an unknown schema, or holds rows that do not validate."""


class StateReadOnly(StoreError):
    """The OS does not let this user write (or read) the state — file modes, not roles: exit 4."""

    exit_code = ExitCode.NOT_PERMITTED
    label = "not permitted"


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
