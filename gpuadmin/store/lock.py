"""The state's advisory write lock: `flock` on `<state_dir>/lock`, holder info written into the file.

flock belongs to the open file description, so the kernel drops it when the holder dies (kill -9
included): holder info a dead process left behind never blocks anyone; the next holder overwrites it.
The lock file is never deleted (deleting it would let two processes lock two different inodes).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from gpuadmin.store.errors import LockHeld, LockHolder, from_os_error
from gpuadmin.store.identity import Identity
from gpuadmin.store.shared import open_state_file

LOCK_NAME = "lock"
_INFO_WAIT_S = 0.25  # how long a refused caller waits for the holder to finish writing who it is
_MAX_HOLDER_BYTES = 64 * 1024  # a holder's info is a few hundred bytes; a planted file is not read whole


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_holder(fd: int) -> LockHolder | None:
    """The holder info in an open lock file, or None if absent, empty or half-written. Read through the lock's
    own descriptor: the name may have been swapped for a link to another file meanwhile."""
    try:
        raw = os.pread(fd, _MAX_HOLDER_BYTES, 0)
    except OSError:
        return None
    try:
        data = json.loads(raw)
        return LockHolder(
            actor=str(data["actor"]),
            uid=int(data["uid"]),
            pid=int(data["pid"]),
            host=str(data["host"]),
            command=str(data["command"]),
            since=str(data["since"]),
        )
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


@contextlib.contextmanager
def write_lock(
    state_dir: Path, actor: Identity, command: str, *, timeout: float = 0.0
) -> Iterator[LockHolder]:
    """Hold the exclusive write lock of a state for the `with` block; raise `LockHeld` if another has it.

    `timeout` is how long to keep trying (0: try once). Not re-entrant: a second `write_lock` on the same
    state in the same process is refused like any other.
    """
    path = Path(state_dir) / LOCK_NAME
    # never through a link or into a file another user planted; group-writable in a shared state, whatever the umask
    fd = open_state_file(path, os.O_RDWR)
    try:
        _acquire(fd, timeout)
        holder = LockHolder(
            actor=actor.name,
            uid=actor.uid,
            pid=os.getpid(),
            host=socket.gethostname(),
            command=command,
            since=utc_now(),
        )
        payload = json.dumps(holder.__dict__).encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, payload, 0)
        except OSError as exc:  # a full disk, a read-only file system: said in one line, nothing changed
            fcntl.flock(fd, fcntl.LOCK_UN)
            raise from_os_error(path, exc) from None
        try:
            yield holder
        finally:
            os.ftruncate(fd, 0)  # a clean release leaves no holder behind
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, timeout: float) -> None:
    deadline = time.monotonic() + max(timeout, 0.0)
    info_deadline: float | None = None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        now = time.monotonic()
        if now >= deadline:
            holder = read_holder(fd)
            if holder is not None:
                raise LockHeld(holder)
            # The holder has the lock but has not written who it is yet (or is releasing): look again.
            if info_deadline is None:
                info_deadline = now + _INFO_WAIT_S
            elif now >= info_deadline:
                raise LockHeld(None)
        time.sleep(0.002)
