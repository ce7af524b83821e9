"""The console on a vCenter-bound state (made from the simulator by the real `init`): it follows the vCenter (its
watch, `gpuadmin.cluster.vcenter_watch`) — the header says LIVE with the user, and in words that the vCenter's
certificate is not verified (`--insecure`); a VM powered off through the vSphere API comes in as one journal entry,
origin `cluster`, shown in the journal view's rows; a vCenter that goes away is CLUSTER DOWN, said once, and LIVE
again when it is back; a viewer's console does not watch. Without $GPUADMIN_VCENTER_PASSWORD the console asks for
the password: test_vcenter_console_login.py."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest

from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from tests.tui.tuikit import errors, grid, header, make_app, notes, settle, wait_for
from tests.vsphere.estate import bind, find, session, wait
from tests.vsphere.vcsim import Simulator, running, why_not

SIZE = (160, 48)


def journal_rows(app: GpuadminApp) -> list[dict[str, object]]:
    table = grid(app)
    return [table.rows[i] for i in table.shown]


async def test_the_console_follows_the_vcenter(vcsim: Simulator, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    bind(vcsim, state)
    monkeypatch.setenv("GPUADMIN_VCENTER_PASSWORD", vcsim.password)
    app = make_app(Service(state_dir=state), view="journal")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: " LIVE " in header(app))
        shown = header(app)
        assert f"ctx {vcsim.user}" in shown and " TLS NOT VERIFIED " in shown
        with session(vcsim) as admin:
            wait(find(admin, "VirtualMachine", "vdi-01").PowerOffVM_Task())
        await wait_for(pilot, lambda: any(row["ORIGIN"] == "cluster" for row in journal_rows(app)))
        [synced] = [row for row in journal_rows(app) if row["ORIGIN"] == "cluster"]
        assert synced["DIFF"] == "node/esx-vdi-01"
        assert errors(app) == []
    # init's entry, then the one sync of the power-off: the console's first sync (on its first batch, every host
    # and VM) found nothing to change
    assert [e.origin for e in Service(state_dir=state).journal()] == [None, "cluster"]
    [vm] = [vm for vm in Service(state_dir=state).state.nodes["esx-vdi-01"].vms if vm.name == "vdi-01"]
    assert vm.power_state == "poweredOff"


async def test_the_badge_says_cluster_down_once_and_live_when_vcenter_is_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"vCenter simulator: {reason}")
    state = tmp_path / "state"
    with ExitStack() as first_run:
        first = first_run.enter_context(running())
        bind(first, state)
        monkeypatch.setenv("GPUADMIN_VCENTER_PASSWORD", first.password)
        port = int(first.server.rsplit(":", 1)[1])
        app = make_app(Service(state_dir=state), view="nodes")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: " LIVE " in header(app))
            first_run.close()  # the simulator ends: vCenter is gone
            await wait_for(pilot, lambda: " CLUSTER DOWN " in header(app), timeout=40)
            with running(port, first.password):
                await wait_for(pilot, lambda: " LIVE " in header(app), timeout=60)  # the backoff may have grown
                said = [text for _, title, text in notes(app) if title == "cluster watch"]
                assert len(said) == 1 and "the cluster watch is down" in said[0], said
                # (a sync of the first batch still running when the simulator ended fails, and says so: "cluster
                # sync", not the watch's word)
                assert app.unexpected is None


async def test_a_viewers_console_does_not_watch(vcsim: Simulator, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    bind(vcsim, tmp_path / "state")
    monkeypatch.setenv("GPUADMIN_VCENTER_PASSWORD", vcsim.password)
    app = make_app(Service(state_dir=tmp_path / "state", role="viewer"), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = header(app)
        assert " NOT WATCHED " in shown and "password" not in shown and app.cluster_link._feed is None
