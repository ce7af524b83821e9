"""The vCenter watch (`gpuadmin.cluster.vcenter_watch`) against VMware's vCenter simulator: the first update set
brings every host and VM, a VM powered off through the API comes as one batch naming it, the watch follows the
property collector's version, `stop()` cancels the wait in progress, and a simulator that goes away makes the watch
reconnecting, then down, then — restarted on the same port — live again with a new login and a full read. And the
service's side: `sync_watched` on a vCenter feed is one journal entry, origin `cluster`, through the watch's own
session; none when nothing changed."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpuadmin.cluster.vcenter import VcenterConnection, connect_vcenter
from gpuadmin.cluster.vcenter_watch import VcenterWatch
from gpuadmin.cluster.watch import Backoff, Batch, WatchStatus
from gpuadmin.errors import ExitCode
from gpuadmin.service import Service, Unwatched, VcenterFeed, password_from
from tests.cli.clikit import gpuadmin
from tests.vsphere.estate import find, session, wait
from tests.vsphere.vcsim import Simulator, running, why_not

QUICK = Backoff(initial_s=0.05, cap_s=0.4)  # down after five failures in about a second, not eight


def until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait until `condition` holds; fail after `timeout` seconds (a ceiling for a loaded machine, not a figure)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def login_to(simulator: Simulator) -> Callable[[], VcenterConnection]:
    return lambda: connect_vcenter(simulator.server, simulator.user, simulator.password, insecure=True)


class Seen:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self.statuses: list[WatchStatus] = []

    def states(self) -> list[str]:
        return [s.state for s in self.statuses]

    def changed(self, kind: str) -> set[str]:
        return {c.key for b in self.batches for c in b.changes if c.kind == kind}


@pytest.fixture
def watched(vcsim: Simulator) -> Iterator[tuple[VcenterWatch, Seen]]:
    seen = Seen()
    login = login_to(vcsim)
    watch = VcenterWatch(login(), login, seen.batches.append, seen.statuses.append).start()
    try:
        yield watch, seen
    finally:
        watch.stop()


def test_the_first_update_brings_every_host_and_vm_then_only_what_changed(
        vcsim: Simulator, watched: tuple[VcenterWatch, Seen]) -> None:
    watch, seen = watched
    until(lambda: bool(seen.batches))
    assert seen.states() == ["live"]
    with session(vcsim) as service:
        vm = find(service, "VirtualMachine", "vdi-01")
        hosts = {find(service, "HostSystem", name)._moId for name in ("esx-vdi-01", "esx-hgx-01")}
        assert hosts <= seen.changed("host") and vm._moId in seen.changed("vm")
        assert watch.version != "" and watch.waits == 1  # the next wait asks from the version the first returned
        first = len(seen.batches)
        wait(vm.PowerOffVM_Task())
        until(lambda: len(seen.batches) > first)
    [change] = [c for b in seen.batches[first:] for c in b.changes]
    assert (change.kind, change.key, change.obj) == ("vm", vm._moId, {"runtime.powerState": "poweredOff"})
    assert watch.waits == 2


def test_stop_cancels_the_wait_in_progress(vcsim: Simulator) -> None:
    """The wait just begun would last `wait_s` (8 s) with nothing changing; stop() cancels it on vCenter
    (CancelWaitForUpdates), so the watch's threads have ended when stop() returns, within its 2 s."""
    seen = Seen()
    login = login_to(vcsim)
    watch = VcenterWatch(login(), login, seen.batches.append, seen.statuses.append, wait_s=8).start()
    until(lambda: bool(seen.batches))
    watch.stop(timeout_s=2.0)
    assert [t.name for t in watch._threads if t.is_alive()] == []


def test_the_watch_says_down_when_vcenter_goes_and_live_when_it_is_back() -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    seen = Seen()
    with running() as first:
        port = int(first.server.rsplit(":", 1)[1])
        login = login_to(first)
        watch = VcenterWatch(login(), login, seen.batches.append, seen.statuses.append, backoff=QUICK).start()
        until(lambda: bool(seen.batches))
    try:
        until(lambda: "down" in seen.states())
        assert seen.states()[:2] == ["live", "reconnecting"] and seen.states().count("down") == 1
        assert "vCenter" in seen.statuses[-1].detail and "retry in" in seen.statuses[-1].detail
        full = len(seen.batches)
        with running(port, first.password):
            until(lambda: seen.states()[-1] == "live" and len(seen.batches) > full)
            again = {c.key for b in seen.batches[full:] for c in b.changes}
            assert len(again) > 10, "a new login and filter: every host and VM again"
    finally:
        watch.stop()


def _end_session(vcsim: Simulator, connection: VcenterConnection) -> None:
    """The watch's session ended by an administrator (SessionManager.TerminateSession), as an expiry ends it."""
    key = connection.service.content.sessionManager.currentSession.key
    with session(vcsim) as admin:
        admin.content.sessionManager.TerminateSession(sessionId=[key])


