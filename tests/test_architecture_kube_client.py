"""The Kubernetes client (pyproject's `kube` extra, issue 22) and VMware's pyVmomi (the `vcenter` extra, issue 24)
are imported lazily: only inside the function that talks to a cluster or a vCenter, never at a module's top level,
so `gpuadmin --help` and the commands that never touch one do not pay their import (lightkube's ~130 ms,
docs/benchmarks.md; pyVmomi's type tables) nor need them installed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "gpuadmin"
# the candidates measured in bench/bench_kube_clients.py: whichever is imported, it is imported lazily; and
# pyVmomi's two packages (the SDK's types, its connection helpers)
KUBE_CLIENTS = {"lightkube", "kubernetes", "kr8s", "pyVmomi", "pyVim"}


def top_level_kube_imports(path: Path) -> list[str]:
    """The Kubernetes client modules `path` imports outside any function (what `import gpuadmin.x` loads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.body = []  # imports inside a function run only when it is called
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
        found += [n for n in names if n.split(".")[0] in KUBE_CLIENTS]
    return found


@pytest.mark.parametrize("path", sorted(ROOT.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_kubernetes_client_is_imported_only_inside_functions(path: Path) -> None:
    assert top_level_kube_imports(path) == [], f"import the Kubernetes client inside the function: {path}"


def test_the_checker_sees_a_top_level_import_and_allows_a_lazy_one(tmp_path: Path) -> None:
    eager = tmp_path / "eager.py"
    eager.write_text("from lightkube import Client\nimport kubernetes.client\nfrom pyVmomi import vim\n",
                     encoding="utf-8")
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def connect():\n    from lightkube import Client\n    return Client()\n", encoding="utf-8")
    assert top_level_kube_imports(eager) == ["lightkube", "kubernetes.client", "pyVmomi"]
    assert top_level_kube_imports(lazy) == []


@pytest.mark.parametrize("argv", [["--help"], ["validate", "--help"]])
def test_the_cli_does_not_load_the_kubernetes_client(argv: list[str]) -> None:
    code = ("import sys; from gpuadmin.cli.main import main\n"
            f"sys.argv = ['gpuadmin', *{argv!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(KUBE_CLIENTS)!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
