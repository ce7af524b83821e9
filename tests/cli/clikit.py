from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample-inventories"


@dataclass
class Result:
    code: int
    out: str
    err: str


def gpuadmin(*args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None,
             stdin: str | None = None) -> Result:
    """The real CLI in a real process."""
    proc = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, input=stdin, timeout=120)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def state_from(sample: str, path: Path) -> Path:
    """A fresh state at `path`, created from one of sample-inventories/ by the real `init`."""
    result = gpuadmin("--state", path, "init", "--from", SAMPLES / sample)
    assert result.code == 0, result.err
    return path


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A fresh state created from the OCI sample."""
    return state_from("oci-h100.yaml", tmp_path / "state")


def hold_lock(state: Path, command: str, seconds: float) -> subprocess.Popen[str]:
    """Another process holding the state's write lock for `seconds`, as `command`; returns once it holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from gpuadmin.store import Store, login_identity;"
         "s = Store.open(Path(sys.argv[1]));"
         "cm = s.write_lock(login_identity(), sys.argv[2]); cm.__enter__();"
         "print('locked', flush=True); time.sleep(float(sys.argv[3])); cm.__exit__(None, None, None)",
         str(state), command, str(seconds)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder
