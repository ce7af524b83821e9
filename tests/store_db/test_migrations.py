"""Schema migrations (issue 20 item 6): a list of steps keyed by `PRAGMA user_version`.

Besides the real step to version 2 (tests/store_db/test_cluster_binding.py), an older state is simulated the way a
later release will meet one: a state written at today's version, opened by code whose `MIGRATIONS` has steps after
it (monkeypatched here)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadmin.errors import ExitCode
from gpuadmin.store import Identity, Store, state_db
from gpuadmin.store.errors import StateReadOnly, StateTooNew

from .scenario import base_inventory

ME = Identity("tester", 4242, "uid")


def _old_state(tmp_path: Path) -> Path:
    state_dir = tmp_path / "state"
    Store.create(state_dir, base_inventory(), actor=ME).close()
    return state_dir


def _add_owner_column(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE queues ADD COLUMN owner TEXT NOT NULL DEFAULT ''")


def _index_journal_by_time(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE INDEX journal_by_time ON journal(at)")


def _newer_code(monkeypatch: pytest.MonkeyPatch, *steps: state_db.Migration) -> int:
    """Make this process the gpuadmin whose schema is `steps` after today's."""
    monkeypatch.setattr(state_db, "MIGRATIONS", (*state_db.MIGRATIONS, *steps))
    monkeypatch.setattr(state_db, "SCHEMA_VERSION", state_db.SCHEMA_VERSION + len(steps))
    return state_db.SCHEMA_VERSION


def _version(state_dir: Path) -> int:
    with sqlite3.connect(state_dir / "state.db") as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _content(state_dir: Path) -> tuple[int, list[str]]:
    with sqlite3.connect(state_dir / "state.db") as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0]), list(conn.iterdump())


def _columns(state_dir: Path, table: str) -> list[str]:
    with sqlite3.connect(state_dir / "state.db") as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_an_older_state_is_migrated_step_by_step_when_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state_dir = _old_state(tmp_path)
    old = _version(state_dir)
    before = Store.open(state_dir).load().to_inventory()
    target = _newer_code(monkeypatch, _add_owner_column, _index_journal_by_time)
    with Store.open(state_dir) as store:
        assert store.load().to_inventory() == before  # the data is what it was
    assert _version(state_dir) == target == old + 2
    assert "owner" in _columns(state_dir, "queues")
    with sqlite3.connect(state_dir / "state.db") as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'journal_by_time'").fetchone()
    Store.open(state_dir).close()  # opening a migrated state again runs no step (the index would exist twice)


def test_a_failing_step_leaves_the_state_at_the_version_before_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    state_dir = _old_state(tmp_path)
    old = _version(state_dir)

    def half_done(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE INDEX journal_by_actor ON journal(actor)")
        raise sqlite3.OperationalError("the step fails midway")

    _newer_code(monkeypatch, _add_owner_column, half_done)
    with pytest.raises(Exception, match="midway"):
        Store.open(state_dir)
    assert _version(state_dir) == old + 1  # the first step is committed with its bump; the second not at all
    with sqlite3.connect(state_dir / "state.db") as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'journal_by_actor'").fetchone() is None


def test_a_state_newer_than_the_code_is_refused_and_left_alone(tmp_path: Path) -> None:
    state_dir = _old_state(tmp_path)
    with sqlite3.connect(state_dir / "state.db") as conn:
        conn.execute(f"PRAGMA user_version = {state_db.SCHEMA_VERSION + 1}")
    before = _content(state_dir)
    with pytest.raises(StateTooNew, match=r"newer gpuadmin.*upgrade gpuadmin") as refused:
        Store.open(state_dir)
    assert refused.value.exit_code == ExitCode.BAD_INPUT
    cli = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state_dir), "get", "nodes"],
                         capture_output=True, text=True, check=False)
    assert cli.returncode == ExitCode.BAD_INPUT and "upgrade gpuadmin" in cli.stderr
    assert "Traceback" not in cli.stderr
    assert _content(state_dir) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write any file")
def test_an_older_state_this_user_may_not_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state_dir = _old_state(tmp_path)
    (state_dir / "state.db").chmod(0o444)
    _newer_code(monkeypatch, _add_owner_column)
    with pytest.raises(StateReadOnly, match="must be migrated") as refused:
        Store.open(state_dir)
    assert refused.value.exit_code == ExitCode.NOT_PERMITTED
