"""The draft plan in a real terminal (issue 21, point 1): at 80x24 under TERM=xterm, on the vSphere host
esx-hgx-02, move train-vm-03 from device group dg-b to dg-c — detach the VM, remove its two vGPUs, attach it to
dg-c, assign a vGPU on each of dg-c's GPUs. Each edit refuses alone; the draft is reviewed as one plan and
applied as one journal entry. The reviews are saved to $GPUADMIN_TMUX_CAPTURES when it is set."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpuadmin.service import Service
from tests.e2e.tmuxkit import ROOT, Pane, gpuadmin_argv

CLUSTER = ROOT / "tests" / "tui" / "fixtures" / "cluster.yaml"
HOST = "esx-hgx-02"
XTERM = {"TERM": "xterm", "LANG": "C.UTF-8"}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    Service.init(tmp_path / "state", CLUSTER)
    return tmp_path / "state"


def _save(name: str, screen: str) -> None:
    folder = os.environ.get("GPUADMIN_TMUX_CAPTURES")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_text(screen)


def _filter(pane: Pane, text: str, shown: str) -> None:
    """`/`, the filter typed afresh (the prompt opens holding the view's), Enter; `shown` then shows."""
    deadline = time.monotonic() + 20
    while True:  # the footer (its keys, `? help` first) gives way to the prompt; a `/` a busy console missed: again
        pane.type("/")
        shown_by = time.monotonic() + 3
        while "? help" in pane.screen().rstrip().splitlines()[-1] and time.monotonic() < shown_by:
            time.sleep(0.1)
        if "? help" not in pane.screen().rstrip().splitlines()[-1]:
            break
        assert time.monotonic() < deadline, pane.screen()
    for _ in range(3):  # the prompt takes the focus just after it shows: on a loaded machine, type again
        time.sleep(0.5)
        pane.keys("C-u")
        pane.type(text)
        typed = time.monotonic() + 3
        while text not in pane.screen() and time.monotonic() < typed:
            time.sleep(0.1)
        if text in pane.screen():
            break
    pane.keys("Enter")
    pane.wait_for(shown)


def _choose(pane: Pane, value: str) -> None:
    """Pick a value in the focused select: open it, type to find the option, Enter. The list opens and the
    choice reaches the form as messages after the keys: each is given a moment before the next key (a key
    sent at once would reach the field before)."""
    pane.keys("Enter")
    time.sleep(0.5)
    pane.type(value)
    time.sleep(0.3)
    pane.keys("Enter")
    time.sleep(0.5)


def _edit(pane: Pane, key: str, form: str, *values: str) -> str:
    """An edit's form: its choices in field order, planned with ctrl+o; the review of the draft."""
    pane.type(key)
    pane.wait_for(form)
    for number, value in enumerate(values):
        if number:
            pane.keys("Tab")
        _choose(pane, value)
    pane.keys("C-o")
    return pane.wait_for("plan: ")


def _keep(pane: Pane, size: int, *, quiet: bool = False) -> None:
    """Esc on the review: back on the view, the draft kept (the header's badge, and a notification). `quiet`:
    and wait for the notification to time out, so that the next review's capture is clean."""
    pane.keys("Escape")
    deadline = time.monotonic() + 20
    while f" DRAFT {size} " not in pane.screen().splitlines()[0]:  # the header: the review is gone
        assert time.monotonic() < deadline, pane.screen()
        time.sleep(0.1)
    pane.wait_for("not applied: kept")  # the notification (wrapped: the rest is on the lines below)
    time.sleep(0.3)  # the view has the focus back before the next key
    while quiet and "not applied: kept" in pane.screen():
        assert time.monotonic() < deadline + 20, pane.screen()
        time.sleep(0.2)


def test_a_vm_moves_to_another_device_group_in_one_plan(state: Path, tmp_path: Path, panes: list[Pane]) -> None:
    pane = Pane(gpuadmin_argv("--state", str(state), "tui", "--view", "nodes"),
                {**XTERM, "XDG_CONFIG_HOME": str(tmp_path / "config")})
    panes.append(pane)
    pane.wait_for("nodes: 7 of 7")
    _filter(pane, HOST, "nodes: 1 of 7")
    alone = _edit(pane, "A", f"detach a VM on {HOST}", "train-vm-03")
    assert "REFUSED" in alone and "group.vm-holds-whole-group" in alone
    _keep(pane, 1)

    pane.type("3")
    pane.wait_for("gpus: 34 of 34")
    for gpu in (4, 5):
        _filter(pane, f"node={HOST},gpu={gpu}", "gpus: 1 of")
        _edit(pane, "V", f"remove a vGPU from {HOST}/{gpu}", "train-vm-03")
        _keep(pane, gpu - 2)

    pane.type("2")
    pane.wait_for("nodes: 1 of 7")
    _edit(pane, "a", f"attach a VM on {HOST}", "train-vm-03", "dg-c")
    _keep(pane, 4, quiet=True)
    pane.type("3")
    pane.wait_for("gpus: 1 of 34")  # as it was left: filtered on GPU 5
    _filter(pane, f"node={HOST},gpu=6", "gpus: 1 of")
    refused = _edit(pane, "v", f"assign a vGPU on {HOST}/6", "train-vm-03", "A100DX-80C")
    refused = pane.wait_for("REFUSES")
    _save("draft-refused-80x24.txt", refused)
    assert "plan: draft: 5 edits, 5 changes" in refused
    assert f"4. attach a VM on {HOST}  REFUSES" in refused, "the review says which change refuses"
    _keep(pane, 5, quiet=True)

    _filter(pane, f"node={HOST},gpu=7", "gpus: 1 of")
    review = _edit(pane, "v", f"assign a vGPU on {HOST}/7", "train-vm-03", "A100DX-80C")
    review = pane.wait_for("ALLOWED")
    _save("draft-review-80x24.txt", review)
    assert "plan: draft: 6 edits, 6 changes" in review and "REFUSES" not in review
    assert all(len(line) <= 80 for line in review.splitlines())
    pane.type(HOST)  # it removes vGPUs: destructive, the host's name is typed
    pane.keys("Enter")
    pane.wait_for("applied: revision 1")
    assert " DRAFT " not in pane.screen()
    pane.type("8")
    journal = pane.wait_for("journal: 2 of 2")
    _save("draft-journal-80x24.txt", journal)
    pane.type("q")
    assert pane.exit_code() == 0

    after = Service(state_dir=state)
    entries = [e for e in after.journal() if e.outcome == "applied" and e.diff]
    assert len(entries) == 1 and len((entries[0].plan or {})["changes"]) == 6
    vm = next(v for v in after.describe("node", HOST)["spec"]["vms"] if v["name"] == "train-vm-03")
    assert vm["device_group"] == "dg-c"
