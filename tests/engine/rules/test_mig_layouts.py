"""Exhaustive MIG layout tests: every valid layout of every MIG-capable catalog model is enumerated,
cross-checked against an independent brute force, accepted by the rules and found by `place` without
starts; generated invalid layouts are refused with the right rule id; Hypothesis checks `place` is sound
and complete."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadmin.catalog import GpuModel, get_catalog
from gpuadmin.engine import mig
from gpuadmin.engine.rules import RULES, Touched, check
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Gpu, Inventory, MigInstance, Node

MODELS = list(get_catalog().mig_capable_models())
MIG_RULES = [r for r in RULES.values() if r.id.startswith("mig.")]

# ------------------------------------------------------------------------------------- independent oracle
# Restates gpu-facts §1.2's constraints directly on the catalog's profile table, with sets and itertools, and
# without any code of gpuadmin.engine.mig.


def oracle_reasons(model: GpuModel, layout: list[tuple[str, int]]) -> set[str]:
    """The constraint kinds a concrete layout breaks (empty when valid)."""
    reasons: set[str] = set()
    table = {p.name: p for p in model.mig_profiles}
    occupied: list[set[int]] = []
    compute = 0
    counts: Counter[str] = Counter()
    media = 0
    for name, start in layout:
        profile = table.get(name)
        if profile is None:
            reasons.add("unknown-profile")
            continue
        if start not in profile.starts or start + profile.memory_slices > model.memory_slices:
            reasons.add("bad-start")
            continue
        occupied.append(set(range(start, start + profile.memory_slices)))
        compute += profile.compute_slices
        counts[name] += 1
        media += profile.media_extensions
    if any(a & b for a, b in itertools.combinations(occupied, 2)):
        reasons.add("overlap")
    if compute > model.compute_slices:
        reasons.add("compute-slices")
    if any(counts[n] > table[n].max_instances for n in counts):
        reasons.add("instance-cap")
    if media > 1:
        reasons.add("media-extensions")
    budget = model.mig_media_budget  # RTX PRO 6000: +me.all takes every media engine (issue 19 point 9)
    if budget is not None:
        for kind in ("dec", "enc", "jpg", "ofa"):
            taken = sum(table[n].engines.count(kind) or 0 for n, _ in layout if n in table)
            if taken > (budget.count(kind) or 0):
                reasons.add("media-engines")
    return reasons


@cache
def brute_force_layouts(model_name: str) -> frozenset[frozenset[tuple[str, int]]]:
    """All valid layouts: every profile multiset within the caps and compute budget, every choice of distinct
    starts per profile (combinations), kept when no two instances overlap."""
    model = get_catalog().model(model_name)
    assert model is not None
    profiles = list(model.mig_profiles)
    found: set[frozenset[tuple[str, int]]] = set()
    ranges = [range(0, min(p.max_instances, len(p.starts)) + 1) for p in profiles]
    for counts in itertools.product(*ranges):
        if not any(counts):
            continue
        if sum(c * p.compute_slices for c, p in zip(counts, profiles, strict=True)) > model.compute_slices:
            continue
        if sum(c * p.memory_slices for c, p in zip(counts, profiles, strict=True)) > model.memory_slices:
            continue
        if sum(c for c, p in zip(counts, profiles, strict=True) if p.media_extensions) > 1:
            continue
        choices = [itertools.combinations(p.starts, c) for c, p in zip(counts, profiles, strict=True)]
        for pick in itertools.product(*[list(c) for c in choices]):
            layout = [(p.name, s) for p, starts in zip(profiles, pick, strict=True) for s in starts]
            if not oracle_reasons(model, layout):
                found.add(frozenset(layout))
    return frozenset(found)


# ------------------------------------------------------------------------------------------- rule harness


def _state(model: GpuModel) -> ClusterState:
    node = Node(name="n", platform="baremetal", gpus=[Gpu(index=0, model=model.name, mode="full")])
    return ClusterState.from_inventory(Inventory(version=1, cluster="t", nodes=[node]))


def rule_ids(state: ClusterState, instances: Sequence[tuple[str, int | None]]) -> set[str]:
    """Put `instances` on GPU 0 as a set-mig would, and return the ids of the MIG rules that fire."""
    view = View(state)
    node = state.nodes["n"]
    gpu = node.gpus[0].model_copy(
        update={"mode": "mig", "mig": [MigInstance(profile=p, start=s) for p, s in instances]}
    )
    view.put_node("n", node.model_copy(update={"gpus": [gpu]}))
    return {v.rule for v in check(view, Touched(nodes={"n"}, gpus={("n", 0)}), MIG_RULES)}


_KIND_RULE = {
    "unknown-profile": "mig.profile-exists",
    "bad-start": "mig.placement-start",
    "overlap": "mig.no-overlap",
    "compute-slices": "mig.compute-slices",
    "instance-cap": "mig.instance-cap",
    "media-extensions": "mig.single-media-extension",
    "media-engines": "mig.media-engines",
}

# ------------------------------------------------------------------------------------------------ counts


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_enumeration_matches_brute_force(model: GpuModel) -> None:
    layouts = mig.valid_layouts(model)
    assert len(set(layouts)) == len(layouts)
    assert {frozenset(layout) for layout in layouts} == brute_force_layouts(model.name)
    for layout in layouts:
        assert layout == mig.canonical(layout) and layout


def test_known_layout_counts() -> None:
    counts = {m.name: len(mig.valid_layouts(m)) for m in MODELS}
    for model in MODELS:
        # 8 memory slices / 7 compute slices, 7 GI profiles incl. +me: 2318 layouts; A30 (4/4, 5 profiles): 75;
        # RTX PRO 6000 (12-unit grid, 4 compute slices, 11 profiles with +me/+me.all/+gfx/-me variants): 716,
        # 1008 before its media engines were modelled (+me.all takes them all: issue 19 point 9) —
        # each count also equals the brute-force oracle's (test_enumeration_matches_brute_force)
        expected = {"A30": 75, "RTX-PRO-6000-BSE": 716}.get(model.name, 2318)
        assert counts[model.name] == expected, counts


def test_enumeration_is_cached_and_fast() -> None:
    model = get_catalog().model("H100-SXM5-80GB")
    assert model is not None
    assert mig.valid_layouts(model) is mig.valid_layouts(model)


# --------------------------------------------------------------------------------- every valid layout passes


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_every_valid_layout_is_accepted_by_the_rules(model: GpuModel) -> None:
    state = _state(model)
    refused = [layout for layout in mig.valid_layouts(model) if rule_ids(state, list(layout))]
    assert refused == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_every_valid_layout_is_placed_without_starts_in_any_order(model: GpuModel) -> None:
    rng = random.Random(model.name)
    for layout in mig.valid_layouts(model):
        names = [p for p, _ in layout]
        shuffled = names[:]
        rng.shuffle(shuffled)
        for order in (names, names[::-1], shuffled):
            placed = mig.place(model, [(p, None) for p in order])
            assert placed is not None, (model.name, order)
            assert [p for p, _ in placed] == order
            assert not oracle_reasons(model, placed), placed


@pytest.mark.parametrize("model", MODELS[:1] + [m for m in MODELS if m.name == "A30"], ids=lambda m: m.name)
def test_layouts_without_starts_are_accepted_by_the_rules(model: GpuModel) -> None:
    state = _state(model)
    for layout in mig.valid_layouts(model):
        assert rule_ids(state, [(p, None) for p, _ in layout]) == set(), layout


# ---------------------------------------------------------------------------------- invalid layouts refused


def _invalid_layouts(model: GpuModel) -> list[list[tuple[str, int]]]:
    """Generated invalid layouts: bad starts, overlaps, every invalid one-instance extension of a valid layout
    (over-compute, over-cap, double +me, overlap), and profiles of other models."""
    out: list[list[tuple[str, int]]] = []
    for profile in model.mig_profiles:
        out += [[(profile.name, s)] for s in range(model.memory_slices + 1) if s not in profile.starts]
    candidates = [(p.name, s) for p in model.mig_profiles for s in p.starts]
    for a, b in itertools.combinations_with_replacement(candidates, 2):
        if oracle_reasons(model, [a, b]):
            out.append([a, b])
    for layout in mig.valid_layouts(model)[::7]:
        for extra in candidates:
            if extra not in layout and oracle_reasons(model, [*layout, extra]):
                out.append([*layout, extra])
    own = {p.name for p in model.mig_profiles}
    foreign = sorted({p.name for m in MODELS for p in m.mig_profiles} - own)
    out += [[(name, 0)] for name in foreign[:6]]
    out += [[("8g.99gb", 0)], [("garbage", 1), (model.mig_profiles[0].name, 0)]]
    return out


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_generated_invalid_layouts_are_refused_with_the_right_rule(model: GpuModel) -> None:
    state = _state(model)
    layouts = _invalid_layouts(model)
    assert len(layouts) > 100
    kinds_seen: set[str] = set()
    for layout in layouts:
        expected = {_KIND_RULE[k] for k in oracle_reasons(model, layout)}
        assert expected, layout
        kinds_seen |= expected
        assert rule_ids(state, list(layout)) == expected, layout
        assert mig.place(model, list(layout)) is None
        assert {k.kind for k in mig.explain_layout(model, list(layout))} == {
            k for k, r in _KIND_RULE.items() if r in expected
        }
    # the media-engine budget exists only where the catalog models one (RTX PRO 6000)
    budgeted = model.mig_media_budget is not None
    assert kinds_seen == {r for r in _KIND_RULE.values() if budgeted or r != "mig.media-engines"}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_unplaceable_multisets_are_refused_as_overlap(model: GpuModel) -> None:
    """A multiset within compute, caps and +me whose instances fit no placement: refused as no-placement."""
    state = _state(model)
    possible = {tuple(sorted(p for p, _ in layout)) for layout in brute_force_layouts(model.name)}
    names = [p.name for p in model.mig_profiles]
    tried = 0
    for size in range(2, 5):
        for combo in itertools.combinations_with_replacement(names, size):
            request = [(p, None) for p in combo]
            reasons = oracle_reasons(model, [(p, model.mig_profile(p).starts[0]) for p in combo])  # type: ignore[union-attr]
            if tuple(sorted(combo)) in possible or reasons - {"overlap"}:
                continue
            tried += 1
            assert mig.place(model, request) is None, combo
            assert [k.kind for k in mig.explain_layout(model, request)] == ["no-placement"]
            assert rule_ids(state, request) == {"mig.no-overlap"}
    # on 8-slice parts e.g. 3g + 3g + 1g; on the 4-compute-slice parts (A30, RTX PRO 6000) every multiset
    # within compute also fits memory
    assert tried > 0 or model.compute_slices == 4


# ------------------------------------------------------------------------------------------- known facts


def _m(name: str) -> GpuModel:
    model = get_catalog().model(name)
    assert model is not None
    return model


def test_cgi_19_19_14_9_is_valid_when_searched() -> None:
    """`-cgi 19,19,14,9` fails in the driver's greedy order; the layout exists (gpu-facts §1.2 item 5)."""
    a100 = _m("A100-SXM4-40GB")
    placed = mig.place(a100, [("1g.5gb", None), ("1g.5gb", None), ("2g.10gb", None), ("3g.20gb", None)])
    assert placed is not None and not oracle_reasons(a100, placed)
    assert mig.memory_used(a100, placed) == 8


