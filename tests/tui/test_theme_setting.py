"""Issue 21, point 16e: `:theme NAME` is remembered in $XDG_CONFIG_HOME/gpuadmin/settings.yaml; the next start
opens in it, --theme wins over it, and a settings file that does not read is bad input naming file, line, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadmin.errors import InputError
from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from tests.tui.tuikit import CLUSTER, command, settle


async def test_theme_is_kept_across_restarts(neutral_environment: Path) -> None:
    app = GpuadminApp(Service(inventory=CLUSTER))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "theme gpuadmin-contrast")
        assert app.theme == "gpuadmin-contrast"
    saved = neutral_environment / "gpuadmin" / "settings.yaml"
    assert saved.read_text() == 'theme: "gpuadmin-contrast"\n'
    assert not [p for p in saved.parent.iterdir() if p.name.startswith(".settings-")]  # no temporary left
    assert GpuadminApp(Service(inventory=CLUSTER)).theme == "gpuadmin-contrast"  # the next start
    assert GpuadminApp(Service(inventory=CLUSTER), theme="gpuadmin-ansi").theme == "gpuadmin-ansi"  # --theme wins


@pytest.mark.parametrize(("text", "where"), [
    ("theme: 7\n", ":1:8: theme:"),
    ("theme: gpuadmin-dark\ncolour: red\n", ":2:1: colour:"),
    ("# mine\ntheme: no-such-theme\n", ":2: unknown theme 'no-such-theme'"),
])
def test_a_bad_settings_file_is_bad_input(neutral_environment: Path, text: str, where: str) -> None:
    path = neutral_environment / "gpuadmin" / "settings.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    with pytest.raises(InputError) as bad:
        GpuadminApp(Service(inventory=CLUSTER))
    assert str(bad.value.diagnostics[0]).startswith(f"{path}{where}"), str(bad.value.diagnostics[0])
