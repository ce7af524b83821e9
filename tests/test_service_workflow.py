"""The workflow both front ends share, in the service: submit, confirmation, saved plans, listings,
selectors, the live view's cheap check and the per-revision cache of why-pending reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuadmin.engine import changes as ch
from gpuadmin.errors import ExitCode, GpuadminError
from gpuadmin.model.diagnostics import InputError
from gpuadmin.service import (
    Conflict,
    NotConfirmed,
    NotPermitted,
    Refused,
    Service,
    confirmation,
)
from gpuadmin.store import StateMissing

SAMPLES = Path(__file__).resolve().parents[1] / "sample-inventories"
CORDON = [ch.Cordon(op="cordon", node="gpu-h100-12")]


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    Service.init(tmp_path / "state", SAMPLES / "oci-h100.yaml")
    return tmp_path / "state"


def _journal_outcomes(service: Service) -> list[str]:
    return [e.outcome for e in service.journal()]


def test_error_classes_carry_their_exit_codes() -> None:
    assert issubclass(InputError, GpuadminError) and InputError.exit_code == ExitCode.BAD_INPUT
    assert Refused.exit_code == ExitCode.REFUSED
    assert Conflict.exit_code == ExitCode.CONFLICT
    assert NotPermitted.exit_code == ExitCode.NOT_PERMITTED
    assert NotConfirmed.exit_code == ExitCode.INTERRUPTED
    assert StateMissing.exit_code == ExitCode.BAD_INPUT


def test_submit_applies_a_confirmed_plan(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    result = service.submit(service.plan(CORDON), confirmed=True)
    assert result is not None and result.revision == 1
    assert service.state.nodes["gpu-h100-12"].state == "cordoned"


def test_submit_refuses_and_journals_a_plan_with_violations(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    bad = service.plan([ch.SetMig(op="set-mig", node="gpu-h100-12", gpu=0,
                                  instances=[ch.MigInstance(profile="9g.99gb")])])
    with pytest.raises(Refused):
        service.submit(bad, confirmed=True)
    assert _journal_outcomes(service)[-1] == "refused"
    assert service.revision() == 0


def test_submit_skips_an_empty_plan(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    assert service.submit(service.plan([]), confirmed=True) is None
    assert service.revision() == 0


def test_an_unconfirmed_plan_changes_nothing(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    with pytest.raises(NotConfirmed):
        service.submit(service.plan(CORDON), confirmed="n")
    assert service.revision() == 0


def test_a_destructive_plan_needs_the_node_name_typed(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    drain = service.plan([ch.Drain(op="drain", node="gpu-h100-01")])
    asked = confirmation(drain)
    assert drain.destructive and asked.destructive and asked.token == "gpu-h100-01"
    assert "gpu-h100-01" in asked.prompt
    with pytest.raises(NotConfirmed):
        service.submit(drain, confirmed="yes")
    assert service.revision() == 0
    assert service.submit(drain, confirmed="gpu-h100-01") is not None
    assert not confirmation(service.plan(CORDON)).destructive


def test_a_plan_that_takes_vgpus_away_needs_the_node_name_typed(tmp_path: Path) -> None:
    """Issue 18, point 10: vGPUs removed explicitly (the only way a VM loses one) make the plan destructive."""
    Service.init(tmp_path / "vsphere", SAMPLES / "vsphere-hgx.yaml")
    service = Service(state_dir=tmp_path / "vsphere")
    removal = service.plan([ch.RemoveVgpu(op="remove-vgpu", node="esx-vdi-01", gpu=2, vm=vm, profile="A40-24C")
                            for vm in ("vdi-11", "vdi-12")])
    asked = confirmation(removal)
    assert removal.allowed and removal.destructive and asked.token == "esx-vdi-01"
    assert "takes 2 vGPU(s) from their VMs" in asked.prompt
    with pytest.raises(NotConfirmed):
        service.submit(removal, confirmed="yes")
    assert service.submit(removal, confirmed="esx-vdi-01") is not None


def test_an_override_of_a_non_preemptible_job_needs_the_node_name_typed(state_dir: Path) -> None:
    """Issue 18, point 11: the admin's override evicts, so it is confirmed by typing what it hits."""
    admin = Service(state_dir=state_dir, role="admin")
    job = next(j for j in admin.state.jobs.values() if j.status == "running" and not j.preemptible)
    override = admin.plan([ch.PreemptJob(op="preempt-job", name=job.name, override=True, reason="INC-7: XID 79")])
    assert override.allowed and confirmation(override).destructive
    with pytest.raises(NotConfirmed):
        admin.submit(override, confirmed="yes")
    with pytest.raises(NotPermitted):
        Service(state_dir=state_dir, role="operator").submit(override, confirmed=confirmation(override).token)
    assert admin.submit(override, confirmed=confirmation(override).token) is not None


