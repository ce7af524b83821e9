"""Helpers to run the driver as a real child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def driver_cmd(*args: str | int | os.PathLike[str]) -> list[str]:
    return [sys.executable, "-m", "tests.store_db.driver", *(str(a) for a in args)]


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("SSH_CONNECTION", None)
    if extra:
        env.update(extra)
    return env


def spawn(*args: str | int | os.PathLike[str], env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        driver_cmd(*args),
        cwd=REPO,
        env=child_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(
    *args: str | int | os.PathLike[str], env: Mapping[str, str] | None = None, timeout: float = 60
) -> str:
    done = subprocess.run(
        driver_cmd(*args), cwd=REPO, env=child_env(env), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"driver {args} failed ({done.returncode}):\n{done.stderr}"
    return done.stdout
