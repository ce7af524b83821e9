"""One shared state on a bastion, used by real OS users: roles come from who they are, never from flags.

Throwaway users (root-only; skipped otherwise): `adm` (groups ops, admins), `op1`/`op2` (group ops) and
`view` (no gpuadmin group). The state is made by root with `init --shared --group ops`; its roles.yaml maps
admins → admin and ops → operator, and anyone else who can read it is a viewer.
"""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bastion.oskit import SAMPLE, Bastion, journal, make_bastion, revision, stop, write_roles

SPOOF = {"USER": "root", "LOGNAME": "root", "SUDO_USER": "root", "SUDO_UID": "0", "GPUADMIN_ROLE": "admin",
         "SSH_CONNECTION": "203.0.113.9 52044 10.0.0.5 22"}


@dataclass
class People:
    bastion: Bastion
    ops: str
    admins: str
    adm: str
    op1: str
    op2: str
    view: str


@dataclass
class Shared:
    people: People
    state: Path

    def __getattr__(self, name: str) -> str:  # shared.op1 ... for short
        return str(getattr(self.people, name))

    @property
    def bastion(self) -> Bastion:
        return self.people.bastion

    def changes(self, name: str, body: str) -> str:
        path = self.state.parent / f"{self.state.name}-{name}.yaml"
        path.write_text(body, encoding="utf-8")
        path.chmod(0o644)
        return str(path)

    def gpuadmin(self, user: str, *args: str, env: dict[str, str] | None = None,
                 umask: str | None = None) -> tuple[int, str, str]:
        done = self.bastion.run(user, "--state", str(self.state), *args, env=env, umask=umask)
        return done.code, done.out, done.err


@pytest.fixture(scope="module")
def people() -> Iterator[People]:
    with make_bastion() as bastion:
        ops, admins = bastion.group("ops"), bastion.group("admins")
        yield People(bastion, ops, admins, adm=bastion.user("adm", [ops, admins]), op1=bastion.user("op1", [ops]),
                     op2=bastion.user("op2", [ops]), view=bastion.user("view"))


@pytest.fixture
def shared(people: People, request: pytest.FixtureRequest) -> Shared:
    """A fresh shared state (made by root, as on a bastion), with a roles.yaml of its own."""
    from gpuadmin.cli.main import run

    state = people.bastion.base / f"state-{request.node.name[5:40]}"
    assert run(["--state", str(state), "init", "--from", str(SAMPLE), "--shared", "--group", people.ops]) == 0
    write_roles(state / "roles.yaml", f"version: 1\ngroups:\n  {people.admins}: admin\n  {people.ops}: operator\n")
    return Shared(people, state)


CORDON = "changes:\n  - {op: cordon, node: gpu-h100-12}\n"
QUOTA = "changes:\n  - {op: set-quota, queue: interns, quota: {gpus: 5}}\n"


def test_the_shared_directory_and_its_files(shared: Shared) -> None:
    st = shared.state.stat()
    assert st.st_mode & stat.S_ISGID and stat.S_IMODE(st.st_mode) == 0o2775
    import grp

    assert grp.getgrgid(st.st_gid).gr_name == shared.ops
    names = {p.name for p in shared.state.iterdir()}
    assert {"state.db", "state.db-wal", "state.db-shm", "lock"} <= names, names
    for name in ("state.db", "state.db-wal", "state.db-shm", "lock"):
        fst = (shared.state / name).stat()
        assert stat.S_IMODE(fst.st_mode) == 0o664, (name, oct(fst.st_mode))
        assert fst.st_gid == st.st_gid, name


def test_roles_come_from_the_user_and_its_groups_not_from_the_environment(shared: Shared) -> None:
    expect = {shared.adm: ("admin", "read-write"), shared.op1: ("operator", "read-write"),
              shared.view: ("viewer", "read-only")}
    for user, (role, access) in expect.items():
        code, out, err = shared.gpuadmin(user, "whoami", "-o", "json", env=SPOOF)
        assert code == 0, err
        who = json.loads(out)
        assert (who["user"], who["role"], who["access"], who["shared"]) == (user, role, access, True), who
        assert who["identity_source"] == "uid" and who["origin"] == "local"  # SSH_CONNECTION set by hand: ignored
        assert who["roles_from"] == str(shared.state / "roles.yaml")


