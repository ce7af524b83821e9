"""The import direction of DESIGN §1, enforced: catalog ← model ← engine ← store/adapters ← service ← cli, tui;
the CLI and the console import only `service`, `render` and `errors` of the layers below them.

The engine is pure (no Textual, Rich, sqlite3 or file-system modules); the headless CLI never imports
Textual, so it starts fast. Imports are read from the source (AST), including ones inside functions.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "gpuadmin"

# package → the gpuadmin packages it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "errors": set(),  # the error root and exit codes: every layer may raise them
    "catalog": {"errors"},
    "model": {"errors", "catalog"},
    "engine": {"errors", "catalog", "model"},
    "store": {"errors", "catalog", "model", "engine"},
    "adapters": {"errors", "catalog", "model", "engine", "store"},
    # a live cluster (issue 22) and live telemetry (issue 23): what gpuadmin reads from and does to the real thing,
    # beside the adapters (which translate files and objects); the service drives them
    "cluster": {"errors", "catalog", "model", "engine", "store", "adapters"},
    "telemetry": {"errors", "catalog", "model", "engine", "store", "adapters"},
    "render": {"errors", "catalog", "model", "engine"},
    "service": {"errors", "catalog", "model", "engine", "store", "adapters", "cluster", "telemetry", "render"},
    # the front ends see the engine and the store only through the service (issue 20 item 3): what they need of
    # them (a change's type, the caller, a document to validate, nodes to import) the service re-exports
    "cli": {"errors", "render", "service"},
    "tui": {"errors", "render", "service"},  # the console sees the engine only through the service
}
# The one module that may reach up: `gpuadmin tui` starts the console (lazily, inside the command).
LAUNCHERS: dict[str, set[str]] = {"cli/cmd_tui.py": {"tui"}}
PACKAGE_ROOT_FILES = {"__init__"}  # gpuadmin/__init__.py: the version, nothing else
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


def unknown_packages(root: Path = ROOT) -> set[str]:
    """Packages and top-level modules of gpuadmin that the table does not place: each must be placed."""
    found = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    found |= {p.stem for p in root.glob("*.py")} - PACKAGE_ROOT_FILES
    return found - set(ALLOWED)


def test_every_package_is_placed_in_the_import_direction() -> None:
    assert unknown_packages() == set(), "add the new package to ALLOWED, with what it may import"


def test_an_unplaced_package_is_caught(tmp_path: Path) -> None:
    (tmp_path / "newpkg").mkdir()
    (tmp_path / "newpkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "stray.py").write_text("", encoding="utf-8")
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("", encoding="utf-8")
    assert unknown_packages(tmp_path) == {"newpkg", "stray"}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down(path: Path) -> None:
    package = _package(path)
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] == "gpuadmin" and len(parts) > 1 and parts[1] in ALLOWED:
            may = ALLOWED[package] | LAUNCHERS.get(str(path.relative_to(ROOT)), set())
            assert parts[1] == package or parts[1] in may, (
                f"{path.relative_to(ROOT)} ({package}) imports {name}: against the import direction")
        if package == "engine":
            assert parts[0] not in ENGINE_FORBIDDEN, f"the engine must stay pure: {path} imports {name}"
        if package == "cli" and path.name != "cmd_tui.py":  # cmd_tui starts the console, lazily
            assert parts[0] != "textual", f"the headless CLI must not import Textual: {path}"


def test_checker_sees_a_violation(tmp_path: Path) -> None:
    """The scan itself can fail: an upward import in a module is found."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from gpuadmin.service import Service\n", encoding="utf-8")
    assert "gpuadmin.service" in _imports(bad)


