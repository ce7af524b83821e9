"""The console's drain on a vSphere host plans the host's evacuation: the review lists every VM's move and its
estimated stun (held equal to a golden file), asks for the host's name, and the apply moves the VMs.

Regenerate the golden: GPUADMIN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q -n 0 tests/tui/test_evacuation_review.py
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from gpuadmin.service import Service
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.engine.spare_hosts import add_spare_hosts
from tests.tui.tuikit import cursor_row, filter_rows, make_app, notes, press, settle, static_text

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "review-evacuate.text"


def spare_state(tmp_path: Path) -> Path:
    """A state of the vSphere sample with the spare hosts of tests/engine/fixtures appended."""
    raw = yaml.safe_load((ROOT / "sample-inventories" / "vsphere-hgx.yaml").read_text(encoding="utf-8"))
    add_spare_hosts(raw)
    inventory = tmp_path / "vsphere-spares.yaml"
    inventory.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    state = tmp_path / "state"
    Service.init(state, inventory)
    return state


async def test_drain_on_esx_vdi_01_reviews_each_vms_move_and_stun(tmp_path: Path) -> None:
    state = spare_state(tmp_path)
    app = make_app(Service(state_dir=state), view="nodes")
    async with app.run_test(size=(140, 50)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "esx-vdi-01")
        assert cursor_row(app)["NAME"] == "esx-vdi-01"
        await press(pilot, "r")
        review = app.screen
        assert isinstance(review, PlanReviewScreen) and review.title_text == "drain esx-vdi-01"
        assert review.asked.destructive and review.asked.token == "esx-vdi-01"
        text = static_text(app, "#review")
        if os.environ.get("GPUADMIN_UPDATE_GOLDEN") == "1":
            GOLDEN.parent.mkdir(exist_ok=True)
            GOLDEN.write_text(text, encoding="utf-8")
        assert text == GOLDEN.read_text(encoding="utf-8")
        assert "Evacuation of esx-vdi-01 (13 VM(s)), then maintenance mode:" in text
        assert "  ws-cad-01: vMotion to esx-vdi-03 (GPU 3 -> 1); stun ~22.4 s" in text
        await press(pilot, *"esx-vdi-01", "enter")
        assert notes(app)[-1] == ("information", "", "applied: revision 1")
    service = Service(state_dir=state)
    assert service.describe("node", "esx-vdi-01")["summary"]["state"] == "draining"
    assert service.state.nodes["esx-vdi-01"].vms == []
    assert {vm.name for vm in service.state.nodes["esx-vdi-04"].vms} == {f"vdi-{i:02}" for i in range(5, 11)}
