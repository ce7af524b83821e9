"""Who is running this process, for the journal (DESIGN §6) — taken from the kernel, not the environment.

Order: the audit login uid (`/proc/self/loginuid`, set once by pam_loginuid at sshd/login and kept
across sudo and su), then the caller of the outermost real `sudo` in the process tree, then the real
uid. `$USER`, `$LOGNAME`, `$SUDO_USER` are never read: anyone can set them. `$SUDO_UID` is only
compared with what the process tree says (`Identity.corroborated`).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

IdentitySource = Literal["loginuid", "sudo", "uid"]

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


def origin(environ: Mapping[str, str] | None = None) -> str | None:
    """Where the session comes from: the SSH client's `ip:port` (`[ip]:port` for IPv6), or None."""
    env = os.environ if environ is None else environ
    raw = env.get("SSH_CONNECTION", "").strip()
    if not raw:
        return None
    fields = raw.split()
    if len(fields) == 4 and fields[1].isdigit():
        ip, port = fields[0], fields[1]
        return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
    cleaned = "".join(ch for ch in raw if ch.isprintable())[:120]
    return f"unparsed:{cleaned}"
