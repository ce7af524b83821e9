"""The rules share one lookup per GPU while a check reads a frozen view (`View.reading`): what they decide is
what each rule decides looking everything up afresh (the reference path), on every rule case; each GPU is looked
up a bounded number of times however many rules read it; and nothing edits a view the rules are reading."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from _rulekit import Scenario, everything
from test_rule_cases import CASES, Case, _id

from gpuadmin.engine.rules import RULES, Touched, Violation, check
from gpuadmin.engine.rules.base import GpuSite, expand
from gpuadmin.engine.rules.placement import _oversubscription, no_oversubscription
from gpuadmin.engine.state import View
from gpuadmin.model import Node


def reference_check(view: View, touched: Touched) -> list[Violation]:
    """`check` without the shared lookups: every rule looks the GPUs, slices and holders up itself (a GPU rule
    gets a site resolved afresh for it alone)."""
    closed = expand(view, touched)
    targets: dict[str, list[Any]] = {
        "node": sorted(n for n in closed.nodes if view.node(n) is not None),
        "gpu": sorted(closed.gpus),
        "job": sorted(j for j in closed.jobs if view.job(j) is not None),
        "queue": sorted(q for q in closed.queues if view.queue(q) is not None),
    }
    out: list[Violation] = []
    for r in RULES.values():
        for target in targets[r.scope]:
            out.extend(r.check(view, GpuSite.resolve(view, target) if r.scope == "gpu" else target))
    return out


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_shared_lookups_decide_as_the_reference(case: Case) -> None:
    scenario = case.build()
    assert check(scenario.view, scenario.touched) == reference_check(scenario.view, scenario.touched)
    whole = everything(scenario.view)
    assert check(scenario.view, whole) == reference_check(scenario.view, whole)


@pytest.fixture
def gpu_lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[tuple[str, int]]]:
    counts: Counter[tuple[str, int]] = Counter()
    lookup = Node.gpu

    def counted(node: Node, index: int) -> Any:
        counts[(node.name, index)] += 1
        return lookup(node, index)

    monkeypatch.setattr(Node, "gpu", counted)
    yield counts


def test_each_gpu_is_looked_up_a_bounded_number_of_times(gpu_lookups: Counter[tuple[str, int]]) -> None:
    """A whole-cluster check runs ~30 GPU rules on every GPU; they share its lookup in the view and at the
    base revision (on main's code each rule looked it up again: up to ~30 lookups per GPU)."""
    scenario = Scenario()
    check(scenario.view, everything(scenario.view))
    assert gpu_lookups, "the check looked no GPU up"
    worst = max(gpu_lookups.values())
    assert worst <= 4, gpu_lookups.most_common(3)


def test_a_view_is_not_edited_while_the_rules_read_it() -> None:
    scenario = Scenario()
    view = scenario.view
    with view.reading(), pytest.raises(RuntimeError, match="edited while the rules read it"):
        view.put_node("bm1", None)
    view.put_node("bm1", None)  # outside, edits go through as before
    assert view.node("bm1") is None


def oversubscription_on_every_gpu(view: View) -> list[tuple[list[Violation], list[Violation]]]:
    """(the rule, its judgement without the skip) on every GPU of a view: the rule returns at once on a GPU with no
    shareable slice (`_SHAREABLE_MODES`, dynamic sharing); the slow way judges every slot there."""
    out = []
    with view.reading():
        for node in view.nodes():
            for gpu in node.gpus:
                site = GpuSite.resolve(view, (node.name, gpu.index))
                out.append((list(no_oversubscription(view, site)), list(_oversubscription(view, site, node, gpu))))
    return out


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_no_oversubscription_skips_only_what_the_slow_way_clears(case: Case) -> None:
    for fast, slow in oversubscription_on_every_gpu(case.build().view):
        assert fast == slow
