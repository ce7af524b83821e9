"""The jobs view in a real terminal (tmux, 80x24, TERM=xterm): each pending job's REASON code shows whole beside
its queue and request, `:jobs reason=CODE` lists the jobs waiting for that reason, and ctrl+w turns on the wide
columns. Each screen is saved under $GPUADMIN_TMUX_CAPTURES when it is set (the issue's closing note quotes them).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuadmin.service import Service
from tests.e2e.tmuxkit import ROOT, Pane, gpuadmin_argv

SAMPLE = ROOT / "sample-inventories" / "oci-h100.yaml"
XTERM = {"TERM": "xterm", "LANG": "C.UTF-8"}


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    state = tmp_path / "state"
    Service.init(state, SAMPLE)
    opened = Pane(gpuadmin_argv("--state", str(state)), {**XTERM, "XDG_CONFIG_HOME": str(tmp_path / "config")})
    yield opened
    opened.close()


def _save(name: str, screen: str) -> None:
    folder = os.environ.get("GPUADMIN_TMUX_CAPTURES")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.txt").write_text(screen, encoding="utf-8")


def _row(screen: str, name: str) -> list[str]:
    return next(line for line in screen.splitlines() if f" {name} " in line).split()


def _open(pane: Pane, command: str, count: str) -> str:
    """Run `command`; the screen once the view counts `count` rows and has its reasons (they come after the
    rows: a scheduling cycle on the service worker)."""
    pane.type(command)
    pane.keys("Enter")
    pane.wait_for(count)
    return _settled(pane, lambda screen: count in screen and "reasons: computing" not in screen)


def _settled(pane: Pane, ready: Callable[[str], bool]) -> str:
    """The screen once `ready` holds and two reads 0.3 s apart agree: a table that lost its scrollbar (fewer
    rows) is drawn again at its new width a moment later."""
    deadline = time.monotonic() + 20
    before = ""
    while time.monotonic() < deadline:
        screen = pane.screen()
        if ready(screen) and screen == before:
            return screen
        before = screen
        time.sleep(0.3)
    raise AssertionError(f"the screen did not settle:\n{pane.screen()}")


def test_jobs_view_shows_reason_codes_at_80x24(pane: Pane) -> None:
    pane.wait_for("GPUs by use")
    screen = _open(pane, ":jobs status=pending", "jobs: 17 of 55")
    _save("jobs-pending-reasons-80x24", screen)
    lines = screen.splitlines()
    assert all(len(line) <= 80 for line in lines), "nothing drawn past 80 columns"
    header = next(line for line in lines if line.strip().startswith("NAME"))
    assert header.split() == ["NAME", "QUEUE", "STATUS", "REQUEST", "REASON"]
    for name, queue, code in (("gpt-pretrain-405b", "research", "over-limit"),
                              ("video-caption-serve", "inference", "profile-not-carved"),
                              ("vllm-405b-eval", "research", "node-cordoned"),
                              ("sd-xl-finetune", "research", "schedulable")):
        row = _row(screen, name)
        assert row[-1] == code and queue in row, row

    screen = _open(pane, ":jobs reason=over-limit", "jobs: 4 of 55")
    _save("jobs-over-limit-80x24", screen)
    assert [_row(screen, name)[-1] for name in ("gpt-pretrain-405b", "nccl-allreduce-2node", "rlhf-ppo-2node",
                                                "intern-full-ft-8b")] == ["over-limit"] * 4

    pane.keys("C-w")
    screen = _settled(pane, lambda screen: "wide" in screen)
    _save("jobs-over-limit-wide-80x24", screen)
    assert "jobs: 4 of 55" in screen and all(len(line) <= 80 for line in screen.splitlines())
    header = next(line for line in screen.splitlines() if line.strip().startswith("NAME"))
    assert header.split()[-2:] == ["REASON", "MESSAGE"], "wide: the reason's words after its code"
    assert "0/12 nodes fit" in " ".join(_row(screen, "gpt-pretrain-405b"))
