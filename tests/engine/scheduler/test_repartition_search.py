"""Issue 20 item 8: the MIG repartition remedy is memoised per (model, profile, kept layout) and bounded;
the memo never changes an answer (differential against the full scan), and a capped search says so."""

from __future__ import annotations

import pytest

from bench.generate import generate_inventory
from gpuadmin.engine.scheduler import schedule
from gpuadmin.engine.scheduler.filters import mig_profile_name, node_ok
from gpuadmin.engine.scheduler.repartition import SEARCH_CAP, repartition_remedy, scan_first_layout
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory


@pytest.mark.parametrize(("nodes", "jobs", "seed"), [(48, 900, 0), (96, 2500, 4), (64, 1500, 7)])
def test_the_memoised_search_equals_the_full_scan(nodes: int, jobs: int, seed: int) -> None:
    state = ClusterState.from_inventory(Inventory.model_validate(generate_inventory(nodes, jobs, seed)))
    cycle = schedule(state).cycle
    shapes = {s for s in cycle.shapes.values() if s.kind == "mig"}
    assert shapes
    for shape in shapes:
        models = [m for m in ([shape.model] if shape.model else sorted(cycle.index.models_present))
                  if mig_profile_name(m, shape.profile) is not None]
        ready = [nc for nc in cycle.index.nodes if node_ok(nc, shape)]
        for cap in (1, 3, SEARCH_CAP):
            memoised = repartition_remedy(ready, models, shape.profile, cap=cap)
            assert memoised == repartition_remedy(ready, models, shape.profile, scan_first_layout, cap)


def test_a_capped_search_says_so_and_offers_no_change() -> None:
    state = ClusterState.from_inventory(Inventory.model_validate(generate_inventory(48, 900, 0)))
    cycle = schedule(state).cycle
    shape = next(s for s in cycle.shapes.values() if s.kind == "mig")
    models = sorted(cycle.index.models_present)
    found = repartition_remedy(cycle.index.nodes, models, shape.profile, lambda *_: None, cap=1)
    assert found is not None
    text, changes = found
    assert "search stops there" in text and "first 1 distinct" in text and changes == ()
