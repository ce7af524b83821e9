"""Inventory YAML I/O with file:line:column errors (and, later, the SQLite state, journal and locking)."""

from gpuadmin.store.inventory_io import (
    dump_inventory,
    inventory_data,
    load_inventory,
    load_model_file,
    parse_inventory,
    schema_diagnostics,
    validate_inventory,
)
from gpuadmin.store.yamlsafe import LoadedYaml, load_yaml, load_yaml_file

__all__ = [
    "LoadedYaml",
    "dump_inventory",
    "inventory_data",
    "load_inventory",
    "load_model_file",
    "load_yaml",
    "load_yaml_file",
    "parse_inventory",
    "schema_diagnostics",
    "validate_inventory",
]

# SQLite state, journal, write lock and login identity (state_db.py, lock.py, identity.py, errors.py).
from gpuadmin.store.errors import (
    LockHeld,
    LockHolder,
    StaleRevision,
    StateBusy,
    StateCorrupt,
    StateExists,
    StateMissing,
    StateReadOnly,
    StoreError,
)
from gpuadmin.store.identity import Identity, login_identity, origin
from gpuadmin.store.state_db import ClusterBinding, ClusterVersionChanges, JournalEntry, Store, default_state_dir

__all__ += [
    "ClusterBinding",
    "ClusterVersionChanges",
    "Identity",
    "JournalEntry",
    "LockHeld",
    "LockHolder",
    "StaleRevision",
    "StateBusy",
    "StateCorrupt",
    "StateExists",
    "StateMissing",
    "StateReadOnly",
    "Store",
    "StoreError",
    "default_state_dir",
    "login_identity",
    "origin",
]

# Change files (changes_io.py), and `load_document`, which tells an inventory from a change file (validate).
from gpuadmin.store.changes_io import load_changes, load_document, parse_changes  # noqa: E402

__all__ += ["load_changes", "load_document", "parse_changes"]
