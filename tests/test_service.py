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