def test_4g_plus_3g() -> None:
    h100 = _m("H100-SXM5-80GB")
    assert mig.place(h100, [("4g.40gb", None), ("3g.40gb", None)]) == [("4g.40gb", 0), ("3g.40gb", 4)]
    assert mig.place(h100, [("3g.40gb", None), ("4g.40gb", None)]) == [("3g.40gb", 4), ("4g.40gb", 0)]


@pytest.mark.parametrize("model", [m for m in MODELS if m.memory_slices == 8], ids=lambda m: m.name)
def test_two_4g_never_fit(model: GpuModel) -> None:
    four = next(p for p in model.mig_profiles if p.compute_slices == 4 and p.memory_slices == 4)
    assert mig.place(model, [(four.name, None), (four.name, None)]) is None
    assert not any(Counter(p for p, _ in layout)[four.name] > 1 for layout in mig.valid_layouts(model))


@pytest.mark.parametrize("model", [m for m in MODELS if m.memory_slices == 8], ids=lambda m: m.name)
def test_four_double_memory_1g_fill_memory_and_seven_1g_leave_slice_7(model: GpuModel) -> None:
    double = next(p for p in model.mig_profiles if p.compute_slices == 1 and p.memory_slices == 2)
    single = next(
        p
        for p in model.mig_profiles
        if p.compute_slices == 1 and p.memory_slices == 1 and not p.media_extensions
    )
    four = mig.place(model, [(double.name, None)] * 4)
    assert four is not None and mig.memory_used(model, four) == 8
    assert sorted(s for _, s in four) == [0, 2, 4, 6]
    seven = mig.place(model, [(single.name, None)] * 7)
    assert seven is not None and sorted(s for _, s in seven) == list(range(7))
    assert mig.memory_used(model, seven) == 7  # slice 7 stays unused
    assert mig.place(model, [(single.name, None)] * 8) is None


