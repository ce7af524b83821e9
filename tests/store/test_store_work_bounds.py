"""The work of reading and validating an inventory is bounded by what it holds, not only by its bytes (issue 18,
point 15): a 56 MB inventory of 490,000 jobs took 71 s and 1.4 GB to validate (a 62 MB one, 4.5 GB). Documents of
more than `MAX_EVENTS` YAML values are refused before any path builds them, the same way on both paths, and the
schema caps the number of nodes, jobs, queues and GPUs per node.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuadmin.model.diagnostics import InputError
from gpuadmin.model.inventory import MAX_GPU_INDEX, MAX_JOBS, MAX_NODES, MAX_QUEUES
from gpuadmin.store import load_yaml, parse_inventory, yamlsafe

REPO = Path(__file__).resolve().parents[2]

# One document per path: read from libyaml's events (plain), by the composer (an alias)
ON_EVERY_PATH = {
    "events": "a: [1, 2, 3]\nb: {c: d}\n",
    "composer": "a: &x [1, 2, 3]\nb: *x\n",
}


@pytest.mark.parametrize("path", sorted(ON_EVERY_PATH))
def test_a_document_past_the_value_limit_is_refused_on_every_path(path: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    text = ON_EVERY_PATH[path]
    assert (yamlsafe._read_plain(text) is not None) == (path == "events"), "the document takes its path"
    assert load_yaml(text, "t.yaml").data  # read within the limit
    events = yamlsafe._count_events(text)
    assert events is not None
    monkeypatch.setattr(yamlsafe, "MAX_EVENTS", events - 1)
    with pytest.raises(InputError) as refused:
        load_yaml(text, "t.yaml")
    [diagnostic] = refused.value.diagnostics
    assert diagnostic.file == "t.yaml"
    assert diagnostic.message == (f"the file holds {events:,} YAML values (each scalar, list and mapping), over the "
                                  f"limit of {events - 1:,}; it was not read")
    monkeypatch.setattr(yamlsafe, "MAX_EVENTS", events)
    assert load_yaml(text, "t.yaml").data


def test_the_cli_refuses_a_file_of_millions_of_values_quickly(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text("version: 1\ncluster: c\nx: [" + "0," * yamlsafe.MAX_EVENTS + "0]\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "validate", str(path)], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"{path}: the file holds 4,000,014 YAML values" in result.stderr
    assert "Traceback" not in result.stderr


def _inventory(queues: int = 0, nodes: int = 0, jobs: int = 0, gpus: int = 0) -> str:
    lines = ["version: 1", "cluster: c", "queues:", *(f"  - {{name: q{i}}}" for i in range(queues)), "nodes:"]
    lines += [f"  - {{name: n{i}, platform: baremetal}}" for i in range(nodes)]
    if gpus:
        lines += ["  - name: big", "    platform: baremetal", "    gpus:",
                  *(f"      - {{index: {i}, model: H100-SXM5-80GB}}" for i in range(gpus))]
    lines += ["jobs:", *(f"  - {{name: j{i}, queue: q0, request: {{gpus: 1}}}}" for i in range(jobs))]
    text = "\n".join(lines) + "\n"
    return text.replace("queues:\nnodes:", "queues: []\nnodes:").replace("nodes:\njobs:", "nodes: []\njobs:")


@pytest.mark.parametrize(("counts", "path", "limit"), [
    ({"queues": MAX_QUEUES + 1}, "queues", MAX_QUEUES),
    ({"nodes": MAX_NODES + 1}, "nodes", MAX_NODES),
    # big-scale: 200,001 jobs to parse (two minutes on CI's 2 cores); the same list cap as the other three
    pytest.param({"queues": 1, "jobs": MAX_JOBS + 1}, "jobs", MAX_JOBS, marks=pytest.mark.slow),
    ({"gpus": MAX_GPU_INDEX + 2}, "nodes[0].gpus", MAX_GPU_INDEX + 1),
])
def test_the_schema_caps_the_entities_of_an_inventory(counts: dict[str, int], path: str, limit: int) -> None:
    text = _inventory(**counts)
    with pytest.raises(InputError) as refused:
        parse_inventory(text, "big.yaml")
    assert any(str(d).startswith("big.yaml:") and f"{path}: must have at most {limit} items" in str(d)
               for d in refused.value.diagnostics), refused.value
