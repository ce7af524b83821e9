"""The large-inventory generator: deterministic, the requested size, physically valid, fast."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from samples_physical import check_all

from bench.generate import dump_inventory, generate_inventory, main
from gpuadmin.engine.rules import Touched, check
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Inventory
from gpuadmin.model.references import check_references
from gpuadmin.store import load_inventory

NODES, JOBS = 64, 2000


def _yaml(data: dict[str, Any]) -> str:
    buf = io.StringIO()
    dump_inventory(data, buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    return generate_inventory(NODES, JOBS, seed=0)


def test_same_seed_same_output(small: dict[str, Any]) -> None:
    again = generate_inventory(NODES, JOBS, seed=0)
    assert again == small
    assert _yaml(again) == _yaml(small)
    assert generate_inventory(NODES, JOBS, seed=1) != small


def test_requested_counts(small: dict[str, Any]) -> None:
    assert len(small["nodes"]) == NODES
    assert len(small["jobs"]) == JOBS
    assert all(len(n["gpus"]) == 8 for n in small["nodes"])
    status = Counter(j.get("status", "pending") for j in small["jobs"])
    assert status["running"] > 0 and status["pending"] > 0


def test_mix(small: dict[str, Any]) -> None:
    modes = Counter(g["mode"] for n in small["nodes"] for g in n["gpus"])
    assert modes["full"] > modes["mig"] > 0 and modes["time-sliced"] > 0
    reqs = [j["request"] for j in small["jobs"]]
    assert {r["gpus"] for r in reqs if "gpus" in r} == {1, 2, 4, 8}
    assert all(r.get("nvlink") for r in reqs if r.get("gpus") == 8)
    assert any(r.get("nodes", 1) > 1 and r.get("rdma") for r in reqs)
    assert any("mig" in r for r in reqs) and any("fraction" in r for r in reqs)
    running = [j for j in small["jobs"] if j.get("status") == "running"]
    assert any("mig" in j["request"] for j in running)
    assert any("fraction" in j["request"] or "gpu_memory_gib" in j["request"] for j in running)
    assert any(j["request"].get("gpus") == 8 for j in running)
    assert len(small["queues"]) >= 4


@pytest.mark.parametrize(
    ("nodes", "jobs", "seed"), [(64, 2000, 0), (64, 2000, 1), (200, 8000, 2), (1, 50, 3)]
)
def test_output_is_physically_valid(nodes: int, jobs: int, seed: int) -> None:
    inv = Inventory.model_validate(generate_inventory(nodes, jobs, seed))
    assert check_all(inv) == []
    assert check_references(inv) == []


def test_large_gangs_run_when_the_cluster_is_big() -> None:
    inv = Inventory.model_validate(generate_inventory(256, 4000, seed=0))
    assert any(j.status == "running" and j.request.nodes > 1 for j in inv.jobs)
    assert check_all(inv) == []


def test_yaml_round_trips(small: dict[str, Any]) -> None:
    text = _yaml(small)
    assert "&" not in text and "*" not in text  # no anchors / aliases
    assert yaml.load(text, Loader=yaml.CSafeLoader) == small
    first_gpu = next(line for line in text.splitlines() if "index: 0" in line)
    assert first_gpu.lstrip().startswith("- {index: 0")  # flow style keeps one GPU per line


def test_cli_writes_a_loadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gen.yaml"
    assert main(["--nodes", "16", "--jobs", "300", "--seed", "5", "-o", str(out)]) == 0
    inv = load_inventory(out)
    assert len(inv.nodes) == 16 and len(inv.jobs) == 300
    assert check_all(inv) == []
    assert "generated 16 nodes, 300 jobs" in capsys.readouterr().err


@pytest.mark.slow
def test_full_size_generates(tmp_path: Path) -> None:
    """The 1,024-node / 100,000-job size writes a file (its time is bench/'s business, not a test's)."""
    assert main(["--nodes", "1024", "--jobs", "100000", "-o", str(tmp_path / "big.yaml")]) == 0
    assert (tmp_path / "big.yaml").stat().st_size > 0


def test_sharing_variant_shares_full_gpus_and_passes_every_rule() -> None:
    data = generate_inventory(NODES, JOBS, seed=0, sharing=True)
    assert generate_inventory(NODES, JOBS, seed=0, sharing=True) == data
    inv = Inventory.model_validate(data)
    assert not any(g.mode == "time-sliced" for n in inv.nodes for g in n.gpus)
    sharing = {n.name for n in inv.nodes if n.sharing is not None}
    assert sharing and all(all(g.mode == "full" for g in n.gpus) for n in inv.nodes if n.name in sharing)
    fractional = ("fraction", "gpu_memory_gib")
    fractions_on_full = [j for j in inv.jobs if j.status == "running" and j.request.kind in fractional]
    assert fractions_on_full and all(s.node in sharing for j in fractions_on_full for s in j.placement)
    view = View(ClusterState.from_inventory(inv))
    touched = Touched(
        nodes={n.name for n in inv.nodes},
        gpus={(n.name, g.index) for n in inv.nodes for g in n.gpus},
        jobs={j.name for j in inv.jobs},
        queues={q.name for q in inv.queues},
    )
    assert check(view, touched) == []
    assert check_references(inv) == []