def test_the_admin_applies_an_admin_op(shared: Shared) -> None:
    code, _, err = shared.gpuadmin(shared.adm, "apply", "-f", shared.changes("quota", QUOTA), "--yes")
    assert code == 0, err
    last = journal(shared.state)[-1]
    assert (last["actor"], last["outcome"], last["revision"]) == (shared.adm, "applied", 1)
    # an admin who asks for less gets less
    code, _, err = shared.gpuadmin(shared.adm, "--as-role", "operator", "apply", "-f", shared.changes("q2", QUOTA),
                                   "--yes")
    assert code == 4 and "role operator may not apply (set-quota): it needs admin" in err


def test_an_operator_may_apply_but_not_admin_ops_whatever_it_asks(shared: Shared) -> None:
    before = journal(shared.state)
    code, _, err = shared.gpuadmin(shared.op1, "--as-role", "admin", "apply", "-f", shared.changes("quota", QUOTA),
                                   "--yes", env=SPOOF)
    assert code == 4, err
    assert "not permitted: role operator may not apply (set-quota): it needs admin" in err
    assert journal(shared.state) == before and revision(shared.state) == 0
    code, _, err = shared.gpuadmin(shared.op1, "apply", "-f", shared.changes("cordon", CORDON), "--yes")
    assert code == 0, err
    assert journal(shared.state)[-1]["actor"] == shared.op1 and revision(shared.state) == 1


def test_a_plain_user_is_a_viewer_whatever_flags_or_environment_say(shared: Shared) -> None:
    cordon = shared.changes("cordon", CORDON)
    before = journal(shared.state)
    files = _files(shared.state)  # sizes and times of every file, -wal and -shm included
    attempts = [
        ("--as-role", "admin", "apply", "-f", cordon, "--yes"),
        ("--as-role", "admin", "undo", "--yes"),
        ("--as-role", "admin", "schedule", "--yes"),
        ("--as-role", "admin", "init", "--from", str(SAMPLE), "--force"),
    ]
    for args in attempts:
        code, _, err = shared.gpuadmin(shared.view, *args, env=SPOOF)
        assert code == 4, (args, err)
        assert "not permitted: role viewer may not" in err, (args, err)
    # past gpuadmin, the OS says the same: the viewer cannot write the database at all
    probe = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
             "c.execute('UPDATE meta SET revision = 99')")
    done = shared.bastion.run(shared.view, "-c", probe, str(shared.state / "state.db"), module=None)
    assert done.code != 0 and "readonly database" in done.err, done.err
    assert _files(shared.state) == files, "a refused attempt writes nothing"
    assert journal(shared.state) == before


def test_a_viewer_reads_and_watches_live(shared: Shared) -> None:
    code, out, err = shared.gpuadmin(shared.view, "get", "nodes", "-o", "name")
    assert code == 0 and "node/gpu-h100-12" in out, err
    watcher = shared.bastion.spawn(shared.view, str(shared.state), module="tests.bastion.watch_driver")
    try:
        assert watcher.stdout is not None
        ready = json.loads(watcher.stdout.readline() or "{}")
        assert ready.get("revision") == 0, (ready, watcher.stderr.read() if watcher.poll() is not None else "")
        assert ready["writable"] is False  # opened read-only: the viewer may not write it
        started = time.monotonic()
        code, _, err = shared.gpuadmin(shared.op1, "apply", "-f", shared.changes("cordon", CORDON), "--yes")
        assert code == 0, err
        seen = json.loads(watcher.stdout.readline() or "{}")
        assert seen == {"revision": 1, "touched": [["node", "gpu-h100-12"]], "state": "cordoned"}, seen
        assert time.monotonic() - started < 10
    finally:
        stop(watcher)
    # every writer has closed the state now: the -wal and -shm it needs are still there, and it still opens
    assert (shared.state / "state.db-wal").exists() and (shared.state / "state.db-shm").exists()
    code, out, err = shared.gpuadmin(shared.view, "get", "journal", "-o", "json")
    assert code == 0, err
    assert [i["actor"] for i in json.loads(out)["items"]][-1] == shared.op1


