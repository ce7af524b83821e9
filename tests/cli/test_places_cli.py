"""Issue 10, item 6: one notation for a GPU and a slice — `node/gpu` and `node/gpu/profile@start` — in listings,
diffs, violation messages, explanations and JSON, and accepted as input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuadmin.model.places import parse_place, slice_place
from tests.cli.clikit import SAMPLES, gpuadmin

OCI = SAMPLES / "oci-h100.yaml"


def test_parse_and_format() -> None:
    assert slice_place("gpu-h100-07", 0, 4, "3g.40gb") == "gpu-h100-07/0/3g.40gb@4"
    assert slice_place("gpu-h100-07", 0) == "gpu-h100-07/0"
    assert parse_place("gpu-h100-07/0/3g.40gb@4") == ("gpu-h100-07", 0, "3g.40gb", 4)
    assert parse_place("gpu-h100-07/3") == ("gpu-h100-07", 3, None, None)
    with pytest.raises(ValueError, match="not a place"):
        parse_place("gpu-h100-07/gpu/0@4")


def test_listings_explanations_and_json_use_the_notation() -> None:
    jobs = {j["name"]: j for j in json.loads(gpuadmin("--inventory", OCI, "get", "jobs", "-o", "json").out)["items"]}
    assert jobs["llama3-8b-serve"]["placement"] == "gpu-h100-07/0/3g.40gb@4"
    slices = gpuadmin("--inventory", OCI, "get", "slices", "-o", "name").out.split()
    assert "slice/gpu-h100-07/0/3g.40gb@4" in slices and not any("mig" in s.split("/")[-1] for s in slices)
    assert gpuadmin("--inventory", OCI, "get", "slices", "gpu-h100-07/0/3g.40gb@4").code == 0
    running = gpuadmin("--inventory", OCI, "explain", "llama3-8b-serve").out
    assert "running on gpu-h100-07/0/3g.40gb@4" in running


def test_diffs_and_violations_use_the_notation(tmp_path: Path) -> None:
    change = tmp_path / "c.yaml"
    change.write_text("changes: [{op: set-mig, node: gpu-h100-07, gpu: 0, "
                      "instances: [{profile: 7g.80gb, start: 0}]}]\n", encoding="utf-8")
    out = gpuadmin("--inventory", OCI, "plan", "-f", change).out
    assert "gpus[0].mig: 2g.20gb@0 1g.10gb@2 1g.10gb@3 3g.40gb@4 -> 7g.80gb@0" in out
    assert "holds gpu-h100-07/0/3g.40gb@4," in out
    assert "/gpu/0@" not in out and "/mig" not in out


def test_a_slot_is_accepted_as_a_place(tmp_path: Path) -> None:
    change = tmp_path / "bind.yaml"
    change.write_text('changes: [{op: bind-job, name: sae-probe, placement: ["gpu-h100-07/0/1g.10gb@3"]}]\n',
                      encoding="utf-8")
    data = json.loads(gpuadmin("--inventory", OCI, "plan", "-f", change, "-o", "json").out)
    assert data["changes"][0]["placement"] == [{"node": "gpu-h100-07", "gpu": 0, "mig_start": 3}]
    bad = tmp_path / "bad.yaml"
    bad.write_text('changes: [{op: bind-job, name: sae-probe, placement: ["gpu-h100-07/gpu/0@3"]}]\n',
                   encoding="utf-8")
    refused = gpuadmin("--inventory", OCI, "plan", "-f", bad)
    assert refused.code == 2 and "not a place" in refused.err


def test_a_violation_names_its_gpu_by_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("changes: [{op: set-mig, node: gpu-h100-12, gpu: 3, instances: [{profile: 9g.99gb}]}]\n",
                   encoding="utf-8")
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "plan", "-f", bad, "-o", "json")
    assert result.code == 1
    targets = {v["target"] for v in json.loads(result.out)["violations"]}
    assert targets == {"gpu-h100-12/3"}, targets