def test_an_ended_session_is_logged_in_again_with_a_full_read(vcsim: Simulator) -> None:
    seen = Seen()
    login = login_to(vcsim)
    watch = VcenterWatch(login(), login, seen.batches.append, seen.statuses.append, backoff=QUICK, wait_s=1).start()
    try:
        until(lambda: bool(seen.batches))
        ended = watch.connection
        _end_session(vcsim, ended)
        until(lambda: watch.connection is not ended and len(seen.batches) > 1)
        assert len({c.key for c in seen.batches[-1].changes}) > 10, "a new filter: every host and VM again"
        assert seen.states() == ["live", "reconnecting", "live"]
    finally:
        watch.stop()


def test_a_reply_pyvmomi_cannot_read_is_a_failed_wait_not_a_dead_watch(vcsim: Simulator,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An error other than a socket's, HTTP's or vCenter's fault (here a TypeError reading an update) ended the
    watch's thread, and the badge stayed LIVE with nothing watched: it is a failed wait, retried with a new login."""
    import gpuadmin.cluster.vcenter_watch as module

    read = module._changes
    odd = [True]

    def unreadable(update: object) -> list[object]:
        if odd.pop() if odd else False:
            raise TypeError("an update pyVmomi could not read")
        return read(update)

    monkeypatch.setattr(module, "_changes", unreadable)
    seen = Seen()
    login = login_to(vcsim)
    watch = VcenterWatch(login(), login, seen.batches.append, seen.statuses.append, backoff=QUICK, wait_s=1).start()
    try:
        until(lambda: bool(seen.batches))
        assert seen.states() == ["live", "reconnecting", "live"]
        assert "TypeError: an update pyVmomi could not read" in seen.statuses[1].detail
    finally:
        watch.stop()


def test_a_refused_login_on_reconnect_is_down_at_once(vcsim: Simulator) -> None:
    """The password changed meanwhile: retrying cannot help by itself, so the watch says down at once."""
    seen = Seen()
    stale = Simulator(vcsim.url, vcsim.user, vcsim.password + "-changed")
    watch = VcenterWatch(login_to(vcsim)(), login_to(stale), seen.batches.append, seen.statuses.append,
                         wait_s=1).start()
    try:
        until(lambda: bool(seen.batches))
        _end_session(vcsim, watch.connection)
        until(lambda: len(seen.statuses) > 2)
        # the wait fails (the session is gone), then the login is refused: down at the second failure, not the fifth
        assert seen.states()[:3] == ["live", "reconnecting", "down"]
        assert "refused the login" in seen.statuses[2].detail
    finally:
        watch.stop()


def _bound(vcsim: Simulator, state: Path) -> None:
    done = gpuadmin("--state", state, "init", "--from-cluster", "vcenter", "--server", vcsim.server, "--user",
                    vcsim.user, "--insecure", env={**os.environ, "GPUADMIN_VCENTER_PASSWORD": vcsim.password})
    assert done.code == ExitCode.OK, done.err


def test_each_batch_is_synced_as_one_entry_through_the_watchs_session(vcsim: Simulator, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuadmin.service.cluster_live as cluster_live

    state = tmp_path / "state"
    _bound(vcsim, state)
    service = Service(state_dir=state)
    seen = Seen()
    feed = service.watch_cluster(seen.batches.append, seen.statuses.append,
                                 password=lambda _user, _server: vcsim.password)
    assert isinstance(feed, VcenterFeed)
    logins: list[str] = []
    monkeypatch.setattr(cluster_live, "connect_vcenter_bound", lambda *_args: logins.append("sync"))
    try:
        until(lambda: bool(seen.batches))
        before = service.revision()
        assert service.sync_watched(feed) is None, "the state already is the vCenter: no entry"
        with session(vcsim) as admin:
            wait(find(admin, "VirtualMachine", "vdi-01").PowerOffVM_Task())
        moved = service.sync_watched(feed)
        assert moved is not None and ("node", "esx-vdi-01") in moved.touched
        assert logins == [], "the watch's session, no login per batch"
    finally:
        feed.stop()
    entries = [e for e in Service(state_dir=state).journal() if e.revision > before]
    assert [e.origin for e in entries] == ["cluster"]
    [vm] = [vm for vm in service.state.nodes["esx-vdi-01"].vms if vm.name == "vdi-01"]
    assert vm.power_state == "poweredOff"


def test_without_a_password_the_watch_says_why(vcsim: Simulator, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    _bound(vcsim, state)
    monkeypatch.delenv("GPUADMIN_VCENTER_PASSWORD", raising=False)
    with pytest.raises(Unwatched, match="no vCenter password: set GPUADMIN_VCENTER_PASSWORD") as refused:
        Service(state_dir=state).watch_cluster(lambda _b: None, lambda _s: None, password=password_from(None, None))
    assert refused.value.exit_code == ExitCode.BAD_INPUT