def test_a_viewers_console_opens_read_only(shared: Shared) -> None:
    shot = shared.bastion.home(shared.view) / f"{shared.state.name}.svg"
    code, _, err = shared.gpuadmin(shared.view, "--as-role", "admin", "tui", "--screenshot", str(shot),
                                   "--width", "80", "--height", "24", env=SPOOF)
    assert code == 0, err
    text = shot.read_text(encoding="utf-8").replace("&#160;", " ")
    assert "role viewer" in text and "READ-ONLY" in text and "GPUs by use" in text


def test_with_no_others_only_the_group_gets_in(people: People) -> None:
    from gpuadmin.cli.main import run

    state = people.bastion.base / "state-no-others"
    assert run(["--state", str(state), "init", "--from", str(SAMPLE), "--shared", "--group", people.ops,
                "--no-others"]) == 0
    assert stat.S_IMODE(state.stat().st_mode) == 0o2770
    assert stat.S_IMODE((state / "state.db").stat().st_mode) == 0o660
    outsider = people.bastion.run(people.view, "--state", str(state), "get", "nodes")
    assert outsider.code == 4 and "you may not read this state" in outsider.err, outsider.err
    member = people.bastion.run(people.op1, "--state", str(state), "get", "nodes", "-o", "name")
    assert member.code == 0 and "node/gpu-h100-01" in member.out, member.err


def test_a_personal_state_is_its_owners_with_no_set_up(people: People) -> None:
    """A user outside every gpuadmin group makes a state in their own home: they are its admin, as before."""
    user, state = people.view, people.bastion.home(people.view) / "state"
    quota = people.bastion.home(people.view) / "quota.yaml"
    done = people.bastion.run(user, "--state", str(state), "init", "--from", str(SAMPLE))
    assert done.code == 0, done.err
    assert stat.S_IMODE(state.stat().st_mode) == 0o700 and stat.S_IMODE((state / "state.db").stat().st_mode) == 0o600
    quota.write_text(QUOTA)
    quota.chmod(0o644)
    who = people.bastion.run(user, "--state", str(state), "whoami", "-o", "json").json()
    assert (who["role"], who["roles_from"], who["shared"]) == ("admin", "owner", False), who
    done = people.bastion.run(user, "--state", str(state), "apply", "-f", str(quota), "--yes")
    assert done.code == 0, done.err
    other = people.bastion.run(people.op1, "--state", str(state), "get", "nodes")
    assert other.code == 4 and "you may not read this state" in other.err, other.err


def test_without_its_wal_files_a_viewer_is_told_why_and_an_operator_puts_them_back(shared: Shared) -> None:
    for suffix in ("-wal", "-shm"):
        (shared.state / f"state.db{suffix}").unlink()
    code, _, err = shared.gpuadmin(shared.view, "get", "nodes")
    assert code == 2 and "state.db-wal and state.db-shm are missing" in err, err
    code, _, err = shared.gpuadmin(shared.op2, "get", "nodes", umask="077")
    assert code == 0, err
    for suffix in ("-wal", "-shm"):
        assert stat.S_IMODE((shared.state / f"state.db{suffix}").stat().st_mode) == 0o664  # whatever the umask
    code, _, err = shared.gpuadmin(shared.view, "get", "nodes")
    assert code == 0, err


def test_an_operator_with_umask_077_keeps_the_files_group_writable(shared: Shared) -> None:
    (shared.state / "lock").unlink()
    code, _, err = shared.gpuadmin(shared.op2, "apply", "-f", shared.changes("cordon", CORDON), "--yes",
                                   umask="077")
    assert code == 0, err
    for name in ("lock", "state.db-wal", "state.db-shm"):
        fst = (shared.state / name).stat()
        assert stat.S_IMODE(fst.st_mode) == 0o664 and fst.st_gid == shared.state.stat().st_gid, name
    code, _, err = shared.gpuadmin(shared.op1, "apply", "-f", shared.changes("uncordon", CORDON.replace(
        "cordon", "uncordon")), "--yes")
    assert code == 0, err  # the other operator can still write what op2 made


