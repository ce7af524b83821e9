"""A plan says what it acts on (issue 21, point 5): a submitted job shows its spec (queue, request, priority,
preemptible, node selector), every job a plan stops says the GPUs or MIG slices it frees, and a vGPU taken from a
VM is named with its VM and profile — a destructive plan, applied only with the node's name typed (or --yes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuadmin.service import NotConfirmed, Service, confirmation
from tests.cli.clikit import ROOT, SAMPLES
from tests.cli.test_golden import check_golden, invoke

FIXTURES = Path(__file__).parent / "fixtures"
VSPHERE = ROOT / "sample-inventories" / "vsphere-hgx.yaml"


def test_submit_cancel_and_preempt_show_the_spec_and_what_they_free(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = invoke(capsys, "--inventory", str(SAMPLES / "oci-h100.yaml"), "plan", "-f",
                            str(FIXTURES / "submit-cancel-preempt.yaml"))
    assert code == 0, err
    check_golden("plan-targets.text", out)
    assert "      node_selector: pool=training" in out and "      preemptible: false" in out
    assert "moe-sft-8x7b (frees gpu-h100-03/0" in out and "eval-harness-7b (frees gpu-h100-07/2/@0)" in out


def test_a_vgpu_taken_from_a_vm_is_named_and_destructive(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = invoke(capsys, "--inventory", str(VSPHERE), "plan", "-f", str(FIXTURES / "remove-vgpu.yaml"))
    assert code == 0, err
    check_golden("plan-remove-vgpu.text", out)
    assert "  vGPUs taken from VMs: esx-hgx-03/6: dev-vm-01 A100X-20C" in out


def test_a_vgpu_removal_asks_for_the_node_typed_not_a_yes(tmp_path: Path) -> None:
    """The confirmation is the service's (both front ends ask it): a yes is refused, the node's name applies."""
    state = tmp_path / "state"
    Service.init(state, VSPHERE)
    service = Service(state_dir=state)
    plan = service.plan(service.build_changes(yaml.safe_load((FIXTURES / "remove-vgpu.yaml").read_text())["changes"]))
    asked = confirmation(plan)
    assert asked.destructive and asked.token == "esx-hgx-03" and "takes 1 vGPU(s)" in asked.prompt
    with pytest.raises(NotConfirmed):
        service.submit(plan, confirmed="y")
    assert Service(state_dir=state).revision() == 0
    applied = service.submit(plan, confirmed="esx-hgx-03")
    assert applied is not None and applied.revision == 1
