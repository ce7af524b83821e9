"""A state shared by a group of operators (`gpuadmin init --shared --group G`), readable by viewers.

The directory is set-group-id and group-writable: every file made in it belongs to its group, whoever makes
it. gpuadmin sets each file's mode itself (`fchmod`), so an operator's umask (022, 077) never takes the group's
write bit away; SQLite gives the `-wal` and `-shm` files the database file's own mode. Others get read access
(the viewers) where the directory lets others in.

A viewer has no write access anywhere in the directory, so SQLite cannot create the `-wal` and `-shm` files a
WAL database needs to be read — and SQLite deletes both when the last connection closes. A read-only reader
copes when they exist (since SQLite 3.22 it reads the WAL through a read-only `-shm`, live, as writers commit),
so in a shared state they always do: `init --shared` makes them, and every writer that closes the state puts
back, empty, whichever the last close removed (`keep_wal_files`). SQLite's own way to keep them
(`SQLITE_FCNTL_PERSIST_WAL`) is not reachable from Python's sqlite3.
"""

from __future__ import annotations

import grp
import os
import stat
from pathlib import Path

from gpuadmin.store.errors import StoreError

DB_NAME = "state.db"
PERSONAL_FILE_MODE = 0o600
PERSONAL_DIR_MODE = 0o700
SHARED_DIR_MODE = 0o2775  # setgid; group rwx; others r-x (the viewers)
SHARED_DIR_MODE_NO_OTHERS = 0o2770


def is_shared(state_dir: Path) -> bool:
    """A shared state's directory is set-group-id and group-writable."""
    try:
        mode = os.stat(state_dir).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_ISGID and mode & stat.S_IWGRP)


def file_mode(state_dir: Path) -> int:
    """The mode of the files gpuadmin makes in `state_dir`: 0600 in a personal one; in a shared one 0660,
    plus read for others where the directory lets others in (0664)."""
    try:
        mode = os.stat(state_dir).st_mode
    except OSError:
        return PERSONAL_FILE_MODE
    if not (mode & stat.S_ISGID and mode & stat.S_IWGRP):
        return PERSONAL_FILE_MODE
    others = stat.S_IROTH if mode & stat.S_IROTH and mode & stat.S_IXOTH else 0
    return 0o660 | others


def open_state_file(path: Path, flags: int) -> int:
    """`os.open` with O_CREAT and the state directory's file mode, enforced on a file this call created."""
    mode = file_mode(path.parent)
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and st.st_size == 0 and stat.S_IMODE(st.st_mode) != mode:
            os.fchmod(fd, mode)  # the umask took bits away
    except OSError:
        os.close(fd)
        raise
    return fd


def make_shared_dir(state_dir: Path, group: str, *, others_read: bool = True) -> None:
    """Create `state_dir` (or take an empty existing one) as a shared state directory of `group`."""
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise StoreError(f"no such group: {group!r} (create it first: groupadd {group})") from None
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    if (state_dir / DB_NAME).exists():
        raise StoreError(f"{state_dir} already holds a state; share it with chgrp/chmod (docs/operations.md) "
                         "or pick another directory")
    try:
        os.chown(state_dir, -1, gid)
        os.chmod(state_dir, SHARED_DIR_MODE if others_read else SHARED_DIR_MODE_NO_OTHERS)
    except PermissionError as exc:
        raise StoreError(f"cannot give {state_dir} to group {group}: {exc.strerror} (you must own the directory "
                         f"and be a member of {group}, or be root)") from None


def keep_wal_files(state_dir: Path) -> None:
    """In a shared state, put back an empty `-wal`/`-shm` that the last close removed, so a read-only viewer
    can still open the state. Only ever creates a file that is absent (O_EXCL): one that exists may be in
    use, and opening and closing it here would drop this process's SQLite locks on it."""
    if not is_shared(state_dir):
        return
    db = Path(state_dir) / DB_NAME
    try:
        mode = stat.S_IMODE(os.stat(db).st_mode)
    except OSError:
        return
    for suffix in ("-wal", "-shm"):
        try:
            fd = os.open(f"{db}{suffix}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
        except OSError:  # there already (in use, or kept), or no write access: nothing to do
            continue
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def wal_files_missing(state_dir: Path) -> list[str]:
    db = Path(state_dir) / DB_NAME
    return [f"{DB_NAME}{s}" for s in ("-wal", "-shm") if not Path(f"{db}{s}").exists()]
