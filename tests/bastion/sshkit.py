"""A throwaway OpenSSH server on 127.0.0.1 for the bastion's end-to-end test.

Its own host key, a free port on the loopback only, public-key login for the test users only, no PAM (the
system's PAM stack is not this test's), and stopped by its pid. The client's key and a known_hosts that
names the throwaway host key are made here too: nothing of the machine's own SSH set-up is used or changed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")  # sshd refuses to start without its privilege separation directory


def need_ssh() -> None:
    if not os.path.exists(SSHD):
        pytest.skip("openssh-server is not installed (make test installs it as root: apt-get install openssh-server)")
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (openssh-client)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpuadmin-test", "-f", str(path)],
                   check=True, timeout=30, capture_output=True)
    return path.with_name(path.name + ".pub").read_text(encoding="ascii").strip()


@dataclass
class Sshd:
    port: int
    pid: int
    dir: Path
    client_key: Path
    known_hosts: Path
    log: Path

    def ssh_argv(self, user: str, remote: str, *, tty: bool = False) -> list[str]:
        """The client command for `user@127.0.0.1`: this server's host key only, this key only, no prompts."""
        return ["ssh", *(["-tt"] if tty else ["-T"]), "-F", "/dev/null", "-p", str(self.port),
                "-i", str(self.client_key), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR",
                f"{user}@127.0.0.1", remote]

    def run(self, user: str, remote: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.ssh_argv(user, remote), capture_output=True, text=True, timeout=timeout,
                              check=False, stdin=subprocess.DEVNULL)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@contextmanager
def sshd(base: Path, users: Sequence[str]) -> Iterator[Sshd]:
    """sshd on 127.0.0.1:<free port> letting `users` in with one throwaway key; stopped by its pid afterwards."""
    need_ssh()
    work = base / "sshd"
    work.mkdir()
    work.chmod(0o700)
    host_pub = keygen(work / "host_ed25519")
    client_pub = keygen(work / "client_ed25519")
    for user in users:  # the key in each user's own ~/.ssh, with the modes StrictModes wants
        entry = pwd.getpwnam(user)
        ssh_dir = Path(entry.pw_dir) / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        (ssh_dir / "authorized_keys").write_text(client_pub + "\n", encoding="ascii")
        for path in (ssh_dir, ssh_dir / "authorized_keys"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        (ssh_dir / "authorized_keys").chmod(0o600)
    made_privsep = not PRIVSEP_DIR.exists()
    if made_privsep:
        PRIVSEP_DIR.mkdir(mode=0o755)
    port = free_port()
    config = work / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {work / 'host_ed25519'}",
        f"PidFile {work / 'sshd.pid'}", "AuthorizedKeysFile .ssh/authorized_keys", "StrictModes yes",
        "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "PermitRootLogin no", f"AllowUsers {' '.join(users)}", "X11Forwarding no",
        "AllowTcpForwarding no", "AllowAgentForwarding no", "PermitUserEnvironment no", "UseDNS no",
        "PrintMotd no", "PrintLastLog no", "MaxStartups 20", "LoginGraceTime 20", "",
    ]), encoding="ascii")
    known = work / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub}\n", encoding="ascii")
    log = work / "sshd.log"
    with open(log, "wb") as log_file:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log_file, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    server = Sshd(port, proc.pid, work, work / "client_ed25519", known, log)
    try:
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"sshd exited ({proc.returncode}):\n{server.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"sshd did not listen on 127.0.0.1:{port}:\n{server.log_text()}") from None
                time.sleep(0.05)
        yield server
    finally:
        os.kill(proc.pid, signal.SIGTERM)  # by its pid; sessions still open end with their users (oskit)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        if made_privsep:
            shutil.rmtree(PRIVSEP_DIR, ignore_errors=True)
