"""Schema versions 2 (issue 22), 3 (issue 24, a vCenter binding) and 4 (the binding records where the cluster's GPU
Operator keeps its configs): a state bound to a live cluster, the resourceVersions it last synced, and journal
entries that say what a change did on the cluster (executed / partial / failed, with its steps)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gpuadmin.engine.state import View
from gpuadmin.store import ClusterBinding, ClusterVersionChanges, Identity, JournalEntry, Store, state_db

from .scenario import base_inventory

ME = Identity("tester", 4242, "uid")
BINDING = ClusterBinding(kind="kubernetes", context="oke-prod", server="https://10.0.0.1:6443")

# The journal as schema version 1 wrote it (gpuadmin 0.1.0 before issue 22): what the migration meets out there.
V1_JOURNAL = """CREATE TABLE journal (
    id INTEGER PRIMARY KEY, at TEXT NOT NULL, actor TEXT NOT NULL, uid INTEGER NOT NULL, source TEXT NOT NULL,
    origin TEXT, command TEXT NOT NULL, base_revision INTEGER NOT NULL, revision INTEGER,
    verdict TEXT NOT NULL CHECK (verdict IN ('allowed', 'refused')),
    outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'refused', 'stale', 'lock-held', 'error')),
    plan TEXT, diff TEXT, message TEXT NOT NULL DEFAULT '',
    CHECK ((outcome = 'applied') = (revision IS NOT NULL)))"""


def _state(tmp_path: Path) -> Path:
    state_dir = tmp_path / "state"
    Store.create(state_dir, base_inventory(), actor=ME).close()
    return state_dir


def _as_version_1(state_dir: Path) -> list[tuple[object, ...]]:
    """Rewrite a new state into schema version 1's shape (its journal rows kept); returns those rows."""
    with sqlite3.connect(state_dir / "state.db") as conn:
        rows = conn.execute("SELECT id, at, actor, uid, source, origin, command, base_revision, revision, verdict, "
                            "outcome, plan, diff, message FROM journal ORDER BY id").fetchall()
        conn.execute("DROP TABLE journal")
        conn.execute("DROP TABLE cluster_binding")
        conn.execute("DROP TABLE cluster_versions")
        conn.execute(V1_JOURNAL)
        conn.executemany("INSERT INTO journal VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute("CREATE UNIQUE INDEX journal_applied_revision ON journal(revision) WHERE revision IS NOT NULL")
        conn.execute("PRAGMA user_version = 1")
    return rows


def test_a_new_state_is_bound_to_no_cluster_until_bound(tmp_path: Path) -> None:
    with Store.open(_state(tmp_path)) as store:
        assert store.binding() is None
        store.bind(BINDING)
        assert store.binding() == BINDING
        store.bind(ClusterBinding(kind="kubernetes", context="oke-dr", server="https://10.0.0.2:6443"))
        assert store.binding() == ClusterBinding(kind="kubernetes", context="oke-dr", server="https://10.0.0.2:6443")


# The binding table as schema version 2 wrote it (issue 22): Kubernetes only, no `insecure`.
V2_BINDING = """CREATE TABLE cluster_binding (
    id INTEGER PRIMARY KEY CHECK (id = 1), kind TEXT NOT NULL CHECK (kind IN ('kubernetes')),
    context TEXT NOT NULL, server TEXT NOT NULL)"""


def test_a_vcenter_binding_keeps_its_user_server_and_insecure_flag(tmp_path: Path) -> None:
    vcenter = ClusterBinding(kind="vcenter", context="administrator@vsphere.local",
                             server="https://vc.example.com:443", insecure=True)
    with Store.open(_state(tmp_path)) as store:
        store.bind(vcenter)
        assert store.binding() == vcenter
        store.bind(BINDING)
        assert store.binding() == BINDING and not BINDING.insecure


def test_a_version_2_state_keeps_its_kubernetes_binding_and_may_then_bind_a_vcenter(tmp_path: Path) -> None:
    state_dir = _state(tmp_path)
    with sqlite3.connect(state_dir / "state.db") as conn:
        conn.execute("DROP TABLE cluster_binding")
        conn.execute(V2_BINDING)
        conn.execute("INSERT INTO cluster_binding VALUES (1, 'kubernetes', 'oke-prod', 'https://10.0.0.1:6443')")
        conn.execute("PRAGMA user_version = 2")
    with Store.open(state_dir) as store:
        assert store.binding() == BINDING
        store.bind(ClusterBinding(kind="vcenter", context="ops", server="https://vc:443"))
        assert store.binding() == ClusterBinding(kind="vcenter", context="ops", server="https://vc:443")
    with sqlite3.connect(state_dir / "state.db") as conn:
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == state_db.SCHEMA_VERSION == 4


def test_a_version_1_state_is_migrated_with_its_journal_kept(tmp_path: Path) -> None:
    state_dir = _state(tmp_path)
    rows = _as_version_1(state_dir)
    with Store.open(state_dir) as store:
        assert [(e.id, e.outcome, e.revision) for e in store.journal()] == [(r[0], r[10], r[8]) for r in rows]
        assert store.binding() is None and store.cluster_versions() == {}
        store.bind(BINDING)
        assert store.binding() == BINDING
    with sqlite3.connect(state_dir / "state.db") as conn:
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == state_db.SCHEMA_VERSION == 4
        assert "execution" in [row[1] for row in conn.execute("PRAGMA table_info(journal)")]
        assert "mig_parted_configmap" in [row[1] for row in conn.execute("PRAGMA table_info(cluster_binding)")]


PLACED = ClusterBinding("kubernetes", "oke-prod", "https://10.0.0.1:6443", operator_namespace="nvidia-gpu-operator",
                        mig_parted_configmap="custom-mig-parted", device_plugin_configmap="time-slicing-config-fine")


def test_the_binding_keeps_where_the_gpu_operator_keeps_its_configs(tmp_path: Path) -> None:
    with Store.open(_state(tmp_path)) as store:
        store.bind(PLACED)
        assert store.binding() == PLACED
        store.bind(BINDING)  # re-bound without them (as a state bound before they were stored reads)
        assert store.binding() == BINDING and BINDING.mig_parted_configmap is None


def test_a_version_2_binding_is_migrated_with_no_places(tmp_path: Path) -> None:
    state_dir = _state(tmp_path)
    with Store.open(state_dir) as store:
        store.bind(BINDING)
        store.set_cluster_versions({("node", "n1"): "42"})
    with sqlite3.connect(state_dir / "state.db") as conn:  # the table as version 2 wrote it, its row kept
        conn.execute("DROP TABLE cluster_binding")
        conn.execute(state_db._CLUSTER_TABLES_V2[0])
        conn.execute("INSERT INTO cluster_binding VALUES (1, 'kubernetes', 'oke-prod', 'https://10.0.0.1:6443')")
        conn.execute("PRAGMA user_version = 2")
    with Store.open(state_dir) as store:
        assert store.binding() == BINDING and store.cluster_versions() == {("node", "n1"): "42"}
        store.bind(PLACED)
        assert store.binding() == PLACED
    with sqlite3.connect(state_dir / "state.db") as conn:
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == state_db.SCHEMA_VERSION


def test_a_version_3_vcenter_binding_keeps_its_insecure_mark_through_version_4(tmp_path: Path) -> None:
    state_dir = _state(tmp_path)
    with sqlite3.connect(state_dir / "state.db") as conn:  # the table as version 3 wrote it
        conn.execute("DROP TABLE cluster_binding")
        conn.execute(state_db._CLUSTER_BINDING_V3.replace("cluster_binding_v3", "cluster_binding"))
        conn.execute("INSERT INTO cluster_binding VALUES (1, 'vcenter', 'ops', 'https://vc:443', 1)")
        conn.execute("PRAGMA user_version = 3")
    with Store.open(state_dir) as store:
        assert store.binding() == ClusterBinding(kind="vcenter", context="ops", server="https://vc:443", insecure=True)
    with sqlite3.connect(state_dir / "state.db") as conn:
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == state_db.SCHEMA_VERSION


def test_an_executed_change_keeps_its_steps_and_the_cluster_versions(tmp_path: Path) -> None:
    with Store.open(_state(tmp_path)) as store:
        base = store.revision()
        state = store.load()
        view = View(state)
        steps = [{"op": "cordon", "target": "node/n1", "status": "executed", "calls": ["PATCH nodes/n1"],
                  "message": ""}]
        entry = JournalEntry.new("gpuadmin cordon", base, outcome="executed", execution=steps, actor=ME)
        revision = store.commit(base, view, entry, cluster_versions={("node", "n1"): "42", ("pod", "a/b"): "7"})
        assert revision == base + 1
        (last,) = store.journal()[-1:]
        assert (last.outcome, last.execution, last.revision) == ("executed", steps, revision)
        assert store.cluster_versions() == {("node", "n1"): "42", ("pod", "a/b"): "7"}
        assert store.last_applied() == last  # an executed change is applied as far as undo and describe go


def test_version_changes_store_and_forget_only_theirs_with_or_without_a_change(tmp_path: Path) -> None:
    """An incremental sync's resourceVersions: the changed objects' stored or forgotten, every other kept; with a
    change, in its commit (the entry and the versions together)."""
    with Store.open(_state(tmp_path)) as store:
        store.set_cluster_versions({("node", "n1"): "1", ("node", "n2"): "2", ("pod", "a/b"): "3"})
        store.update_cluster_versions(ClusterVersionChanges({("node", "n1"): "10", ("queue", "q"): "11"},
                                                            {("pod", "a/b"), ("pod", "never/stored")}))
        assert store.cluster_versions() == {("node", "n1"): "10", ("node", "n2"): "2", ("queue", "q"): "11"}
        base = store.revision()
        entry = JournalEntry.new("gpuadmin sync", base, actor=ME, origin="cluster")
        store.commit(base, View(store.load()), entry,
                     cluster_versions=ClusterVersionChanges({("pod", "a/c"): "12"}, {("node", "n2")}))
        assert store.cluster_versions() == {("node", "n1"): "10", ("queue", "q"): "11", ("pod", "a/c"): "12"}
        assert store.revision() == base + 1


def test_a_failed_execution_is_recorded_without_a_revision(tmp_path: Path) -> None:
    with Store.open(_state(tmp_path)) as store:
        base = store.revision()
        failed = JournalEntry.new("gpuadmin cordon", base, outcome="failed", message="403 forbidden", actor=ME,
                                  execution=[{"op": "cordon", "status": "failed"}])
        store.record(failed)
        assert store.revision() == base
        assert store.journal()[-1].outcome == "failed" and store.journal()[-1].revision is None
        with pytest.raises(ValueError, match="commit"):
            store.record(JournalEntry.new("x", base, outcome="executed", actor=ME))


def test_a_sync_entry_says_it_came_from_the_cluster() -> None:
    entry = JournalEntry.new("gpuadmin sync", 0, origin="cluster", actor=ME)
    assert entry.origin == "cluster"
    assert JournalEntry.new("gpuadmin sync", 0, actor=ME).origin != "cluster"


def test_a_state_replaced_from_a_file_is_bound_to_nothing(tmp_path: Path) -> None:
    state_dir = _state(tmp_path)
    with Store.open(state_dir) as store:
        store.bind(BINDING)
        store.set_cluster_versions({("node", "n1"): "42"})
    Store.create(state_dir, base_inventory(), force=True, actor=ME).close()
    with Store.open(state_dir) as store:
        assert store.binding() is None and store.cluster_versions() == {}
