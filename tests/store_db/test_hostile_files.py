"""What another user may leave in a state directory, and a disk that fails: every case is refused or reported in
one line with an exit code of the contract (never 1, never a traceback), and the state, and any file outside it,
stays as it was. Each case runs the real CLI in a real process."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuadmin.store import Store
from gpuadmin.store.identity import user_name
from tests.cli.clikit import Result, gpuadmin, state, state_from

__all__ = ["state"]  # the fixture

CORDON = "changes:\n  - {op: cordon, node: gpu-h100-12}\n"
NOBODY = 65534


def _changes(tmp_path: Path) -> Path:
    changes = tmp_path / "cordon.yaml"
    changes.write_text(CORDON, encoding="utf-8")
    return changes


def _cordon(state: Path, tmp_path: Path) -> Result:
    return gpuadmin("--state", state, "apply", "-f", _changes(tmp_path), "--yes", "--wait", "0")


def _revision(state: Path) -> int:
    with Store.open(state) as store:
        return store.revision()


def _one_line(result: Result) -> str:
    assert "Traceback" not in result.err, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    return lines[0]


# the lock file ------------------------------------------------------------------------------------------------
def _symlink_to_a_file(lock: Path, victim: Path) -> None:
    victim.write_text("precious\n", encoding="utf-8")
    victim.chmod(0o600)
    lock.symlink_to(victim)


def _dangling_symlink(lock: Path, victim: Path) -> None:
    lock.symlink_to(victim)  # `/etc/nologin`: a file that must not come to exist


def _hard_link(lock: Path, victim: Path) -> None:
    victim.write_text("precious\n", encoding="utf-8")
    victim.chmod(0o600)
    os.link(victim, lock)


def _directory(lock: Path, _victim: Path) -> None:
    lock.mkdir()


def _fifo(lock: Path, _victim: Path) -> None:
    os.mkfifo(lock)  # opening it for writing must not wait for a reader


def _another_users_file(lock: Path, _victim: Path) -> None:
    """A plain file of a user who may not write the state (one who could write it in a directory that lets
    everyone in, here as root can)."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    lock.write_text("", encoding="utf-8")
    os.chown(lock, NOBODY, -1)


PLANTED: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "symlink": (_symlink_to_a_file, "it is a symbolic link"),
    "dangling-symlink": (_dangling_symlink, "it is a symbolic link"),
    "hard-link": (_hard_link, "it has 2 hard links"),
    "directory": (_directory, "it is not a regular file"),
    "fifo": (_fifo, "it is not a regular file"),
    "another user's file": (_another_users_file, f"it belongs to {user_name(NOBODY)}, who may not write this state"),
}


@pytest.mark.parametrize(("kind", "command"), [*((kind, "apply") for kind in PLANTED), ("symlink", "init --force"),
                                               ("fifo", "init --force")])
def test_a_planted_lock_is_refused_and_nothing_is_written_through_it(
        kind: str, command: str, tmp_path: Path) -> None:
    state = state_from("oci-h100.yaml", tmp_path / "state")
    lock, victim = state / "lock", tmp_path / "victim"
    lock.unlink()
    plant, why = PLANTED[kind]
    plant(lock, victim)
    before = victim.stat() if victim.exists() else None
    if command == "apply":
        result = _cordon(state, tmp_path)
    else:
        sample = Path(__file__).resolve().parents[2] / "sample-inventories" / "oci-h100.yaml"
        result = gpuadmin("--state", state, "init", "--from", sample, "--force")
    assert result.code == 2, result.err
    line = _one_line(result)
    assert line == (f"gpuadmin: {lock}: refusing to use it: {why} (gpuadmin never made it so; someone put it "
                    "there). Look at it, then remove it (rm) and run the command again")
    assert _revision(state) == 0
    if before is None:
        assert not victim.exists()
    else:  # not truncated, not chmod-ed, not rewritten
        after = victim.stat()
        assert victim.read_text(encoding="utf-8") == "precious\n"
        assert (stat.S_IMODE(after.st_mode), after.st_mtime_ns) == (stat.S_IMODE(before.st_mode), before.st_mtime_ns)


