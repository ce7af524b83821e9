"""Loading in chunks with shared requests: the same state, less memory, and errors still name their row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gpuadmin.service import Service
from gpuadmin.store import StateCorrupt, Store, state_db

SAMPLE = Path(__file__).resolve().parents[2] / "sample-inventories" / "oci-h100.yaml"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    Service.init(tmp_path / "state", SAMPLE)
    return tmp_path / "state"


def test_equal_requests_are_one_object_and_the_state_is_unchanged(state: Path, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    whole = Store.open(state).load()
    monkeypatch.setattr(state_db, "_CHUNK", 7)  # several chunks: sharing spans them
    chunked = Store.open(state).load()
    assert chunked.jobs == whole.jobs and list(chunked.jobs) == list(whole.jobs)
    by_shape: dict[str, set[int]] = {}
    for job in chunked.jobs.values():
        by_shape.setdefault(job.request.model_dump_json(), set()).add(id(job.request))
    assert all(len(ids) == 1 for ids in by_shape.values()), "one Request object per distinct request"
    assert len(by_shape) < len(chunked.jobs)


def test_a_bad_row_in_a_later_chunk_is_named(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = sqlite3.connect(state / "state.db")
    name = conn.execute("SELECT name FROM jobs ORDER BY seq LIMIT 1 OFFSET 20").fetchone()[0]
    conn.execute("UPDATE jobs SET data = json_set(data, '$.priority', 'high') WHERE name = ?", (name,))
    conn.commit()
    conn.close()
    monkeypatch.setattr(state_db, "_CHUNK", 7)
    with pytest.raises(StateCorrupt, match=f"jobs row '{name}' does not validate"):
        Store.open(state).load()
