"""Roles from who you really are: the login identity (see `identity.py`) and its groups, mapped by an
admin-owned roles file. `--as-role` and `--readonly` can only lower what this module decides.

Who needs no file at all:
- root (uid 0) is admin: it can do anything to the files anyway;
- the owner of a *personal* state — a state directory they own that neither group nor others may write —
  is its admin, so single-user use needs no set-up.

Everyone else gets the role their entry says, from the first roles file found of:
1. `<state_dir>/roles.yaml` — roles for that one state (a bastion with a prod and a staging state);
2. `/etc/gpuadmin/roles.yaml` — the host's roles;
3. the built-in default: group `gpuadmin-admin` → admin, `gpuadmin-operator` → operator, anyone else who
   can read the state → viewer.

A roles file is trusted only if it is a regular file (not a symlink, one link) owned by root — or, for a
state's own file, by the owner of the state directory — that neither group nor others may write. A file
that fails those checks or does not parse is an error (exit 2), never skipped: failing closed.

The format:

    version: 1
    default: viewer            # anyone else who can read the state (the default)
    groups:                    # a group's members get its role; the highest of a user's groups wins
      gpuadmin-admin: admin
      gpuadmin-operator: operator
    users:                     # a user's own entry wins over their groups (it may also lower them)
      alice: admin
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuadmin.errors import Diagnostic, InputError
from gpuadmin.store.identity import Identity
from gpuadmin.store.inventory_io import schema_diagnostics
from gpuadmin.store.shared import DB_NAME
from gpuadmin.store.yamlsafe import load_yaml

Role = Literal["viewer", "operator", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "operator", "admin")

SYSTEM_ROLES_FILE = Path("/etc/gpuadmin/roles.yaml")
STATE_ROLES_NAME = "roles.yaml"
_MAX_BYTES = 256 * 1024


class RolesFile(BaseModel):
    """The roles file's schema (unknown keys are errors)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    version: Literal[1]
    default: Role = "viewer"
    groups: dict[str, Role] = Field(default_factory=dict)
    users: dict[str, Role] = Field(default_factory=dict)


DEFAULT_ROLES = RolesFile(version=1, default="viewer",
                          groups={"gpuadmin-admin": "admin", "gpuadmin-operator": "operator"})


@dataclass(frozen=True)
class RoleDecision:
    """The most this identity may do on a state, and why (what `gpuadmin whoami` shows)."""

    role: Role
    why: str
    source: str  # "root", "owner", a roles file's path, or "built-in default"


def lower(role: Role, cap: Role | None) -> Role:
    """`role`, lowered to `cap` when a cap is given: flags can only ever take a role down."""
    if cap is None:
        return role
    return cap if ROLES.index(cap) < ROLES.index(role) else role


def is_personal(state_dir: Path, uid: int) -> bool:
    """Whether `state_dir` is `uid`'s own directory that no one else may write, holding (if any) a state database
    of `uid`'s own: not a symbolic or hard link to another state's, whose owner would otherwise become its admin
    through a directory of their own."""
    try:
        st = os.stat(state_dir)
    except OSError:
        return False
    if st.st_uid != uid or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    try:
        db = os.lstat(Path(state_dir) / DB_NAME)
    except FileNotFoundError:
        return True  # a new state: its creator's
    except OSError:
        return False
    return stat.S_ISREG(db.st_mode) and db.st_nlink == 1 and db.st_uid == uid


def group_names(identity: Identity) -> set[str]:
    """The groups the identity's user belongs to in the group database (its primary group included).

    From the database, not from this process: under `sudo` the process runs with another user's groups."""
    try:
        entry = pwd.getpwuid(identity.uid)
    except (KeyError, OverflowError):
        return set()
    names: set[str] = set()
    for gid in os.getgrouplist(entry.pw_name, entry.pw_gid):
        try:
            names.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    return names