def test_all_balanced_fills_compute_and_memory() -> None:
    h100 = _m("H100-SXM5-80GB")
    placed = mig.place(h100, [("1g.10gb", None), ("1g.10gb", None), ("2g.20gb", None), ("3g.40gb", None)])
    assert placed is not None and mig.memory_used(h100, placed) == 8


def test_place_honours_fixed_starts_and_prefers_room() -> None:
    h100 = _m("H100-SXM5-80GB")
    # a lone small instance goes where it keeps the 4g placeable (the top), lowest start on a tie
    assert mig.place(h100, [("1g.10gb", None)]) == [("1g.10gb", 6)]
    assert mig.place(h100, [("2g.20gb", None)]) == [("2g.20gb", 4)]
    assert mig.place(h100, [("3g.40gb", None)]) == [("3g.40gb", 4)]
    assert mig.place(h100, [("3g.40gb", 0), ("1g.10gb", None)]) == [("3g.40gb", 0), ("1g.10gb", 6)]
    assert mig.place(h100, [("3g.40gb", 2)]) is None
    assert mig.place(h100, [("7g.80gb", 0), ("1g.10gb", None)]) is None
    assert mig.place(h100, []) == []


def test_free_starts_and_repartition_targets() -> None:
    h100 = _m("H100-SXM5-80GB")
    keep = [("3g.40gb", 4)]
    assert mig.free_starts(h100, keep, "2g.20gb") == [0, 2]
    assert mig.free_starts(h100, keep, "unknown") == []
    # repartition targets that keep a running 2g@0 and add two 3g.40gb: none; one 3g: exactly {0:2, 4:4}+…
    assert mig.layouts_with(h100, ["3g.40gb", "3g.40gb"], [("2g.20gb", 0)]) == []
    best = mig.layouts_with(h100, ["3g.40gb"], [("2g.20gb", 0)])
    assert best[0] == (("2g.20gb", 0), ("3g.40gb", 4))
    assert all(("2g.20gb", 0) in layout and "3g.40gb" in dict(layout) for layout in best)
    assert all(not oracle_reasons(h100, list(layout)) for layout in best)


