"""Issue 10, item 11: unrelated changes do not collide. A plan whose base revision moved but whose entities
nobody changed is re-planned (the rules re-checked) and applied; a held lock is waited for (`--wait`); only a
real conflict — the same entity changed, or a rule that now fails — refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gpuadmin.service import Conflict, Refused, Service
from tests.cli.clikit import ROOT, gpuadmin, hold_lock

NODES = [f"gpu-h100-{i:02d}" for i in range(1, 9)]


def test_eight_concurrent_cordons_of_eight_nodes_all_apply(state: Path, tmp_path: Path) -> None:
    procs = []
    for node in NODES:
        change = tmp_path / f"{node}.yaml"
        change.write_text(f"changes: [{{op: cordon, node: {node}}}]\n", encoding="utf-8")
        procs.append(subprocess.Popen([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "apply",
                                       "-f", str(change), "--yes"], cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    assert [code for code, _ in results] == [0] * 8, results
    listed = json.loads(gpuadmin("--state", state, "get", "nodes", "-o", "json").out)["items"]
    assert {n["name"]: n["state"] for n in listed if n["name"] in NODES} == dict.fromkeys(NODES, "cordoned")


def _changes(service: Service, *items: dict[str, object]) -> object:
    return service.plan(service.build_changes(list(items)))


def test_a_moved_base_with_untouched_entities_replans_and_applies(state: Path) -> None:
    first, second = Service(state_dir=state), Service(state_dir=state)
    mine = second.plan(second.build_changes([{"op": "cordon", "node": "gpu-h100-02"}]))
    first.apply(first.plan(first.build_changes([{"op": "cordon", "node": "gpu-h100-01"}])))
    result = second.apply(mine)  # made at revision 0, applied at 1: nobody touched gpu-h100-02
    assert result.revision == 2 and result.plan.base_revision == 1


def test_the_same_entity_changed_is_a_conflict(state: Path) -> None:
    first, second = Service(state_dir=state), Service(state_dir=state)
    mine = second.plan(second.build_changes([{"op": "cordon", "node": "gpu-h100-03"}]))
    first.apply(first.plan(first.build_changes([{"op": "drain", "node": "gpu-h100-03"}])))
    try:
        second.apply(mine)
    except Conflict as conflict:
        assert "node/gpu-h100-03" in str(conflict) and "changed" in str(conflict)
    else:
        raise AssertionError("a plan over an entity changed since must be stale")
    assert second.journal()[-1].outcome == "stale"


def test_a_rule_that_now_fails_refuses(state: Path) -> None:
    first, second = Service(state_dir=state), Service(state_dir=state)
    slot = [{"node": "gpu-h100-06", "gpu": 7}]
    pending = [j.name for j in first.state.jobs.values() if j.status == "pending" and j.request.gpus == 1]
    assert len(pending) >= 1
    submit = {"op": "submit-job", "job": {"name": "extra-1", "queue": "platform", "request": {"gpus": 1}}}
    first.apply(first.plan(first.build_changes([submit])))
    mine = second.plan(second.build_changes([{"op": "bind-job", "name": pending[0], "placement": slot}]))
    first.apply(first.plan(first.build_changes([{"op": "bind-job", "name": "extra-1", "placement": slot}])))
    try:
        second.apply(mine)
    except Refused as refused:
        assert any(v.rule.startswith("placement.") for v in refused.plan.violations)
    else:
        raise AssertionError("the re-planned plan breaks a rule on the new state: it must be refused")


def test_a_held_lock_is_waited_for(state: Path, tmp_path: Path) -> None:
    holder = hold_lock(state, "gpuadmin apply -f slow.yaml", 1.5)
    try:
        change = tmp_path / "c.yaml"
        change.write_text("changes: [{op: cordon, node: gpu-h100-05}]\n", encoding="utf-8")
        waited = gpuadmin("--state", state, "apply", "-f", change, "--yes", "--wait", "20")
        assert waited.code == 0, waited.err
    finally:
        holder.wait(timeout=30)
    locked = hold_lock(state, "gpuadmin apply -f big.yaml", 30)
    try:
        change.write_text("changes: [{op: cordon, node: gpu-h100-04}]\n", encoding="utf-8")
        gave_up = gpuadmin("--state", state, "apply", "-f", change, "--yes", "--wait", "0.5")
        assert gave_up.code == 3 and "waited 0.5 s" in gave_up.err and "big.yaml" in gave_up.err
    finally:
        locked.kill()
        locked.wait()
