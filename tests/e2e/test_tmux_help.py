"""The contextual help and the footer in a real terminal: `gpuadmin` in tmux at 80x24 under TERM=xterm, on the jobs
view. The footer holds whole keys; `?` lists the jobs view's keys (New job, not New queue). The help's screen is
saved to $GPUADMIN_TMUX_CAPTURES (when set) as help-jobs-80x24.txt, for the issue's closing note."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuadmin.service import Service
from tests.e2e.tmuxkit import ROOT, Pane, gpuadmin_argv

SAMPLE = ROOT / "sample-inventories" / "oci-h100.yaml"
# every key the jobs view's footer may draw, as drawn: the footer's line is some of these, whole, in this order
JOBS_FOOTER = ["? help", "⏎ Open", "d Describe", "/ filter", "n New job", "x Cancel job", "P Preempt", "p Schedule",
               "s Sort", ": command", "q Quit"]


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    Service.init(tmp_path / "state", SAMPLE)
    env = {"TERM": "xterm", "LANG": "C.UTF-8", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    opened = Pane(gpuadmin_argv("--state", str(tmp_path / "state"), "tui", "--view", "jobs"), env)
    yield opened
    opened.close()


def save_capture(name: str, screen: str) -> None:
    folder = os.environ.get("GPUADMIN_TMUX_CAPTURES")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_text(screen)


def test_help_on_the_jobs_view_at_80x24(pane: Pane) -> None:
    pane.wait_for("jobs: 55 of 55")
    jobs = pane.wait_for("d Describe")  # once a row is under the cursor
    footer = jobs.rstrip("\n").splitlines()[-1].rstrip()
    drawn = [key for key in JOBS_FOOTER if key in footer]
    assert footer == " ".join(drawn), f"the footer is whole keys: {footer!r}"
    assert drawn[:5] == ["? help", "⏎ Open", "d Describe", "/ filter", "n New job"] and len(footer) <= 80
    save_capture("jobs-80x24.txt", jobs)

    pane.type("?")
    shown = pane.wait_for("Keys in jobs")
    save_capture("help-jobs-80x24.txt", shown)
    assert all(len(line) <= 80 for line in shown.splitlines())
    for words in ("navigate", "change", "New job", "edit.submit_job", "Cancel job"):
        assert words in shown, words
    assert "New queue" not in shown and "Cordon" not in shown

    pane.keys("Escape")
    pane.wait_for("jobs: 55 of 55")
    pane.type("q")
    assert pane.exit_code() == 0
