"""Change files (DESIGN §4): `changes: [...]`, read with the same file:line:column errors as inventories."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import ValidationError

from gpuadmin.engine.changes import Change, ChangeFile
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.inventory import Inventory
from gpuadmin.store.inventory_io import schema_diagnostics, validate_inventory
from gpuadmin.store.yamlsafe import LoadedYaml, load_yaml, load_yaml_file

# pydantic puts a discriminated union's tag into an error's location (`changes.0.set-mig.node`);
# the file has no such key, so it is dropped before the location is looked up.
OPS: frozenset[str] = frozenset(
    get_args(member.model_fields["op"].annotation)[0] for member in get_args(get_args(Change)[0])
)


def validate_changes(loaded: LoadedYaml) -> list[Change]:
    try:
        return ChangeFile.model_validate(loaded.data).changes
    except ValidationError as exc:
        raise InputError(schema_diagnostics(exc, loaded, ChangeFile, union_tags=OPS)) from None


def load_changes(path: str | Path) -> list[Change]:
    return validate_changes(load_yaml_file(path))


def parse_changes(text: str | bytes, file: str = "<changes>") -> list[Change]:
    return validate_changes(load_yaml(text, file))


def located_in(error: InputError, path: str | Path) -> InputError:
    """A plan of this file's changes found them bad (a restore's position taken, say): its diagnostics, which
    name a change by its path (`changes[2].seq`), with this file's line:column."""
    if not any(d.file is None and d.path[:1] == ("changes",) for d in error.diagnostics):
        return error
    loaded = load_yaml_file(path)
    return InputError([loaded.locate(d) if d.file is None and d.path[:1] == ("changes",) else d
                       for d in error.diagnostics])


def load_document(path: str | Path) -> tuple[Literal["inventory", "changes"], Inventory | list[Change]]:
    """An inventory or a change file, told apart by its top-level `changes` key."""
    loaded = load_yaml_file(path)
    if isinstance(loaded.data, dict) and "changes" in loaded.data:
        return "changes", validate_changes(loaded)
    if not isinstance(loaded.data, dict):
        raise InputError([Diagnostic("expected a mapping (an inventory, or a change file with 'changes')",
                                     kind="schema", file=str(path), line=1, column=1)])
    return "inventory", validate_inventory(loaded)
