"""`make demo-cluster` starts the seeded API server double as a real process, serves the OCI sample's cluster
through the kubeconfig it writes, and stops on SIGINT (Ctrl-C) cleanly: exit 0, no traceback, the port free."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.kube import demo_cluster

ROOT = Path(__file__).resolve().parents[2]
READY = "Ctrl-C stops it."


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def read_until(proc: subprocess.Popen[bytes], marker: str, timeout: float = 60) -> str:
    """The process's output up to the line holding `marker`; fails (with what it said) if it never comes."""
    assert proc.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    while marker.encode() not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stdout], [], [], max(left, 0))
        chunk = os.read(proc.stdout.fileno(), 65536) if ready else b""
        assert chunk, f"no {marker!r} in {timeout:.0f} s; it said:\n{seen.decode(errors='replace')}"
        seen += chunk
    return seen.decode()


def interrupt(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """Ctrl-C as a terminal sends it: SIGINT to the process group; then the exit status and the rest it said."""
    os.killpg(proc.pid, signal.SIGINT)
    rest, _ = proc.communicate(timeout=30)
    return proc.returncode, rest.decode()


def serves_the_oci_cluster(kubeconfig: Path, port: int) -> None:
    config = yaml.safe_load(kubeconfig.read_text())
    assert config["current-context"] == "demo"
    assert config["clusters"][0]["cluster"]["server"] == f"http://127.0.0.1:{port}"
    assert kubeconfig.stat().st_mode & 0o077 == 0  # a kubeconfig holds a token: the owner's alone
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/nodes", timeout=10) as response:
        nodes = json.loads(response.read())["items"]
    assert len(nodes) == 12 and nodes[0]["metadata"]["name"] == "gpu-h100-01"


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _as_a_terminals_job() -> None:
    """Ctrl-C reaches a terminal's foreground job: a test run started as a background job of a non-interactive
    shell (a CI runner's `cmd &`) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(command: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_as_a_terminals_job)


def test_it_serves_the_seeded_cluster_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    proc = start([sys.executable, "-m", "tests.kube.demo_cluster", "--port", str(port), "--dir", str(tmp_path)])
    try:
        said = read_until(proc, READY)
        assert f"on http://127.0.0.1:{port}" in said and "12 nodes, 63 pods, 4 KAI queues" in said
        assert "a test double, not a Kubernetes cluster" in said
        assert all(line in said for line in demo_cluster.readme_session())  # the README's session, printed
        serves_the_oci_cluster(tmp_path / "kubeconfig", port)
    finally:
        code, rest = interrupt(proc)
    assert code == 0 and "demo-cluster: stopped." in rest and "Traceback" not in said + rest
    assert port_is_free(port)


def test_a_port_in_use_is_exit_2_with_the_way_out(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "tests.kube.demo_cluster", "--port", str(port), "--dir",
                               str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "DEMO_PORT=" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("make") is None or not (ROOT / ".venv" / "bin" / "python").exists(),
                    reason="make and the checkout's .venv run `make demo-cluster`")
def test_make_demo_cluster_runs_it_until_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    # -o: the venv counts as up to date, so a test never reinstalls it
    proc = start(["make", "--no-print-directory", "-o", ".venv/bin/gpuadmin", "demo-cluster", f"DEMO_PORT={port}",
                  f"DEMO_DIR={tmp_path}"])
    try:
        said = read_until(proc, READY)
        serves_the_oci_cluster(tmp_path / "kubeconfig", port)
    finally:
        code, rest = interrupt(proc)
    # the double exits 0; make, interrupted too, then ends by the signal as it does for any interrupted target
    assert code in (0, -signal.SIGINT, 130) and "Traceback" not in said + rest
    assert "demo-cluster: stopped." in rest
    assert port_is_free(port)