@pytest.mark.parametrize("argv", [
    ["validate", "sample-inventories/oci-h100.yaml"],
    ["--inventory", "sample-inventories/oci-h100.yaml", "get", "jobs", "-o", "wide"],
    ["--inventory", "sample-inventories/oci-h100.yaml", "describe", "node", "gpu-h100-01"],
    ["--help"],
])
def test_headless_start_does_not_load_textual(argv: list[str]) -> None:
    """In a fresh interpreter: a headless command never imports Textual or Rich."""
    code = (f"import sys\nfrom gpuadmin.cli.main import run\ntry:\n    run({argv!r})\nexcept SystemExit:\n    pass\n"
            "print('textual' in sys.modules, 'rich' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT.parent, check=True)
    assert result.stdout.strip().splitlines()[-1] == "False False"


def test_the_console_does_load_textual() -> None:
    """The same probe can fail: the console's module pulls Textual in."""
    code = "import sys; import gpuadmin.tui.app; print('textual' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT.parent, check=True)
    assert result.stdout.strip() == "True"


def test_yaml_is_read_by_pyyaml_alone() -> None:
    """Issue 20 item 6: YAML is read by PyYAML's C parser alone. The yaml-rs fast path (a pre-1.0 native
    dependency) is gone, and with it the mimalloc setting it wrote into every process's environment."""
    dependencies = tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(d.lower().replace("_", "-").startswith("yaml-rs") for d in dependencies["dependencies"])
    code = ("import os, sys\nos.environ.pop('MIMALLOC_PURGE_DELAY', None)\nfrom gpuadmin.cli.main import run\n"
            "try:\n    run(['validate', 'sample-inventories/oci-h100.yaml'])\nexcept SystemExit:\n    pass\n"
            "print('yaml_rs' in sys.modules, 'MIMALLOC_PURGE_DELAY' in os.environ)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT.parent, check=True)
    assert result.stdout.strip().splitlines()[-1] == "False False"


# Issue 20 item 6: the process-wide settings (the cyclic GC's policy, the environment) are the entry point's. A
# library module that pauses or tunes the GC, or writes os.environ, changes them for every caller: the console, a
# test, a future service embedding the engine.
ENTRY_POINT = "cli/main.py"
GC_POLICY_CALLS = {"disable", "enable", "freeze", "unfreeze", "set_threshold", "set_debug"}
ENVIRON_WRITERS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _process_settings_changed(path: Path) -> list[str]:
    """`gc.<policy>(...)` calls and writes to `os.environ` (item assignment or deletion, a mutating method,
    os.putenv/unsetenv), each as 'line: what'."""
    out: list[str] = []

    def is_environ(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
                and node.value.id == "os")

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, name = node.func.value, node.func.attr
            if isinstance(owner, ast.Name) and owner.id == "gc" and name in GC_POLICY_CALLS:
                out.append(f"{node.lineno}: gc.{name}")
            if isinstance(owner, ast.Name) and owner.id == "os" and name in ("putenv", "unsetenv"):
                out.append(f"{node.lineno}: os.{name}")
            if is_environ(owner) and name in ENVIRON_WRITERS:
                out.append(f"{node.lineno}: os.environ.{name}")
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del) and is_environ(node.value):
            out.append(f"{node.lineno}: os.environ[...] written")
        if isinstance(node, ast.ImportFrom) and node.module in ("gc", "os") and any(
                alias.name in GC_POLICY_CALLS | {"environ", "putenv", "unsetenv"} for alias in node.names):
            out.append(f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
    return out


LIBRARY_MODULES = [p for p in sorted(ROOT.rglob("*.py")) if p.relative_to(ROOT).as_posix() != ENTRY_POINT]


@pytest.mark.parametrize("path", LIBRARY_MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_library_module_sets_the_gc_or_the_environment(path: Path) -> None:
    assert _process_settings_changed(path) == [], f"only gpuadmin/{ENTRY_POINT} sets the GC policy or the environment"


def test_the_settings_checker_sees_them(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import gc, os\ngc.disable()\ngc.set_threshold(1)\nos.environ['A'] = '1'\n"
                      "os.environ.setdefault('B', '2')\ndel os.environ['A']\ngc.collect()\nos.environ.get('C')\n",
                      encoding="utf-8")
    assert _process_settings_changed(module) == ["2: gc.disable", "3: gc.set_threshold", "4: os.environ[...] written",
                                                 "5: os.environ.setdefault", "6: os.environ[...] written"]


def test_importing_every_module_leaves_the_gc_and_the_environment_alone() -> None:
    """In a fresh interpreter, importing all of gpuadmin (the console included) changes no GC setting and no
    environment variable; only `main()` sets the policy."""
    code = """
import gc, importlib, json, os, pkgutil, sys
import gpuadmin
before = (dict(os.environ), gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
names = sorted(m.name for m in pkgutil.walk_packages(gpuadmin.__path__, "gpuadmin."))
for name in names:
    importlib.import_module(name)
after = (dict(os.environ), gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
changed = [what for what, b, a in zip(("environ", "threshold", "enabled", "frozen"), before, after) if b != a]
print(json.dumps({"modules": len(names), "changed": changed}))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT.parent, check=True)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["modules"] > 50 and report["changed"] == [], report


@pytest.mark.parametrize(("argv", "expected"), [
    (["--inventory", "sample-inventories/oci-h100.yaml", "get", "nodes"], "False True"),  # headless: GC off
    (["--version"], "True False"),  # no command ran: nothing set
])
def test_the_entry_point_sets_the_gc_policy_once_the_command_is_known(argv: list[str], expected: str) -> None:
    code = (f"import gc, sys\nfrom gpuadmin.cli import main as entry\nsys.argv = ['gpuadmin', *{argv!r}]\ntry:\n"
            "    entry.main()\nexcept SystemExit:\n    pass\nprint(gc.isenabled(), gc.get_freeze_count() > 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT.parent, check=True)
    assert result.stdout.strip().splitlines()[-1] == expected


def test_the_console_keeps_a_rare_collector() -> None:
    code = ("import gc\nfrom gpuadmin.cli.main import CONSOLE_GC_THRESHOLDS, set_gc_policy\n"
            "set_gc_policy(long_lived=True)\nprint(gc.isenabled(), gc.get_threshold() == CONSOLE_GC_THRESHOLDS)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT.parent, check=True)
    assert result.stdout.strip() == "True True"


def test_the_package_ships_no_test_data_generator() -> None:
    """Issue 20 item 6: the inventory generator feeds benchmarks and scale tests; it lives in bench/, not in the
    package (nothing in gpuadmin uses it)."""
    definers = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
                if any(isinstance(n, ast.FunctionDef) and n.name == "generate_inventory"
                       for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert definers == []
    assert (ROOT.parent / "bench" / "generate.py").is_file()
