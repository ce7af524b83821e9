"""The op registry's word on what each op does on a vCenter (`OpSpec.runs["vsphere"]`, in docs/changes.md and the
review) against what apply carries out there (`VSPHERE_EXECUTORS`): assign-vgpu and remove-vgpu ran as
ReconfigVM tasks while the registry still said no vCenter call was made, so the two are held together here."""

from __future__ import annotations

from gpuadmin.cluster.vcenter_execute import VSPHERE_EXECUTORS
from gpuadmin.engine.ops import OPS, Unsupported

CARRIED_OUT = "on a vCenter-bound state apply runs"


def test_every_op_apply_carries_out_on_a_vcenter_says_so_in_the_registry_and_no_other_does() -> None:
    for op, spec in OPS.items():
        said = spec.runs.get("vsphere")
        says_it_runs = isinstance(said, Unsupported) and CARRIED_OUT in said.why
        assert says_it_runs == (op in VSPHERE_EXECUTORS), (op, said)


def test_each_registry_text_names_the_tasks_its_executor_starts() -> None:
    for op, executes in VSPHERE_EXECUTORS.items():
        said = OPS[op].runs["vsphere"]
        assert isinstance(said, Unsupported)
        for task in ("ReconfigVM_Task", "RelocateVM_Task", "EnterMaintenanceMode_Task", "ExitMaintenanceMode_Task"):
            if task in executes.calls:
                assert task in said.why, (op, task)
