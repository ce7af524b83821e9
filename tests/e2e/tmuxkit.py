"""Drive the real `gpuadmin` in a real tmux pane: type keys, read the screen, wait for text."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def need_tmux() -> str:
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed (make test installs it where it can: apt-get install tmux)")
    return tmux


class Pane:
    """One detached tmux server of its own (a private socket), one pane of a fixed size."""

    def __init__(self, argv: list[str], env: Mapping[str, str], *, width: int = 80, height: int = 24,
                 cwd: Path = ROOT) -> None:
        self.tmux = need_tmux()
        self.socket = f"gpa-{uuid.uuid4().hex[:10]}"
        self.done = cwd / f".e2e-exit-{self.socket}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = (f"env -i PATH=/usr/bin:/bin HOME={shlex.quote(str(Path.home()))} {exports} "
                   f"{shlex.join(argv)}; echo $? > {shlex.quote(str(self.done))}; sleep 60")
        self._run("new-session", "-d", "-x", str(width), "-y", str(height), "-c", str(cwd), command)

    def _run(self, *args: str) -> str:
        out = subprocess.run([self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        return out.stdout

    def screen(self) -> str:
        return self._run("capture-pane", "-p")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self._run("send-keys", *(["-l"] if literal else []), *keys)

    def type(self, text: str) -> None:
        self.keys(text, literal=True)

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} did not appear within {timeout}s; the screen was:\n{screen}")

    def wait_for_all(self, *texts: str, timeout: float = 20.0) -> str:
        """The screen once every one of `texts` is on it: a read of the pane while the console is still drawing
        its first screen may hold its body without its header (seen once on CI, the header row blank)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(text in screen for text in texts):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{texts!r} did not all appear within {timeout}s; the screen was:\n{screen}")

    def exit_code(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.done.exists() and self.done.read_text().strip():
                return int(self.done.read_text().strip())
            time.sleep(0.1)
        raise AssertionError(f"the console did not exit within {timeout}s:\n{self.screen()}")

    def close(self) -> None:
        self._run("kill-server")
        self.done.unlink(missing_ok=True)


def gpuadmin_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpuadmin.cli.main", *args]
