"""dump_inventory: deterministic, defaults left out, and parse(dump(parse(x))) == parse(x)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
import yaml

from bench.generate import dump_inventory as dump_generated
from bench.generate import generate_inventory
from gpuadmin.model.diagnostics import InputError
from gpuadmin.model.inventory import Inventory
from gpuadmin.store import dump_inventory, load_inventory, parse_inventory

HERE = Path(__file__).parent
REPO = HERE.parent.parent
INPUTS = sorted((HERE / "fixtures").glob("*.yaml")) + sorted((REPO / "sample-inventories").glob("*.yaml"))


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_round_trip_of_files(path: Path) -> None:
    inventory = load_inventory(path)
    text = dump_inventory(inventory)
    again = parse_inventory(text, "dumped.yaml")
    assert again == inventory
    assert dump_inventory(again) == text, "the writer is deterministic"


def test_round_trip_of_a_generated_inventory() -> None:
    out = io.StringIO()
    dump_generated(generate_inventory(nodes=24, jobs=400, seed=3), out)
    inventory = parse_inventory(out.getvalue(), "generated.yaml")
    text = dump_inventory(inventory)
    assert parse_inventory(text, "dumped.yaml") == inventory


def test_defaults_are_left_out_and_fields_keep_model_order() -> None:
    text = dump_inventory(load_inventory(HERE / "fixtures" / "minimal.yaml"))
    for default in ("state: ready", "mode: full", "preemptible: true", "status: pending", "nodes: 1",
                    "priority: 0", "labels: {}", "device_groups: []"):
        assert default not in text
    assert text.startswith("version: 1\ncluster: test-cluster\nqueues:\n")
    assert text.index("queues:") < text.index("nodes:") < text.index("jobs:")
    node = text[text.index("  - name: gpu-01"):]
    keys = ("platform", "cpus", "memory_gib", "rdma", "labels", "nvlink", "gpus")
    order = [node.index(f"    {key}:") for key in keys]
    assert order == sorted(order)


def test_small_mappings_are_written_in_flow_style_one_per_line() -> None:
    text = dump_inventory(load_inventory(HERE / "fixtures" / "minimal.yaml"))
    assert "      - {index: 0, model: H100-SXM5-80GB}\n" in text
    assert ("      - {index: 1, model: H100-SXM5-80GB, mode: mig, mig: [{profile: 3g.40gb, start: 4}]}\n"
            in text)
    assert "    rdma: {nics: 16, gbps: 200, network: cluster-net-1}\n" in text
    assert ("  - {name: train-1, queue: research, request: {gpus: 2, nvlink: true}, priority: 50, "
            "preemptible: false}\n") in text
    assert all(len(line) <= 110 for line in text.splitlines())


TRICKY = ["yes", "no", "on", "off", "y", "n", "Yes", "NO", "true", "False", "null", "~", "", "0755", "012",
          "0o17", "0x1f", "1:30", "1_000", "1e3", ".inf", "-.5", "8.0", "2024-01-01", "2024-01-01T10:00:00",
          "a: b", "#hash", "x #y", "- item", "[x]", "{x}", "x, y", "*alias", "&anchor", "!tag", "%pct", "@at",
          "`tick", "|", ">", "=", "<<", "?", "with \"quotes\"", "it's", "back\\slash", "tab\there",
          "new\nline", "trailing ", " leading", "ünïcödé", "emoji 🎉", "bell\x07", "sep\u2028x", "nel\x85",
          "bom\ufeff", "nul\x00", "3g.40gb", "8.0U1", "H100-SXM5-80GB", "oci.oraclecloud.com/fault-domain"]


def test_strings_that_need_quotes_round_trip_here_and_in_other_yaml_readers() -> None:
    base = load_inventory(HERE / "fixtures" / "minimal.yaml")
    labels = {f"k{i}-{s}" if i % 2 else s or "empty-key": s for i, s in enumerate(TRICKY)}
    node = base.nodes[0].model_copy(update={"labels": labels})
    inventory = base.model_copy(update={"nodes": [node, *base.nodes[1:]], "cluster": "yes"})
    text = dump_inventory(inventory)
    again = parse_inventory(text, "dumped.yaml")
    assert again == inventory
    assert again.nodes[0].labels == labels
    # a YAML 1.1 reader (PyYAML's own resolver) reads the same strings
    assert yaml.safe_load(text)["nodes"][0]["labels"] == labels
    assert yaml.safe_load(text)["cluster"] == "yes"


def test_floats_round_trip() -> None:
    base = load_inventory(HERE / "fixtures" / "minimal.yaml")
    weights = (0.5, 1e-05)
    queues = [q.model_copy(update={"over_quota_weight": w})
              for q, w in zip(base.queues, weights, strict=True)]
    jobs = [base.jobs[0].model_copy(update={"request": base.jobs[0].request.model_copy(
        update={"gpus": None, "gpu_memory_gib": 16384.0})}), *base.jobs[1:]]
    inventory = base.model_copy(update={"queues": queues, "jobs": jobs})
    text = dump_inventory(inventory)
    assert "gpu_memory_gib: 16384.0" in text and "over_quota_weight: 1e-05" in text
    assert parse_inventory(text, "dumped.yaml") == inventory


def test_a_non_finite_number_is_neither_written_nor_read() -> None:
    base = load_inventory(HERE / "fixtures" / "minimal.yaml")
    forced = base.model_copy(update={"queues": [base.queues[0].model_copy(update={"over_quota_weight": math.inf}),
                                                *base.queues[1:]]})
    with pytest.raises(ValueError, match="not finite"):
        dump_inventory(forced)
    text = dump_inventory(base).replace("over_quota_weight: 2.0", "over_quota_weight: .inf")
    with pytest.raises(InputError, match="must be a finite number"):
        parse_inventory(text, "dumped.yaml")


def test_an_empty_inventory() -> None:
    inventory = Inventory(version=1, cluster="empty")
    assert dump_inventory(inventory) == "version: 1\ncluster: empty\n"
    assert parse_inventory(dump_inventory(inventory)) == inventory
