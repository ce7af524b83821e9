"""GB200's second profile naming (issue 19 point 12).

NVIDIA's tools have named GB200's profiles two ways: 1g.24gb, 1g.24gb+me, 3g.95gb, 4g.95gb, 7g.189gb (mig-parted's
default config, commit 89dd81a3, and the -lgip of NVIDIA/gpu-operator PR #1303) and 1g.23gb … 7g.186gb
(production boards, NVIDIA/mig-parted issue #227). Both are read; the catalog's name is written. The real
file is shared/data/mig-parted/mig-parted_config-default.yaml (NVIDIA/mig-parted, byte for byte).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadmin.adapters.mig_parted import layouts_for_model, read_mig_parted
from gpuadmin.catalog import GpuModel, get_catalog
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import plan
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory

MIG_PARTED = Path("/work/shared/data/mig-parted/mig-parted_config-default.yaml")
SECOND_NAMES = {"1g.24gb": "1g.23gb", "1g.24gb+me": "1g.23gb+me", "3g.95gb": "3g.93gb", "4g.95gb": "4g.93gb",
                "7g.189gb": "7g.186gb"}


def _gb200() -> GpuModel:
    model = get_catalog().model("GB200")
    assert model is not None
    return model


@pytest.mark.parametrize(("alias", "canonical"), sorted(SECOND_NAMES.items()))
def test_each_second_name_finds_the_same_profile(alias: str, canonical: str) -> None:
    profile = _gb200().mig_profile(alias)
    assert profile is not None and profile.name == canonical and alias in profile.aliases
    assert profile.alias_provenance is not None and profile.alias_provenance.confidence == "verified"
    assert "mig-parted" in profile.alias_provenance.source


@pytest.mark.parametrize("config", ["all-1g.24gb.me", "all-3g.95gb", "all-4g.95gb", "all-7g.189gb"])
def test_nvidias_default_config_in_the_second_naming_imports_under_the_catalog_names(config: str) -> None:
    if not MIG_PARTED.exists():
        pytest.skip("shared/data not present")
    layouts = layouts_for_model(read_mig_parted(MIG_PARTED), config, _gb200())
    layout = layouts[0]
    assert layout is not None
    alias = next(iter(read_mig_parted(MIG_PARTED).configs[config][0].mig_devices))
    assert {i.profile for i in layout} == {SECOND_NAMES[alias]}


def test_an_inventory_and_a_change_in_the_second_naming_keep_the_catalog_names() -> None:
    """mig-parted's first all-balanced for 0x2941 (commit 89dd81a3): 1g.24gb × 2, 2g.47gb, 3g.95gb."""
    layout = [{"profile": "1g.24gb", "start": 0}, {"profile": "1g.24gb", "start": 1},
              {"profile": "2g.47gb", "start": 2},
              {"profile": "3g.95gb", "start": 4, "compute_instances": ["2c.3g.95gb", "1c.3g.95gb"]}]
    inventory = Inventory.model_validate(
        {"version": 1, "cluster": "c",
         "nodes": [{"name": "gb200-tray", "platform": "baremetal",
                    "gpus": [{"index": 0, "model": "GB200", "mode": "mig", "mig": layout},
                             {"index": 1, "model": "GB200"}]}]}
    )
    stored = inventory.nodes[0].gpus[0].mig or []
    assert [i.profile for i in stored] == ["1g.23gb", "1g.23gb", "2g.47gb", "3g.93gb"]
    assert stored[3].compute_instances == ["2c.3g.93gb", "1c.3g.93gb"]
    state = ClusterState.from_inventory(inventory)
    result = plan(state, ch.CHANGE_LIST.validate_python([
        {"op": "set-mig", "node": "gb200-tray", "gpu": 1,
         "instances": [{"profile": "1g.24gb+me"}, {"profile": "3g.95gb"}]},
    ]))
    assert result.allowed, result.violations
    gpu = result.view.node("gb200-tray").gpu(1)  # type: ignore[union-attr]
    assert gpu is not None and sorted(i.profile for i in gpu.mig or ()) == ["1g.23gb+me", "3g.93gb"]
