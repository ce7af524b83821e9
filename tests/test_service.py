"""The service API both front ends call: two consoles on one state, roles, in-memory mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadmin.engine import changes as ch
from gpuadmin.service import NotPermitted, Refused, Service, check_action
from gpuadmin.store import load_inventory

SAMPLES = Path(__file__).resolve().parents[1] / "sample-inventories"


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    Service.init(tmp_path / "state", SAMPLES / "oci-h100.yaml")
    return tmp_path / "state"


def test_two_consoles_see_each_others_applies(state_dir: Path) -> None:
    first, second = Service(state_dir=state_dir), Service(state_dir=state_dir)
    assert second.state.nodes["gpu-h100-12"].state == "ready"
    assert second.refresh() is False
    first.apply(first.plan([ch.Cordon(op="cordon", node="gpu-h100-12")]))
    assert second.refresh() is True, "the watch notices another console's apply"
    assert second.state.nodes["gpu-h100-12"].state == "cordoned"
    assert second.refresh() is False


def test_inventory_mode_persists_nothing() -> None:
    service = Service(inventory=SAMPLES / "oci-h100.yaml")
    result = service.apply(service.plan([ch.Cordon(op="cordon", node="gpu-h100-12")]))
    assert result.revision == 1 and service.state.nodes["gpu-h100-12"].state == "cordoned"
    assert Service(inventory=SAMPLES / "oci-h100.yaml").state.nodes["gpu-h100-12"].state == "ready"
    assert load_inventory(SAMPLES / "oci-h100.yaml").nodes[11].state == "ready"


def test_roles() -> None:
    cordon = [ch.Cordon(op="cordon", node="n")]
    check_action("viewer", "plan")
    with pytest.raises(NotPermitted):
        check_action("viewer", "apply", cordon)
    check_action("operator", "apply", cordon)
    quota = [ch.SetQuota(op="set-quota", queue="q", limit=None)]
    with pytest.raises(NotPermitted, match="set-quota"):
        check_action("operator", "apply", quota)
    check_action("admin", "apply", quota)
    # dynamic sharing is node configuration, like a GPU's mode: an operator's to change, a viewer's to read
    sharing = [ch.SetSharing(op="set-sharing", node="n", fractions="off")]
    with pytest.raises(NotPermitted):
        check_action("viewer", "apply", sharing)
    check_action("operator", "apply", sharing)


def test_init_refuses_an_inventory_that_breaks_a_rule(tmp_path: Path) -> None:
    text = (SAMPLES / "oci-h100.yaml").read_text(encoding="utf-8")
    broken = tmp_path / "broken.yaml"
    broken.write_text(text.replace("{profile: 3g.40gb, start: 4}", "{profile: 3g.40gb, start: 2}", 1),
                      encoding="utf-8")
    with pytest.raises(Refused) as refused:
        Service.init(tmp_path / "state", broken)
    assert "mig.placement-start" in {v.rule for v in refused.value.plan.violations}
    assert not (tmp_path / "state").exists()


def _listings(service: Service) -> dict[str, list[dict[str, object]]]:
    return {kind: service.get(kind, reasons=False).rows for kind in ("nodes", "gpus", "groups")}


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_boards_on_a_state_show_the_holders_the_inventory_shows(tmp_path: Path, sample: str) -> None:
    """The topology view's boards, and the node listings, read a state without its waiting jobs
    (`Store.load_holding`): each GPU's holders and their shares must be those of the whole inventory."""
    Service.init(tmp_path / "state", SAMPLES / sample)
    on_state, reference = Service(state_dir=tmp_path / "state"), Service(inventory=SAMPLES / sample)
    assert on_state.boards() == reference.boards()
    assert _listings(on_state) == _listings(reference)
    assert on_state._state is None, "the state itself was not loaded: the listings took the holders' path"
    # the overview: computed on the state, then read from its per-revision cache by another console
    assert on_state.overview() == reference.overview() == Service(state_dir=tmp_path / "state").overview()


def test_node_listings_follow_another_consoles_apply(state_dir: Path) -> None:
    """A console that listed the nodes reads them again at the next revision after another one frees GPUs:
    the same rows as the whole state loaded at that revision gives."""
    console, other = Service(state_dir=state_dir), Service(state_dir=state_dir)
    before = _listings(console)
    running = sorted(name for name, job in other.state.jobs.items() if job.status == "running")
    other.apply(other.plan([ch.CancelJob(op="cancel-job", name=name) for name in running[:6]]))
    after = _listings(console)
    assert after != before
    whole = Service(state_dir=state_dir)
    assert whole.state.revision == 1  # loaded whole: get reads the state itself
    assert after == _listings(whole)
