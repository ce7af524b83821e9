"""Issue 21, point 16c, through the real CLI at a real terminal: a destructive plan on a node whose name holds
control bytes is confirmed by typing the name as the prompt draws it (`\\x1b]0;pwned\\x07x`), since the raw
bytes cannot be typed; the prompt says exactly that text."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.clikit import ROOT, gpuadmin

OSC_NODE = "\x1b]0;pwned\x07x"
SHOWN = r"\x1b]0;pwned\x07x"
HOSTILE = ROOT / "tests" / "tui" / "fixtures" / "hostile.yaml"


def _read_until(fd: int, needle: bytes, timeout: float = 60) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        assert time.monotonic() < deadline, seen
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            seen += chunk
    return seen


def test_a_control_byte_name_is_confirmed_as_drawn(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert gpuadmin("--state", state, "init", "--from", HOSTILE).code == 0
    change = tmp_path / "drain.yaml"
    change.write_text('changes:\n  - {op: drain, node: "\\e]0;pwned\\ax"}\n')
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gpuadmin.cli.main", "--state", str(state), "apply", "-f",
                             str(change)], stdin=slave, stdout=subprocess.PIPE, stderr=slave, cwd=ROOT)
    os.close(slave)
    try:
        asked = _read_until(master, b"to apply: ")
        assert f"Type '{SHOWN}' to apply: ".encode() in asked
        assert b"\x1b]" not in asked  # the prompt never carries the raw sequence
        os.write(master, SHOWN.encode() + b"\n")
        proc.wait(timeout=60)
        said = _read_until(master, b"revision")
    finally:
        os.close(master)
        proc.kill()
    assert proc.returncode == 0, said
    assert b"applied, revision 1" in said
    journal = gpuadmin("--state", state, "get", "journal", "-o", "json")
    assert '"drain' in journal.out, journal
