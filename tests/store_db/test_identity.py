"""The journal records who really ran the process, whatever the environment claims."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpuadmin.store import Identity, Store, login_identity, origin
from gpuadmin.store.identity import (
    UNVERIFIED_SSH,
    format_origin,
    parse_ssh_connection,
    read_loginuid,
    ssh_monitor,
    user_name,
)

from ._proc import REPO, child_env, driver_cmd, run
from .scenario import base_inventory

SPOOF = {
    "LOGNAME": "mallory",
    "USER": "mallory",
    "SUDO_USER": "mallory",
    "SUDO_UID": "31337",
    "LNAME": "mallory",
}


def expected_identity() -> tuple[str, int]:
    uid = read_loginuid()
    if uid is None:
        uid = login_identity().uid  # the sudo caller when run under sudo, else the real uid
    return user_name(uid), uid


def test_spoofed_environment_does_not_change_the_journal(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    Store.create(state_dir, base_inventory(), actor=Identity("tester", 1, "uid")).close()
    out = json.loads(
        run("record", state_dir, env={**SPOOF, "SSH_CONNECTION": "203.0.113.9 52044 10.0.0.5 22"})
    )
    name, uid = expected_identity()
    assert (out["actor"], out["uid"]) == (name, uid)
    assert out["actor"] != "mallory" and out["uid"] != 31337
    # no sshd above this process: SSH_CONNECTION set by hand is not believed (a local session)
    expected_origin = origin()
    assert out["origin"] == expected_origin and out["origin"] != "203.0.113.9:52044"
    with Store.open(state_dir) as store:
        last = store.journal(limit=1)[0]
        assert (last.actor, last.uid, last.origin, last.command) == (
            name,
            uid,
            expected_origin,
            "driver record",
        )


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a child as another user")
def test_a_child_running_as_nobody_claiming_root_is_recorded_as_nobody() -> None:
    if read_loginuid() is not None:
        pytest.skip("a login uid is set: it wins over the process uid by design")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not installed")
    nobody = pwd.getpwnam("nobody").pw_uid
    out = subprocess.run(
        [setpriv, f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups", *driver_cmd("whoami")],
        cwd=REPO,
        env=child_env({**SPOOF, "LOGNAME": "root", "USER": "root", "SUDO_USER": "root", "SUDO_UID": "0"}),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        pytest.skip(f"the interpreter is not usable by nobody here: {out.stderr.strip()[-200:]}")
    got = json.loads(out.stdout)
    assert (got["name"], got["uid"], got["source"]) == ("nobody", nobody, "uid")


def test_loginuid_unset_falls_back(tmp_path: Path) -> None:
    unset = tmp_path / "loginuid"
    unset.write_text("4294967295")
    me = login_identity(loginuid_path=unset)
    assert me.source in ("uid", "sudo")
    if me.source == "uid":
        assert (me.name, me.uid) == (user_name(os.getuid()), os.getuid())
    missing = login_identity(loginuid_path=tmp_path / "absent")
    assert missing == me


def test_loginuid_set_wins(tmp_path: Path) -> None:
    path = tmp_path / "loginuid"
    path.write_text("65534\n")
    assert login_identity(loginuid_path=path) == Identity(user_name(65534), 65534, "loginuid")
    path.write_text("4000000000")
    assert login_identity(loginuid_path=path).name == "uid:4000000000"  # no such user


def test_the_sudo_caller_comes_from_the_process_tree() -> None:
    """A stand-in for sudo: a set-uid-root copy of the interpreter named `sudo`, run by `nobody`, which
    forks and runs the driver as root (as sudo does). The driver must name `nobody`, found from the
    sudo process's parent — not root (its own uid), nor what SUDO_USER says."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a set-uid stand-in for sudo")
    if read_loginuid() is not None:
        pytest.skip("a login uid is set: it wins over the sudo caller by design")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv not installed")
    nobody = pwd.getpwnam("nobody").pw_uid
    bindir = Path(tempfile.mkdtemp(prefix="fakesudo-"))
    try:
        bindir.chmod(0o755)
        fake = bindir / "sudo"
        shutil.copy2(os.path.realpath(sys.executable), fake)
        fake.chmod(0o4755 | stat.S_IXUSR)
        code = (
            "import os, sys\n"
            "if os.geteuid() != 0: sys.exit(77)\n"
            "os.setgid(0); os.setuid(0)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.execv(sys.argv[1], sys.argv[1:])\n"
            "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
        )
        env = child_env(
            {**SPOOF, "SUDO_USER": "root", "SUDO_UID": str(nobody), "PYTHONHOME": sys.base_prefix}
        )
        out = subprocess.run(
            [
                setpriv,
                f"--reuid={nobody}",
                f"--regid={nobody}",
                "--clear-groups",
                "/bin/sh",
                "-c",
                '"$0" "$@"; exit $?',
                str(fake),
                "-c",
                code,
                *driver_cmd("whoami"),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode == 77:
            pytest.skip("set-uid binaries do not work here (nosuid mount?)")
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got == {"name": user_name(nobody), "uid": nobody, "source": "sudo", "corroborated": True}
    finally:
        shutil.rmtree(bindir)


def test_parse_ssh_connection() -> None:
    assert parse_ssh_connection("198.51.100.7 40022 10.1.1.1 22") == ("198.51.100.7", 40022, "10.1.1.1", 22)
    assert parse_ssh_connection("2001:db8::5 40022 2001:db8::1 22") == ("2001:db8::5", 40022, "2001:db8::1", 22)
    assert format_origin("198.51.100.7", 40022) == "198.51.100.7:40022"
    assert format_origin("2001:db8::5", 40022) == "[2001:db8::5]:40022"
    for junk in ("", "  ", "junk\x1b[2J", "1.2.3.4 x 5.6.7.8 22", "not-an-ip 1 2.2.2.2 22"):
        assert parse_ssh_connection(junk) is None


def test_origin_outside_ssh_ignores_ssh_connection() -> None:
    if ssh_monitor() is not None:
        pytest.skip("these tests run inside a real SSH session")
    assert origin({"SSH_CONNECTION": "198.51.100.7 40022 10.1.1.1 22"}) is None
    assert origin({}) is None


def test_origin_inside_ssh_believes_only_a_live_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below a (stand-in) sshd monitor, SSH_CONNECTION counts only if the kernel lists that connection."""
    import gpuadmin.store.identity as identity

    monkeypatch.setattr(identity, "ssh_monitor", lambda _pid=None: 4242)
    net = tmp_path / "net"
    net.mkdir()
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    # 10.1.1.1:22 <- 198.51.100.7:40022 established (01); 10.1.1.1:22 <- 198.51.100.8:40023 in TIME_WAIT (06)
    (net / "tcp").write_text(header
                             + "   0: 0101010A:0016 076433C6:9C56 01 00000000:00000000 00:00000000 00000000 0 0 1\n"
                             + "   1: 0101010A:0016 086433C6:9C57 06 00000000:00000000 00:00000000 00000000 0 0 2\n")
    # an IPv4-mapped connection in tcp6: [::ffff:10.1.1.1]:22 <- [::ffff:203.0.113.9]:52044
    (net / "tcp6").write_text(header + "   0: 0000000000000000FFFF00000101010A:0016 "
                              "0000000000000000FFFF0000097100CB:CB4C 01 0:0 0:0 0 0 0 3\n")
    live = {"SSH_CONNECTION": "198.51.100.7 40022 10.1.1.1 22"}
    assert origin(live, proc_net=net) == "198.51.100.7:40022"
    assert origin({"SSH_CONNECTION": "198.51.100.8 40023 10.1.1.1 22"}, proc_net=net) == UNVERIFIED_SSH
    assert origin({"SSH_CONNECTION": "203.0.113.66 40022 10.1.1.1 22"}, proc_net=net) == UNVERIFIED_SSH
    assert origin({"SSH_CONNECTION": "203.0.113.9 52044 10.1.1.1 22"}, proc_net=net) == "203.0.113.9:52044"
    assert origin({}, proc_net=net) == UNVERIFIED_SSH
