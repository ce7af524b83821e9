"""`undo` twice walks back two changes (it once undid its own undo); `redo` walks forward again."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.clikit import gpuadmin


def _state_of(state: Path, node: str) -> str:
    result = gpuadmin("--state", state, "get", "nodes", node, "-o", "json")
    assert result.code == 0, result.err
    return str(json.loads(result.out)["items"][0]["state"])


def test_undo_undo_redo(state: Path, tmp_path: Path) -> None:
    for node in ("gpu-h100-12", "gpu-h100-10"):
        changes = tmp_path / f"{node}.yaml"
        changes.write_text(f"changes:\n  - {{op: cordon, node: {node}}}\n", encoding="utf-8")
        assert gpuadmin("--state", state, "apply", "-f", changes, "--yes").code == 0
    first = gpuadmin("--state", state, "undo", "--yes")
    assert first.code == 0 and "undo entry" in first.err and "revision 2" in first.err
    second = gpuadmin("--state", state, "undo", "--yes")
    assert second.code == 0 and "revision 1" in second.err
    assert (_state_of(state, "gpu-h100-12"), _state_of(state, "gpu-h100-10")) == ("ready", "ready")
    nothing = gpuadmin("--state", state, "undo", "--yes")
    assert nothing.code == 2 and "nothing to undo" in nothing.err
    redo = gpuadmin("--state", state, "redo", "--yes")
    assert redo.code == 0 and "redo entry" in redo.err
    assert _state_of(state, "gpu-h100-12") == "cordoned" and _state_of(state, "gpu-h100-10") == "ready"


def test_undo_and_redo_never_cross_an_init(state: Path, tmp_path: Path) -> None:
    """`init --force` replaced the state with another inventory: what was done before it belongs to a state that
    is gone, and undoing it would put that state's nodes back into this one."""
    from tests.cli.clikit import SAMPLES

    for node in ("gpu-h100-12", "gpu-h100-10"):  # revisions 1 and 2
        changes = tmp_path / f"{node}.yaml"
        changes.write_text(f"changes:\n  - {{op: cordon, node: {node}}}\n", encoding="utf-8")
        assert gpuadmin("--state", state, "apply", "-f", changes, "--yes").code == 0
    assert gpuadmin("--state", state, "undo", "--yes").code == 0  # revision 3: redo could bring back revision 2
    assert gpuadmin("--state", state, "init", "--from", SAMPLES / "k8s-mixed.yaml", "--force").code == 0  # 4
    nodes = gpuadmin("--state", state, "get", "nodes", "-o", "name").out
    for args, message in [(("undo",), "nothing to undo"), (("redo",), "nothing to redo"),
                          (("undo", "--to", "1"), "cannot undo back to revision 1: an init replaced the whole "
                           "state at revision 4 (entry 5), and undo never goes back past one (the earliest is "
                           "--to 4)")]:
        result = gpuadmin("--state", state, *args, "--yes")
        assert result.code == 2 and result.err == f"{message}\n", (args, result.err)
    after = gpuadmin("--state", state, "get", "nodes", "-o", "name").out
    assert after == nodes and "gpu-h100-12" not in after
    # history starts again after the init
    k8s = tmp_path / "k8s.yaml"
    k8s.write_text("changes:\n  - {op: cordon, node: dgx-a100-01}\n", encoding="utf-8")
    assert gpuadmin("--state", state, "apply", "-f", k8s, "--yes").code == 0
    assert gpuadmin("--state", state, "undo", "--yes").code == 0
    assert gpuadmin("--state", state, "undo", "--yes").err == "nothing to undo\n"
    assert _state_of(state, "dgx-a100-01") == "ready"


def _job_names(state: Path) -> list[str]:
    result = gpuadmin("--state", state, "get", "jobs", "-o", "name")
    assert result.code == 0, result.err
    return result.out.split()


def test_undo_to_puts_a_resubmitted_job_back_at_its_fifo_position(state: Path, tmp_path: Path) -> None:
    """Submission order is the scheduler's FIFO: a job cancelled and submitted again sits last, and undoing back
    past both puts it where it was, not at the end (the restore once moved only an entity that was gone)."""
    before = _job_names(state)
    assert before.index("job/vit-h-pretrain") == 2
    cancel = tmp_path / "cancel.yaml"
    cancel.write_text("changes:\n  - {op: cancel-job, name: vit-h-pretrain}\n", encoding="utf-8")
    submit = tmp_path / "submit.yaml"
    submit.write_text("changes:\n  - op: submit-job\n    job: {name: vit-h-pretrain, queue: research, "
                      "request: {gpus: 4, nvlink: true}, priority: 30, status: pending}\n", encoding="utf-8")
    for changes in (cancel, submit):  # revisions 1 and 2
        assert gpuadmin("--state", state, "apply", "-f", changes, "--yes").code == 0
    assert _job_names(state)[-1] == "job/vit-h-pretrain"
    undo = gpuadmin("--state", state, "undo", "--to", "0", "--yes")
    assert undo.code == 0, undo.err
    assert _job_names(state) == before
