"""`gpuadmin import` and `export` through the real process, on the real files of shared/data."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gpuadmin.store import load_inventory
from tests.cli.clikit import ROOT, SAMPLES, gpuadmin

FIXTURES = ROOT / "tests/adapters/fixtures"
H100_XML = FIXTURES / "k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml"
A100_XML = FIXTURES / "telegraf_a100-sxm4-80gb_mig-4x1g.20gb.xml"


def test_import_prints_a_change_file_that_validates_and_applies(state: Path, tmp_path: Path) -> None:
    result = gpuadmin("--state", state, "import", "nvidia-smi", A100_XML, "--node", "a100-lab")
    assert result.code == 0, result.err
    assert "attached_gpus says 4" in result.err  # the real file's quirk, as a warning on stderr
    changes = yaml.safe_load(result.out)["changes"]
    assert changes[0]["op"] == "add-node"
    gpu = changes[0]["node"]["gpus"][0]
    assert gpu["model"] == "A100-SXM4-80GB" and gpu["mode"] == "mig"
    assert [(i["profile"], i["start"]) for i in gpu["mig"]] == [("1g.20gb", s) for s in (0, 2, 4, 6)]
    path = tmp_path / "import.yaml"
    path.write_text(result.out, encoding="utf-8")
    assert gpuadmin("validate", path).code == 0
    assert gpuadmin("--state", state, "apply", "-f", path, "--yes").code == 0
    listed = json.loads(gpuadmin("--state", state, "get", "gpus", "a100-lab/0", "-o", "json").out)
    assert listed["items"][0]["layout"] == "1g.20gb@0 1g.20gb@2 1g.20gb@4 1g.20gb@6"
    # importing the same machine again replaces the node: a no-op plan
    again = gpuadmin("--state", state, "import", "nvidia-smi", A100_XML, "--node", "a100-lab", "--apply",
                     "--yes")
    assert again.code == 0 and "nothing to apply" in again.err


def test_import_with_topology_as_inventory() -> None:
    result = gpuadmin("import", "nvidia-smi", H100_XML, "--node", "h100-a", "--topo",
                      FIXTURES / "8x-a100-sxm4-80gb_nv12_8nic_deepep-issue-13.txt", "--rdma-gbps", "200",
                      "--rdma-network", "net-1", "-o", "inventory")
    assert result.code == 0, result.err
    node = yaml.safe_load(result.out)["nodes"][0]
    assert node["nvlink"] == "nvswitch" and len(node["gpus"]) == 8
    assert node["rdma"] == {"nics": 8, "gbps": 200, "network": "net-1"}


def test_import_with_another_machines_topology_is_refused_exit_2() -> None:
    """Issue 19 point 8: the real 8-GPU H100 XML with the real 4-GPU matrix (NVIDIA/nccl-tests#331, transcribed)."""
    topo = FIXTURES / "4x-a100-sxm_nv4-mesh_4nic_nccl-tests-issue-331.txt"
    result = gpuadmin("import", "nvidia-smi", H100_XML, "--node", "h100-a", "--topo", topo, "-o", "inventory")
    assert result.code == 2 and result.out == ""
    assert topo.name in result.err and "4 GPUs" in result.err and "has 8" in result.err
    assert "Traceback" not in result.err


def test_import_local_without_a_driver_is_one_line_exit_2() -> None:
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "import", "local")
    assert result.code == 2
    assert result.err.strip().count("\n") == 0 and "no NVIDIA driver found" in result.err
    assert "Traceback" not in result.err


def test_export_inventory_round_trips(tmp_path: Path) -> None:
    result = gpuadmin("--inventory", SAMPLES / "k8s-mixed.yaml", "export", "inventory")
    assert result.code == 0
    path = tmp_path / "exported.yaml"
    path.write_text(result.out, encoding="utf-8")
    assert load_inventory(path) == load_inventory(SAMPLES / "k8s-mixed.yaml")


def test_exports_are_data_on_stdout() -> None:
    for kind in ("mig-parted", "device-plugin", "labels", "pods", "queues"):
        result = gpuadmin("--inventory", SAMPLES / "k8s-mixed.yaml", "export", kind, "-o", "json")
        assert result.code == 0, (kind, result.err)
        assert json.loads(result.out), kind
    mig = json.loads(gpuadmin("--inventory", SAMPLES / "k8s-mixed.yaml", "export", "mig-parted", "-o",
                              "json").out)
    assert mig["version"] == "v1" and "all-disabled" in mig["mig-configs"]
