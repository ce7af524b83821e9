"""Issue 18, points 7 and 11 and the restore crashes of 14, through the real CLI on a real state.

A hand-written `restore` is judged exactly like the forward changes it amounts to (a job placement like
bind-job, a down node brought back like repair-node); only the slots an undo gives back are exempt. A
non-preemptible job is never preempted short of an admin's explicit, journaled override. A restore that names
one entity and holds another, or puts an entity where another one is, is bad input (exit 2), never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.clikit import SAMPLES, gpuadmin

INVENTORY = """\
version: 1
cluster: trust
queues:
  - {name: q, quota: {gpus: 8}}
nodes:
  - name: n-ok
    platform: baremetal
    labels: {pool: a}
    gpus: [{index: 0, model: H100-SXM5-80GB, mode: full}, {index: 1, model: H100-SXM5-80GB, mode: full}]
  - name: n-cord
    platform: baremetal
    state: cordoned
    labels: {pool: a}
    gpus: [{index: 0, model: H100-SXM5-80GB, mode: full}]
  - name: n-down
    platform: baremetal
    state: down
    labels: {pool: b}
    gpus: [{index: 0, model: H100-SXM5-80GB, mode: full}]
jobs:
  - {name: np, queue: q, request: {gpus: 1}, preemptible: false, status: running, placement: [{node: n-ok, gpu: 0}]}
  - {name: p, queue: q, request: {gpus: 1}, status: running, placement: [{node: n-cord, gpu: 0}]}
  - {name: sel, queue: q, request: {gpus: 1}, node_selector: {pool: a}}
