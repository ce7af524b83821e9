"""Dynamic GPU sharing (Run:ai/KAI fractions on full-mode GPUs): the inventory field and its label pool, the
rules through the real planner, exact undo, and the scheduling cycle opening, filling and freeing shared GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import inverse, plan
from gpuadmin.engine.scheduler import cluster_fragmentation, schedule
from gpuadmin.engine.scheduler.metrics import workload_of
from gpuadmin.engine.state import ClusterState
from gpuadmin.errors import InputError
from gpuadmin.store import load_inventory

INVENTORY = """\
version: 1
cluster: share-test
sharing_pools:
  - {name: notebooks, selector: {pool: shared}, sharing: {fractions: dynamic, reserved_gib: 1.5}}
queues:
  - {name: research, quota: {gpus: 16}}
nodes:
  - name: shared-01
    platform: kubernetes
    nvlink: nvswitch
    labels: {pool: shared}
    gpus:
      - {index: 0, model: H100-SXM5-80GB, mode: full}
      - {index: 1, model: H100-SXM5-80GB, mode: full}
      - {index: 2, model: H100-SXM5-80GB, mode: full}
      - {index: 3, model: H100-SXM5-80GB, mode: full}
  - name: plain-01
    platform: kubernetes
    nvlink: nvswitch
    gpus:
      - {index: 0, model: H100-SXM5-80GB, mode: full}
      - {index: 1, model: H100-SXM5-80GB, mode: full}
jobs:
  - {name: nb-1, queue: research, request: {fraction: 0.5}, status: running, placement: ["shared-01/0"]}
  - {name: train-1, queue: research, request: {gpus: 1}}
