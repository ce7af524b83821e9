"""The built wheel carries everything gpuadmin reads at run time, and the console finds its themes in it.

Main's wheel shipped no themes (they live in the top-level themes/, outside the package), so an installed
`gpuadmin tui` stopped with exit 2, `unknown theme 'gpuadmin-ansi'`. The data here is the checkout's own files;
`make test-wheel` goes further: it installs the wheel with its dependencies into a fresh venv and opens the console.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]
# What the build reads; copied so that a stale build/ in the checkout cannot put removed files into the wheel.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "gpuadmin", "themes")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        origin = CHECKOUT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, source / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)],
                   check=True, capture_output=True, timeout=300)
    (built,) = out.glob("gpuadmin-*.whl")
    return built


def test_the_wheel_ships_every_package_file_and_the_themes(wheel: Path) -> None:
    """Every file under gpuadmin/ (code, catalog data, the bundled samples, the stylesheet) and every
    top-level theme, as gpuadmin/themes/NAME.yaml: a package-data glob that misses one fails here."""
    expected = {path.relative_to(CHECKOUT).as_posix() for path in (CHECKOUT / "gpuadmin").rglob("*")
                if path.is_file() and "__pycache__" not in path.parts}
    themes = {f"gpuadmin/themes/{path.name}" for path in (CHECKOUT / "themes").glob("*.yaml")}
    assert {"gpuadmin/themes/gpuadmin-ansi.yaml", "gpuadmin/themes/gpuadmin-dark.yaml"} <= themes
    assert "gpuadmin/samples/oci-h100.yaml" in expected  # what a first bare `gpuadmin` builds its state from
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    assert sorted((expected | themes) - shipped) == []


def test_an_installed_package_finds_its_shipped_themes(wheel: Path, tmp_path: Path) -> None:
    """The wheel unpacked as site-packages would hold it, imported ahead of the checkout's editable install,
    with an empty config folder (so no operator theme stands in): the shipped themes load from the package."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    code = ("import json, gpuadmin; from gpuadmin.tui.settings import load_themes; "
            "print(json.dumps([gpuadmin.__file__, sorted(load_themes())]))")
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    imported_from, names = json.loads(result.stdout)
    assert Path(imported_from).is_relative_to(site)
    assert {"gpuadmin-ansi", "gpuadmin-contrast", "gpuadmin-dark", "gpuadmin-light"} <= set(names)
