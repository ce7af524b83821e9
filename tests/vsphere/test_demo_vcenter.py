"""`make demo-vcenter` serves the seeded vCenter simulator as a real process, and the session it prints (the one
docs/vsphere.md gives) runs as written against it; Ctrl-C stops it cleanly, a port in use is exit 2."""

from __future__ import annotations

import shlex
import socket
import sys
from pathlib import Path

import pytest

from gpuadmin.errors import ExitCode
from tests.cli.clikit import gpuadmin
from tests.kube.test_demo_cluster import free_port, interrupt, port_is_free, read_until, start
from tests.vsphere.vcsim import why_not

READY = "Ctrl-C stops it."
DOC = Path(__file__).resolve().parents[2] / "docs" / "vsphere.md"


@pytest.fixture(autouse=True)
def _buildable() -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")


def test_the_printed_session_runs_as_written_and_ctrl_c_stops_it(tmp_path: Path) -> None:
    port = free_port()
    proc = start([sys.executable, "-m", "tests.vsphere.vcsim", "--port", str(port)])
    try:
        said = read_until(proc, READY)
        lines = [line.strip() for line in said.splitlines()]
        password = shlex.split(next(line for line in lines if line.startswith("export ")))[1].split("=", 1)[1]
        session = [shlex.split(line)[1:] for line in lines if line.startswith("gpuadmin ")]
        assert [args[2] for args in session] == ["init", "get", "diff"]
        env = {"GPUADMIN_VCENTER_PASSWORD": password, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        results = [gpuadmin(*args, cwd=tmp_path, env=env) for args in session]
        assert [r.code for r in results] == [ExitCode.OK] * 3, [r.err for r in results]
        assert "esx-vdi-01" in results[1].out and "the state matches vCenter" in results[2].err
        for line in ("make demo-vcenter", "--from-cluster vcenter --server https://127.0.0.1:18443 --insecure"):
            assert line in DOC.read_text(encoding="utf-8")
    finally:
        code, rest = interrupt(proc)
    assert code == 0 and "demo-vcenter: stopped." in rest and "Traceback" not in said + rest
    assert port_is_free(port)


def test_a_port_in_use_is_exit_2_with_the_way_out() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start([sys.executable, "-m", "tests.vsphere.vcsim", "--port", str(port)])
        rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and b"DEMO_VCENTER_PORT=" in rest and b"Traceback" not in rest
