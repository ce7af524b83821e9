"""Issue 20 item 1: the scheduler's filters are the one source of "why not".

For every pending job of every sample and of generated states, the node counts `explain` shows ("3/12 nodes
fit: 9 fewer than 8 free GPUs") equal the filters' own verdicts, counted here node by node without the
cycle's grouping; and a job the cycle could not place has no node (or, for a gang, not enough nodes) the
filters say it fits: nothing is left for an explanation to call "fits now, the next cycle binds it".
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from bench.generate import generate_inventory
from gpuadmin.engine.scheduler import schedule
from gpuadmin.engine.scheduler.cycle import SchedulePlan
from gpuadmin.engine.scheduler.node_filters import NO_NEEDS, filter_node
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory
from gpuadmin.store import load_inventory

SAMPLES = sorted((Path(__file__).resolve().parents[3] / "sample-inventories").glob("*.yaml"))
GENERATED = [(24, 300, 0, False), (40, 800, 1, False), (32, 600, 2, True), (64, 2000, 3, True)]


def _summary_counts(text: str) -> tuple[int, int, Counter[str]]:
    head, _, rest = text.partition(": ")
    fit, total = (int(x) for x in re.fullmatch(r"(\d+)/(\d+) nodes fit", head).groups())  # type: ignore[union-attr]
    reasons: Counter[str] = Counter()
    for part in rest.split(", ") if rest else ():
        count, reason = part.split(" ", 1)
        reasons[reason] += int(count)
    return fit, total, reasons


def _check(result: SchedulePlan) -> int:
    cycle = result.cycle
    nodes = (*cycle.index.nodes, *cycle.index.blocked)
    checked = 0
    for name in result.pending:
        if name not in cycle.shapes:
            continue
        shape, needs = cycle.shapes[name], cycle.needs.get(name, NO_NEEDS)
        verdicts = Counter(filter_node(nc, shape, needs, cycle.resources, cycle.vms) for nc in nodes)
        fit = verdicts.pop(next((s for s in verdicts if s.fits), None), 0)  # type: ignore[arg-type]
        reasons = Counter({s.reason: n for s, n in verdicts.items()})
        assert len({s.reason for s in verdicts}) == len(verdicts), "two codes share one reason text"
        exp = result.explanations[name]
        if exp.nodes is not None:
            assert _summary_counts(exp.nodes) == (fit, len(nodes), reasons), (name, exp.nodes)
        assert result.verdicts[name].fit == fit
        if cycle.outcome.get(name) == "no-fit":
            assert fit < shape.nodes if shape.nodes > 1 else fit == 0, (name, exp.summary)
        checked += 1
    return checked


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_explanations_count_what_the_filters_say(path: Path) -> None:
    state = ClusterState.from_inventory(load_inventory(path))
    for policy in ("binpack", "spread"):
        _check(schedule(state, policy))  # a sample may leave nothing pending (vsphere-hgx binds all)


@pytest.mark.parametrize(("nodes", "jobs", "seed", "sharing"), GENERATED)
def test_generated_explanations_count_what_the_filters_say(nodes: int, jobs: int, seed: int, sharing: bool) -> None:
    inventory = Inventory.model_validate(generate_inventory(nodes, jobs, seed, sharing=sharing))
    assert _check(schedule(ClusterState.from_inventory(inventory))) > 0


def test_the_samples_leave_jobs_to_explain_and_none_fits_now() -> None:
    results = [schedule(ClusterState.from_inventory(load_inventory(path))) for path in SAMPLES]
    assert sum(len(r.pending) for r in results) >= 5
    assert all(e.reason != "fits-now" for r in results for e in r.explanations.values())