"""


@pytest.fixture
def state(tmp_path: Path) -> ClusterState:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    return ClusterState.from_inventory(load_inventory(path))


def changes(*values: dict[str, Any]) -> list[ch.Change]:
    return ch.CHANGE_LIST.validate_python(list(values))


def submit(name: str, **request: Any) -> dict[str, Any]:
    return {"op": "submit-job", "job": {"name": name, "queue": "research", "request": request}}


def test_label_pool_fills_node_sharing_and_a_node_field_wins(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    labels = "    labels: {pool: shared}\n"
    own = INVENTORY.replace(labels, labels + "    sharing: {fractions: dynamic}\n")
    path.write_text(own)
    nodes = {n.name: n for n in load_inventory(path).nodes}
    assert nodes["shared-01"].sharing is not None and nodes["shared-01"].sharing.reserved_gib == 0.5
    assert nodes["plain-01"].sharing is None
    path.write_text(INVENTORY)
    pooled = {n.name: n for n in load_inventory(path).nodes}["shared-01"]
    assert pooled.sharing is not None and pooled.sharing.reserved_gib == 1.5


def test_bad_sharing_field_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY.replace("fractions: dynamic, reserved_gib: 1.5", "fractions: always"))
    with pytest.raises(InputError) as err:
        load_inventory(path)
    text = str(err.value)
    assert "inventory.yaml:4:" in text and "sharing_pools[0].sharing.fractions" in text


def test_bind_fractions_onto_a_full_gpu_then_undo_is_exact(state: ClusterState) -> None:
    before = state.to_inventory().model_dump()
    bound = plan(state, changes(
        submit("nb-2", fraction=0.25),
        submit("nb-3", gpu_memory_gib=16),
        {"op": "bind-job", "name": "nb-2", "placement": ["shared-01/0"]},
        {"op": "bind-job", "name": "nb-3", "placement": ["shared-01/0"]},
    ))
    assert bound.allowed, bound.violations
    assert sorted(bound.effects.bound) == ["nb-2", "nb-3"]
    state.commit(bound.view)
    assert state.holders[("shared-01", 0)] == {"nb-1", "nb-2", "nb-3"}
    undo = plan(state, inverse(bound.diff))
    assert undo.allowed, undo.violations
    state.commit(undo.view)
    assert state.to_inventory().model_dump() == before
    assert state.holders[("shared-01", 0)] == {"nb-1"}


def test_no_oversubscription_counts_the_reserved_memory(state: ClusterState) -> None:
    # 0.5 of the GPU is taken; 80 GiB H100 (79.6 GiB) less 1.5 GiB reserved leaves 39.06 GiB for the rest
    fits = plan(state, changes(submit("m", gpu_memory_gib=39), {"op": "bind-job", "name": "m",
                                                                 "placement": ["shared-01/0"]}))
    assert fits.allowed, fits.violations
    over = plan(state, changes(submit("m", gpu_memory_gib=39.5), {"op": "bind-job", "name": "m",
                                                                   "placement": ["shared-01/0"]}))
    assert [v.rule for v in over.violations] == ["placement.no-oversubscription"]
    assert "1.5 GiB reserved" in over.violations[0].message


def test_whole_gpu_job_refused_on_a_shared_gpu_and_the_hint_works(state: ClusterState) -> None:
    refused = plan(state, changes({"op": "bind-job", "name": "train-1", "placement": ["shared-01/0"]}))
    assert [v.rule for v in refused.violations] == ["placement.dynamic-share"]
    hint = refused.violations[0].hint or ""
    assert "preempt nb-1" in hint and "free full GPUs on shared-01: 1, 2, 3" in hint
    follow = plan(state, changes({"op": "preempt-job", "name": "nb-1"},
                                 {"op": "bind-job", "name": "train-1", "placement": ["shared-01/0"]}))
    assert follow.allowed, follow.violations
    elsewhere = plan(state, changes({"op": "bind-job", "name": "train-1", "placement": ["shared-01/1"]}))
    assert elsewhere.allowed, elsewhere.violations


def test_fraction_refused_on_a_node_without_dynamic_sharing(state: ClusterState) -> None:
    refused = plan(state, changes(submit("f", fraction=0.5), {"op": "bind-job", "name": "f",
                                                               "placement": ["plain-01/0"]}))
    assert "placement.matches-request" in {v.rule for v in refused.violations}
    assert "sharing: {fractions: dynamic}" in refused.violations[0].message


def test_cycle_fills_the_shared_gpu_before_opening_another(state: ClusterState) -> None:
    for name, request in (("f1", {"fraction": 0.25}), ("f2", {"gpu_memory_gib": 20}), ("f3", {"fraction": 0.5})):
        state.commit(plan(state, changes(submit(name, **request))).view)
    result = schedule(state)
    assert result.plan.allowed, result.plan.violations
    binds = {c.name: [(s.node, s.gpu) for s in c.placement] for c in result.changes if isinstance(c, ch.BindJob)}
    assert binds["f1"] == [("shared-01", 0)]  # fills nb-1's GPU (0.5 + 0.25)
    # 20 GiB is 0.255 of the 78.1 GiB usable: it no longer fits GPU 0, so it opens a GPU
    assert binds["f2"][0][0] == "shared-01" and binds["f2"] != [("shared-01", 0)]
    assert binds["f3"][0][0] == "shared-01" and binds["f3"] != [("shared-01", 0)]
    assert binds["f2"] == binds["f3"]  # the second fraction joins the GPU the first one opened
    assert binds["train-1"][0] not in {binds["f1"][0], binds["f2"][0]}  # whole jobs avoid shared GPUs
    state.commit(result.plan.view)
    undo = plan(state, inverse(result.plan.diff))
    assert undo.allowed, undo.violations


def test_fgd_measure_credits_free_gpus_of_a_sharing_node_to_fractions(state: ClusterState) -> None:
    jobs = [j for j in state.jobs.values()] + [
        j.model_copy(update={"name": "x", "request": j.request.model_copy(update={"fraction": 0.9})})
        for j in state.jobs.values() if j.name == "nb-1"
    ]
    workload = workload_of(jobs)
    frag, idle = cluster_fragmentation(state, workload)
    # idle: shared-01 has 3 free GPUs and half of GPU 0; plain-01 2 free GPUs
    assert idle == pytest.approx(5.5)
    # shared-01: only the half GPU is fragment, for the 1-GPU and 0.9 classes; plain-01's free GPUs are
    # fragment for both fractional classes, which cannot run there
    weights = {c.share or c.gpus: c.weight for c in workload.classes}
    assert frag == pytest.approx(0.5 * (weights[1] + weights[0.9]) + 2 * (weights[0.5] + weights[0.9]))


def set_sharing(node: str, fractions: str, **fields: Any) -> dict[str, Any]:
    return {"op": "set-sharing", "node": node, "fractions": fractions, **fields}


def test_set_sharing_turns_a_node_on_with_the_inventory_default_reserve(state: ClusterState) -> None:
    turned_on = plan(state, changes(set_sharing("plain-01", "dynamic")))
    assert turned_on.allowed, turned_on.violations
    (diff,) = turned_on.diff
    assert (diff.name, diff.before and diff.before.get("sharing")) == ("plain-01", None)
    assert diff.after is not None and diff.after["sharing"] == {"fractions": "dynamic", "reserved_gib": 0.5}
    state.commit(turned_on.view)
    fraction = plan(state, changes(submit("nb-2", fraction=0.25),
                                   {"op": "bind-job", "name": "nb-2", "placement": ["plain-01/1"]}))
    assert fraction.allowed, fraction.violations


def test_set_sharing_off_under_a_running_fraction_is_refused_and_the_hint_works(state: ClusterState) -> None:
    refused = plan(state, changes(set_sharing("shared-01", "off")))
    rules = [v.rule for v in refused.violations]
    assert rules[0] == "mode.sharing-change-evicts" and refused.violations[0].target == "shared-01/0"
    assert "nb-1" in refused.violations[0].message and "preempt nb-1 in the same plan" in (
        refused.violations[0].hint or "")
    # the fraction's own placement violation follows from it, so the root cause is what an operator reads first
    assert "placement.matches-request" in rules and set(refused.caused_by.values()) == {0}
    followed = plan(state, changes(set_sharing("shared-01", "off"), {"op": "preempt-job", "name": "nb-1"}))
    assert followed.allowed, followed.violations
    assert followed.effects.evicted == ["nb-1"]
    assert followed.view.node("shared-01").sharing is None  # type: ignore[union-attr]
    # nothing runs on a Kubernetes node for it: the plan says so as a comment, not as an invented command
    (note,) = followed.commands["shared-01"]
    assert note.startswith("# dynamic sharing off: nothing to run on shared-01") and "global.gpuSharing" in note


def test_set_sharing_raising_the_reserve_is_judged_against_the_running_fractions(state: ClusterState) -> None:
    state.commit(plan(state, changes(submit("nb-2", gpu_memory_gib=39),
                                     {"op": "bind-job", "name": "nb-2", "placement": ["shared-01/0"]})).view)
    kept = plan(state, changes(set_sharing("shared-01", "dynamic", reserved_gib=1)))
    assert kept.allowed, kept.violations  # 0.5 + 39 / 78.6 GiB ≤ 1
    raised = plan(state, changes(set_sharing("shared-01", "dynamic", reserved_gib=3)))
    assert raised.violations[0].rule == "mode.sharing-change-evicts"
    assert "from 1.5 to 3 GiB" in raised.violations[0].message


def test_set_sharing_then_undo_is_exact(state: ClusterState) -> None:
    before = state.to_inventory().model_dump(mode="json")
    applied = plan(state, changes(set_sharing("shared-01", "off"), {"op": "preempt-job", "name": "nb-1"},
                                  set_sharing("plain-01", "dynamic", reserved_gib=2)))
    assert applied.allowed, applied.violations
    state.commit(applied.view)
    undo = plan(state, inverse(applied.diff))
    assert undo.allowed, undo.violations
    state.commit(undo.view)
    assert state.to_inventory().model_dump(mode="json") == before


def test_set_sharing_fields_are_checked_like_any_change() -> None:
    with pytest.raises(ValueError, match="'reserved_gib' applies to fractions: dynamic"):
        changes(set_sharing("shared-01", "off", reserved_gib=1))
    with pytest.raises(ValueError, match="fractions"):
        changes(set_sharing("shared-01", "always"))


def test_set_sharing_on_a_missing_node_is_refused(state: ClusterState) -> None:
    refused = plan(state, changes(set_sharing("nope", "dynamic")))
    assert [v.rule for v in refused.violations] == ["change.target-exists"]
