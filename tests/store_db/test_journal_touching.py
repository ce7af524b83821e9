"""`Store.touching` (a describe's Events) finds entries by a byte search of the stored diff text before parsing
any: a fast path, held here equal to the reference — every applied entry of the journal parsed, newest first,
kept where a diff item names the object — on names that are hard to search for (quotes, escape bytes, brackets,
non-ASCII), and with the bounds (`limit`, `scan`) applied to both."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadmin.service import Service
from gpuadmin.store import JournalEntry

FIXTURES = Path(__file__).resolve().parents[1] / "tui" / "fixtures"


def _reference(entries: list[JournalEntry], kind: str, name: str, limit: int, scan: int) -> list[int]:
    newest = max((e.id for e in entries), default=0)
    kept = [e for e in sorted(entries, key=lambda e: e.id, reverse=True)
            if e.id > newest - scan and e.outcome == "applied"
            and any(d.get("kind") == kind and d.get("name") == name for d in e.diff or ())]
    return [e.id for e in kept[:limit]]


@pytest.mark.parametrize("inventory", ["cluster.yaml", "hostile.yaml", "invisible.yaml"])
def test_touching_equals_parsing_the_whole_journal(tmp_path: Path, inventory: str) -> None:
    path = tmp_path / "state"
    Service.init(path, FIXTURES / inventory)
    service = Service(state_dir=path)
    nodes = [str(row["NAME"]) for row in service.get("nodes").rows]
    for round_ in range(3):  # each node cordoned and uncordoned, alone and together: many entries, some shared
        for node in nodes:
            service.submit(service.plan(service.build_changes([{"op": "cordon", "node": node}])), confirmed=True)
        service.submit(service.plan(service.build_changes(
            [{"op": "uncordon", "node": node} for node in nodes[round_ % 2::2]])), confirmed=True)
    store = service.store
    assert store is not None
    entries = store.journal()
    for node in nodes:
        for limit, scan in ((100, 10_000), (2, 10_000), (100, 5), (1, 3)):
            found = [e.id for e in store.touching("node", node, limit=limit, scan=scan)]
            assert found == _reference(entries, "node", node, limit, scan), (node, limit, scan)
        assert store.touching("node", node, limit=100, scan=10_000), node  # the case is not vacuous
