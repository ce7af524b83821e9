"""Issue 10, item 12: colour on a terminal (off with NO_COLOR, --no-color, TERM=dumb, and when piped), never
colour alone; tables fit a terminal's width by truncating the lowest-priority columns, never wrapping, while piped
output stays whole; output survives a non-UTF-8 stdout; --version; argument errors carry no file location."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.cli.clikit import ROOT, SAMPLES, gpuadmin

OCI = SAMPLES / "oci-h100.yaml"


def _on_a_terminal(*args: str, columns: int = 100, **env: str) -> str:
    """Run the CLI with stdout on a pseudo-terminal (stderr piped); what the terminal received."""
    master, slave = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environ.update({"TERM": "xterm-256color", "COLUMNS": str(columns), **env})
    proc = subprocess.Popen([sys.executable, "-m", "gpuadmin.cli.main", *args], cwd=ROOT, stdout=slave,
                            stderr=subprocess.PIPE, env=environ)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_colour_on_a_terminal_repeats_the_words() -> None:
    out = _on_a_terminal("--inventory", str(OCI), "get", "nodes")
    assert "\x1b[" in out
    assert "\x1b[33mcordoned\x1b[0m" in out  # the word is there, coloured
    assert "\x1b[32mready\x1b[0m" in out


def test_no_colour_with_no_color_flag_env_dumb_terminal_or_pipe() -> None:
    assert "\x1b[" not in _on_a_terminal("--inventory", str(OCI), "get", "nodes", NO_COLOR="1")
    assert "\x1b[" not in _on_a_terminal("--no-color", "--inventory", str(OCI), "get", "nodes")
    assert "\x1b[" not in _on_a_terminal("--inventory", str(OCI), "get", "nodes", TERM="dumb")
    assert "\x1b[" not in gpuadmin("--inventory", OCI, "get", "nodes").out


def test_a_refused_plan_is_coloured_on_a_terminal(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("changes: [{op: set-mig, node: gpu-h100-06, gpu: 1, instances: [{profile: 3g.45gb}]}]\n",
                   encoding="utf-8")
    out = _on_a_terminal("--inventory", str(OCI), "plan", "-f", str(bad))
    assert "\x1b[31mREFUSED\x1b[0m" in out and "\x1b[31m✗\x1b[0m" in out


def test_tables_fit_the_terminal_and_piped_output_stays_whole() -> None:
    out = _on_a_terminal("--no-color", "--inventory", str(OCI), "get", "jobs", columns=100)
    lines = [line for line in out.splitlines() if line]
    assert max(len(line) for line in lines) <= 100
    assert lines[0].startswith("NAME") and "…" in out
    narrow = _on_a_terminal("--no-color", "--inventory", str(OCI), "get", "jobs", "-o", "wide", columns=60)
    assert max(len(line) for line in narrow.splitlines() if line) <= 60
    piped = gpuadmin("--inventory", OCI, "get", "jobs").out
    assert "…" not in piped and max(len(line) for line in piped.splitlines()) > 100


def test_a_non_utf8_stdout_does_not_crash(tmp_path: Path) -> None:
    inventory = tmp_path / "unicode.yaml"
    # Kubernetes could not hold that name (DNS-1123): the node is one nothing schedules pods on
    unicode = OCI.read_text(encoding="utf-8").replace("gpu-h100-06", "gpu-h100-06-Ωμέγα")
    kubernetes = "name: gpu-h100-06-Ωμέγα\n    platform: baremetal\n    orchestrator: kubernetes\n"
    assert kubernetes in unicode
    inventory.write_text(unicode.replace(kubernetes, kubernetes.replace("kubernetes", "none")), encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("changes: [{op: set-mig, node: gpu-h100-06-Ωμέγα, gpu: 1, instances: [{profile: 3g.45gb}]}]\n",
                   encoding="utf-8")
    for env in ({"PYTHONIOENCODING": "latin-1"}, {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}):
        environ = {**{k: v for k, v in os.environ.items() if k != "PYTHONIOENCODING"}, **env}
        proc = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--inventory", str(inventory), "plan",
                               "-f", str(bad)], cwd=ROOT, capture_output=True, env=environ, timeout=60)
        assert proc.returncode == 1, proc.stderr  # refused by a rule, not a crash
        assert b"Traceback" not in proc.stderr
        assert b"\\u03a9" in proc.stdout or b"\\xd" in proc.stdout  # the name, escaped
        listed = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--inventory", str(inventory), "get",
                                 "nodes"], cwd=ROOT, capture_output=True, env=environ, timeout=60)
        assert listed.returncode == 0 and b"gpu-h100-06-" in listed.stdout


def test_version_and_argument_errors_without_a_location() -> None:
    version = gpuadmin("--version")
    assert version.code == 0 and version.out.startswith("gpuadmin ")
    missing = gpuadmin("--inventory", OCI, "explain", "no-such-job")
    assert missing.code == 2 and "<input>" not in missing.err and "<root>" not in missing.err
    assert "job 'no-such-job' not found" in missing.err