@pytest.mark.parametrize("target", ["an empty file", "another state"])
def test_a_state_database_reached_through_a_link_is_refused(target: str, tmp_path: Path) -> None:
    """SQLite follows a link to the database, writes a header into an empty file and makes its -wal beside it:
    `state.db` must be the plain file itself."""
    state = state_from("oci-h100.yaml", tmp_path / "state")
    if target == "an empty file":
        victim = tmp_path / "victim"
        victim.write_bytes(b"")
    else:
        victim = state_from("oci-h100.yaml", tmp_path / "other") / "state.db"
    before = victim.read_bytes()
    (state / "state.db").unlink()
    (state / "state.db").symlink_to(victim)
    for args in (("get", "nodes"), ("apply", "-f", str(_changes(tmp_path)), "--yes")):
        done = gpuadmin("--state", state, *args)
        assert done.code == 2, done.err
        assert _one_line(done) == (f"gpuadmin: {state / 'state.db'}: refusing to use it: it is a symbolic link "
                                   "(gpuadmin never made it so; someone put it there). Look at it, then remove it "
                                   "(rm) and run the command again")
    assert victim.read_bytes() == before and not Path(f"{victim}-wal").exists()


def test_a_lock_file_that_is_there_is_used_as_it_is(tmp_path: Path) -> None:
    """A lock gpuadmin made keeps working; its mode is not touched (only a file the call created is chmod-ed)."""
    state = state_from("oci-h100.yaml", tmp_path / "state")
    (state / "lock").chmod(0o640)
    assert _cordon(state, tmp_path).code == 0
    assert stat.S_IMODE((state / "lock").stat().st_mode) == 0o640
    (state / "lock").unlink()
    assert gpuadmin("--state", state, "undo", "--yes").code == 0
    assert stat.S_IMODE((state / "lock").stat().st_mode) == 0o600 and _revision(state) == 2


# rows that are not UTF-8 --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("table", "column", "command"), [
    ("nodes", "data", "get nodes"),
    ("jobs", "data", "describe job llama3-405b-fp8-serve"),
    ("journal", "message", "get journal"),
    ("meta", "cluster", "get gpus"),
])
def test_a_row_that_is_not_utf8_is_a_broken_state_in_one_line(
        table: str, column: str, command: str, tmp_path: Path) -> None:
    state = state_from("oci-h100.yaml", tmp_path / "state")
    conn = sqlite3.connect(state / "state.db")
    with conn:  # \xff is never UTF-8; \x1b[2J would clear the screen if it reached the terminal
        conn.execute(f"UPDATE {table} SET {column} = CAST(X'ff1b5b324a' AS TEXT)")
    conn.close()
    result = gpuadmin("--state", state, *command.split())
    assert result.code == 2, result.err
    assert _one_line(result) == (f"gpuadmin: {state / 'state.db'}: not a readable gpuadmin state (a row's "
                                 f"'{column}' is not UTF-8 text)")


def test_a_journal_row_that_does_not_read_is_a_broken_state_in_one_line(tmp_path: Path) -> None:
    state = state_from("oci-h100.yaml", tmp_path / "state")
    conn = sqlite3.connect(state / "state.db")
    with conn:
        conn.execute("UPDATE journal SET diff = '[{' WHERE id = 1")
    conn.close()
    for args in (("get", "journal"), ("describe", "entry", "1"), ("undo", "--yes")):
        result = gpuadmin("--state", state, *args)
        assert result.code == 2, result.err
        assert _one_line(result) == (f"gpuadmin: {state / 'state.db'}: journal entry 1 does not read "
                                     "(JSONDecodeError)"), args


