"""Issue 10, items 1-4: advice that is never dangerous, jobs that can never fit say so, remedies checked by
planning them, and kube-scheduler's "0/N nodes" summary with every reason class and its count."""

from __future__ import annotations

from pathlib import Path

from sched_helpers import cluster, job, node, queue

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import plan
from gpuadmin.engine.scheduler import explain, schedule
from gpuadmin.engine.state import ClusterState
from gpuadmin.store import load_inventory

SAMPLES = Path(__file__).resolve().parents[3] / "sample-inventories"


def _sample(name: str) -> ClusterState:
    return ClusterState.from_inventory(load_inventory(SAMPLES / name))


def _changes(*items: dict[str, object]) -> list[ch.Change]:
    return ch.CHANGE_LIST.validate_python(list(items), strict=False)


# 1. a down node is not a cordoned node -----------------------------------------------------------------------
def test_a_down_node_is_never_a_remedy() -> None:
    exp = explain(_sample("k8s-mixed.yaml"), "h200-long-ctx-ft")
    assert "hgx-h200-03" not in (exp.remedy or "")
    assert exp.reason != "node-cordoned"
    assert "1 down" in (exp.nodes or "")


def test_a_cordoned_node_still_is_a_remedy() -> None:
    state = cluster([node("a", 8, state="cordoned"), node("b", 8, gpus=[])], [job("j", gpus=4)], [queue()])
    exp = explain(state, "j")
    assert exp.remedy == "uncordon a"
    assert exp.remedy_changes == ({"op": "uncordon", "node": "a"},)


def test_uncordon_cordon_and_drain_do_not_bring_a_down_node_back() -> None:
    state = _sample("k8s-mixed.yaml")
    for op in ("uncordon", "cordon", "drain"):
        refused = plan(state, _changes({"op": op, "node": "hgx-h200-03"}))
        assert not refused.allowed
        assert [v.rule for v in refused.violations] == ["change.node-down"]
        assert "repair-node" in (refused.violations[0].hint or "")


def test_repair_node_brings_a_down_node_back_and_records_the_repair() -> None:
    state = _sample("k8s-mixed.yaml")
    repaired = plan(state, _changes({"op": "repair-node", "node": "hgx-h200-03", "note": "RMA 4411: GPU 3 swapped"}))
    assert repaired.allowed
    assert repaired.diff[0].after is not None and repaired.diff[0].after["state"] == "ready"
    not_down = plan(state, _changes({"op": "repair-node", "node": "hgx-h200-01", "note": "x"}))
    assert [v.rule for v in not_down.violations] == ["change.node-down"]


def test_repair_node_needs_an_admin() -> None:
    from gpuadmin.service import admin_reasons

    assert admin_reasons(_changes({"op": "repair-node", "node": "n", "note": "fixed"})) == ["repair-node"]


def test_the_scheduler_never_places_on_a_down_node() -> None:
    state = cluster([node("down", 8, state="down")], [job("j", gpus=1)], [queue()])
    assert schedule(state).bound == []
    bind = plan(state, _changes({"op": "bind-job", "name": "j", "placement": [{"node": "down", "gpu": 0}]}))
    assert "node.no-new-placements" in [v.rule for v in bind.violations]


# 2. a job that can never fit says so ---------------------------------------------------------------------------
def test_a_job_bigger_than_every_node_is_unsatisfiable_not_asked_to_wait() -> None:
    state = cluster([node("a", 8), node("b", 8)], [job("big", gpus=16)], [queue(limit=8)])
    exp = explain(state, "big")
    assert exp.reason == "unsatisfiable"
    assert "no node has 16 GPUs (the largest has 8)" in exp.message
    assert "never" in exp.message
    assert exp.remedy is None and "wait" not in exp.summary


def test_an_nvlink_job_bigger_than_every_domain_and_a_gang_bigger_than_the_cluster() -> None:
    pairs = cluster([node("p", 8, nvlink="pairs")], [job("nv", gpus=4, nvlink=True)], [queue()])
    assert explain(pairs, "nv").reason == "unsatisfiable"
    gang = cluster([node("a", 8), node("b", 8)], [job("g", gpus=8, nodes=3)], [queue()])
    exp = explain(gang, "g")
    assert exp.reason == "unsatisfiable" and "the cluster has 2" in exp.message


