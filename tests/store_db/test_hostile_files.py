"""What another user may leave in a state directory, and a disk that fails: every case is refused or reported in
one line with an exit code of the contract (never 1, never a traceback), and the state, and any file outside it,
stays as it was. Each case runs the real CLI in a real process."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuadmin.store import Store
from tests.cli.clikit import Result, gpuadmin, state_from

CORDON = "changes:\n  - {op: cordon, node: gpu-h100-12}\n"


def _cordon(state: Path, tmp_path: Path) -> Result:
    changes = tmp_path / "cordon.yaml"
    changes.write_text(CORDON, encoding="utf-8")
    return gpuadmin("--state", state, "apply", "-f", changes, "--yes", "--wait", "0")


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


def _directory(lock: Path, victim: Path) -> None:
    lock.mkdir()


def _fifo(lock: Path, victim: Path) -> None:
    os.mkfifo(lock)  # opening it for writing must not wait for a reader


PLANTED: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "symlink": (_symlink_to_a_file, "it is a symbolic link"),
    "dangling-symlink": (_dangling_symlink, "it is a symbolic link"),
    "hard-link": (_hard_link, "it has 2 hard links"),
    "directory": (_directory, "it is not a regular file"),
    "fifo": (_fifo, "it is not a regular file"),
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
    assert line == (f"gpuadmin: {lock}: refusing to write it: {why} (gpuadmin never made it so; someone put it "
                    "there). Look at it, then remove it (rm) and run the command again")
    assert _revision(state) == 0
    if before is None:
        assert not victim.exists()
    else:  # not truncated, not chmod-ed, not rewritten
        after = victim.stat()
        assert victim.read_text(encoding="utf-8") == "precious\n"
        assert (stat.S_IMODE(after.st_mode), after.st_mtime_ns) == (stat.S_IMODE(before.st_mode), before.st_mtime_ns)


def test_a_lock_file_that_is_there_is_used_as_it_is(tmp_path: Path) -> None:
    """A lock gpuadmin made keeps working; its mode is not touched (only a file the call created is chmod-ed)."""
    state = state_from("oci-h100.yaml", tmp_path / "state")
    (state / "lock").chmod(0o640)
    assert _cordon(state, tmp_path).code == 0
    assert stat.S_IMODE((state / "lock").stat().st_mode) == 0o640
    (state / "lock").unlink()
    assert gpuadmin("--state", state, "undo", "--yes").code == 0
    assert stat.S_IMODE((state / "lock").stat().st_mode) == 0o600 and _revision(state) == 2