# a disk that fails the write ----------------------------------------------------------------------------------
def _many_jobs(tmp_path: Path, count: int = 60) -> Path:
    """A change file whose commit needs far more than a few pages of WAL."""
    jobs = "".join(f"  - op: submit-job\n    job: {{name: fill-{i:03d}, queue: research, request: {{gpus: 1}}}}\n"
                   for i in range(count))
    path = tmp_path / "many.yaml"
    path.write_text("changes:\n" + jobs, encoding="utf-8")
    return path


def _intact(state: Path, revision: int) -> None:
    with Store.open(state) as store:
        assert store.revision() == revision
        assert store.verify() == []
    assert (state / "lock").read_bytes() == b""  # no holder left behind


def test_a_file_size_limit_during_apply_and_schedule_is_one_line_and_exit_74(tmp_path: Path) -> None:
    """RLIMIT_FSIZE (`ulimit -f`) in the real child: Python ignores SIGXFSZ, so a write past it fails with
    EFBIG, which SQLite reports as a disk I/O error: the shared memory index (32 KiB) fits, the WAL of the
    commit does not. Works without root, unlike a full file system (below)."""
    state = state_from("oci-h100.yaml", tmp_path / "state")
    limit = 33_000
    preexec = f"import resource; resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))"
    for args in (("apply", "-f", str(_many_jobs(tmp_path)), "--yes"), ("schedule", "--yes")):
        done = _limited(state, preexec, args)
        assert done.code == 74, done.err
        assert _one_line(done) == (f"gpuadmin: storage failed: {state / 'state.db'}: cannot write the state: this "
                                   f"process may not write files past {limit} bytes (ulimit -f); nothing was changed")
        _intact(state, 0)
    fresh = tmp_path / "fresh"  # a new state that does not fit: none is left, nor its temporary file
    sample = Path(__file__).resolve().parents[2] / "sample-inventories" / "oci-h100.yaml"
    done = _limited(fresh, preexec, ("init", "--from", str(sample)))
    assert done.code == 74, done.err
    assert _one_line(done).startswith(f"gpuadmin: storage failed: {fresh / 'state.db'}: cannot write the state: "
                                      f"this process may not write files past {limit} bytes"), done.err
    assert sorted(p.name for p in fresh.iterdir()) == ["lock"]


