"""The JSON and YAML output of every listing as pydantic models, made from the listings' typed columns.

`get KIND -o json|yaml` writes `{"format_version", "kind": "KIND-list", "revision", "items": [...]}`; each item is
`{"kind", <each column, lower case>, "spec"}`: the column values typed by their declaration
(`gpuadmin.render.rows.LISTINGS`), and, for nodes, jobs and queues, the whole object as the inventory writes it.
The models are the contract: docs/schemas/<listing>.json is their JSON Schema (tests/cli/test_output_schemas.py
fails when the checked-in files differ), and `FORMAT_VERSION` changes only when a field is removed, renamed or
changes type (docs/cli.md, "Output formats").
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from gpuadmin.model import Job, Node, Queue
from gpuadmin.render.rows import JOURNAL, LISTINGS, Listing

FORMAT_VERSION = 2  # 2: jobs REASON is the code (the words are MESSAGE); USED, SHARE, QUOTA, LIMIT gone
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# the listings whose items carry their whole object as `spec` (`Service.get(specs=True)`)
class _Output(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a field the model does not name is a change of the format


class JournalStep(_Output):
    """One change of an entry as executed on the bound cluster (the store's `JournalEntry.execution`)."""

    op: str
    target: str
    status: str
    calls: list[str]
    message: str


class JournalExecution(_Output):
    """What an entry executed on the cluster; absent for an entry that executed nothing."""

    execution: list[JournalStep]


_SPECS: dict[str, type[BaseModel]] = {"nodes": Node, "jobs": Job, "queues": Queue, "journal": JournalExecution}


def _camel(kind: str) -> str:
    return "".join(part.capitalize() for part in kind.split("-"))


def item_model(listing_name: str, listing: Listing) -> type[BaseModel]:
    """One item of the listing: its kind, each column by its declared type, and the spec where it has one."""
    fields: dict[str, Any] = {"kind": (Literal[listing.kind], ...)}
    for column in listing.fields:
        fields[column.name.lower()] = (column.value_type, Field(description=f"{column.kind} column {column.name}"))
    spec = _SPECS.get(listing_name)
    if spec is not None:
        fields["spec"] = (spec | None, Field(default=None, description=f"the whole {listing.kind}, as the "
                                                                          "inventory writes it"))
    return create_model(f"{_camel(listing.kind)}Item", __base__=_Output, **fields)


def list_model(listing_name: str) -> type[BaseModel]:
    """The whole `-o json` document of `get LISTING`."""
    listing = JOURNAL if listing_name == "journal" else LISTINGS[listing_name]
    item = item_model(listing_name, listing)
    fields: dict[str, Any] = {
        "format_version": (Literal[FORMAT_VERSION], Field(description="the output format's version (docs/cli.md)")),
        "kind": (Literal[f"{listing.kind}-list"], ...),
        "revision": (int, Field(description="the state's revision the listing was read at")),
        "items": (list[item], ...),  # type: ignore[valid-type]
    }
    return create_model(f"{_camel(listing.kind)}List", __base__=_Output, **fields)


def listing_names() -> tuple[str, ...]:
    return (*LISTINGS, "journal")


def json_schema(listing_name: str) -> dict[str, Any]:
    """The JSON Schema of `get LISTING -o json`: what the output holds (the serialization side of the models)."""
    schema = list_model(listing_name).model_json_schema(mode="serialization")
    return {"$schema": SCHEMA_DIALECT, **schema}
