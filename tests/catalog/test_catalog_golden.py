"""The loaded catalog, every record and field, equals a snapshot taken with the hand-written loader it replaced.

golden/catalog.json was written by the loader before its validation moved to pydantic (issue 20 item 6); the
pydantic loader must rebuild the same records byte for byte: same values, same types (an int is not a float),
same order of every mapping and tuple, the per-field provenance and the lookup indexes included.
GPUADMIN_UPDATE_GOLDEN=1 rewrites the file (review the diff: a change here is a change of catalog facts).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.catalog import Catalog, GpuModel, load_catalog

GOLDEN = Path(__file__).parent / "golden" / "catalog.json"


def _plain(value: Any) -> Any:
    """JSON-ready form of a record tree: each dataclass with its type name and every field, in field order."""
    if isinstance(value, GpuModel | Catalog) or dataclasses.is_dataclass(value):
        out: dict[str, Any] = {"__type__": type(value).__name__}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.name.startswith("_by_"):  # the lookup indexes of Catalog: key -> model, by name
                out[f.name] = {str(k): model.name for k, model in item.items()}
            else:
                out[f.name] = _plain(item)
        return out
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    assert value is None or isinstance(value, str | int | float | bool), type(value)
    return value


def _snapshot(catalog: Catalog) -> str:
    return json.dumps(_plain(catalog), indent=1, ensure_ascii=False) + "\n"


def test_loaded_catalog_equals_the_golden_snapshot() -> None:
    text = _snapshot(load_catalog())
    if os.environ.get("GPUADMIN_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
        return
    if not GOLDEN.exists():
        pytest.fail(f"no golden file {GOLDEN}; run with GPUADMIN_UPDATE_GOLDEN=1 to create it")
    assert text == GOLDEN.read_text(encoding="utf-8"), "the loaded catalog differs from golden/catalog.json"
