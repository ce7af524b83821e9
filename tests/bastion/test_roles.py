"""Roles in-process (no root needed): the roles file and its trust checks, how a role is decided, that flags
only lower it, and that the one gate cannot be walked around with `restore` (what undo and import are made of)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuadmin.cli.main import run
from gpuadmin.errors import InputError
from gpuadmin.service import NotPermitted, Service, admin_reasons, check_action
from gpuadmin.store import Identity
from gpuadmin.store import roles as roles_mod
from gpuadmin.store.roles import DEFAULT_ROLES, RolesFile, lower, mapped_role, read_roles_file, role_ceiling
from tests.bastion.oskit import SAMPLE

ME = os.geteuid()
ALICE = Identity("alice", 424242, "uid")


def test_lower_only_ever_lowers() -> None:
    assert lower("admin", None) == "admin"
    assert lower("admin", "viewer") == "viewer"
    assert lower("viewer", "admin") == "viewer"
    assert lower("operator", "admin") == "operator"


def _roles(tmp_path: Path, text: str, mode: int = 0o644) -> Path:
    path = tmp_path / "roles.yaml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_a_roles_file_is_read_and_validated(tmp_path: Path) -> None:
    path = _roles(tmp_path, "version: 1\ndefault: viewer\ngroups: {ops: operator}\nusers: {alice: admin}\n")
    assert read_roles_file(path, trusted_owners={ME}) == RolesFile(
        version=1, groups={"ops": "operator"}, users={"alice": "admin"})
    assert read_roles_file(tmp_path / "absent.yaml", trusted_owners={ME}) is None
    bad = _roles(tmp_path, "version: 1\ngroups:\n  ops: superuser\nextra: 1\n")
    with pytest.raises(InputError) as info:
        read_roles_file(bad, trusted_owners={ME})
    text = str(info.value)
    assert "roles.yaml:3:8: groups.ops" in text and "roles.yaml:4:1: extra" in text
    dup = _roles(tmp_path, "version: 1\nusers: {alice: viewer, alice: admin}\n")
    with pytest.raises(InputError, match="duplicate"):
        read_roles_file(dup, trusted_owners={ME})


@pytest.mark.parametrize("why", ["group-writable", "other-writable", "symlink", "hard link", "owner"])
def test_an_untrusted_roles_file_is_refused_not_skipped(tmp_path: Path, why: str) -> None:
    path = _roles(tmp_path, "version: 1\ndefault: admin\n")
    trusted = {ME}
    if why == "group-writable":
        path.chmod(0o664)
    elif why == "other-writable":
        path.chmod(0o646)
    elif why == "symlink":
        link = tmp_path / "link.yaml"
        link.symlink_to(path)
        path = link
    elif why == "hard link":
        os.link(path, tmp_path / "second.yaml")
    else:
        trusted = {ME + 1}
    with pytest.raises(InputError, match="refusing the roles file"):
        read_roles_file(path, trusted_owners=trusted)


def test_a_user_entry_wins_then_the_highest_group_then_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    roles = RolesFile(version=1, default="viewer", groups={"ops": "operator", "admins": "admin", "x": "viewer"},
                      users={"alice": "viewer"})
    monkeypatch.setattr(roles_mod, "group_names", lambda _identity: {"ops", "admins", "x"})
    assert mapped_role(roles, ALICE) == ("viewer", "user alice")  # her own entry lowers her
    assert mapped_role(roles, Identity("bob", 1, "uid")) == ("admin", "group admins")
    monkeypatch.setattr(roles_mod, "group_names", lambda _identity: {"users"})
    assert mapped_role(roles, Identity("bob", 1, "uid")) == ("viewer", "anyone else")
    monkeypatch.setattr(roles_mod, "group_names", lambda _identity: {"gpuadmin-operator"})
    assert mapped_role(DEFAULT_ROLES, Identity("bob", 1, "uid")) == ("operator", "group gpuadmin-operator")


def test_who_needs_no_roles_file(tmp_path: Path) -> None:
    assert role_ceiling(ALICE, None).role == "admin"  # an inventory in memory
    assert role_ceiling(Identity("root", 0, "uid"), tmp_path).why == "root"
    assert role_ceiling(ALICE, tmp_path / "new").source == "owner"  # a state not made yet: its creator's
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    me = Identity("me", ME, "uid")
    if ME != 0:
        assert role_ceiling(me, mine).source == "owner"
    mine.chmod(0o770)  # others may write it: no longer personal, the roles decide
    decision = role_ceiling(Identity("me", ME, "uid") if ME else ALICE, mine,
                            system_file=tmp_path / "no-system-roles.yaml")
    assert decision.source == "built-in default"


def test_a_state_roles_file_comes_before_the_system_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o2775)
    system = _roles(tmp_path, "version: 1\nusers: {alice: operator}\n")
    monkeypatch.setattr(roles_mod, "group_names", lambda _identity: set())
    if ME == 0:
        decision = role_ceiling(ALICE, state, system_file=system)
        assert (decision.role, decision.source) == ("operator", str(system))
    else:  # a system roles file must be root's: ours is refused
        with pytest.raises(InputError, match="refusing the roles file: it is owned by"):
            role_ceiling(ALICE, state, system_file=system)
    (state / "roles.yaml").write_text("version: 1\nusers: {alice: admin}\n")
    (state / "roles.yaml").chmod(0o644)
    decision = role_ceiling(ALICE, state, system_file=system)
    assert (decision.role, decision.why, decision.source) == ("admin", "user alice", str(state / "roles.yaml"))


def test_a_service_never_has_more_than_the_identity_may(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    Service.init(state, SAMPLE)
    state.chmod(0o2775)
    import gpuadmin.service.caller as caller_mod

    monkeypatch.setattr(caller_mod, "login_identity", lambda: ALICE)
    monkeypatch.setattr(roles_mod, "group_names", lambda _identity: set())
    monkeypatch.setattr(roles_mod, "SYSTEM_ROLES_FILE", tmp_path / "none.yaml")
    assert Service(state_dir=state, role="admin").role == "viewer"
    assert Service(state_dir=state).decision.why == "anyone else"
    with pytest.raises(NotPermitted, match="role viewer may not init"):
        Service.init(state, SAMPLE, role="admin", force=True)


def _plan(*changes: dict[str, object]) -> tuple[object, object]:
    service = Service(inventory=SAMPLE)
    the_plan = service.plan(service.build_changes(list(changes)))
    return the_plan.changes, the_plan.diff


def test_restore_cannot_do_what_only_an_admin_may() -> None:
    service = Service(inventory=SAMPLE)
    node = service.state.nodes["gpu-h100-12"].model_dump(mode="json", exclude_none=True)
    queue = service.state.queues["interns"].model_dump(mode="json", exclude_none=True)
    cordoned = {**node, "state": "cordoned"}
    bigger = {**node, "cpus": 999}
    cases = {
        "removes node gpu-h100-12": {"op": "restore", "kind": "node", "name": "gpu-h100-12"},
        "adds node gpu-h100-99": {"op": "restore", "kind": "node", "name": "gpu-h100-99",
                                  "node": {**node, "name": "gpu-h100-99"}},
        "changes the inventory facts of node gpu-h100-12": {"op": "restore", "kind": "node", "name": "gpu-h100-12",
                                                            "node": bigger},
        "changes queue interns": {"op": "restore", "kind": "queue", "name": "interns",
                                  "queue": {**queue, "priority": 999}},
    }
    for reason, change in cases.items():
        changes, diff = _plan(change)
        assert admin_reasons(changes, diff) == [reason]  # type: ignore[arg-type]
        with pytest.raises(NotPermitted, match=f"role operator may not apply \\({reason}\\): it needs admin"):
            check_action("operator", "apply", changes, diff)  # type: ignore[arg-type]
        check_action("admin", "apply", changes, diff)  # type: ignore[arg-type]
    # a node's configuration (its state, modes, layouts) is an operator's, by any op
    changes, diff = _plan({"op": "restore", "kind": "node", "name": "gpu-h100-12", "node": cordoned})
    assert admin_reasons(changes, diff) == []  # type: ignore[arg-type]
    check_action("operator", "apply", changes, diff)  # type: ignore[arg-type]


def test_flags_only_lower_the_role(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state"
    Service.init(state, SAMPLE)
    cordon = tmp_path / "cordon.yaml"
    cordon.write_text("changes:\n  - {op: cordon, node: gpu-h100-12}\n")
    assert run(["--state", str(state), "--as-role", "viewer", "apply", "-f", str(cordon), "--yes"]) == 4
    assert "role viewer may not apply: it needs operator" in capsys.readouterr().err
    assert run(["--state", str(state), "whoami", "-o", "json"]) == 0
    import json

    who = json.loads(capsys.readouterr().out)
    assert who["role"] == "admin" and who["access"] == "read-write" and who["shared"] is False
    assert run(["--state", str(state), "--as-role", "operator", "whoami"]) == 0
    assert "role     operator (lowered from admin)" in capsys.readouterr().out
