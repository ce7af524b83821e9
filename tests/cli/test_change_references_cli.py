"""A change leaves a state whose export validates (issue 18, point 15): `add-node` and `submit-job` once skipped
the inventory's reference checks, so an unknown shape or a job in an undefined VM was applied, and the exported
state no longer validated. The planner now runs the same checks (`change.references`) on what a plan adds or
edits, through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .clikit import gpuadmin, state_from

VSPHERE_NODE = ("{name: esx-new, platform: vsphere, vsphere: {version: '8.0U2'}, "
                "gpus: [{index: 0, model: A100-SXM4-80GB, mode: vgpu, vgpus: [VGPUS]}], "
                "vms: [VMS], device_groups: [GROUPS]}")


def vsphere_node(vgpus: str = "", vms: str = "", groups: str = "") -> str:
    return VSPHERE_NODE.replace("VGPUS", vgpus).replace("VMS", vms).replace("GROUPS", groups)


REFUSED = [
    ("{op: add-node, node: {name: n, platform: baremetal, shape: NO-SUCH-SHAPE}}", "node/n",
     "shape: unknown shape 'NO-SUCH-SHAPE'"),
    ("{op: add-node, node: {name: n, platform: baremetal, gpus: [{index: 0, model: H100-SXM5-80GB}, "
     "{index: 0, model: H100-SXM5-80GB}]}}", "node/n", "gpus[1].index: duplicate GPU index 0"),
    (f"{{op: add-node, node: {vsphere_node(vgpus='{vm: ghost, profile: A100DX-80C}')}}}", "node/esx-new",
     "gpus[0].vgpus[0].vm: vGPU names VM 'ghost', which is not defined"),
    (f"{{op: add-node, node: {vsphere_node(vms='{name: v1, hardware_version: 20, device_group: nope}')}}}",
     "node/esx-new", "vms[0].device_group: VM 'v1' names device group 'nope'"),
    (f"{{op: add-node, node: {vsphere_node(groups='{name: g, gpus: [0, 5]}')}}}", "node/esx-new",
     "device_groups[0].gpus[1]: device group 'g' names GPU 5"),
    ("{op: submit-job, job: {name: j, queue: ml-training, request: {gpus: 1}, vm: no-such-vm}}", "job/j",
     "vm: job 'j' names VM 'no-such-vm', which is not defined on any node"),
    ("{op: submit-job, job: {name: j, queue: ml-training, request: {gpus: 1, model: NO-SUCH-GPU}}}", "job/j",
     "request.model: unknown GPU model 'NO-SUCH-GPU'"),
    (f"{{op: add-node, node: {vsphere_node(vms='{name: train-vm-01, hardware_version: 20}')}}}\n"
     "  - {op: submit-job, job: {name: j, queue: ml-training, request: {gpus: 1}, vm: train-vm-01}}", "job/j",
     "vm: job 'j' names VM 'train-vm-01', which is defined on 2 nodes"),
]


@pytest.fixture(scope="module")
def refusing_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One state for every refused change: each test exports the state before and after its own refusal, so one
    that changed it would fail there (an init per case was a third of each test's time)."""
    return state_from("vsphere-hgx.yaml", tmp_path_factory.mktemp("refusing") / "state")


@pytest.mark.parametrize(("change", "target", "reason"), REFUSED)
def test_a_change_that_breaks_a_reference_is_refused(refusing_state: Path, tmp_path: Path, change: str, target: str,
                                                      reason: str) -> None:
    state = refusing_state
    before = gpuadmin("--state", state, "export", "inventory").out
    changes = tmp_path / "changes.yaml"
    changes.write_text(f"changes:\n  - {change}\n", encoding="utf-8")
    result = gpuadmin("--state", state, "apply", "-f", changes, "--yes")
    assert result.code == 1, result
    assert f"[change.references] {target}: {reason}" in result.out, result.out
    assert gpuadmin("--state", state, "export", "inventory").out == before


def test_what_a_change_adds_exports_to_an_inventory_that_validates(tmp_path: Path) -> None:
    state = state_from("vsphere-hgx.yaml", tmp_path / "state")
    changes = tmp_path / "changes.yaml"
    node = vsphere_node(vgpus="{vm: v1, profile: A100DX-80C}", vms="{name: v1, hardware_version: 20}")
    changes.write_text(f"changes:\n  - {{op: add-node, node: {node}}}\n"
                       "  - {op: add-node, node: {name: n, platform: baremetal, shape: BM.GPU.H100.8}}\n"
                       "  - {op: submit-job, job: {name: j, queue: ml-training, request: {gpus: 1}, vm: v1}}\n",
                       encoding="utf-8")
    applied = gpuadmin("--state", state, "apply", "-f", changes, "--yes")
    assert applied.code == 0, applied.out + applied.err
    exported = tmp_path / "exported.yaml"
    exported.write_text(gpuadmin("--state", state, "export", "inventory").out, encoding="utf-8")
    validated = gpuadmin("validate", exported)
    assert validated.code == 0, validated.err
