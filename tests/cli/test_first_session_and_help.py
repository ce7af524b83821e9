"""Issue 10, item 13: the README's first session runs as written, twice in a row on one state; every command's
--help shows an example and the exit codes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.clikit import ROOT, gpuadmin

COMMANDS = ["init", "validate", "get", "describe", "plan", "apply", "undo", "redo", "schedule", "explain", "import",
            "export", "whoami", "tui",
            # issue 21 point 18: the verbs, and the commands that group two (`vgpu assign|remove`)
            "cordon", "mig", "submit", "vgpu", "queue", "node"]


def _first_session() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## A first session", 1)[1].split("\n\n(", 1)[0]
    lines = [re.sub(r"\s+# .*$", "", line.strip()) for line in block.splitlines() if line.startswith("    ")]
    return [line for line in lines if line and line.split()[-1] != "/tmp/gpa"]  # the console itself


def test_the_readme_first_session_runs_twice(tmp_path: Path) -> None:
    lines = _first_session()
    assert len(lines) >= 10 and any(" init " in line for line in lines)
    # issue 21 point 18: the session makes its changes with verbs, as an operator scripts them
    assert any(" mig " in line and "--dry-run" in line for line in lines)
    assert any(" cordon " in line and "--yes" in line for line in lines)
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    for round_ in (1, 2):
        for line in lines:
            command = line.replace("/tmp/gpa", str(tmp_path / "gpa"))
            proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=120)
            assert proc.returncode == 0, f"round {round_}: {line}\n{proc.stderr}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_an_example_and_exit_codes(command: str) -> None:
    result = gpuadmin(command, "--help")
    assert result.code == 0
    assert re.search(r"^examples?:\n  gpuadmin ", result.out, re.M), result.out
    assert "exit codes: 0 " in result.out


def test_import_sources_help_too() -> None:
    result = gpuadmin("import", "kube-nodes", "--help")
    assert "exit codes:" in result.out and "example" in result.out
