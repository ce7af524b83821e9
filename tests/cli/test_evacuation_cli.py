"""Host evacuation through the real CLI: `gpuadmin evacuate` and `drain` on a vSphere host show every VM's move
and estimated stun (golden files), a host without room is refused naming each VM, an apply moves the VMs, and the
inventory's vMotion numbers are refused where they are hostile, with file, line and field.

Regenerate the goldens: GPUADMIN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q -n 0 tests/cli/test_evacuation_cli.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml

from tests.engine.spare_hosts import add_spare_hosts

from .clikit import SAMPLES, gpuadmin

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GPUADMIN_UPDATE_GOLDEN") == "1"
VSPHERE = (SAMPLES / "vsphere-hgx.yaml").read_text(encoding="utf-8")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with GPUADMIN_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"


@pytest.fixture
def spares(tmp_path: Path) -> Path:
    """The vSphere sample with the spare hosts of the engine's evacuation tests appended."""
    raw = yaml.safe_load(VSPHERE)
    add_spare_hosts(raw)
    path = tmp_path / "vsphere-spares.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def test_evacuate_dry_run_shows_every_move_and_stun(spares: Path) -> None:
    result = gpuadmin("--no-color", "--inventory", spares, "evacuate", "esx-vdi-01", "--dry-run")
    assert result.code == 0, result.err
    check_golden("plan-evacuate.text", result.out)
    assert result.out.count(": vMotion to esx-vdi-0") == 13


def test_the_plan_document_lists_the_moves(spares: Path, tmp_path: Path) -> None:
    changes = tmp_path / "drain.yaml"
    changes.write_text("changes:\n  - {op: drain, node: esx-legacy-01}\n", encoding="utf-8")
    result = gpuadmin("--inventory", spares, "plan", "-f", changes, "-o", "json")
    assert result.code == 0, result.err
    check_golden("plan-evacuate.json", result.out)
    moves = json.loads(result.out)["evacuations"]["esx-legacy-01"]
    first = moves[0]
    assert (first["vm"], first["how"], first["to"]) == ("hpc-vm-01", "cold", "esx-legacy-02")


def test_a_host_without_room_is_refused_naming_each_vm() -> None:
    result = gpuadmin("--no-color", "--inventory", SAMPLES / "vsphere-hgx.yaml", "evacuate", "esx-hgx-02",
                      "--dry-run")
    assert result.code == 1, (result.out, result.err)
    text = result.out + result.err
    for vm in ("train-vm-02", "train-vm-03"):
        assert f"[vsphere.evacuation-room] node/esx-hgx-02: VM {vm} on esx-hgx-02 has nowhere to go" in text
    assert "✗ train-vm-02: nowhere to go (see the violations)" in text
    assert "Traceback" not in result.err


def test_apply_moves_the_vms_and_the_host_enters_maintenance(spares: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert gpuadmin("--state", state, "init", "--from", spares).code == 0
    applied = gpuadmin("--state", state, "evacuate", "esx-hgx-02", "--yes")
    assert applied.code == 0, applied.err
    nodes = {n["name"]: n for n in json.loads(gpuadmin("--state", state, "get", "nodes", "-o", "json").out)["items"]}
    assert nodes["esx-hgx-02"]["state"] == "draining"
    moved = json.loads(gpuadmin("--state", state, "describe", "node", "esx-hgx-04", "-o", "json").out)
    assert "train-vm-02" in json.dumps(moved) and "train-vm-03" in json.dumps(moved)


HOST = '    vsphere: {version: "7.0U3", vmotion_gbps: 25}'
CLUSTER = "  - {name: vdi, vmotion_gbps: 25, tolerated_stun_s: 30}"
VM = "      - {name: ws-cad-01, hardware_version: 20, tolerated_stun_s: 45}"
DAMAGE = [
    (HOST, HOST.replace("25", ".nan"), r"nodes\[6\]\.vsphere\.vmotion_gbps", "finite number"),
    (HOST, HOST.replace("25", ".inf"), r"nodes\[6\]\.vsphere\.vmotion_gbps", "finite number"),
    (HOST, HOST.replace("25", "-25"), r"nodes\[6\]\.vsphere\.vmotion_gbps", "greater than 0"),
    (CLUSTER, CLUSTER.replace("vmotion_gbps: 25", "vmotion_gbps: 0"), r"vsphere_clusters\[1\]\.vmotion_gbps",
     "greater than 0"),
    (CLUSTER, CLUSTER.replace("30", "-.inf"), r"vsphere_clusters\[1\]\.tolerated_stun_s", "finite number"),
    (VM, VM.replace("45", "-1"), r"nodes\[3\]\.vms\[12\]\.tolerated_stun_s", "greater than 0"),
    (VM, VM.replace("45", "1e9"), r"nodes\[3\]\.vms\[12\]\.tolerated_stun_s", "must be at most 3600"),
]


@pytest.mark.parametrize(("old", "new", "path", "message"), DAMAGE)
def test_hostile_vmotion_numbers_are_refused_with_file_line_and_field(tmp_path: Path, old: str, new: str,
                                                                      path: str, message: str) -> None:
    assert VSPHERE.count(old) == 1, old
    inventory = tmp_path / "damaged.yaml"
    inventory.write_text(VSPHERE.replace(old, new), encoding="utf-8")
    line = VSPHERE[:VSPHERE.index(old)].count("\n") + 1
    result = gpuadmin("validate", inventory)
    assert result.code == 2, result
    assert re.search(rf"{re.escape(str(inventory))}:{line}:\d+: {path}", result.err), result.err
    assert message in result.err and "Traceback" not in result.err


def test_a_vsphere_cluster_named_twice_is_refused(tmp_path: Path) -> None:
    inventory = tmp_path / "twice.yaml"
    inventory.write_text(VSPHERE.replace(CLUSTER, CLUSTER + "\n" + CLUSTER.replace("30", "20")), encoding="utf-8")
    result = gpuadmin("validate", inventory)
    assert result.code == 2 and "vsphere_clusters names 'vdi' twice" in result.err, result.err


def test_a_hosts_own_values_win_over_its_clusters(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert gpuadmin("--state", state, "init", "--from", SAMPLES / "vsphere-hgx.yaml").code == 0
    exported = yaml.safe_load(gpuadmin("--state", state, "export", "inventory").out)
    hosts = {n["name"]: n["vsphere"] for n in exported["nodes"]}
    assert hosts["esx-legacy-01"] == {"version": "7.0U3", "vmotion_gbps": 25.0, "tolerated_stun_s": 60.0}
    assert hosts["esx-vdi-01"] == {"version": "8.0U1", "vmotion_gbps": 25.0, "tolerated_stun_s": 30.0}