def test_a_viewer_cannot_submit(state_dir: Path) -> None:
    viewer = Service(state_dir=state_dir, role="viewer")
    with pytest.raises(NotPermitted):
        viewer.submit(viewer.plan(CORDON), confirmed=True)


def test_a_stale_saved_plan_is_refused_and_journaled(state_dir: Path, tmp_path: Path) -> None:
    first, second = Service(state_dir=state_dir), Service(state_dir=state_dir)
    saved = tmp_path / "plan.json"
    first.save_plan(first.plan(CORDON), saved)
    assert json.loads(saved.read_text())["base_revision"] == 0
    second.submit(second.plan([ch.Cordon(op="cordon", node="gpu-h100-10")]), confirmed=True)
    with pytest.raises(Conflict, match="stale plan"):
        first.plan_saved(saved)
    assert _journal_outcomes(first)[-1] == "stale"


def test_a_fresh_saved_plan_applies(state_dir: Path, tmp_path: Path) -> None:
    service = Service(state_dir=state_dir)
    saved = tmp_path / "plan.json"
    service.save_plan(service.plan(CORDON), saved)
    ready = service.plan_saved(saved)
    assert ready.plan.hash == ready.hash and not ready.foreign
    assert service.submit(ready.plan, confirmed=True, expected_hash=ready.hash) is not None


