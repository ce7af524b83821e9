"""The console over real SSH, end to end: Debian's sshd on 127.0.0.1, `ssh -tt` in tmux (TERM=xterm, 80x24),
the console opened, `:jobs`, quit — and the journal of an apply made over SSH names that user and the SSH
client, while a local shell that sets SSH_CONNECTION, LOGNAME and USER by hand forges neither.

Root only (throwaway users, a second sshd); skipped with the reason elsewhere. `GPUADMIN_SSH_SCREEN=FILE`
keeps a copy of the captured screen.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import psutil

from gpuadmin.store import Store
from gpuadmin.store.identity import UNVERIFIED_SSH
from tests.bastion.oskit import SAMPLE, Bastion, journal, make_bastion, user_python, write_roles
from tests.bastion.sshkit import Sshd, sshd
from tests.e2e.tmuxkit import Pane, need_tmux

DEADLINE_S = 90


def test_the_console_and_an_apply_over_real_ssh() -> None:
    need_tmux()
    started = time.monotonic()
    with make_bastion() as bastion:
        ops = bastion.group("ops")
        user = bastion.user("ssh", [ops])
        state = bastion.base / "state"
        from gpuadmin.cli.main import run

        assert run(["--state", str(state), "init", "--from", str(SAMPLE), "--shared", "--group", ops]) == 0
        write_roles(state / "roles.yaml", f"version: 1\ngroups:\n  {ops}: operator\n")
        with Store.open(state) as store:
            jobs = len(store.load().jobs)
        cordon = _changes(bastion, "cordon", "changes:\n  - {op: cordon, node: gpu-h100-12}\n")
        uncordon = _changes(bastion, "uncordon", "changes:\n  - {op: uncordon, node: gpu-h100-12}\n")
        python, pythonpath = user_python()
        gpuadmin = f"cd / && LANG=C.UTF-8 PYTHONPATH={pythonpath} exec {python} -m gpuadmin.cli.main --state {state}"

        with sshd(bastion.base, [user]) as server:
            pane = Pane(server.ssh_argv(user, f"{gpuadmin} tui", tty=True), {"TERM": "xterm", "LANG": "C.UTF-8"})
            try:
                first = pane.wait_for("GPUs by use", timeout=45)
                assert "role operator" in first and "rev 0" in first, first
                assert all(len(line) <= 80 for line in first.splitlines())

                # A local shell (no sshd above it) claims the live session's SSH_CONNECTION, and root's names.
                live = _ssh_connection_of(user)
                forged = bastion.run(user, "--state", str(state), "apply", "-f", cordon, "--yes",
                                     env={"SSH_CONNECTION": live, "USER": "root", "LOGNAME": "root",
                                          "SUDO_USER": "root", "SUDO_UID": "0"})
                assert forged.code == 0, forged.err
                local = journal(state)[-1]
                assert (local["actor"], local["source"], local["origin"]) == (user, "uid", None), local
                pane.wait_for("rev 1", timeout=15)  # and the console over SSH saw that apply, live

                pane.type(":jobs")
                pane.keys("Enter")
                screen = pane.wait_for(f"jobs: {jobs} of {jobs}", timeout=20)
                _keep(bastion, screen)
                pane.type("q")
                assert pane.exit_code(timeout=20) == 0
            finally:
                pane.close()

            # An apply over SSH: journaled with that user and the SSH client's address (a live connection).
            done = server.run(user, f"{gpuadmin} apply -f {uncordon} --yes")
            assert done.returncode == 0, done.stderr + server.log_text()
            entry = journal(state)[-1]
            assert (entry["actor"], entry["outcome"], entry["revision"]) == (user, "applied", 2), entry
            origin = str(entry["origin"])
            assert origin.startswith("127.0.0.1:") and origin != f"127.0.0.1:{server.port}", origin

            # Inside SSH, a hand-set SSH_CONNECTION that names no live connection is marked, not believed.
            done = server.run(user, "export SSH_CONNECTION='203.0.113.9 4444 127.0.0.1 22' USER=root LOGNAME=root; "
                                    f"{gpuadmin} whoami -o json")
            assert done.returncode == 0, done.stderr
            assert f'"user": "{user}"' in done.stdout and f'"origin": "{UNVERIFIED_SSH}"' in done.stdout
            assert '"role": "operator"' in done.stdout
            _no_session_left(server, user)
    assert time.monotonic() - started < DEADLINE_S


def _changes(bastion: Bastion, name: str, body: str) -> str:
    path = bastion.base / f"{name}.yaml"
    path.write_text(body, encoding="utf-8")
    path.chmod(0o644)
    return str(path)


def _ssh_connection_of(user: str) -> str:
    """SSH_CONNECTION as sshd gave it to the user's live session (root may read any process's environment)."""
    import pwd

    uid = pwd.getpwnam(user).pw_uid
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] is not None and proc.info["uids"].real == uid:
                value = proc.environ().get("SSH_CONNECTION")
                if value:
                    return value
        except psutil.Error:
            continue
    raise AssertionError(f"no SSH session of {user} found")


def _keep(bastion: Bastion, screen: str) -> None:
    (bastion.base / "ssh-screen.txt").write_text(screen, encoding="utf-8")
    target = os.environ.get("GPUADMIN_SSH_SCREEN")
    if target:
        shutil.copyfile(bastion.base / "ssh-screen.txt", Path(target))
    print("--- the console over ssh -tt, 80x24, after :jobs ---\n" + screen)


def _no_session_left(server: Sshd, user: str) -> None:
    """The client quit: within a few seconds nothing of the user's session runs any more."""
    import pwd

    uid = pwd.getpwnam(user).pw_uid
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] is not None and p.info["uids"].real == uid]
        if not left:
            return
        time.sleep(0.1)
    raise AssertionError(f"{user}'s processes still run after the session ended:\n{server.log_text()}")