def test_explain_reports_every_problem_with_numbers() -> None:
    a30 = _m("A30")
    problems = mig.explain_layout(
        a30, [("4g.24gb", 0), ("2g.12gb", 1), ("1g.6gb+me", 3), ("2g.12gb+me", 2), ("nope", None)]
    )
    kinds = [p.kind for p in problems]
    assert kinds.count("unknown-profile") == 1 and "bad-start" in kinds and "overlap" in kinds
    assert "compute-slices" in kinds and "media-extensions" in kinds
    compute = next(p for p in problems if p.kind == "compute-slices")
    assert "7 compute slices" in compute.message and "has 4" in compute.message  # valid starts only
    a10 = _m("A10")
    assert [p.kind for p in mig.explain_layout(a10, [("1g.6gb", 0)])] == ["not-mig-capable"]


# ------------------------------------------------------------------------------------------- Hypothesis


@st.composite
def requests(draw: st.DrawFn) -> tuple[GpuModel, list[tuple[str, int | None]]]:
    model = draw(st.sampled_from(MODELS))
    names = [p.name for p in model.mig_profiles]
    items = draw(
        st.lists(
            st.tuples(st.sampled_from(names), st.none() | st.integers(0, model.memory_slices)), max_size=7
        )
    )
    return model, items


def _completable(model: GpuModel, items: list[tuple[str, int | None]]) -> bool:
    """Independently: some brute-force layout has exactly this multiset and contains every fixed instance."""
    want = Counter(p for p, _ in items)
    fixed = Counter((p, s) for p, s in items if s is not None)
    if any(c > 1 for c in fixed.values()):
        return False
    for layout in brute_force_layouts(model.name):
        if Counter(p for p, _ in layout) == want and all(f in layout for f in fixed):
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(requests())
def test_place_is_sound(case: tuple[GpuModel, list[tuple[str, int | None]]]) -> None:
    model, items = case
    placed = mig.place(model, items)
    if placed is None:
        return
    assert not oracle_reasons(model, placed)
    assert [p for p, _ in placed] == [p for p, _ in items]
    for (_, given_start), (_, start) in zip(items, placed, strict=True):
        if given_start is not None:
            assert start == given_start


@settings(max_examples=400, deadline=None)
@given(requests())
def test_place_is_complete(case: tuple[GpuModel, list[tuple[str, int | None]]]) -> None:
    model, items = case
    assert (mig.place(model, items) is not None) == (_completable(model, items) or not items)


@settings(max_examples=200, deadline=None)
@given(requests(), st.randoms(use_true_random=False))
def test_place_does_not_depend_on_order(
    case: tuple[GpuModel, list[tuple[str, int | None]]], rnd: random.Random
) -> None:
    model, items = case
    shuffled = items[:]
    rnd.shuffle(shuffled)
    first, second = mig.place(model, items), mig.place(model, shuffled)
    assert (first is None) == (second is None)
    if first is not None and second is not None:
        assert sorted(first) == sorted(second)


@settings(max_examples=200, deadline=None)
@given(requests())
def test_rules_agree_with_place(case: tuple[GpuModel, list[tuple[str, int | None]]]) -> None:
    model, items = case
    if not items:
        return
    fired = rule_ids(_state(model), items)
    assert (fired == set()) == (mig.place(model, items) is not None), fired
