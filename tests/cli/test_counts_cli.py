"""Issue 10, item 8: counts that mean what they say — free / partly used / full GPUs (one small MIG instance held
is partly used), holders of every kind (VMs too), shares in GPUs, one unit per column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.clikit import SAMPLES, gpuadmin


def _items(inventory: str, kind: str) -> list[dict[str, Any]]:
    result = gpuadmin("--inventory", SAMPLES / inventory, "get", kind, "-o", "json")
    assert result.code == 0, result.err
    return list(json.loads(result.out)["items"])


def test_node_counts_free_partly_used_and_full() -> None:
    header = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "get", "nodes").out.splitlines()[0].split()
    assert header[3:7] == ["GPUS", "FREE", "PARTLY_USED", "FULL"] and "USED" not in header
    node = next(n for n in _items("oci-h100.yaml", "nodes") if n["name"] == "gpu-h100-07")
    # gpu 5 holds one small 1g.10gb instance among free ones: partly used, not "used"
    assert (node["free"], node["partly_used"], node["full"]) == (1, 6, 1)
    assert node["free"] + node["partly_used"] + node["full"] == node["gpus"]


def test_gpu_holders_include_vms_and_use_is_shown() -> None:
    gpus = _items("vsphere-hgx.yaml", "gpus")
    passthrough = next(g for g in gpus if g["mode"] == "passthrough" and g["holders"] != "-")
    assert passthrough["holders"].startswith("vm:") and passthrough["use"] == "full"
    vgpu = next(g for g in gpus if g["mode"] == "vgpu" and g["holders"] != "-")
    assert "vm:" in vgpu["holders"]
    assert all(g["holders"] != "-" or g["use"] == "free" for g in gpus)
    oci = {g["name"]: g for g in _items("oci-h100.yaml", "gpus")}
    assert oci["gpu-h100-07/5"]["use"] == "partly used"


def test_slice_shares_are_in_gpus() -> None:
    slices = _items("oci-h100.yaml", "slices")
    shared = next(s for s in slices if s["node"] == "gpu-h100-10" and s["gpu"] == 1)
    # one holder asking for 0.25 GPU: it holds 0.25 GPU of the GPU, one replica of eight
    assert shared["held_gpus"] == 0.25 and shared["replicas"] == "1/8" and shared["size_gpus"] == 1
    # a full GPU fractions share dynamically: 0.5 + 0.25 + 16 GiB of the 79.1 GiB left after the reserve
    dynamic = next(s for s in slices if s["node"] == "gpu-h100-09" and s["gpu"] == 0)
    assert dynamic["slice"] == "shared (dynamic)" and dynamic["held_gpus"] == round(0.75 + 16 / (81559 / 1024 - 0.5), 3)
    assert dynamic["holders"] == "nb-alice,nb-bob,nb-chen" and dynamic["replicas"] == "3 fractions"
    mig = next(s for s in slices if s["node"] == "gpu-h100-07" and s["slice"] == "mig 3g.40gb@4")
    assert mig["size_gpus"] == round(3 / 7, 3) and mig["held_gpus"] == round(3 / 7, 3)
    header = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "get", "slices").out.splitlines()[0].split()
    assert header == ["NODE", "GPU", "SLICE", "SIZE_GPUS", "HELD_GPUS", "REPLICAS", "HOLDERS"]


def test_queue_columns_have_one_unit_each() -> None:
    table = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "get", "queues").out.splitlines()
    assert table[0].split() == ["NAME", "QUOTA_GPUS", "LIMIT_GPUS", "USED_GPUS", "BORROWED_GPUS"]
    research = table[1].split()
    assert research[:3] == ["research", "32", "48"] and "GPU" not in table[1]
    assert len(research[3].split(".")[-1]) <= 2  # USED_GPUS to two decimals
    wide = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "get", "queues", "-o", "wide").out.splitlines()[0]
    assert wide.split()[5:8] == ["QUOTA_GIB", "LIMIT_GIB", "USED_GIB"]


def test_dynamically_shared_gpu_lists_its_holders_shares_from_a_state_too(state: Path) -> None:
    """Node listings read a state without parsing every job; a dynamically shared GPU still shows who holds
    how much of it — the same row as from the inventory file."""
    from_file = {g["name"]: g for g in _items("oci-h100.yaml", "gpus")}["gpu-h100-09/0"]
    result = gpuadmin("--state", state, "get", "gpus", "-o", "json")
    assert result.code == 0, result.err
    from_state = {g["name"]: g for g in json.loads(result.out)["items"]}["gpu-h100-09/0"]
    assert from_state == from_file
    assert from_state["holders"].startswith("nb-alice(0.5, 39.6GiB)")
    assert from_state["layout"].startswith("shared by 3:")
