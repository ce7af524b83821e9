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

import errno
import grp
import os
import pwd
import stat
from pathlib import Path

from gpuadmin.store.errors import StoreError, UnsafeStateFile, from_os_error
from gpuadmin.store.identity import user_name

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
    """Open (or create) a file gpuadmin writes in a state directory, only if it is the plain file gpuadmin made.

    In a shared directory any operator may put anything at the path, and root's next command would write
    through it: so the file is created exclusively (`O_EXCL`) and given the directory's file mode; a file that is
    already there is opened without `O_CREAT`, never following a symbolic link (`O_NOFOLLOW`), without blocking
    on a FIFO (`O_NONBLOCK`), and used only if what was opened (`fstat`, not the name) is a regular file with one
    link, owned by a user who may write the directory anyway (`trusted_owner`). Only a file this call created is
    `fchmod`ed. Refusals are `UnsafeStateFile` (exit 2); the OS's are `from_os_error`'s."""
    mode = file_mode(path.parent)
    base = flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _ in range(3):  # created and removed by another process between our two tries: look again
        try:
            fd = os.open(path, base | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _open_failed(path, exc) from None
        else:
            try:
                os.fchmod(fd, mode)  # ours: the umask may have taken the group's bits away
            except OSError as exc:
                os.close(fd)
                raise from_os_error(path, exc) from None
            return fd
        try:
            fd = os.open(path, base)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _open_failed(path, exc) from None
        try:
            _check_existing(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return fd
    raise UnsafeStateFile(f"{path}: keeps appearing and disappearing; is another program replacing it?")


def check_state_file(path: Path) -> os.stat_result:
    """What `open_state_file` checks, for a file that is only read here and opened by SQLite (`state.db`): a
    regular file with one link, of a user who may write the state, reached without a link. Its `stat`, for the
    caller to compare with what SQLite then opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _open_failed(path, exc) from None
    try:
        _check_existing(fd, path)
        return os.fstat(fd)
    finally:
        os.close(fd)


def _open_failed(path: Path, exc: OSError) -> StoreError:
    if exc.errno == errno.ELOOP:
        return _unsafe(path, "it is a symbolic link")
    if exc.errno in (errno.EISDIR, errno.ENXIO):  # ENXIO: a socket, or a FIFO with no reader
        return _unsafe(path, "it is not a regular file")
    return from_os_error(path, exc)


def _check_existing(fd: int, path: Path) -> None:
    st = os.fstat(fd)  # what was opened, not a name someone may swap meanwhile
    if not stat.S_ISREG(st.st_mode):
        raise _unsafe(path, "it is not a regular file")
    if st.st_nlink != 1:
        raise _unsafe(path, f"it has {st.st_nlink} hard links")
    if not trusted_owner(st.st_uid, path.parent):
        raise _unsafe(path, f"it belongs to {user_name(st.st_uid)}, who may not write this state")


def trusted_owner(uid: int, state_dir: Path) -> bool:
    """Whether a file owned by `uid` in `state_dir` can be one gpuadmin made there: this process's user, root,
    the directory's owner, or in a shared state a member of its group (the operators, who write it anyway)."""
    if uid in (0, os.geteuid()):
        return True
    try:
        st = os.stat(state_dir)
    except OSError:
        return False
    if uid == st.st_uid:
        return True
    if not (st.st_mode & stat.S_ISGID and st.st_mode & stat.S_IWGRP):
        return False
    try:
        entry = pwd.getpwuid(uid)
    except (KeyError, OverflowError):
        return False
    return st.st_gid in os.getgrouplist(entry.pw_name, entry.pw_gid)


def _unsafe(path: Path, why: str) -> UnsafeStateFile:
    return UnsafeStateFile(f"{path}: refusing to use it: {why} (gpuadmin never made it so; someone put it there). "
                           "Look at it, then remove it (rm) and run the command again")


def make_shared_dir(state_dir: Path, group: str, *, others_read: bool = True, take_over: bool = False) -> None:
    """Create `state_dir` (or take an existing one of the caller's) as a shared state directory of `group`.

    The directory's owner is trusted like root (its `roles.yaml` gives the roles), so a directory that belongs
    to another user is refused: whoever made it would make themselves admin. `take_over` (root only) makes an
    empty one root's first."""
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        raise StoreError(f"no such group: {group!r} (create it first: groupadd {group})") from None
    state_dir = Path(state_dir)
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        st = os.stat(state_dir)
    except OSError as exc:
        raise from_os_error(state_dir, exc) from None
    if st.st_uid != os.geteuid():
        _take_over(state_dir, st.st_uid, take_over)
    elif take_over:
        raise StoreError(f"{state_dir} is yours already: --take-over is for a directory of another user's")
    if (state_dir / DB_NAME).exists():
        raise StoreError(f"{state_dir} already holds a state; share it with chgrp/chmod (docs/operations.md) "
                         "or pick another directory")
    try:
        os.chown(state_dir, -1, gid)
        os.chmod(state_dir, SHARED_DIR_MODE if others_read else SHARED_DIR_MODE_NO_OTHERS)
    except PermissionError as exc:
        raise StoreError(f"cannot give {state_dir} to group {group}: {exc.strerror} (you must own the directory "
                         f"and be a member of {group}, or be root)") from None


def _take_over(state_dir: Path, owner: int, take_over: bool) -> None:
    """Make another user's directory root's, when root asks for it and the directory is empty (a file already in
    it — a roles.yaml, a lock — would be that user's, planted before the state existed)."""
    whose = f"{state_dir} belongs to {user_name(owner)}, and a shared state's owner is trusted like root (its " \
            "roles.yaml gives the roles)"
    if not take_over:
        raise StoreError(f"{whose}: refusing to share it. Pick a directory of your own, or as root pass "
                         "--take-over to make this one (empty) root's")
    if os.geteuid() != 0:
        raise StoreError(f"{whose}: only root may --take-over a directory")
    if any(state_dir.iterdir()):
        raise StoreError(f"{whose}: refusing to take it over, it is not empty (whatever is in it is that user's)")
    os.chown(state_dir, 0, -1)


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
            fd = os.open(f"{db}{suffix}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        except OSError:  # there already (in use, or kept), or no write access: nothing to do
            continue
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def wal_files_missing(state_dir: Path) -> list[str]:
    db = Path(state_dir) / DB_NAME
    return [f"{DB_NAME}{s}" for s in ("-wal", "-shm") if not Path(f"{db}{s}").exists()]