# 3. no remedy that cannot help -----------------------------------------------------------------------------------
def test_a_job_over_its_queue_limit_alone_is_not_told_to_wait() -> None:
    exp = explain(_sample("oci-h100.yaml"), "intern-full-ft-8b")
    assert exp.reason == "over-limit"
    assert "wait" not in exp.summary
    assert "cannot run until the limit is raised" in exp.message


def test_a_remedy_is_offered_only_when_planning_it_makes_the_job_fit() -> None:
    # the limit is the first obstacle, but no node has room: raising it is not offered
    state = cluster([node("a", 4)], [job("run", "other", placement=[{"node": "a", "gpu": i} for i in range(4)],
                                         preemptible=False, gpus=4),
                                     job("j", gpus=2)], [queue(limit=1), queue("other")])
    exp = explain(state, "j")
    assert exp.reason == "over-limit"
    assert exp.remedy is None and "no node has room for it now either" in exp.message
    # where raising it is enough, the remedy is offered, with the limit it needs, and checked
    roomy = cluster([node("a", 4)], [job("j", gpus=2)], [queue(limit=1)])
    ok = explain(roomy, "j")
    assert ok.remedy is not None and "limit to 2 GPUs" in ok.remedy
    assert "wait" not in ok.remedy  # the job alone is over the limit
    assert ok.details["remedy_checked"].startswith("planned")
    assert ok.remedy_changes == ({"op": "set-quota", "queue": "q", "limit": {"gpus": 2}},)


def test_planning_a_remedy_rejects_one_the_rules_refuse_or_that_does_not_place_the_job() -> None:
    from gpuadmin.engine.scheduler.explain import _remedy_fails

    state = cluster([node("a", 4), node("d", 8, state="down")], [job("j", gpus=2)], [queue(limit=1)])
    assert _remedy_fails(state, "j", ({"op": "uncordon", "node": "d"},), "binpack") == "refused by change.node-down"
    too_low = ({"op": "set-quota", "queue": "q", "limit": {"gpus": 1}},)
    assert _remedy_fails(state, "j", too_low, "binpack") == "the job still does not fit after it"
    assert _remedy_fails(state, "j", ({"op": "set-quota", "queue": "q", "limit": {"gpus": 2}},), "binpack") is None


def test_wait_is_offered_only_when_the_job_fits_within_the_limit() -> None:
    state = cluster([node("a", 4)], [job("run", placement=[{"node": "a", "gpu": 0}, {"node": "a", "gpu": 1}], gpus=2),
                                     job("j", gpus=2)], [queue(limit=3)])
    exp = explain(state, "j", check_remedy=False)
    assert exp.reason == "over-limit"
    assert "wait for its running jobs to finish" in (exp.remedy or "")


# 4. reasons like kube-scheduler's --------------------------------------------------------------------------------
def test_every_reason_class_is_counted_for_an_exclusive_job() -> None:
    ts = [{"index": i, "model": "H100-SXM5-80GB", "mode": "time-sliced", "replicas": 4} for i in range(8)]
    nodes = [node(f"c{i}", 8, state="cordoned") for i in range(9)]
    nodes += [node("ts1", gpus=ts), node("ts2", gpus=ts)]
    nodes += [node("pairs", 8, nvlink="pairs")]
    state = cluster(nodes, [job("x", gpus=8, nvlink=True, isolation="exclusive")], [queue()])
    exp = explain(state, "x")
    assert exp.nodes == ("0/12 nodes fit: 9 cordoned, 2 time-sliced only (job is exclusive), "
                         "1 no free NVLink domain of 8")
    assert exp.summary.startswith(exp.nodes)
    assert exp.to_json()["nodes"] == exp.nodes


def test_the_text_says_when_figures_are_the_cluster_as_the_cycle_leaves_it() -> None:
    state = cluster([node("a", 2)], [job("first", gpus=2), job("second", gpus=2)], [queue()])
    exp = explain(state, "second")
    assert exp.as_of.startswith("the cluster as this cycle leaves it, after it binds 1 job")
    idle = cluster([node("a", 2)], [job("big", gpus=4)], [queue()])
    assert explain(idle, "big").as_of == "now"
