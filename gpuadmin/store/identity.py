"""Who is running this process, for the journal (DESIGN §6) — taken from the kernel, not the environment.

Order: the audit login uid (`/proc/self/loginuid`, set once by pam_loginuid at sshd/login and kept
across sudo and su), then the caller of the outermost real `sudo` in the process tree, then the real
uid. `$USER`, `$LOGNAME`, `$SUDO_USER` are never read: anyone can set them. `$SUDO_UID` is only
compared with what the process tree says (`Identity.corroborated`). The origin (`SSH_CONNECTION`) is
believed only below a root-run sshd and for a connection the kernel lists as live (`origin`).
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

IdentitySource = Literal["loginuid", "sudo", "uid"]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

LOGINUID_UNSET = 4294967295  # (uid_t)-1: no login session (containers, daemons started at boot)
LOGINUID_PATH = Path("/proc/self/loginuid")


@dataclass(frozen=True)
class Identity:
    name: str
    uid: int
    source: IdentitySource
    corroborated: bool | None = None  # sudo only: whether $SUDO_UID agrees with the process tree


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return f"uid:{uid}"


def read_loginuid(path: Path = LOGINUID_PATH) -> int | None:
    """The audit login uid, or None when unset or unavailable (no audit support, not Linux)."""
    try:
        raw = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not raw.isdigit():
        return None
    uid = int(raw)
    return None if uid == LOGINUID_UNSET else uid


def sudo_caller(pid: int | None = None) -> int | None:
    """The real uid of the process that ran the outermost genuine `sudo` above `pid` (default: this one).

    A process counts as sudo when it is named `sudo` and runs with effective uid 0: a user cannot make
    such a process without a set-uid root binary, and what they gain by faking one is their own uid (the
    parent's). An orphaned sudo (its parent gone, re-parented to pid 1) proves nothing and is skipped.
    """
    try:
        process = psutil.Process(pid) if pid is not None else psutil.Process()
        ancestors = process.parents()
    except (psutil.Error, OSError):
        return None
    caller: int | None = None
    for index, proc in enumerate(ancestors):
        try:
            if proc.name() != "sudo" or proc.uids().effective != 0:
                continue
        except (psutil.Error, OSError):
            continue
        if index + 1 >= len(ancestors):
            continue
        parent = ancestors[index + 1]
        if parent.pid <= 1:
            continue
        try:
            caller = parent.uids().real  # keep walking: the outermost sudo names the login user
        except (psutil.Error, OSError):
            continue
    return caller


def login_identity(
    *,
    loginuid_path: Path = LOGINUID_PATH,
    pid: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Identity:
    """The login identity of this OS process (the parameters exist for tests)."""
    uid = read_loginuid(loginuid_path)
    if uid is not None:
        return Identity(user_name(uid), uid, "loginuid")
    caller = sudo_caller(pid)
    if caller is not None:
        env = os.environ if environ is None else environ
        claimed = env.get("SUDO_UID", "")
        corroborated = claimed.isdigit() and int(claimed) == caller
        return Identity(user_name(caller), caller, "sudo", corroborated)
    uid = os.getuid()
    return Identity(user_name(uid), uid, "uid")


SSHD_NAMES = frozenset({"sshd", "sshd-session"})  # OpenSSH 9.8+ runs sessions as `sshd-session`
PROC_NET = Path("/proc/net")
_TCP_ESTABLISHED = "01"


def ssh_monitor(pid: int | None = None) -> int | None:
    """The pid of the sshd running as root above `pid` (default: this process), or None.

    Only sshd makes such a process for a session (its privileged monitor, `sshd: alice [priv]`): a user cannot
    fake one without root, so a process below it really came in over SSH. A process in a tmux or screen
    started on the host has none (the multiplexer's server is re-parented away from the session).
    """
    try:
        process = psutil.Process(pid) if pid is not None else psutil.Process()
        ancestors = process.parents()
    except (psutil.Error, OSError):
        return None
    for proc in ancestors:
        try:
            if proc.name() in SSHD_NAMES and proc.uids().effective == 0:
                return int(proc.pid)
        except (psutil.Error, OSError):
            continue
    return None


def parse_ssh_connection(raw: str) -> tuple[str, int, str, int] | None:
    """`SSH_CONNECTION`'s four fields (client ip, client port, server ip, server port), or None."""
    fields = raw.split()
    if len(fields) != 4 or not (fields[1].isdigit() and fields[3].isdigit()):
        return None
    try:
        client = ipaddress.ip_address(fields[0].split("%", 1)[0])
        server = ipaddress.ip_address(fields[2].split("%", 1)[0])
    except ValueError:
        return None
    return str(client), int(fields[1]), str(server), int(fields[3])


def _endpoint(hex_addr: str) -> tuple[IPAddress, int] | None:
    """`0100007F:0016` (as /proc/net/tcp writes it) -> (127.0.0.1, 22); IPv4-mapped IPv6 becomes IPv4."""
    addr, _, port = hex_addr.partition(":")
    try:
        if len(addr) == 8:
            ip: IPAddress = ipaddress.IPv4Address(struct.pack("<I", int(addr, 16)))
        elif len(addr) == 32:
            raw = b"".join(struct.pack("<I", int(addr[i:i + 8], 16)) for i in range(0, 32, 8))
            v6 = ipaddress.IPv6Address(raw)
            ip = v6.ipv4_mapped or v6
        else:
            return None
        return ip, int(port, 16)
    except ValueError:
        return None


def tcp_connection_exists(client: tuple[str, int], server: tuple[str, int], proc_net: Path = PROC_NET) -> bool:
    """Whether an established TCP connection from `client` to `server` exists on this host (this network
    namespace), as the kernel lists them in /proc/net/tcp and tcp6 — which any user may read."""

    def norm(ip: str, port: int) -> tuple[IPAddress, int]:
        addr = ipaddress.ip_address(ip)
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            return addr.ipv4_mapped, port
        return addr, port

    want_local, want_remote = norm(*server), norm(*client)
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc_net / table).read_text(encoding="ascii").splitlines()[1:]
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != _TCP_ESTABLISHED:
                continue
            if _endpoint(fields[1]) == want_local and _endpoint(fields[2]) == want_remote:
                return True
    return False


def format_origin(client_ip: str, client_port: int) -> str:
    return f"[{client_ip}]:{client_port}" if ":" in client_ip else f"{client_ip}:{client_port}"


UNVERIFIED_SSH = "ssh:unverified"


def origin(
    environ: Mapping[str, str] | None = None,
    *,
    pid: int | None = None,
    proc_net: Path = PROC_NET,
) -> str | None:
    """Where the session comes from, for the journal: the SSH client's `ip:port` (`[ip]:port` for IPv6), or
    None for a local session.

    `SSH_CONNECTION` is only an environment variable, so it is believed only (1) below a root-run sshd
    (`ssh_monitor`) and (2) when the connection it names is live on this host. Set by hand in a local shell
    it is ignored (None); inside a real SSH session, a value that names no live connection gives
    `ssh:unverified`.
    """
    if ssh_monitor(pid) is None:
        return None
    env = os.environ if environ is None else environ
    claimed = parse_ssh_connection(env.get("SSH_CONNECTION", ""))
    if claimed is None:
        return UNVERIFIED_SSH
    client_ip, client_port, server_ip, server_port = claimed
    if not tcp_connection_exists((client_ip, client_port), (server_ip, server_port), proc_net):
        return UNVERIFIED_SSH
    return format_origin(client_ip, client_port)
