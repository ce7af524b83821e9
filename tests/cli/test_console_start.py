"""Starting the console: bare `gpuadmin`, `gpuadmin tui` and its options, `--version`, `--help`, and the
first run that creates the default state from the bundled sample. Real processes."""

from __future__ import annotations

import html
import os
from pathlib import Path

import pytest

from gpuadmin import __version__
from gpuadmin.cli.cmd_read import LISTING_KINDS
from gpuadmin.render.rows import LISTINGS
from tests.cli.clikit import SAMPLES, gpuadmin


def svg_text(path: Path) -> str:
    """The text an SVG screenshot shows (Rich writes spaces as &#160;)."""
    return html.unescape(path.read_text(encoding="utf-8")).replace("\xa0", " ")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GPUADMIN_STATE", "NO_COLOR")}
    env.update(XDG_STATE_HOME=str(tmp_path / "xdg-state"), XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
               TERM="xterm-256color", **extra)
    return env


def test_version() -> None:
    result = gpuadmin("--version")
    assert result.code == 0 and result.out.strip() == f"gpuadmin {__version__}"


def test_help_names_the_exit_codes_and_the_console() -> None:
    result = gpuadmin("--help")
    assert result.code == 0
    assert "4 not permitted" in result.out and "opens the console" in result.out
    for command in ("plan", "apply", "undo", "tui"):
        sub = gpuadmin(command, "--help")
        assert sub.code == 0 and "example" in sub.out and "exit codes" in sub.out, command


def test_listing_kinds_match_the_listings() -> None:
    """`get` parses its kinds without importing the renderers; the two lists must agree."""
    assert (*LISTINGS, "journal") == LISTING_KINDS


def test_first_run_creates_the_default_state_and_says_so(tmp_path: Path) -> None:
    shot = tmp_path / "first.svg"
    result = gpuadmin("tui", "--screenshot", shot, env=_env(tmp_path))
    assert result.code == 0, result.err
    assert "First run: created the state" in result.err and "bundled OCI sample" in result.err
    assert (tmp_path / "xdg-state" / "gpuadmin" / "state.db").is_file()
    svg = svg_text(shot)
    assert "oci-h100-prod" in svg and "overview" in svg
    again = gpuadmin("tui", "--screenshot", tmp_path / "second.svg", env=_env(tmp_path))
    assert again.code == 0 and "First run" not in again.err, "only the first run creates and says so"


def test_an_unknown_theme_is_refused_naming_ours(tmp_path: Path) -> None:
    """(Bare `gpuadmin`, with only global options, opening the console is driven in tests/e2e.)"""
    result = gpuadmin("tui", "--theme", "no-such-theme", env=_env(tmp_path))
    assert result.code == 2 and "unknown theme 'no-such-theme'" in result.err and "gpuadmin-dark" in result.err


@pytest.mark.parametrize("where", ["global", "after-tui"])
def test_state_and_inventory_options(tmp_path: Path, where: str) -> None:
    shot = tmp_path / "inv.svg"
    args = (["--inventory", str(SAMPLES / "k8s-mixed.yaml"), "tui"] if where == "global"
            else ["tui", "--inventory", str(SAMPLES / "k8s-mixed.yaml")])
    result = gpuadmin(*args, "--view", "nodes", "--screenshot", shot, env=_env(tmp_path))
    assert result.code == 0, result.err
    svg = svg_text(shot)
    assert "(in memory)" in svg and "nodes: 10 of 10" in svg
    assert not (tmp_path / "xdg-state" / "gpuadmin").exists(), "an inventory in memory creates no state"


def test_a_missing_explicit_state_is_an_error(tmp_path: Path) -> None:
    result = gpuadmin("--state", tmp_path / "nowhere", "tui", env=_env(tmp_path))
    assert result.code == 2 and "no gpuadmin state" in result.err


def test_state_and_inventory_exclude_each_other(tmp_path: Path) -> None:
    result = gpuadmin("--state", tmp_path / "s", "tui", "--inventory", SAMPLES / "oci-h100.yaml",
                      env=_env(tmp_path))
    assert result.code == 2 and "exclude each other" in result.err


def test_readonly_shows_the_badge(tmp_path: Path) -> None:
    shot = tmp_path / "ro.svg"
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "tui", "--readonly", "--screenshot", shot,
                      env=_env(tmp_path))
    assert result.code == 0, result.err
    svg = svg_text(shot)
    assert "READ-ONLY" in svg and "role viewer" in svg and "Cordon" not in svg


def test_a_keymap_with_an_unknown_binding_is_refused_with_its_file(tmp_path: Path) -> None:
    keymap = tmp_path / "xdg-config" / "gpuadmin" / "keymap.yaml"
    keymap.parent.mkdir(parents=True)
    keymap.write_text("app.quit: x\nnot.a.binding: z\n", encoding="utf-8")
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "tui", "--screenshot", tmp_path / "k.svg",
                      env=_env(tmp_path))
    assert result.code == 2
    assert str(keymap) in result.err and "unknown binding id 'not.a.binding'" in result.err


def test_a_broken_theme_file_is_refused_with_file_line_and_field(tmp_path: Path) -> None:
    theme = tmp_path / "xdg-config" / "gpuadmin" / "themes" / "mine.yaml"
    theme.parent.mkdir(parents=True)
    theme.write_text("name: mine\nprimary: \"#ffffff\"\nprimray: oops\n", encoding="utf-8")
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "tui", "--screenshot", tmp_path / "t.svg",
                      env=_env(tmp_path))
    assert result.code == 2 and f"{theme}:3" in result.err and "primray" in result.err


def test_a_users_theme_is_offered(tmp_path: Path) -> None:
    theme = tmp_path / "xdg-config" / "gpuadmin" / "themes" / "mine.yaml"
    theme.parent.mkdir(parents=True)
    theme.write_text("name: mine\nprimary: \"#ff00ff\"\n", encoding="utf-8")
    result = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "tui", "--theme", "mine", "--screenshot",
                      tmp_path / "m.svg", env=_env(tmp_path))
    assert result.code == 0, result.err
