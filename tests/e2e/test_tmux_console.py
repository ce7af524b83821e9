"""The real console in a real terminal: `gpuadmin` started in tmux at 80x24, driven by keys, read off the
pane. TERM=xterm (16 colours), and again under NO_COLOR and LANG=C, and in GNU screen's TERM."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpuadmin.service import Service
from tests.e2e.tmuxkit import Pane, gpuadmin_argv

TERMINALS = {
    "xterm": {"TERM": "xterm", "LANG": "C.UTF-8"},
    "no-color": {"TERM": "xterm-256color", "NO_COLOR": "1", "LANG": "C.UTF-8"},
    "lang-c": {"TERM": "xterm", "LANG": "C"},
    "screen": {"TERM": "screen", "LANG": "C.UTF-8"},
}


@pytest.mark.parametrize("terminal", list(TERMINALS))
def test_jobs_filter_describe_back_quit(state: Path, tmp_path: Path, panes: list[Pane], terminal: str) -> None:
    env = {**TERMINALS[terminal], "XDG_CONFIG_HOME": str(tmp_path / "config")}
    pane = Pane(gpuadmin_argv("--state", str(state)), env)
    panes.append(pane)
    first = pane.wait_for_all("GPUs by use", "rev 0")
    assert "oci-h100-prod" in first and "rev 0" in first and "overview" in first.splitlines()[0]
    assert all(len(line) <= 80 for line in first.splitlines()), "nothing drawn past 80 columns"

    pane.type(":jobs")
    pane.keys("Enter")
    jobs = pane.wait_for("jobs: 55 of 55")
    assert "llm-pretrain-70b" in jobs and "NAME" in jobs and "STATUS" in jobs

    pane.type("/status=pending")
    pane.keys("Enter")
    filtered = pane.wait_for("jobs: 17 of 55")
    assert "filter /status=pending" in filtered
    assert "running" not in filtered.split("jobs: 17 of 55", 1)[1], "the filter keeps pending jobs only"

    pane.type("d")
    described = pane.wait_for("Status:")  # laid out as kubectl describe: Name, Kind, Status, Pending first
    assert "Kind:           job" in described and "Status:         pending" in described
    assert "Pending:        " in described

    pane.keys("Escape")
    back = pane.wait_for("jobs: 17 of 55")
    assert "Kind:" not in back

    pane.type("q")
    assert pane.exit_code() == 0


def test_a_resize_redraws_and_never_crashes(state: Path, tmp_path: Path, panes: list[Pane]) -> None:
    pane = Pane(gpuadmin_argv("--state", str(state), "tui", "--view", "nodes"),
                {**TERMINALS["xterm"], "XDG_CONFIG_HOME": str(tmp_path / "config")})
    panes.append(pane)
    pane.wait_for("nodes: 12 of 12")
    for width, height in ((40, 12), (132, 40), (80, 24)):
        pane._run("resize-window", "-x", str(width), "-y", str(height))
        screen = pane.wait_for("gpu-h100-01")
        assert all(len(line) <= width for line in screen.splitlines())
    pane.keys("C-c")
    assert pane.exit_code() == 0


def test_a_mig_repartition_made_in_the_form_is_in_the_journal(state: Path, tmp_path: Path,
                                                              panes: list[Pane]) -> None:
    pane = Pane(gpuadmin_argv("--state", str(state), "tui", "--view", "gpus"),
                {**TERMINALS["xterm"], "XDG_CONFIG_HOME": str(tmp_path / "config")})
    panes.append(pane)
    pane.wait_for("gpus: 96 of 96")
    pane.type("/name=gpu-h100-12/3")
    pane.keys("Enter")
    pane.wait_for("gpus: 1 of 96")
    pane.type("m")
    form = pane.wait_for("1g.10gb @0")  # the placements come from the service worker, just after the form
    assert "repartition MIG: gpu-h100-12/3" in form and "placements that still fit" in form
    pane.keys("Enter")  # adds the first placement that fits: 1g.10gb at 0
    drawn = pane.wait_for("|1g.10gb")
    assert "1g.10gb @0" not in drawn.split("placements that still fit", 1)[1], "a taken placement is not offered"
    pane.keys("C-o")
    review = pane.wait_for("plan: repartition gpu-h100-12/3")
    assert "ALLOWED" in review and "gpus[3].mode: full -> mig" in review
    pane.type("y")
    pane.wait_for("applied: revision 1")
    pane.type("8")
    journal = pane.wait_for("journal: 2 of 2")
    assert "set-mig" in journal and "applied" in journal
    pane.type("q")
    assert pane.exit_code() == 0
    after = Service(state_dir=state)
    gpu = after.state.nodes["gpu-h100-12"].gpu(3)
    assert gpu is not None and gpu.mode == "mig" and [(i.profile, i.start) for i in gpu.mig or ()] == [("1g.10gb", 0)]


def test_an_apply_waiting_for_the_state_lock_shows_progress_and_keys_answer(state: Path, tmp_path: Path,
                                                                           panes: list[Pane]) -> None:
    """Another writer holds the state lock: the apply waits for it on the service worker (up to 5 s), the
    pane says so at once, and the console still answers keys meanwhile — no frozen screen."""
    from gpuadmin.store.identity import login_identity
    from gpuadmin.store.lock import write_lock

    pane = Pane(gpuadmin_argv("--state", str(state), "tui", "--view", "nodes"),
                {**TERMINALS["xterm"], "XDG_CONFIG_HOME": str(tmp_path / "config")})
    panes.append(pane)
    pane.wait_for("nodes: 12 of 12")
    pane.type("c")  # cordon the node under the cursor
    pane.wait_for("plan: cordon")
    with write_lock(state, login_identity(), "another writer"):
        pane.type("y")
        pane.wait_for("applying (waits for the state lock", timeout=2.0)
        pane.keys("Down")  # answered while the apply waits: the cursor moves to the second node
        deadline = time.monotonic() + 2.0
        while "> gpu-h100-01 " in (screen := pane.screen()):
            assert time.monotonic() < deadline, f"the cursor did not move while the apply waited:\n{screen}"
            time.sleep(0.05)
        assert "applying" in screen
    pane.wait_for("applied: revision 1")
    pane.type("q")
    assert pane.exit_code() == 0
