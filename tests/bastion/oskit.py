"""Real throwaway OS users and groups, and gpuadmin run as each of them (`runuser`), for the bastion tests.

Everything here needs root (CI runs as root); without it the tests skip with the reason. Names are unique per
run (`gpa<6 hex>-...`), so parallel workers never share a user, a group or a directory, and all of it is
removed afterwards: users (their processes first, by pid), then groups, then the directory tree.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from gpuadmin.store.identity import read_loginuid

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample-inventories" / "oci-h100.yaml"
_LOCKED = 10  # useradd/userdel/groupadd/groupdel: "cannot lock /etc/passwd" (another worker holds it)


def need_root() -> None:
    """Skip (with the reason) where real users cannot be made or would not be told apart."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create throwaway OS users and groups (CI runs as root)")
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "runuser"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: passwd, util-linux)")
    if read_loginuid() is not None:
        pytest.skip("this process has a login uid: every child would be recorded as that login user, by design")


def _admin_cmd(argv: Sequence[str]) -> None:
    """useradd & co., retried while another process holds the account database's lock."""
    deadline = time.monotonic() + 20
    while True:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)
        if done.returncode == 0:
            return
        if done.returncode != _LOCKED or time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        time.sleep(0.1)


@functools.cache
def user_python() -> tuple[str, str]:
    """An interpreter another user may run, and the PYTHONPATH that finds gpuadmin and its dependencies.

    The venv's own interpreter may live under root's home (pyenv in /root, mode 0700); then the system's
    interpreter of the same version is used with the venv's site-packages, which it can load (same ABI).
    """
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    site = sysconfig.get_paths()["purelib"]
    pythonpath = f"{ROOT}{os.pathsep}{site}"
    candidates = [os.path.realpath(sys.executable), f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    probe = "import sqlite3, pydantic_core, psutil, yaml, gpuadmin.cli.main; print('ok')"
    tried: list[str] = []
    for python in dict.fromkeys(candidates):
        if not os.path.exists(python):
            continue
        # through /bin/sh, so the interpreter is exec'd with nobody's own rights (no capability left over)
        done = subprocess.run(
            ["runuser", "-u", "nobody", "--", "/bin/sh", "-c", 'exec env -i PYTHONPATH="$1" "$0" -c "$2"',
             python, pythonpath, probe],
            capture_output=True, text=True, timeout=60, check=False, cwd="/")
        if done.returncode == 0 and done.stdout.strip() == "ok":
            return python, pythonpath
        tried.append(f"{python}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    pytest.skip("no Python interpreter that an unprivileged user may run can import gpuadmin: " + "; ".join(tried))


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, object]:
        data = json.loads(self.out)
        assert isinstance(data, dict)
        return data


@dataclass
class Bastion:
    """A throwaway directory tree (in /tmp, readable by everyone) and the users and groups made for one test."""

    base: Path
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    users: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)

    def group(self, suffix: str) -> str:
        name = f"gpa{self.token}-{suffix}"
        _admin_cmd(["groupadd", name])
        self.groups.append(name)
        return name

    def user(self, suffix: str, groups: Sequence[str] = ()) -> str:
        """A user with a home of its own under `base`, a usable (not locked) account and no password."""
        name = f"gpa{self.token}-{suffix}"
        home = self.base / "home" / name
        argv = ["useradd", "--home-dir", str(home), "--no-create-home", "--shell", "/bin/sh", "--user-group",
                "--password", "*"]
        if groups:
            argv += ["--groups", ",".join(groups)]
        _admin_cmd([*argv, name])
        self.users.append(name)
        entry = pwd.getpwnam(name)
        home.mkdir(parents=True)
        os.chown(home, entry.pw_uid, entry.pw_gid)
        home.chmod(0o700)
        return name

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    def env(self, user: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        _python, pythonpath = user_python()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home(user)), "LANG": "C.UTF-8", "PYTHONPATH": pythonpath,
               "USER": user, "LOGNAME": user}
        env.update(extra or {})
        return env

    def argv(self, user: str, args: Sequence[str], *, env: Mapping[str, str] | None = None,
             umask: str | None = None, module: str | None = "gpuadmin.cli.main") -> list[str]:
        """`runuser -u USER` running `python -m MODULE ARGS` (`python ARGS` without a module) with only the
        environment given (`env -i`)."""
        python, _ = user_python()
        exports = [f"{k}={v}" for k, v in self.env(user, env).items()]
        command = [python, *(["-m", module] if module else []), *args]
        if umask is not None:
            command = ["/bin/sh", "-c", f'umask {umask} && exec "$@"', "sh", *command]
        return ["runuser", "-u", user, "--", "env", "-i", *exports, *command]

    def run(self, user: str, *args: str, env: Mapping[str, str] | None = None, umask: str | None = None,
            timeout: float = 60, module: str | None = "gpuadmin.cli.main") -> Result:
        done = subprocess.run(self.argv(user, args, env=env, umask=umask, module=module), capture_output=True,
                              text=True, timeout=timeout, check=False, cwd="/")
        return Result(done.returncode, done.stdout, done.stderr)

    def spawn(self, user: str, *args: str, env: Mapping[str, str] | None = None,
              module: str | None = "gpuadmin.cli.main") -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(user, args, env=env, module=module), cwd="/", text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)

    def cleanup(self) -> None:
        errors: list[str] = []
        for name in self.users:
            try:
                uid = pwd.getpwnam(name).pw_uid
            except KeyError:
                continue
            _kill_processes_of(uid)
            try:
                _admin_cmd(["userdel", name])  # also removes the user's own group
            except RuntimeError as exc:
                errors.append(str(exc))
        for name in self.groups:
            try:
                _admin_cmd(["groupdel", name])
            except RuntimeError as exc:
                errors.append(str(exc))
        shutil.rmtree(self.base, ignore_errors=True)
        if errors:
            raise RuntimeError("cleaning up the throwaway users failed: " + "; ".join(errors))


def _kill_processes_of(uid: int) -> None:
    """The test users' leftover processes (a session the test opened), each ended by its pid."""
    procs = []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] is not None and proc.info["uids"].real == uid:
                procs.append(proc)
        except psutil.Error:
            continue
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=3)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()


@contextlib.contextmanager
def make_bastion() -> Iterator[Bastion]:
    need_root()
    user_python()
    base = Path(tempfile.mkdtemp(prefix="gpa-bastion-", dir="/tmp"))
    base.chmod(0o755)  # the test users must reach their homes and the states below
    made = Bastion(base)
    try:
        yield made
    finally:
        made.cleanup()


def stop(proc: subprocess.Popen[str]) -> None:
    """End a process `Bastion.spawn` started, and what it runs (its own session), by its process group id."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def write_roles(path: Path, text: str, *, owner: int = 0, mode: int = 0o644) -> Path:
    path.write_text(text, encoding="utf-8")
    os.chown(path, owner, -1)
    path.chmod(mode)
    return path


def journal(state: Path) -> list[dict[str, object]]:
    """The journal as root reads it, oldest first."""
    from gpuadmin.store import Store

    with Store.open(state) as store:
        return [{"actor": e.actor, "uid": e.uid, "source": e.source, "origin": e.origin, "outcome": e.outcome,
                 "command": e.command, "revision": e.revision} for e in store.journal()]


def revision(state: Path) -> int:
    from gpuadmin.store import Store

    with Store.open(state) as store:
        return store.revision()
