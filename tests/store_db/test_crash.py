"""kill -9 a real child process at random moments while it commits; the state is always whole.

After each kill: `PRAGMA integrity_check` is ok; the state equals the replayed state of its revision
(so it is the state before or after the interrupted commit, never a mix); the revision is the last one
the child acknowledged or the one after; the journal agrees with the revision; the slots table agrees
with the jobs.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from gpuadmin.store import Identity, StateMissing, Store

from ._proc import spawn
from .scenario import Replay, base_inventory

ME = Identity("tester", 4242, "uid")


def kill_during_commits(state_dir: Path, runs: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    Store.create(state_dir, base_inventory(), actor=ME).close()
    replay = Replay(base_inventory())
    acked = 0
    stats = {"runs": 0, "unacked_commit_landed": 0, "commits": 0, "killed_before_ready": 0}
    for _ in range(runs):
        child = spawn("apply", state_dir, 1_000_000)
        assert child.stdout is not None
        if rng.random() < 0.1:  # now and then, kill it while it starts up and opens the state
            stats["killed_before_ready"] += 1
            time.sleep(rng.uniform(0.0, 0.3))
        else:
            line = child.stdout.readline()
            assert line.startswith("ready"), (line, child.stderr.read() if child.stderr else "")
            time.sleep(rng.uniform(0.0, 0.03))
        os.kill(child.pid, signal.SIGKILL)
        # Read through the file objects, not communicate(): it reads the raw pipes, so acknowledgements that
        # readline() above had already buffered would be lost and the check below would blame the store.
        assert child.stderr is not None
        out, err = child.stdout.read(), child.stderr.read()
        child.wait()
        assert child.returncode == -signal.SIGKILL, err
        lines = out.split()
        oks = [int(lines[i + 1]) for i, word in enumerate(lines) if word == "ok" and i + 1 < len(lines)]
        if oks:
            acked = oks[-1]

        conn = sqlite3.connect(state_dir / "state.db")
        try:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        finally:
            conn.close()
        with Store.open(state_dir) as store:
            revision = store.revision()
            assert revision in (acked, acked + 1), (revision, acked)  # nothing acknowledged is lost
            if revision == acked + 1:
                stats["unacked_commit_landed"] += 1
            stats["commits"] = revision
            acked = revision
            state = store.load()
            assert state.to_inventory() == replay.at(revision)
            assert store.verify() == []
            last = store.last_applied()
            # killed before its first commit under a loaded machine: the last applied entry is the state's creation
            command, plan = ("gpuadmin init", None) if revision == 0 else (f"driver apply {revision}", {"k": revision})
            assert last is not None and last.revision == revision and last.command == command
            assert last.plan == plan
        stats["runs"] += 1
    return stats


def test_kill_9_during_commits(tmp_path: Path) -> None:
    stats = kill_during_commits(tmp_path / "state", runs=20, seed=1)
    assert stats["runs"] == 20
    assert stats["commits"] > 20  # the children did commit between kills


@pytest.mark.slow  # more kills of the same kind: a child process each, about 2 s apiece on CI's 2 cores
def test_kill_9_during_commits_100(tmp_path: Path) -> None:
    stats = kill_during_commits(tmp_path / "state", runs=100, seed=1)
    assert stats["runs"] == 100
    assert stats["commits"] > 100  # the children did commit between kills


@pytest.mark.slow  # the long stress run of the same
def test_kill_9_during_commits_1000(tmp_path: Path) -> None:
    stats = kill_during_commits(tmp_path / "state", runs=1000, seed=2)
    assert stats["runs"] == 1000


def test_kill_9_during_create(tmp_path: Path) -> None:
    """A create killed at any moment leaves no state or a whole one (it is renamed into place)."""
    rng = random.Random(3)
    outcomes = {"missing": 0, "whole": 0}
    for i in range(10):
        state_dir = tmp_path / f"s{i}"
        child = spawn("create", state_dir, 5_000)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.04))  # ready → created takes about 30 ms
        os.kill(child.pid, signal.SIGKILL)
        child.communicate()
        try:
            store = Store.open(state_dir)
        except StateMissing:
            outcomes["missing"] += 1
            continue
        with store:
            assert store.verify() == []
            assert len(store.load().jobs) == 4 + 5_000
            outcomes["whole"] += 1
    assert sum(outcomes.values()) == 10, outcomes
