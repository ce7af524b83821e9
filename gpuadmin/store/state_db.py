"""The SQLite state: the current revision of the inventory plus the journal of every attempt (DESIGN §6).

One file, `<state_dir>/state.db`, in WAL mode with `synchronous=FULL`. Every write is one transaction
opened with `BEGIN IMMEDIATE` (Python's implicit transactions are off): a commit re-reads the revision,
refuses a stale base, writes exactly the rows a view edited, keeps the `slots` table in step, journals
the attempt and bumps the revision — all or nothing, so a crash at any instant leaves the old or the new
state. Reads of several tables happen in one read transaction, i.e. on one snapshot.

Rows hold each model's JSON; loading validates a whole table in one pydantic call.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sqlite3
import stat
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, TypeAdapter, ValidationError

from gpuadmin.engine.state import ClusterState, GpuKey, View, job_gpu_keys
from gpuadmin.model import Inventory, Job, Node, Queue, Request
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.inventory import STORED
from gpuadmin.store.errors import (
    LockHolder,
    StaleRevision,
    StateCorrupt,
    StateExists,
    StateMissing,
    StateReadOnly,
    StateTooNew,
    StoreError,
    UnsafeStateFile,
    from_os_error,
    from_sqlite_error,
    storage_cause,
)
from gpuadmin.store.identity import Identity, login_identity
from gpuadmin.store.identity import origin as _ssh_origin
from gpuadmin.store.lock import utc_now
from gpuadmin.store.lock import write_lock as _write_lock
from gpuadmin.store.shared import (
    PERSONAL_DIR_MODE,
    check_state_file,
    file_mode,
    keep_wal_files,
    wal_files_missing,
)

# The schema's versions, kept in SQLite's `PRAGMA user_version`. `_SCHEMA` is the newest, what a new state gets;
# an older state is brought up by the steps in order when it is opened: MIGRATIONS[i] takes version
# FIRST_SCHEMA_VERSION + i to the next, in one transaction with the version's bump, so a crash leaves one version
# or the next. A schema change appends a step here and changes `_SCHEMA` to match; a step is never edited once
# released (states out there were migrated by it).
Migration = Callable[[sqlite3.Connection], None]
FIRST_SCHEMA_VERSION = 1
DB_NAME = "state.db"
BUSY_TIMEOUT_S = 2.0
_CHUNK = 5_000  # rows validated per pydantic call
# a describe's history: at most this many entries that touched the object, among the newest scanned
HISTORY_LIMIT, HISTORY_SCAN = 10, 5_000
# the jobs that hold a GPU: those with a row in `slots` (a running job's placed slots; `verify` checks them)
_HOLDS_A_GPU = "name IN (SELECT job FROM slots)"

Verdict = Literal["allowed", "refused"]
# applied: gpuadmin's own state changed; executed / partial / failed: the change was carried out on the bound cluster
# wholly, in part (the state holds the part done), or not at all; the rest changed nothing
Outcome = Literal["applied", "executed", "partial", "failed", "refused", "stale", "lock-held", "error"]
CHANGED_STATE: frozenset[Outcome] = frozenset({"applied", "executed", "partial"})  # the outcomes with a revision
ClusterKind = Literal["kubernetes", "vcenter"]
EntityKind = Literal["node", "job", "queue"]

_M = TypeVar("_M", bound=BaseModel)

_NODES: TypeAdapter[list[Node]] = TypeAdapter(list[Node])
_JOBS: TypeAdapter[list[Job]] = TypeAdapter(list[Job])
_QUEUES: TypeAdapter[list[Queue]] = TypeAdapter(list[Queue])

_SCHEMA = """
CREATE TABLE meta (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    cluster   TEXT    NOT NULL,
    revision  INTEGER NOT NULL,
    lineage   TEXT    NOT NULL,
    created   TEXT    NOT NULL
);
CREATE TABLE nodes  (name TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, data TEXT NOT NULL);
CREATE TABLE queues (name TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, data TEXT NOT NULL);
CREATE TABLE jobs   (name TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, data TEXT NOT NULL);
CREATE TABLE slots (
    node TEXT    NOT NULL,
    gpu  INTEGER NOT NULL,
    job  TEXT    NOT NULL REFERENCES jobs(name) ON DELETE CASCADE,
    PRIMARY KEY (node, gpu, job)
) WITHOUT ROWID;
CREATE INDEX slots_by_job ON slots(job);
CREATE TABLE journal (
    id            INTEGER PRIMARY KEY,
    at            TEXT    NOT NULL,
    actor         TEXT    NOT NULL,
    uid           INTEGER NOT NULL,
    source        TEXT    NOT NULL,
    origin        TEXT,
    command       TEXT    NOT NULL,
    base_revision INTEGER NOT NULL,
    revision      INTEGER,
    verdict       TEXT    NOT NULL CHECK (verdict IN ('allowed', 'refused')),
    outcome       TEXT    NOT NULL CHECK (outcome IN ('applied', 'executed', 'partial', 'failed', 'refused', 'stale',
                                                      'lock-held', 'error')),
    plan          TEXT,
    diff          TEXT,
    message       TEXT    NOT NULL DEFAULT '',
    execution     TEXT,
    CHECK ((outcome IN ('applied', 'executed', 'partial')) = (revision IS NOT NULL))
);
CREATE UNIQUE INDEX journal_applied_revision ON journal(revision) WHERE revision IS NOT NULL;
CREATE TABLE cluster_binding (
    id                      INTEGER PRIMARY KEY CHECK (id = 1),
    kind                    TEXT NOT NULL CHECK (kind IN ('kubernetes', 'vcenter')),
    context                 TEXT NOT NULL,
    server                  TEXT NOT NULL,
    insecure                INTEGER NOT NULL DEFAULT 0 CHECK (insecure IN (0, 1)),
    operator_namespace      TEXT,
    mig_parted_configmap    TEXT,
    device_plugin_configmap TEXT
);
CREATE TABLE cluster_versions (
    kind             TEXT NOT NULL,
    name             TEXT NOT NULL,
    resource_version TEXT NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
"""

# The cluster tables as version 2 made them: the step to version 2 creates these, whatever `_SCHEMA` says now (the
# steps after it bring them up, as they bring up a state migrated long ago).
_CLUSTER_TABLES_V2 = (
    """CREATE TABLE cluster_binding (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    kind     TEXT NOT NULL CHECK (kind IN ('kubernetes')),
    context  TEXT NOT NULL,
    server   TEXT NOT NULL
)""",
    """CREATE TABLE cluster_versions (
    kind             TEXT NOT NULL,
    name             TEXT NOT NULL,
    resource_version TEXT NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID""",
)


def _bind_to_clusters(conn: sqlite3.Connection) -> None:
    """Version 1 → 2 (issue 22): a state may be bound to a live cluster (`cluster_binding`, and the resourceVersion
    of each object as last synced), and the journal records what a change did on that cluster: the outcomes
    executed / partial / failed and the steps (`execution`). SQLite cannot alter a CHECK, so the journal is copied
    into a table of the new shape (ids, and so every reference to an entry, kept)."""
    conn.execute(_JOURNAL_V2)
    conn.execute(
        "INSERT INTO journal_v2 (id, at, actor, uid, source, origin, command, base_revision, revision, verdict, "
        "outcome, plan, diff, message) SELECT id, at, actor, uid, source, origin, command, base_revision, revision, "
        "verdict, outcome, plan, diff, message FROM journal")
    conn.execute("DROP TABLE journal")
    conn.execute("ALTER TABLE journal_v2 RENAME TO journal")
    conn.execute("CREATE UNIQUE INDEX journal_applied_revision ON journal(revision) WHERE revision IS NOT NULL")
    for statement in _CLUSTER_TABLES_V2:
        conn.execute(statement)


def _store_gpu_operator_places(conn: sqlite3.Connection) -> None:
    """Version 3 → 4: the binding records where the bound cluster's GPU Operator keeps its configs (its namespace,
    the mig-parted and device-plugin ConfigMaps), as `init --from-cluster` was given or found them, so that every
    later sync, diff and execution looks at the same ones. A state bound before has none (NULL): it goes on
    looking them up as it did."""
    for column in ("operator_namespace", "mig_parted_configmap", "device_plugin_configmap"):
        conn.execute(f"ALTER TABLE cluster_binding ADD COLUMN {column} TEXT")


_JOURNAL_V2 = _SCHEMA[_SCHEMA.index("CREATE TABLE journal ("):_SCHEMA.index("CREATE UNIQUE INDEX journal_applied")]
_JOURNAL_V2 = _JOURNAL_V2.replace("CREATE TABLE journal (", "CREATE TABLE journal_v2 (").rstrip().rstrip(";")


# The binding as version 3 made it (kubernetes or vcenter, and `insecure`): the step to version 3 creates it whatever
# `_SCHEMA` says now, as the step to version 2 does its tables.
_CLUSTER_BINDING_V3 = """CREATE TABLE cluster_binding_v3 (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    kind     TEXT NOT NULL CHECK (kind IN ('kubernetes', 'vcenter')),
    context  TEXT NOT NULL,
    server   TEXT NOT NULL,
    insecure INTEGER NOT NULL DEFAULT 0 CHECK (insecure IN (0, 1))
)"""


def _bind_to_vcenters(conn: sqlite3.Connection) -> None:
    """Version 2 → 3 (issue 24): a state may be bound to a vCenter too, and records whether its TLS certificate
    goes unverified (`--insecure`, shown wherever the binding is). SQLite cannot alter a CHECK: the one binding row
    is copied into a table of the new shape."""
    conn.execute(_CLUSTER_BINDING_V3)
    conn.execute("INSERT INTO cluster_binding_v3 (id, kind, context, server) "
                 "SELECT id, kind, context, server FROM cluster_binding")
    conn.execute("DROP TABLE cluster_binding")
    conn.execute("ALTER TABLE cluster_binding_v3 RENAME TO cluster_binding")


MIGRATIONS: tuple[Migration, ...] = (_bind_to_clusters, _bind_to_vcenters, _store_gpu_operator_places)
SCHEMA_VERSION = FIRST_SCHEMA_VERSION + len(MIGRATIONS)

_JOURNAL_COLUMNS = (
    "id, at, actor, uid, source, origin, command, base_revision, revision, verdict, outcome, "
    "plan, diff, message, execution"
)


def default_state_dir() -> Path:
    """$GPUADMIN_STATE, else $XDG_STATE_HOME/gpuadmin, else ~/.local/state/gpuadmin."""
    explicit = os.environ.get("GPUADMIN_STATE", "")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore a relative path
        return Path(xdg) / "gpuadmin"
    return Path.home() / ".local" / "state" / "gpuadmin"


@dataclass(frozen=True)
class ClusterBinding:
    """The live cluster a state is bound to: the kubeconfig context's name and its API server's address (a
    vCenter: the user and the vCenter's address), never a credential (those stay in the kubeconfig, or are given
    anew each time). `insecure`: the vCenter's TLS certificate is not verified (`--insecure`), shown wherever the
    binding is."""

    kind: ClusterKind
    context: str
    server: str
    insecure: bool = False
    # where the cluster's GPU Operator keeps its configs, as `init --from-cluster` was given or found them (its
    # ClusterPolicy's names); None in a state bound before they were stored (schema version 3 or older)
    operator_namespace: str | None = None
    mig_parted_configmap: str | None = None
    device_plugin_configmap: str | None = None


@dataclass(frozen=True)
class ClusterVersionChanges:
    """Some objects' resourceVersions: those to store (new or moved) and those to forget (deleted, or no longer
    read), by (kind, name) as `Store.cluster_versions` keys them; the others stay as stored."""

    stored: Mapping[tuple[str, str], str]
    forgotten: Collection[tuple[str, str]]


@dataclass
class JournalEntry:
    """One journal row: an applied change, or an attempt that was refused, stale, locked out or failed.

    `plan` is the planner's `Plan.to_json()` (opaque here); `diff` is a list of
    `{"kind": "node"|"job"|"queue", "name", "before": dict|None, "after": dict|None}`. `id`, `at` and,
    for applied entries, `revision` are filled in by the store when it writes the entry.
    """

    actor: str
    uid: int
    source: str
    command: str
    base_revision: int
    verdict: Verdict
    outcome: Outcome
    origin: str | None = None
    plan: dict[str, Any] | None = None
    diff: list[dict[str, Any]] | None = None
    message: str = ""
    revision: int | None = None
    at: str = ""
    id: int | None = None
    execution: list[dict[str, Any]] | None = None  # on a bound cluster: each step as carried out (op, target, status,
    # the API calls, the API's message)

    @classmethod
    def new(
        cls,
        command: str,
        base_revision: int,
        *,
        verdict: Verdict = "allowed",
        outcome: Outcome = "applied",
        plan: dict[str, Any] | None = None,
        diff: list[dict[str, Any]] | None = None,
        message: str = "",
        actor: Identity | None = None,
        origin: str | None = None,
        execution: list[dict[str, Any]] | None = None,
    ) -> JournalEntry:
        """An entry for this process: actor from `login_identity()`, origin from `SSH_CONNECTION` unless given
        (`cluster`: a sync, the cluster's own truth brought in)."""
        who = actor if actor is not None else login_identity()
        return cls(
            actor=who.name,
            uid=who.uid,
            source=who.source,
            origin=origin if origin is not None else _ssh_origin(),
            execution=execution,
            command=command,
            base_revision=base_revision,
            verdict=verdict,
            outcome=outcome,
            plan=plan,
            diff=diff,
            message=message,
        )


@dataclass
class _Rows:
    names: list[str] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    data: list[str] = field(default_factory=list)


class Store:
    """A gpuadmin state on disk. Open one with `Store.open` or `Store.create`; close it (or use `with`)."""

    def __init__(self, state_dir: Path, conn: sqlite3.Connection, *, writable: bool = True) -> None:
        self.state_dir = state_dir
        self.path = state_dir / DB_NAME
        self.writable = writable  # False: this user may only read the state (a viewer's read-only open)
        self._conn = conn
        self._mutex = threading.RLock()

    # opening ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, state_dir: Path, *, busy_timeout: float = BUSY_TIMEOUT_S) -> Store:
        state_dir = Path(state_dir)
        path = state_dir / DB_NAME
        try:
            os.stat(path)
        except PermissionError:
            raise StateReadOnly(f"{state_dir}: you may not read this state (ask its admins for access)") from None
        except OSError:
            pass
        if not path.is_file():
            raise StateMissing(
                f"no gpuadmin state in {state_dir} (create one with `gpuadmin init --from INVENTORY.yaml`)"
            )
        if not os.access(path, os.R_OK):
            raise StateReadOnly(f"{state_dir}: you may not read this state (ask its admins for access)")
        # SQLite follows a link to the database and writes a header into an empty file: what is there must be
        # the plain file gpuadmin made, still the one SQLite opened once it has
        checked = check_state_file(path)
        if checked.st_size == 0:
            raise StateCorrupt(f"{path}: not a gpuadmin state (an empty file)")
        writable = os.access(path, os.W_OK)
        conn = _connect(path, busy_timeout, create=False, readonly=not writable)
        try:
            try:
                now = os.lstat(path)
            except OSError as exc:
                raise from_os_error(path, exc) from None
            if (now.st_dev, now.st_ino, stat.S_ISLNK(now.st_mode)) != (checked.st_dev, checked.st_ino, False):
                raise UnsafeStateFile(f"{path}: replaced while it was being opened; look at it, then run the "
                                      "command again")
            _check_schema(conn, path, writable=writable)
        except BaseException:
            conn.close()
            raise
        return cls(state_dir, conn, writable=writable)

    @classmethod
    def create(
        cls,
        state_dir: Path,
        inventory: Inventory,
        *,
        force: bool = False,
        actor: Identity | None = None,
        command: str = "gpuadmin init",
        busy_timeout: float = BUSY_TIMEOUT_S,
    ) -> Store:
        """Create a state holding `inventory` at revision 0, journaled as an applied `init` entry.

        Refuses (`StateExists`) if a state is there already, unless `force`: then the existing state's
        rows are replaced in one transaction (the journal is kept; the revision moves on by one, so
        saved plans against it go stale). A state that cannot be opened is moved aside to
        `state.db.broken-<time>` first. A fresh state is built under a temporary name and renamed
        into place, so a crash during `create` leaves no state or a whole one.
        """
        state_dir = Path(state_dir)
        try:
            # a personal state's directory; a shared one was made by `init --shared`
            state_dir.mkdir(parents=True, exist_ok=True, mode=PERSONAL_DIR_MODE)
        except PermissionError as exc:
            raise StateReadOnly(f"{state_dir}: you may not create a state here ({exc.strerror})") from None
        except OSError as exc:
            raise from_os_error(state_dir, exc) from None
        who = actor if actor is not None else login_identity()
        path = state_dir / DB_NAME
        with _write_lock(state_dir, who, command):
            if path.exists():
                if not force:
                    raise StateExists(
                        f"a gpuadmin state already exists in {state_dir} (use --force to replace it)"
                    )
                try:
                    store = cls.open(state_dir, busy_timeout=busy_timeout)
                except StateCorrupt:
                    _guarded(path, _move_aside, path)
                else:
                    try:
                        store._replace_all(inventory, who, command)
                    except BaseException:
                        store.close()
                        raise
                    return store
            _guarded(path, _create_fresh, state_dir, inventory, who, command, busy_timeout)
            keep_wal_files(state_dir)
        return cls.open(state_dir, busy_timeout=busy_timeout)

    def close(self) -> None:
        with self._mutex:
            self._conn.close()
        if self.writable:
            keep_wal_files(self.state_dir)  # a shared state keeps them for read-only viewers

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # reading ---------------------------------------------------------------------------------
    def revision(self) -> int:
        with self._db() as conn:
            row = conn.execute("SELECT revision FROM meta WHERE id = 1").fetchone()
        if row is None:
            raise StateCorrupt(f"{self.path}: the meta row is missing")
        return int(row[0])

    def cluster(self) -> str:
        with self._db() as conn:
            row = conn.execute("SELECT cluster FROM meta WHERE id = 1").fetchone()
        if row is None:
            raise StateCorrupt(f"{self.path}: the meta row is missing")
        return str(row[0])

    def binding(self) -> ClusterBinding | None:
        """The live cluster this state is bound to (`init --from-cluster`), or None for a state of files."""
        with self._db() as conn:
            row = conn.execute("SELECT kind, context, server, insecure, operator_namespace, mig_parted_configmap, "
                               "device_plugin_configmap FROM cluster_binding WHERE id = 1").fetchone()
        if row is None:
            return None
        namespace, mig_parted, device_plugin = (None if value is None else str(value) for value in row[4:])
        return ClusterBinding(kind=row[0], context=str(row[1]), server=str(row[2]), insecure=bool(row[3]),
                              operator_namespace=namespace, mig_parted_configmap=mig_parted,
                              device_plugin_configmap=device_plugin)

    def bind(self, binding: ClusterBinding) -> None:
        """Bind the state to a cluster (or re-bind it: one binding a state)."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO cluster_binding (id, kind, context, server, insecure, "
                         "operator_namespace, mig_parted_configmap, device_plugin_configmap) "
                         "VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
                         (binding.kind, binding.context, binding.server, int(binding.insecure),
                          binding.operator_namespace, binding.mig_parted_configmap, binding.device_plugin_configmap))

    def cluster_versions(self) -> dict[tuple[str, str], str]:
        """The resourceVersion of each cluster object as last synced, by (kind, name): a node's name, a pod's
        NAMESPACE/NAME. A change executed on the cluster carries the one it was planned against (a 409 = stale)."""
        with self._db() as conn:
            rows = conn.execute("SELECT kind, name, resource_version FROM cluster_versions").fetchall()
        return {(str(kind), str(name)): str(version) for kind, name, version in rows}

    def set_cluster_versions(self, versions: Mapping[tuple[str, str], str]) -> None:
        """Replace the resourceVersions of the cluster's objects without a revision: what `init --from-cluster`
        read, and what a sync that found nothing to bring in read (a heartbeat moves them without changing what
        gpuadmin models), so that a change is planned against the versions the cluster has now."""
        with self._write() as conn:
            _replace_cluster_versions(conn, versions)

    def update_cluster_versions(self, changes: ClusterVersionChanges) -> None:
        """Store and forget some objects' resourceVersions, without a revision: what an incremental sync read of the
        objects that changed, where nothing gpuadmin models moved (`commit` takes them with a change)."""
        with self._write() as conn:
            _update_cluster_versions(conn, changes)

    def lineage(self) -> str:
        """A random id fixed when the state was created: a plan made on another state never applies here."""
        with self._db() as conn:
            row = conn.execute("SELECT lineage FROM meta WHERE id = 1").fetchone()
        if row is None:
            raise StateCorrupt(f"{self.path}: the meta row is missing")
        return str(row[0])

    def load(self) -> ClusterState:
        """The whole current revision, read on one snapshot, each table validated in one pydantic call."""
        return self._load()

    def load_holding(self) -> ClusterState:
        """The current revision's queues, nodes and only the jobs that hold a GPU, read on one snapshot: all a
        node or GPU listing reads (a GPU's use needs each holder's slots and request), without parsing the
        other jobs, most of a large state's (the pending ones). `tests/cli/test_state_matches_inventory.py`
        holds what it lists equal to the whole state's."""
        return self._load(_HOLDS_A_GPU)

    def _load(self, jobs_where: str = "") -> ClusterState:
        """The state at the current revision, with the jobs `jobs_where` (an SQL condition) keeps, or all."""
        with self._read() as conn:
            meta = conn.execute("SELECT cluster, revision FROM meta WHERE id = 1").fetchone()
            if meta is None:
                raise StateCorrupt(f"{self.path}: the meta row is missing")
            queues = _fetch(conn, "queues")
            nodes = _fetch(conn, "nodes")
            jobs = _fetch(conn, "jobs", jobs_where)
        inv = Inventory.model_construct(
            version=1,
            cluster=str(meta[0]),
            queues=self._validate("queues", _QUEUES, queues),
            nodes=self._validate("nodes", _NODES, nodes),
            jobs=self._validate("jobs", _JOBS, jobs, _share_requests(SharedRequests())),
        )
        state = ClusterState.from_inventory(inv, revision=int(meta[1]))
        # the rows' own positions (with the gaps removals leave), so undo restores into the same seq
        for kind, rows in (("queue", queues), ("node", nodes), ("job", jobs)):
            state.seqs[kind] = dict(zip(rows.names, rows.seqs, strict=True))  # type: ignore[index]
        return state

    def load_holders(self) -> dict[GpuKey, set[str]]:
        """Who holds which GPU, from the `slots` table (no job is parsed)."""
        holders: dict[GpuKey, set[str]] = {}
        with self._db() as conn:
            for node, gpu, job in conn.execute("SELECT node, gpu, job FROM slots"):
                holders.setdefault((str(node), int(gpu)), set()).add(str(job))
        return holders

    def counts(self) -> dict[str, int]:
        """Rows per table: nodes, jobs, queues, slots, journal."""
        with self._read() as conn:
            return {
                table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
                for table in ("nodes", "jobs", "queues", "slots", "journal")
            }

    def _validate(self, table: str, adapter: TypeAdapter[list[_M]], rows: _Rows,
                  compact: Callable[[list[_M]], list[_M]] | None = None) -> list[_M]:
        models: list[_M] = []
        chunk = 0
        try:
            # in chunks: one joined string of 100,000 rows and all its models at once is the load's peak
            for chunk in range(0, len(rows.data), _CHUNK):
                part = adapter.validate_json("[" + ",".join(rows.data[chunk : chunk + _CHUNK]) + "]",
                                             context=STORED)
                models += compact(part) if compact is not None else part
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = first.get("loc", ())
            index = chunk + loc[0] if loc and isinstance(loc[0], int) else None
            where = rows.names[index] if index is not None and index < len(rows.names) else "?"
            raise StateCorrupt(
                f"{self.path}: {table} row {where!r} does not validate ({exc.error_count()} errors; first: "
                f"{'.'.join(str(p) for p in loc[1:])}: {first.get('msg', '')})"
            ) from exc
        for name, model in zip(rows.names, models, strict=True):
            found = getattr(model, "name", None)
            if found != name:
                raise StateCorrupt(f"{self.path}: {table} row {name!r} holds an object named {found!r}")
        return models

    # journal ---------------------------------------------------------------------------------
    def journal(self, limit: int | None = None, since_id: int | None = None) -> list[JournalEntry]:
        """Entries oldest first. With `since_id`: those after it (at most `limit`, the oldest of them);
        without: the newest `limit` (all if None)."""
        with self._db() as conn:
            if since_id is not None:
                sql = f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE id > ? ORDER BY id"
                args: tuple[int, ...] = (since_id,)
                if limit is not None:
                    sql += " LIMIT ?"
                    args = (since_id, limit)
                rows = conn.execute(sql, args).fetchall()
            elif limit is not None:
                rows = conn.execute(
                    f"SELECT {_JOURNAL_COLUMNS} FROM journal ORDER BY id DESC LIMIT ?", (limit,)
                ).fetchall()
                rows.reverse()
            else:
                rows = conn.execute(f"SELECT {_JOURNAL_COLUMNS} FROM journal ORDER BY id").fetchall()
        return [self._entry_from_row(row) for row in rows]

    def entry(self, id: int) -> JournalEntry | None:
        with self._db() as conn:
            row = conn.execute(f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE id = ?", (id,)).fetchone()
        return None if row is None else self._entry_from_row(row)

    def touching(self, kind: str, name: str, limit: int = HISTORY_LIMIT,
                 scan: int = HISTORY_SCAN) -> list[JournalEntry]:
        """The newest `limit` applied entries (newest first) whose diff touches `kind`/`name`, looked for
        among the last `scan` entries only: a describe's history, bounded whatever the journal's size.

        No index: SQLite tests each scanned row's stored diff for the object's own opening
        (`{"kind": K, "name": N,`, how `Diff.to_json` and `json.dumps` write every diff item) with `instr`,
        a byte search that parses nothing, and stops at `limit` hits; only the hits are parsed, and checked
        again item by item. The cost is one pass over the text of at most `scan` diffs, newest first."""
        needle = f'{{"kind": {json.dumps(kind)}, "name": {json.dumps(name)},'
        with self._db() as conn:
            rows = conn.execute(
                f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE revision IS NOT NULL "
                "AND id > (SELECT coalesce(max(id), 0) FROM journal) - ? AND instr(diff, ?) > 0 "
                "ORDER BY id DESC LIMIT ?", (scan, needle, limit)).fetchall()
        entries = [self._entry_from_row(row) for row in rows]
        return [e for e in entries if any(d.get("kind") == kind and d.get("name") == name for d in e.diff or ())]

    def last_applied(self) -> JournalEntry | None:
        with self._db() as conn:
            row = conn.execute(
                f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE revision IS NOT NULL ORDER BY id DESC LIMIT 1"
            ).fetchone()
        return None if row is None else self._entry_from_row(row)

    def _entry_from_row(self, row: Sequence[Any]) -> JournalEntry:
        try:
            return _entry_from_row(row)
        except (ValueError, TypeError) as exc:
            raise StateCorrupt(f"{self.path}: journal entry {row[0]!r} does not read ({type(exc).__name__})") from exc

    def changed_since(self, revision: int) -> tuple[int, set[tuple[str, str]]]:
        """The current revision and every (kind, name) an applied entry after `revision` touched: what a
        live view re-reads, without loading the state."""
        with self._read() as conn:
            current = int(conn.execute("SELECT revision FROM meta WHERE id = 1").fetchone()[0])
            rows = conn.execute(
                "SELECT diff FROM journal WHERE revision > ? ORDER BY revision", (revision,)
            ).fetchall()
        touched: set[tuple[str, str]] = set()
        try:
            for (diff,) in rows:
                for item in json.loads(diff) if diff else ():
                    touched.add((str(item["kind"]), str(item["name"])))
        except (ValueError, TypeError, KeyError) as exc:
            raise StateCorrupt(f"{self.path}: a journal entry's diff does not read ({type(exc).__name__})") from exc
        return current, touched

    # derived data: a per-revision cache of what is costly to compute (why-pending reasons) ------
    def derived(self, key: str, revision: int) -> Any | None:
        """The cached value of `key` if it was computed at `revision`, else None."""
        with self._db() as conn:
            try:
                row = conn.execute(
                    "SELECT data FROM derived WHERE key = ? AND revision = ?", (key, revision)
                ).fetchone()
            except sqlite3.OperationalError:  # a state made before the cache existed: no table yet
                return None
        return None if row is None else json.loads(row[0])

    def save_derived(self, key: str, revision: int, value: Any) -> bool:
        """Cache `value` for `revision`; False (and nothing cached) where the state is read-only to us."""
        try:
            with self._write() as conn:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS derived "
                    "(key TEXT PRIMARY KEY, revision INTEGER NOT NULL, data TEXT NOT NULL)"
                )
                conn.execute(
                    "INSERT OR REPLACE INTO derived (key, revision, data) VALUES (?, ?, ?)",
                    (key, revision, json.dumps(value, separators=(",", ":"), allow_nan=False)),
                )
        except StoreError:  # read-only to us, busy, or a full disk: a cache that is not saved is computed again
            return False
        return True

    # writing ---------------------------------------------------------------------------------
    def write_lock(
        self, actor: Identity, command: str, *, timeout: float = 0.0
    ) -> contextlib.AbstractContextManager[LockHolder]:
        """The state's exclusive advisory lock (see `gpuadmin.store.lock.write_lock`); `LockHeld` if taken."""
        return _write_lock(self.state_dir, actor, command, timeout=timeout)

    def commit(self, base_revision: int, view: View, entry: JournalEntry,
               cluster_versions: Mapping[tuple[str, str], str] | ClusterVersionChanges | None = None) -> int:
        """Write a view's edits as the next revision, atomically; return the new revision.

        Raises `StaleRevision` (and writes nothing) if the state is no longer at `base_revision`; the
        caller journals that attempt with `record`. Fills in `entry`'s id, at, revision, outcome
        ("applied" unless the entry says executed or partial), base_revision, and its diff if it had none
        (computed from the rows replaced). `cluster_versions`: on a bound state, the resourceVersions the cluster
        now has, replacing those stored, in the same transaction; or, as `ClusterVersionChanges`, those of the
        objects that changed (an incremental sync), the others kept.
        """
        if entry.outcome not in CHANGED_STATE:
            entry.outcome = "applied"
        for kind, edits in (("node", view.node_edits), ("job", view.job_edits), ("queue", view.queue_edits)):
            for name, model in edits.items():
                if model is not None and model.name != name:
                    raise ValueError(f"{kind} edit {name!r} holds an object named {model.name!r}")
        with self._write() as conn:
            current = int(conn.execute("SELECT revision FROM meta WHERE id = 1").fetchone()[0])
            if current != base_revision:
                raise StaleRevision(current, base_revision)
            diff: list[dict[str, Any]] = []
            _apply_edits(conn, "nodes", "node", view.node_edits, diff, view)
            _apply_edits(conn, "queues", "queue", view.queue_edits, diff, view)
            _apply_edits(conn, "jobs", "job", view.job_edits, diff, view)
            for name, job in view.job_edits.items():
                conn.execute("DELETE FROM slots WHERE job = ?", (name,))
                if job is not None:
                    conn.executemany(
                        "INSERT INTO slots (node, gpu, job) VALUES (?, ?, ?)",
                        [(node, gpu, name) for node, gpu in sorted(job_gpu_keys(job))],
                    )
            new = current + 1
            entry.base_revision = base_revision
            entry.revision = new
            if isinstance(cluster_versions, ClusterVersionChanges):
                _update_cluster_versions(conn, cluster_versions)
            elif cluster_versions is not None:
                _replace_cluster_versions(conn, cluster_versions)
            if entry.diff is None:
                entry.diff = diff
            _insert_entry(conn, entry)
            conn.execute("UPDATE meta SET revision = ? WHERE id = 1", (new,))
        return new

    def record(self, entry: JournalEntry) -> int:
        """Journal an attempt that changed nothing (refused, stale, lock-held, error, failed); return its id."""
        if entry.outcome in CHANGED_STATE:
            raise ValueError(
                "record() is for attempts that changed nothing; commit() journals applied changes"
            )
        entry.revision = None
        with self._write() as conn:
            return _insert_entry(conn, entry)

    def verify(self) -> list[str]:
        """Consistency problems, empty when all is well: SQLite's integrity check, slots vs jobs, and the
        journal vs the revision. Reads everything; meant for tests and `doctor`-style commands."""
        problems: list[str] = []
        with self._db() as conn:
            result = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
            if result != ["ok"]:
                problems.extend(f"integrity: {line}" for line in result)
                return problems
            fk = conn.execute("PRAGMA foreign_key_check").fetchall()
            if fk:
                problems.append(f"foreign keys: {len(fk)} dangling rows")
        state = self.load()
        expected = {key: names for key, names in state.holders.items() if names}
        if self.load_holders() != expected:
            problems.append("slots table disagrees with the jobs' placements")
        last = self.last_applied()
        if last is None or last.revision != state.revision:
            got = None if last is None else last.revision
            problems.append(
                f"journal: last applied entry is at revision {got}, the state at {state.revision}"
            )
        with self._db() as conn:
            revisions = [
                int(r[0])
                for r in conn.execute(
                    "SELECT revision FROM journal WHERE revision IS NOT NULL ORDER BY id"
                )
            ]
        if any(b <= a for a, b in itertools.pairwise(revisions)):
            problems.append("journal: applied revisions do not strictly increase")
        return problems

    # internals -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The connection, to this thread alone; what SQLite raises becomes a `StoreError` that says what it
        means (a full disk, a read-only file system, a row that is not UTF-8), never a traceback."""
        with self._mutex:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise from_sqlite_error(self.path, exc) from exc

    @contextlib.contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._db() as conn:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._db() as conn:
            conn.execute("BEGIN IMMEDIATE")  # busy past the timeout: `StateBusy`, by `_db`
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already (a full disk)
                        conn.execute("ROLLBACK")
                raise

    def _replace_all(self, inventory: Inventory, actor: Identity, command: str) -> None:
        with self._write() as conn:
            current = int(conn.execute("SELECT revision FROM meta WHERE id = 1").fetchone()[0])
            # the replaced state's cluster binding goes with it: a state made from a file is bound to nothing
            for table in ("slots", "jobs", "nodes", "queues", "cluster_binding", "cluster_versions"):
                conn.execute(f"DELETE FROM {table}")
            _insert_inventory(conn, inventory)
            conn.execute(
                "UPDATE meta SET cluster = ?, revision = ?, lineage = ? WHERE id = 1",
                (inventory.cluster, current + 1, uuid.uuid4().hex),
            )
            entry = _init_entry(actor, command, current, current + 1, "replaced the state (--force)")
            _insert_entry(conn, entry)


# module helpers ------------------------------------------------------------------------------
SharedRequests = dict[tuple[object, ...], Request]


def _share_requests(shared: SharedRequests) -> Callable[[list[Job]], list[Job]]:
    """One Request object for all jobs that ask the same: at 100,000 jobs, most requests repeat a few dozen
    shapes, and each copy costs ~0.6 kB (the model, its dict, its fields-set). Safe because nothing mutates
    a loaded model: every change builds new ones (`model_copy`), which leaves the shared one as it was."""

    def share(jobs: list[Job]) -> list[Job]:
        for job in jobs:
            request = job.request
            first = shared.setdefault(tuple(request.__dict__.values()), request)
            if first is not request:
                job.__dict__["request"] = first
        return jobs

    return share


def _connect(
    path: Path, busy_timeout: float, *, create: bool, readonly: bool = False
) -> sqlite3.Connection:
    mode = "rwc" if create else "ro" if readonly else "rw"
    uri = f"file:{quote(str(path))}?mode={mode}"
    try:
        conn = sqlite3.connect(
            uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise from_sqlite_error(path, exc) from exc
    try:
        try:
            mode_row = conn.execute("PRAGMA journal_mode=WAL").fetchone()
        except sqlite3.OperationalError as exc:
            missing = wal_files_missing(path.parent) if readonly else []
            if not missing:
                raise
            if storage_cause(path.parent) == "its file system is read-only":
                raise StateReadOnly(
                    f"{path.parent}: cannot read the state: its file system is read-only and "
                    f"{' and '.join(missing)} are missing (SQLite needs them to read a WAL database; they are made "
                    "by any gpuadmin command on a writable file system)"
                ) from exc
            raise StoreError(
                f"{path.parent}: cannot read the state read-only: {' and '.join(missing)} are missing and you "
                f"may not create them ({exc}). Any operator's next gpuadmin command puts them back; see "
                "docs/operations.md"
            ) from exc
        if mode_row is None or str(mode_row[0]).lower() != "wal":
            raise StateCorrupt(f"{path}: cannot switch the database to WAL mode (got {mode_row})")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    except sqlite3.Error as exc:
        conn.close()
        raise from_sqlite_error(path, exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _check_schema(conn: sqlite3.Connection, path: Path, *, writable: bool) -> None:
    """Refuse what is not a gpuadmin state or is newer than this code; migrate an older one (`MIGRATIONS`)."""
    try:
        version = _schema_version(conn)
        if version == 0:
            raise StateCorrupt(f"{path}: not a gpuadmin state (no schema version)")
        if version > SCHEMA_VERSION:
            raise StateTooNew(
                f"{path}: schema version {version} was written by a newer gpuadmin; this one reads versions up to "
                f"{SCHEMA_VERSION}: upgrade gpuadmin (the state is left as it is)"
            )
        if version < FIRST_SCHEMA_VERSION:
            raise StateCorrupt(f"{path}: unknown old schema version {version}")
        if version < SCHEMA_VERSION:
            if not writable:
                raise StateReadOnly(f"{path}: schema version {version} must be migrated to {SCHEMA_VERSION}, "
                                    "and you may not write this state: run any gpuadmin command on it as one "
                                    "who may")
            _migrate(conn)
        if conn.execute("SELECT 1 FROM meta WHERE id = 1").fetchone() is None:
            raise StateCorrupt(f"{path}: the meta row is missing")
    except sqlite3.Error as exc:
        raise from_sqlite_error(path, exc) from exc


def _schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _migrate(conn: sqlite3.Connection) -> None:
    """Apply the steps the state lacks, each in its own write transaction with its version bump. The version is
    read again under the write lock: another process may have migrated the state meanwhile."""
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = _schema_version(conn)
            if version >= SCHEMA_VERSION:
                conn.execute("ROLLBACK")
                return
            MIGRATIONS[version - FIRST_SCHEMA_VERSION](conn)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _fetch(conn: sqlite3.Connection, table: str, where: str = "") -> _Rows:
    """A table's rows in order; only those `where` (an SQL condition of this module's) keeps where given."""
    rows = _Rows()
    cursor = conn.execute(f"SELECT name, seq, data FROM {table}{f' WHERE {where}' if where else ''} ORDER BY seq")
    for name, seq, data in cursor:
        rows.names.append(name)
        rows.seqs.append(seq)
        rows.data.append(data)
    return rows


def _dump(model: BaseModel) -> str:
    """Rows leave out fields at their defaults: a third of the bytes, and loading 100,000 jobs validates
    in about half the time. The diff's before/after dicts are in the same sparse form.

    A non-finite number is never stored: pydantic would write it as `null` (a row that no longer validates,
    and every later command on the state refused) or as a bare `Infinity` (not JSON). The models' bounded
    types refuse them on input; a model built around them (`model_copy`) is refused here. StrictModel writes
    them as the bare words, so only a row holding one of the words needs the exact check."""
    data = model.model_dump_json(exclude_defaults=True)
    if ("Infinity" in data or "NaN" in data) and _holds_non_finite(data):
        name = getattr(model, "name", "?")
        raise InputError([Diagnostic(f"{type(model).__name__.lower()} {name!r} holds a number that is not "
                                     "finite; nothing was written")])
    return data


def _holds_non_finite(data: str) -> bool:
    """Whether JSON text holds `Infinity`, `-Infinity` or `NaN` as a number (not inside a string)."""
    found: list[str] = []
    json.loads(data, parse_constant=found.append)
    return bool(found)


def _apply_edits(
    conn: sqlite3.Connection,
    table: str,
    kind: EntityKind,
    edits: dict[str, Node | None] | dict[str, Job | None] | dict[str, Queue | None],
    diff: list[dict[str, Any]],
    view: View,
) -> None:
    """Write one table's edits in the order `ClusterState.commit` folds them: removals first (they free
    positions), then the entities a restore puts at a position (an undo puts a re-submitted job back where it
    was), then the new ones at the end. A moved row is parked at its negated position first, so that two rows
    trading positions never meet on the UNIQUE seq."""
    rows: dict[str, tuple[Any, int] | None] = {}
    for name in edits:
        rows[name] = conn.execute(f"SELECT data, seq FROM {table} WHERE name = ?", (name,)).fetchone()
    for name, model in edits.items():
        if model is None:
            conn.execute(f"DELETE FROM {table} WHERE name = ?", (name,))
    placed = {name: at for name, model in edits.items()
              if model is not None and (at := view.seq_edits.get((kind, name))) is not None}
    moved = [(name, at) for name, at in placed.items() if (row := rows[name]) is not None and row[1] != at]
    for name, at in moved:
        conn.execute(f"UPDATE {table} SET seq = ? WHERE name = ?", (-at, name))
    for name, at in moved:
        conn.execute(f"UPDATE {table} SET seq = ? WHERE name = ?", (at, name))
    datas: dict[str, str] = {}
    for name, at in placed.items():
        model = edits[name]
        assert model is not None
        datas[name] = data = _dump(model)
        if rows[name] is None:  # undo puts it back where it was
            conn.execute(f"INSERT INTO {table} (name, seq, data) VALUES (?, ?, ?)", (name, at, data))
        else:
            conn.execute(f"UPDATE {table} SET data = ? WHERE name = ?", (data, name))
    for name, model in edits.items():
        if model is None or name in placed:
            continue
        datas[name] = data = _dump(model)
        if rows[name] is None:
            conn.execute(
                f"INSERT INTO {table} (name, seq, data) "
                f"VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM {table}), ?)",
                (name, data),
            )
        else:
            conn.execute(f"UPDATE {table} SET data = ? WHERE name = ?", (data, name))
    for name in edits:
        row = rows[name]
        before = None if row is None else json.loads(row[0])
        after = json.loads(datas[name]) if name in datas else None
        if before is not None or after is not None:
            diff.append({"kind": kind, "name": name, "before": before, "after": after})


def _insert_inventory(conn: sqlite3.Connection, inventory: Inventory) -> None:
    tables: tuple[tuple[str, Sequence[Queue | Node | Job]], ...] = (
        ("queues", inventory.queues),
        ("nodes", inventory.nodes),
        ("jobs", inventory.jobs),
    )
    for table, models in tables:
        conn.executemany(
            f"INSERT INTO {table} (name, seq, data) VALUES (?, ?, ?)",
            ((m.name, seq, _dump(m)) for seq, m in enumerate(models, start=1)),
        )
    conn.executemany(
        "INSERT INTO slots (node, gpu, job) VALUES (?, ?, ?)",
        ((node, gpu, job.name) for job in inventory.jobs for node, gpu in sorted(job_gpu_keys(job))),
    )


def _init_entry(actor: Identity, command: str, base: int, revision: int, message: str) -> JournalEntry:
    entry = JournalEntry.new(command, base, actor=actor, message=message)
    entry.revision = revision
    return entry


def _insert_entry(conn: sqlite3.Connection, entry: JournalEntry) -> int:
    if not entry.at:
        entry.at = utc_now()
    cursor = conn.execute(
        "INSERT INTO journal (at, actor, uid, source, origin, command, base_revision, revision, verdict, "
        "outcome, plan, diff, message, execution) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry.at,
            entry.actor,
            entry.uid,
            entry.source,
            entry.origin,
            entry.command,
            entry.base_revision,
            entry.revision,
            entry.verdict,
            entry.outcome,
            None if entry.plan is None else json.dumps(entry.plan, allow_nan=False),
            None if entry.diff is None else json.dumps(entry.diff, allow_nan=False),
            entry.message,
            None if entry.execution is None else json.dumps(entry.execution, allow_nan=False),
        ),
    )
    entry.id = cursor.lastrowid
    return int(cursor.lastrowid or 0)


def _entry_from_row(row: Sequence[Any]) -> JournalEntry:
    (id_, at, actor, uid, source, origin_, command, base, revision, verdict, outcome, plan, diff, message,
     execution) = row
    return JournalEntry(
        actor=actor,
        uid=int(uid),
        source=source,
        origin=origin_,
        command=command,
        base_revision=int(base),
        verdict=verdict,
        outcome=outcome,
        plan=None if plan is None else json.loads(plan),
        diff=None if diff is None else json.loads(diff),
        message=message,
        revision=None if revision is None else int(revision),
        at=at,
        id=int(id_),
        execution=None if execution is None else json.loads(execution),
    )


def _update_cluster_versions(conn: sqlite3.Connection, changes: ClusterVersionChanges) -> None:
    conn.executemany("DELETE FROM cluster_versions WHERE kind = ? AND name = ?",
                     [*changes.forgotten, *changes.stored])
    conn.executemany("INSERT INTO cluster_versions (kind, name, resource_version) VALUES (?, ?, ?)",
                     [(kind, name, version) for (kind, name), version in changes.stored.items()])


def _replace_cluster_versions(conn: sqlite3.Connection, versions: Mapping[tuple[str, str], str]) -> None:
    conn.execute("DELETE FROM cluster_versions")
    conn.executemany("INSERT INTO cluster_versions (kind, name, resource_version) VALUES (?, ?, ?)",
                     [(kind, name, version) for (kind, name), version in versions.items()])


def _create_fresh(
    state_dir: Path, inventory: Inventory, actor: Identity, command: str, busy_timeout: float
) -> None:
    """Build the state under a temporary name, then rename it into place (the caller holds the lock)."""
    path = state_dir / DB_NAME
    for leftover in state_dir.glob(f".{DB_NAME}.tmp-*"):  # from a create that was killed
        leftover.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):  # a WAL without its database must never be replayed into a new one
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    tmp = state_dir / f".{DB_NAME}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    mode = file_mode(state_dir)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # whatever the umask: SQLite gives the -wal and -shm files this mode too
    finally:
        os.close(fd)
    try:
        conn = _connect(tmp, busy_timeout, create=True)
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (id, cluster, revision, lineage, created) VALUES (1, ?, 0, ?, ?)",
                (inventory.cluster, uuid.uuid4().hex, utc_now()),
            )
            _insert_inventory(conn, inventory)
            _insert_entry(conn, _init_entry(actor, command, 0, 0, "created the state"))
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()  # the last connection's close checkpoints and removes the -wal file
        wal = Path(f"{tmp}-wal")
        if wal.exists() and wal.stat().st_size > 0:  # never drop a WAL that may hold committed pages
            raise StoreError(f"{tmp}: the new state's WAL was not checkpointed")
        for leftover in (wal, Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        _fsync_dir(state_dir)
    except BaseException:
        for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            p.unlink(missing_ok=True)
        raise


def _guarded(where: Path, step: Callable[..., None], *args: Any) -> None:
    """`step(*args)`, an OS or SQLite error from it said as what it means for the state (a full disk, a
    read-only file system) instead of a traceback."""
    try:
        step(*args)
    except OSError as exc:
        raise from_os_error(where, exc) from None
    except sqlite3.Error as exc:
        raise from_sqlite_error(where, exc) from None


def _move_aside(path: Path) -> None:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for suffix in ("", "-wal", "-shm"):
        src = Path(f"{path}{suffix}")
        if src.exists():
            os.replace(src, Path(f"{path}.broken-{stamp}{suffix}"))
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
