"""Issue 21, point 16f: under a locale that is not UTF-8 (LANG=C LC_ALL=C) the console writes ASCII only —
borders, scrollbars, the MIG drawing, cut text, the footer's keys — read off a real tmux pane at 80x24 under
TERM=xterm; `gpuadmin tui --ascii` does the same under a UTF-8 locale."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.tmuxkit import Pane, gpuadmin_argv


def ascii_only(screen: str) -> str:
    high = sorted({char for char in screen if ord(char) >= 0x80})
    assert not high, f"characters above 0x7F: {high!r} in\n{screen}"
    assert all(byte < 0x80 for byte in screen.encode("utf-8"))
    return screen


def walk(pane: Pane) -> None:
    """The overview, the gpus view, a MIG node's drawing, the help and the MIG form: each ASCII only."""
    overview = ascii_only(pane.wait_for("GPUs by use"))
    assert "oci-h100-prod" in overview
    pane.type(":gpus")
    pane.keys("Enter")
    gpus = ascii_only(pane.wait_for("gpus: 96 of 96"))
    assert "enter Open" in gpus  # the footer names the key: no U+23CE
    pane.type(":node gpu-h100-07")
    pane.keys("Enter")
    node = ascii_only(pane.wait_for("holders |"))
    assert "memory  |2g.20gb" in node and "reranker-serve" in node and "~" in node  # a cut name ends in ~
    pane.type("?")
    help_screen = ascii_only(pane.wait_for("app.command"))
    assert help_screen.splitlines()[0].startswith("+- help -")
    pane.keys("Escape")
    pane.wait_for("holders |")
    pane.keys("Escape")
    pane.wait_for("gpus: 96 of 96")
    pane.type("/gpu-h100-07/2")
    pane.keys("Enter")
    pane.wait_for("gpus: 1 of 96")
    pane.type("m")
    form = ascii_only(pane.wait_for("placements that still fit"))
    assert "eval-harness-7b" in form and "+- repartition MIG" in form
    pane.keys("Escape")
    pane.wait_for("gpus: 1 of 96")
    pane.type("q")
    assert pane.exit_code() == 0


def test_lang_c_draws_ascii_only(state: Path, tmp_path: Path, panes: list[Pane]) -> None:
    env = {"TERM": "xterm", "LANG": "C", "LC_ALL": "C", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    pane = Pane(gpuadmin_argv("--state", str(state)), env)
    panes.append(pane)
    walk(pane)


def test_the_ascii_flag_under_a_utf8_locale(state: Path, tmp_path: Path, panes: list[Pane]) -> None:
    env = {"TERM": "xterm", "LANG": "C.UTF-8", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    pane = Pane(gpuadmin_argv("--state", str(state), "tui", "--ascii"), env)
    panes.append(pane)
    walk(pane)