def test_two_operators_applying_at_once_keep_every_update(shared: Shared) -> None:
    per_operator = 3
    scripts = []
    for user in (shared.op1, shared.op2):
        files = [shared.changes(f"{user}-{i}", "changes:\n  - op: submit-job\n    job: {name: " + f"{user}-job{i}"
                                + ", queue: research, request: {gpus: 1}}\n") for i in range(per_operator)]
        scripts.append(subprocess.Popen(shared.bastion.argv(user, ["-c", RETRY_LOOP, str(shared.state), *files],
                                                            module=None),
                                        cwd="/", text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for proc in scripts:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    entries = journal(shared.state)
    applied = [e for e in entries if e["outcome"] == "applied" and e["revision"] != 0]
    assert sorted(str(e["actor"]) for e in applied) == sorted([shared.op1] * per_operator + [shared.op2] * per_operator)
    assert [e["revision"] for e in applied] == list(range(1, 2 * per_operator + 1))
    from gpuadmin.store import Store

    with Store.open(shared.state) as store:
        state = store.load()
        assert store.verify() == []
    for user in (shared.op1, shared.op2):
        assert all(f"{user}-job{i}" in state.jobs for i in range(per_operator))
    refused = [e for e in entries if e["outcome"] in ("stale", "lock-held")]
    assert all(e["actor"] in (shared.op1, shared.op2) for e in refused)


def test_the_write_lock_names_its_holder(shared: Shared) -> None:
    holder = shared.bastion.spawn(shared.op1, "-c", HOLD_LOCK, str(shared.state), module=None)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held", holder.stderr.read() if holder.poll() else ""
        code, _, err = shared.gpuadmin(shared.op2, "apply", "-f", shared.changes("cordon", CORDON), "--yes",
                                       "--wait", "0.2")
        assert code == 3, err
        assert f"state is locked by {shared.op1} (pid {_child_pid(holder.pid)} on {socket.gethostname()}, " \
               "gpuadmin hold-for-test, since" in err, err
    finally:
        stop(holder)
    last = journal(shared.state)[-1]
    assert (last["actor"], last["outcome"]) == (shared.op2, "lock-held")


RETRY_LOOP = """
import subprocess, sys, time
state, files = sys.argv[1], sys.argv[2:]
for path in files:
    for attempt in range(40):
        done = subprocess.run([sys.executable, "-m", "gpuadmin.cli.main", "--state", state, "apply", "-f", path,
                               "--yes"], capture_output=True, text=True)
        if done.returncode == 0:
            break
        if done.returncode != 3:
            sys.exit(f"{path}: exit {done.returncode}: {done.stderr}")
        time.sleep(0.05)
    else:
        sys.exit(f"{path}: still conflicting after 40 tries")
"""

HOLD_LOCK = """
import sys
from pathlib import Path
from gpuadmin.store import Store, login_identity
store = Store.open(Path(sys.argv[1]))
with store.write_lock(login_identity(), "gpuadmin hold-for-test"):
    print("held", flush=True)
    sys.stdin.read()
"""


def _child_pid(runuser_pid: int) -> int:
    """The pid of the Python process under `runuser` → `env` (env execs it, so it is runuser's child)."""
    import psutil

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        children = psutil.Process(runuser_pid).children(recursive=True)
        pythons = [c for c in children if "python" in c.name()]
        if pythons:
            return int(pythons[-1].pid)
        time.sleep(0.05)
    raise AssertionError("the lock holder's process was not found")


def _files(state: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in state.iterdir()}


MKDIR_WITH_ROLES = """
import os, sys
os.mkdir(sys.argv[1], 0o755)
with open(os.path.join(sys.argv[1], "roles.yaml"), "w") as roles:
    roles.write("version: 1\\ndefault: admin\\n")
"""


def test_init_shared_refuses_a_directory_another_user_made(people: People) -> None:
    """An operator who makes the directory first (with a roles.yaml of their own in it) must not become its
    owner, whose roles file is trusted: root's `init --shared` refuses it, and takes it over only empty."""
    import os
    import pwd

    from tests.cli.clikit import gpuadmin

    srv = people.bastion.base / "srv"
    srv.mkdir()
    srv.chmod(0o1777)  # like /tmp: anyone may make a directory here
    prod = srv / "prod"
    made = people.bastion.run(people.op1, "-c", MKDIR_WITH_ROLES, str(prod), module=None)
    assert made.code == 0, made.err
    op1 = pwd.getpwnam(people.op1).pw_uid
    init = ("--state", prod, "init", "--from", SAMPLE, "--shared", "--group", people.ops)
    refused = gpuadmin(*init)
    assert refused.code == 2, refused.err
    assert refused.err == (f"gpuadmin: {prod} belongs to {people.op1}, and a shared state's owner is trusted like "
                           "root (its roles.yaml gives the roles): refusing to share it. Pick a directory of your "
                           "own, or as root pass --take-over to make this one (empty) root's\n")
    not_empty = gpuadmin(*init, "--take-over")
    assert not_empty.code == 2 and "refusing to take it over, it is not empty" in not_empty.err, not_empty.err
    st = prod.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode), sorted(p.name for p in prod.iterdir())) == (op1, 0o755,
                                                                                              ["roles.yaml"])
    (prod / "roles.yaml").unlink()
    taken = gpuadmin(*init, "--take-over")
    assert taken.code == 0, taken.err
    assert prod.stat().st_uid == 0 and stat.S_IMODE(prod.stat().st_mode) == 0o2775
    who = people.bastion.run(people.op1, "--state", str(prod), "whoami", "-o", "json").json()
    assert who["role"] != "admin", who
    assert os.path.exists(prod / "state.db")


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_link_in_own_dir_not_personal(shared: Shared, link: str) -> None:
    """An operator of the shared state links its database into a directory of their own: were that a personal
    state, they would be its admin, and could do there what only an admin may do to the shared state."""
    mine = shared.bastion.home(shared.op1) / f"mine-{link}"
    make = ("import os, sys; os.mkdir(sys.argv[1], 0o700); "
            f"os.{'symlink' if link == 'symlink' else 'link'}(sys.argv[2], os.path.join(sys.argv[1], 'state.db'))")
    done = shared.bastion.run(shared.op1, "-c", make, str(mine), str(shared.state / "state.db"), module=None)
    assert done.code == 0, done.err
    who = shared.bastion.run(shared.op1, "--state", str(mine), "whoami", "-o", "json").json()
    assert who["role"] != "admin" and who["roles_from"] != "owner", who
    quota = shared.changes("quota", QUOTA)
    done = shared.bastion.run(shared.op1, "--state", str(mine), "apply", "-f", quota, "--yes")
    assert done.code == 4 and "not permitted: role viewer may not apply" in done.err, done.err  # no roles file
    listing = shared.bastion.run(shared.op1, "--state", str(mine), "get", "nodes")
    why = "it is a symbolic link" if link == "symlink" else "it has 2 hard links"
    assert listing.code == 2 and f"state.db: refusing to use it: {why}" in listing.err, listing.err
    (mine / "state.db").unlink()
    assert revision(shared.state) == 0


def test_a_read_only_state_directory_is_said_so(people: People) -> None:
    """A state directory its owner may not write (root could anyway): every command says so in one line, exit 4,
    not "not a readable gpuadmin state"."""
    user, state = people.op2, people.bastion.home(people.op2) / "ro-state"
    done = people.bastion.run(user, "--state", str(state), "init", "--from", str(SAMPLE))
    assert done.code == 0, done.err
    changes = people.bastion.home(user) / "cordon.yaml"
    changes.write_text(CORDON)
    changes.chmod(0o644)
    state.chmod(0o500)
    for args in (("apply", "-f", str(changes), "--yes"), ("schedule", "--yes"), ("get", "nodes")):
        done = people.bastion.run(user, "--state", str(state), *args)
        assert done.code == 4, (args, done.err)
        assert done.err == (f"gpuadmin: not permitted: {state / 'state.db'}: cannot write the state: attempt to "
                            "write a readonly database (a read-only file or directory); nothing was changed\n"), args
    state.chmod(0o700)
    assert revision(state) == 0