def _limited(state: Path, setup: str, args: tuple[str, ...]) -> Result:
    import subprocess
    import sys

    argv = ["--state", str(state), *args]
    code = f"{setup}\nimport sys\nfrom gpuadmin.cli.main import main\nsys.argv[1:] = {argv!r}\nmain()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB tmpfs of our own (root with CAP_SYS_ADMIN, as CI runs; skipped elsewhere)."""
    import subprocess

    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(directory: Path) -> None:
    """Take every free block of the file system, down to the last byte."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 16, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)


def test_a_full_file_system_during_apply_and_schedule_is_one_line_and_exit_74(small_fs: Path, tmp_path: Path) -> None:
    state = state_from("oci-h100.yaml", small_fs / "state")
    many = _many_jobs(tmp_path)
    keep_open = sqlite3.connect(state / "state.db")  # keeps -wal and -shm sized: the commit is what fails
    keep_open.execute("SELECT 1 FROM meta").fetchall()
    try:
        for args in (("apply", "-f", many, "--yes"), ("schedule", "--yes")):
            # a holder's info a killed apply left: its block is freed and taken again, so the lock still writes
            (state / "lock").write_text("x" * 200, encoding="utf-8")
            _fill(small_fs)
            done = gpuadmin("--state", state, *args)
            assert done.code == 74, done.err
            line = _one_line(done)
            assert line.startswith(f"gpuadmin: storage failed: {state / 'state.db'}: cannot write the state: its "
                                   "file system is full ("), line
            assert line.endswith(" KiB free); nothing was changed"), line
            _intact(state, 0)
        # with no room even for the lock's holder info, the lock says so. A command that closes its connection
        # can be the one that removes -wal and -shm (SQLite's last close); a new connection puts them back first,
        # so that the lock is the first thing that needs a new block
        keep_open.close()
        keep_open = sqlite3.connect(state / "state.db")
        keep_open.execute("SELECT 1 FROM meta").fetchall()
        _fill(small_fs)
        done = gpuadmin("--state", state, "apply", "-f", many, "--yes")
        assert done.code == 74, done.err
        assert _one_line(done).startswith(f"gpuadmin: storage failed: {state / 'lock'}: cannot write the state: "
                                          "its file system is full ("), done.err
        _intact(state, 0)
        (small_fs / "filler").unlink()
        assert gpuadmin("--state", state, "apply", "-f", many, "--yes").code == 0  # room again: it applies
        assert _revision(state) == 1
    finally:
        keep_open.close()


def test_a_read_only_file_system_is_said_so_and_exit_4(small_fs: Path, tmp_path: Path) -> None:
    import subprocess

    sample = Path(__file__).resolve().parents[2] / "sample-inventories" / "oci-h100.yaml"
    state = small_fs / "state"
    # shared, so its -wal and -shm stay when no one has it open: a reader on a read-only file system needs them
    assert gpuadmin("--state", state, "init", "--from", sample, "--shared", "--group", "root").code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True, capture_output=True)
    try:
        for args in (("apply", "-f", str(_many_jobs(tmp_path)), "--yes"), ("schedule", "--yes"),
                     ("init", "--from", str(sample), "--force")):
            done = gpuadmin("--state", state, *args)
            assert done.code == 4, done.err
            assert _one_line(done) == (f"gpuadmin: not permitted: {state / 'lock'}: cannot write the state: its file "
                                       "system is read-only; nothing was changed")
        listing = gpuadmin("--state", state, "get", "nodes", "-o", "name")
        assert listing.code == 0 and "node/gpu-h100-12" in listing.out, listing.err  # reading still works
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], check=False)
    _intact(state, 0)


# the last resort ----------------------------------------------------------------------------------------------
FAULTS = {
    "RecursionError()": (70, "gpuadmin: internal error: RecursionError:  (a bug: GPUADMIN_DEBUG=1 shows the "
                                 "traceback to report)"),
    "ValueError('bad \\x1b]0;owned\\x07 name')": (70, "gpuadmin: internal error: ValueError: bad \\x1b]0;owned\\x07 "
                                                      "name (a bug: GPUADMIN_DEBUG=1 shows the traceback to report)"),
    "OSError(28, 'No space left on device', '/srv/x')": (74, "gpuadmin: /srv/x: No space left on device"),
    "PermissionError(13, 'Permission denied', '/srv/x')": (4, "gpuadmin: /srv/x: Permission denied"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_an_unexpected_error_is_one_line_and_never_exit_1(fault: str, state: Path) -> None:
    """Whatever a command raises that no code path expected: one line (escaped), an exit code that is not 1
    (which says a rule refused), and the traceback only when asked for."""
    setup = f"import gpuadmin.service as s\ndef broken(*a, **k):\n    raise {fault}\ns.Service.get = broken"
    code, line = FAULTS[fault]
    done = _limited(state, setup, ("get", "nodes"))
    assert done.code == code, done.err
    assert _one_line(done) == line
    debug = _limited(state, "import os\nos.environ['GPUADMIN_DEBUG'] = '1'\n" + setup, ("get", "nodes"))
    assert debug.code == code and "Traceback (most recent call last)" in debug.err


def test_an_unexpected_error_in_the_console_is_one_line_and_exit_70(state: Path) -> None:
    """The console's own last resort: Textual would print its traceback with the locals and exit 1."""
    setup = ("import functools\nfrom textual.app import App\nfrom gpuadmin.tui.app import GpuadminApp\n"
             "def broken(self):\n    raise ValueError('bad \\x1b[2J name')\n"
             "GpuadminApp.on_mount = broken\nGpuadminApp.run = functools.partialmethod(App.run, headless=True)")
    done = _limited(state, setup, ("tui",))
    assert done.code == 70, done.err
    assert _one_line(done) == ("gpuadmin: internal error: ValueError: bad \\x1b[2J name (a bug: GPUADMIN_DEBUG=1 "
                               "shows the traceback to report)")