"""

N_DOWN = ("{name: n-down, platform: baremetal, state: STATE, labels: {pool: b}, "
          "gpus: [{index: 0, model: H100-SXM5-80GB, mode: full}]}")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    inventory = tmp_path / "trust.yaml"
    inventory.write_text(INVENTORY, encoding="utf-8")
    result = gpuadmin("--state", tmp_path / "state", "init", "--from", inventory)
    assert result.code == 0, result.err
    return tmp_path / "state"


def _changes(tmp_path: Path, *items: str) -> Path:
    path = tmp_path / "changes.yaml"
    path.write_text("changes:\n" + "".join(f"  - {item}\n" for item in items), encoding="utf-8")
    return path


def _apply(state: Path, changes: Path, *options: str) -> tuple[int, str, str]:
    result = gpuadmin("--state", state, *options, "apply", "-f", changes, "--yes")
    return result.code, result.out, result.err


# ------------------------------------------------------------------------------ 7: restore is judged


def test_a_restore_placing_a_job_is_judged_like_bind_job(state: Path, tmp_path: Path) -> None:
    """On a down node, against its own node selector: refused by the same rules as the bind-job it amounts to."""
    changes = _changes(tmp_path, "{op: restore, kind: job, name: sel, job: {name: sel, queue: q, request: {gpus: 1}, "
                                 "node_selector: {pool: a}, status: running, placement: [{node: n-down, gpu: 0}]}}")
    code, out, _ = _apply(state, changes)
    assert code == 1
    assert "[node.no-new-placements] job/sel" in out and "[placement.node-affinity] job/sel" in out
    assert "status: running" not in gpuadmin("--state", state, "describe", "job", "sel").out


def test_undo_gives_back_the_slots_its_entry_released_and_no_others(state: Path, tmp_path: Path) -> None:
    """p runs on a cordoned node; preempting it and undoing that puts it back (the undone entry released that
    slot), while the same restore written by hand is a new placement on a cordoned node."""
    preempt = _changes(tmp_path, "{op: preempt-job, name: p}")
    assert _apply(state, preempt)[0] == 0
    by_hand = _changes(tmp_path, "{op: restore, kind: job, name: p, job: {name: p, queue: q, request: {gpus: 1}, "
                                 "status: running, placement: [{node: n-cord, gpu: 0}]}}")
    code, out, _ = _apply(state, by_hand)
    assert code == 1 and "[node.no-new-placements] job/p" in out
    undo = gpuadmin("--state", state, "undo", "--yes")
    assert undo.code == 0, undo.out + undo.err
    assert "status: running" in gpuadmin("--state", state, "describe", "job", "p").out


def test_an_operator_cannot_bring_a_down_node_back_with_restore(state: Path, tmp_path: Path) -> None:
    """What repair-node does needs an admin whichever op does it."""
    changes = _changes(tmp_path, "{op: restore, kind: node, name: n-down, node: " + N_DOWN.replace("STATE", "ready")
                       + "}")
    code, _, err = _apply(state, changes, "--as-role", "operator")
    assert code == 4
    assert "brings node n-down back from down" in err and "needs admin" in err
    assert _apply(state, changes, "--as-role", "admin")[0] == 0


# ------------------------------------------------------------------------------ 11: non-preemptible


def test_preempt_job_refuses_a_non_preemptible_job(state: Path, tmp_path: Path) -> None:
    code, out, _ = _apply(state, _changes(tmp_path, "{op: preempt-job, name: np}"), "--as-role", "admin")
    assert code == 1 and "[placement.non-preemptible-kept] job/np" in out


def test_preempting_first_does_not_defeat_the_drain_block(state: Path, tmp_path: Path) -> None:
    changes = _changes(tmp_path, "{op: preempt-job, name: np}", "{op: drain, node: n-ok}")
    code, out, _ = _apply(state, changes, "--as-role", "admin")
    assert code == 1 and "[placement.non-preemptible-kept] job/np" in out


def test_an_admins_override_preempts_it_journaled(state: Path, tmp_path: Path) -> None:
    changes = _changes(tmp_path, "{op: preempt-job, name: np, override: true, reason: 'INC-4411: GPU 0 throws XID 79'}")
    code, _, err = _apply(state, changes, "--as-role", "operator")
    assert code == 4 and "preempt-job with override" in err
    code, _, err = _apply(state, changes, "--as-role", "admin")
    assert code == 0, err
    entry = gpuadmin("--state", state, "describe", "entry", "2")
    assert "override: yes" in entry.out and "INC-4411: GPU 0 throws XID 79" in entry.out


def test_an_override_needs_a_reason(state: Path, tmp_path: Path) -> None:
    code, _, err = _apply(state, _changes(tmp_path, "{op: preempt-job, name: np, override: true}"), "--as-role",
                          "admin")
    assert code == 2 and "changes.yaml:2:" in err and "reason" in err and "Traceback" not in err


# ------------------------------------------------------------------------------ 14: bad restores are bad input


def test_a_restore_holding_another_entity_is_bad_input(state: Path, tmp_path: Path) -> None:
    changes = _changes(tmp_path, "{op: restore, kind: queue, name: q, queue: {name: other}}")
    code, _, err = _apply(state, changes, "--as-role", "admin")
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "changes.yaml:2:" in err and "'other'" in err


def test_a_restore_at_a_taken_position_is_bad_input(state: Path, tmp_path: Path) -> None:
    changes = _changes(tmp_path, "{op: restore, kind: queue, name: newq, queue: {name: newq}, seq: 1}")
    code, _, err = _apply(state, changes, "--as-role", "admin")
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "position 1" in err and "queue 'q'" in err
    assert "changes.yaml:2:" in err and "changes[0].seq" in err
    assert gpuadmin("--state", state, "get", "queues", "-o", "name").out.split() == ["queue/q"]


def test_a_restore_at_a_position_past_sqlite_is_bad_input(state: Path, tmp_path: Path) -> None:
    changes = _changes(tmp_path, f"{{op: restore, kind: queue, name: newq, queue: {{name: newq}}, seq: {2**64}}}")
    code, _, err = _apply(state, changes, "--as-role", "admin")
    assert code == 2 and "Traceback" not in err and "changes.yaml:2:" in err


# ------------------------------------------------------------------------------ 10: vGPUs never vanish silently

VSPHERE = SAMPLES / "vsphere-hgx.yaml"
# esx-vdi-01 GPU 2 serves vdi-11 and vdi-12 an A40-24C each
DROPPING = [
    "{op: attach-vm, node: esx-vdi-01, vm: vdi-11, gpus: [2]}",
    "{op: set-mode, node: esx-vdi-01, gpu: 2, mode: full}",
    "{op: set-mig, node: esx-hgx-03, gpu: 0, instances: [{profile: 3g.20gb}]}",  # ft-vm-04's A100X-40C
]


@pytest.mark.parametrize("change", DROPPING, ids=["attach-vm", "set-mode", "set-mig"])
def test_a_change_that_drops_a_vms_vgpu_is_refused(tmp_path: Path, change: str) -> None:
    result = gpuadmin("--inventory", VSPHERE, "plan", "-f", _changes(tmp_path, change))
    assert result.code == 1 and "[vgpu.not-dropped]" in result.out, result.out + result.err


def test_removing_the_vgpus_explicitly_is_allowed(tmp_path: Path) -> None:
    changes = _changes(tmp_path, "{op: remove-vgpu, node: esx-vdi-01, gpu: 2, vm: vdi-11, profile: A40-24C}",
                       "{op: remove-vgpu, node: esx-vdi-01, gpu: 2, vm: vdi-12, profile: A40-24C}",
                       "{op: set-mode, node: esx-vdi-01, gpu: 2, mode: full}")
    state = tmp_path / "state"
    assert gpuadmin("--state", state, "init", "--from", VSPHERE).code == 0
    plan = gpuadmin("--state", state, "plan", "-f", changes, "-o", "json")
    assert plan.code == 0, plan.out
    assert gpuadmin("--state", state, "apply", "-f", changes, "--yes").code == 0
    assert "vdi-11" not in gpuadmin("--state", state, "get", "gpus", "esx-vdi-01/2", "-o", "yaml").out


# ------------------------------------------------------------------------------ 8: exclusive by default


def test_set_time_slicing_under_a_mig_job_without_isolation_is_refused(tmp_path: Path) -> None:
    """llama3-8b-serve asks for mig: 3g.40gb and writes no isolation: it is exclusive, so its instance is not
    time-sliced under it (after which the scheduler would put a fraction beside it)."""
    changes = _changes(tmp_path, "{op: set-time-slicing, node: gpu-h100-07, gpu: 0, replicas: 2, "
                                 "mig_profile: 3g.40gb}")
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "plan", "-f", changes)
    assert result.code == 1 and "[placement.exclusive-not-shared] job/llama3-8b-serve" in result.out
