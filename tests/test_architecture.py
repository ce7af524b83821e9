"""The import direction of DESIGN §1, enforced: catalog ← model ← engine ← store/adapters ← service ← cli, tui.

The engine is pure (no Textual, Rich, sqlite3 or file-system modules); the headless CLI never imports
Textual, so it starts fast. Imports are read from the source (AST), including ones inside functions.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "gpuadmin"

# package → the gpuadmin packages it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "catalog": set(),
    "model": {"catalog"},
    "engine": {"catalog", "model"},
    "store": {"catalog", "model", "engine"},
    "adapters": {"catalog", "model", "engine", "store"},
    "render": {"catalog", "model", "engine"},
    "service": {"catalog", "model", "engine", "store", "adapters", "render"},
    "cli": {"catalog", "model", "engine", "store", "adapters", "render", "service"},
}
ENGINE_FORBIDDEN = {"textual", "rich", "sqlite3", "os", "pathlib", "shutil", "io", "tempfile", "fcntl"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def _package(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if _package(p) in ALLOWED)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    package = _package(path)
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] == "gpuadmin" and len(parts) > 1 and parts[1] in ALLOWED:
            assert parts[1] == package or parts[1] in ALLOWED[package], (
                f"{path.relative_to(ROOT)} ({package}) imports {name}: against the import direction")
        if package == "engine":
            assert parts[0] not in ENGINE_FORBIDDEN, f"the engine must stay pure: {path} imports {name}"
        if package == "cli":
            assert parts[0] != "textual", f"the headless CLI must not import Textual: {path}"


def test_checker_sees_a_violation(tmp_path: Path) -> None:
    """The scan itself can fail: an upward import in a module is found."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from gpuadmin.service import Service\n", encoding="utf-8")
    assert "gpuadmin.service" in _imports(bad)


def test_headless_start_does_not_load_textual() -> None:
    code = ("import sys; from gpuadmin.cli.main import run; run(['validate', 'sample-inventories/oci-h100.yaml']);"
            "print('textual' in sys.modules, 'rich' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT.parent, check=True)
    assert result.stdout.strip().splitlines()[-1] == "False False"