def role_ceiling(identity: Identity, state_dir: Path | None, *, system_file: Path | None = None) -> RoleDecision:
    """The highest role `identity` may use on the state in `state_dir` (None: an in-memory inventory)."""
    if state_dir is None:
        return RoleDecision("admin", "an inventory in memory: nothing is persisted", "in-memory")
    if identity.uid == 0:
        return RoleDecision("admin", "root", "root")
    state_dir = Path(state_dir)
    try:
        os.stat(state_dir)
    except FileNotFoundError:
        return RoleDecision("admin", "a new state: its creator owns it", "owner")
    except OSError:  # there, but not ours to look into: the roles decide (reading it will fail anyway)
        pass
    if is_personal(state_dir, identity.uid):
        return RoleDecision("admin", f"{identity.name} owns this personal state", "owner")
    roles, source = load_roles(state_dir, system_file=system_file)
    role, why = mapped_role(roles, identity)
    return RoleDecision(role, why, source)


def mapped_role(roles: RolesFile, identity: Identity) -> tuple[Role, str]:
    """What a roles file gives `identity`: its user entry, else the highest of its groups', else the default."""
    if identity.name in roles.users:
        return roles.users[identity.name], f"user {identity.name}"
    groups = sorted(group_names(identity) & set(roles.groups),
                    key=lambda g: (-ROLES.index(roles.groups[g]), g))
    if groups:
        return roles.groups[groups[0]], f"group {groups[0]}"
    return roles.default, "anyone else"


def load_roles(state_dir: Path | None, *, system_file: Path | None = None) -> tuple[RolesFile, str]:
    """The roles that apply to a state, and where they come from (a path, or "built-in default")."""
    system_file = SYSTEM_ROLES_FILE if system_file is None else system_file
    if state_dir is not None and os.access(state_dir, os.X_OK):  # else: no way into the state at all
        own = Path(state_dir) / STATE_ROLES_NAME
        try:
            owner = os.stat(state_dir).st_uid
        except OSError:
            owner = 0
        roles = read_roles_file(own, trusted_owners={0, owner})
        if roles is not None:
            return roles, str(own)
    roles = read_roles_file(system_file, trusted_owners={0})
    if roles is not None:
        return roles, str(system_file)
    return DEFAULT_ROLES, "built-in default"


def read_roles_file(path: Path, *, trusted_owners: set[int]) -> RolesFile | None:
    """A roles file, or None when there is none; an untrusted or malformed file is an `InputError`."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise _untrusted(name, "it is a symbolic link") from None
        raise InputError([Diagnostic(f"cannot read the roles file: {exc.strerror or exc}", file=name)]) from None
    try:
        st = os.fstat(fd)  # checks on what was opened, not on a name someone may swap meanwhile
        if not stat.S_ISREG(st.st_mode):
            raise _untrusted(name, "it is not a regular file")
        if st.st_nlink != 1:
            raise _untrusted(name, f"it has {st.st_nlink} hard links")
        if st.st_uid not in trusted_owners:
            owners = " or ".join(_user(uid) for uid in sorted(trusted_owners))
            raise _untrusted(name, f"it is owned by {_user(st.st_uid)}, not {owners}")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise _untrusted(name, f"group or others may write it (mode {stat.S_IMODE(st.st_mode):04o})")
        if st.st_size > _MAX_BYTES:
            raise InputError([Diagnostic(f"the roles file is over {_MAX_BYTES} bytes", file=name)])
        data = os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)
    loaded = load_yaml(data, name, max_bytes=_MAX_BYTES)
    try:
        return RolesFile.model_validate(loaded.data)
    except ValidationError as exc:
        raise InputError(schema_diagnostics(exc, loaded, RolesFile)) from None


def _untrusted(name: str, why: str) -> InputError:
    return InputError([Diagnostic(
        f"refusing the roles file: {why}", file=name,
        hint="a roles file must be owned by root (or by the state directory's owner) and not writable by "
             "group or others: chown root: FILE && chmod 644 FILE")])


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return f"uid {uid}"


__all__ = [
    "DEFAULT_ROLES", "ROLES", "SYSTEM_ROLES_FILE", "Role", "RoleDecision", "RolesFile", "group_names", "is_personal",
    "load_roles", "lower", "mapped_role", "read_roles_file", "role_ceiling",
]
