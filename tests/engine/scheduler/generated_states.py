"""The benchmark's generated states as ClusterStates, for the tests that hold the cycle to decisions captured from
a reference revision (test_cycle_bindings, test_cycle_plan_reference).

The generator is this checkout's bench/generate.py, loaded by its path: those tests also run as scripts with
another revision's tree first on PYTHONPATH (to capture a golden from its code), and `bench` would then be that
tree's, which may have no generator (7ccae69 kept it in gpuadmin/store/)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory

_GENERATOR = Path(__file__).resolve().parents[3] / "bench" / "generate.py"


def _generator() -> ModuleType:
    name = "gpuadmin_bench_generate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _GENERATOR)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up while it runs
        spec.loader.exec_module(module)
    return sys.modules[name]


def generated(nodes: int, jobs: int, seed: int, empty: bool, sharing: bool) -> ClusterState:
    """The generated inventory; `empty` drops every placement (all jobs pending on an idle cluster)."""
    data = _generator().generate_inventory(nodes, jobs, seed, sharing)
    if empty:
        for raw in data["jobs"]:
            raw.pop("placement", None)
            raw.pop("status", None)
    return ClusterState.from_inventory(Inventory.model_validate(data, strict=False))