def test_listing_is_typed_and_carries_its_revision(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    table = service.get("nodes")
    assert table.revision == 0 and table.kind == "nodes" and len(table.rows) == 12
    assert table.columns()[0] == "NAME" and "LABELS" in table.columns(wide=True)
    assert table.spec_of is None
    spec_of = service.get("nodes", specs=True).spec_of
    assert spec_of is not None and spec_of(table.rows[0])["shape"] == "BM.GPU.H100.8"


@pytest.mark.parametrize(("selector", "expected"), [
    ("state=cordoned", {"gpu-h100-11"}),
    ("state!=ready", {"gpu-h100-11"}),
    ("state in (cordoned, down)", {"gpu-h100-11"}),
    ("state notin (ready)", {"gpu-h100-11"}),
    ("name in (gpu-h100-01,gpu-h100-02),state=ready", {"gpu-h100-01", "gpu-h100-02"}),
    ("STATE=cordoned", {"gpu-h100-11"}),  # keys are case-insensitive
    ("state=CORDONED", set()),  # values are not
])
def test_selectors(state_dir: Path, selector: str, expected: set[str]) -> None:
    rows = Service(state_dir=state_dir).get("nodes", selector=selector).rows
    assert {r["NAME"] for r in rows} == expected


def test_selector_on_labels_and_existence(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    assert len(service.get("nodes", selector="pool").rows) == 12  # every OCI node has a pool label
    assert service.get("nodes", selector="!pool").rows == []
    assert {r["NAME"] for r in service.get("nodes", selector="pool in (mig, shared)").rows} == {
        "gpu-h100-07", "gpu-h100-08", "gpu-h100-09", "gpu-h100-10"}
    mig = service.get("gpus", selector="pool=mig").rows
    assert len(mig) == 16 and {r["NODE"] for r in mig} == {"gpu-h100-07", "gpu-h100-08"}


def test_an_unknown_selector_key_is_an_error_naming_the_known_keys(state_dir: Path) -> None:
    with pytest.raises(InputError, match=r"unknown selector key 'colour'.*known keys:.*state"):
        Service(state_dir=state_dir).get("nodes", selector="colour=red")


def test_changes_since_names_what_moved(state_dir: Path) -> None:
    watcher, writer = Service(state_dir=state_dir), Service(state_dir=state_dir)
    assert watcher.changes_since(0).revision == 0 and not watcher.changes_since(0).touched
    writer.submit(writer.plan(CORDON), confirmed=True)
    moved = watcher.changes_since(0)
    assert moved.revision == 1 and moved.touched == {("node", "gpu-h100-12")}
    assert not watcher.changes_since(1).touched


def test_pending_reasons_are_computed_once_per_revision(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = Service(state_dir=state_dir)
    calls = []
    original = Service._compute_reasons

    def counting(self: Service) -> dict[str, str]:
        calls.append(1)
        return original(self)

    monkeypatch.setattr(Service, "_compute_reasons", counting)
    first = service.pending_reasons()
    assert first and len(calls) == 1
    assert service.pending_reasons() == first and len(calls) == 1, "in memory: not again"
    # another process at the same revision reads the state's cache
    assert Service(state_dir=state_dir).pending_reasons() == first and len(calls) == 1
    service.submit(service.plan(CORDON), confirmed=True)
    service.pending_reasons()
    assert len(calls) == 2, "a new revision computes them again"


def test_the_reasons_cache_is_keyed_by_revision(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    assert service.store is not None
    assert service.store.derived("why-pending/2", 0) is None, "a state made before the cache: no table"
    reasons = service.pending_reasons()
    cached = service.store.derived("why-pending/2", 0)
    assert {job: cached["distinct"][i][1] for job, i in cached["by_job"].items()} == reasons
    assert len(cached["distinct"]) < len(cached["by_job"]), "each distinct reason is stored once"
    assert service.store.derived("why-pending/2", 1) is None


def _node_states(service: Service) -> tuple[str, str]:
    service.refresh()
    return service.state.nodes["gpu-h100-12"].state, service.state.nodes["gpu-h100-10"].state


def test_successive_undos_walk_back_and_redo_walks_forward(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    service.submit(service.plan(CORDON), confirmed=True)  # revision 1: h100-12 cordoned
    service.submit(service.plan([ch.Cordon(op="cordon", node="gpu-h100-10")]), confirmed=True)  # revision 2
    assert _node_states(service) == ("cordoned", "cordoned")
    first = service.undo()
    assert "revision 2" in first.description and first.intent["undoes"]
    service.submit(first.plan, confirmed=True, intent=first.intent)
    assert _node_states(service) == ("cordoned", "ready")
    second = service.undo()
    assert "revision 1" in second.description, "the second undo steps further back, not undoing the undo"
    service.submit(second.plan, confirmed=True, intent=second.intent)
    assert _node_states(service) == ("ready", "ready")
    with pytest.raises(InputError, match="nothing to undo"):
        service.undo()
    redo = service.redo()
    assert "revision 1" in redo.description
    service.submit(redo.plan, confirmed=True, intent=redo.intent)
    assert _node_states(service) == ("cordoned", "ready")
    again = service.redo()
    service.submit(again.plan, confirmed=True, intent=again.intent)
    assert _node_states(service) == ("cordoned", "cordoned")
    with pytest.raises(InputError, match="nothing to redo"):
        service.redo()


def test_a_new_change_clears_what_redo_could_bring_back(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    service.submit(service.plan(CORDON), confirmed=True)
    undo = service.undo()
    service.submit(undo.plan, confirmed=True, intent=undo.intent)
    service.submit(service.plan([ch.Cordon(op="cordon", node="gpu-h100-10")]), confirmed=True)
    with pytest.raises(InputError, match="nothing to redo"):
        service.redo()


def test_undo_intents_are_journaled(state_dir: Path) -> None:
    service = Service(state_dir=state_dir)
    applied = service.submit(service.plan(CORDON), confirmed=True)
    assert applied is not None
    undo = service.undo()
    service.submit(undo.plan, confirmed=True, intent=undo.intent)
    last = service.journal()[-1]
    assert last.plan is not None and last.plan["intent"] == {"undoes": [service.journal()[-2].id]}


def test_the_overview_is_read_from_the_cache_without_loading_the_state(state_dir: Path) -> None:
    first = Service(state_dir=state_dir).overview()
    assert first["pending_by_reason"] and first["gpus_by_use"]["free"] > 0
    fresh = Service(state_dir=state_dir)
    assert fresh.overview() == first
    assert fresh._state is None, "a cached overview costs one read, not a state load"
    writer = Service(state_dir=state_dir)
    writer.submit(writer.plan(CORDON), confirmed=True)
    moved = Service(state_dir=state_dir).overview()
    assert moved["revision"] == 1 and moved["nodes_by_state"]["cordoned"] == 2
