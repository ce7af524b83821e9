"""The console's vCenter login (gpuadmin/tui/screens/password.py), against the simulator: where
$GPUADMIN_VCENTER_PASSWORD is unset, a console on a vCenter-bound state asks once for the password, naming the user
and the vCenter; the right one makes the badge LIVE and a console apply runs its vCenter task with it; a wrong one
(vCenter's InvalidLogin) is said in the prompt and asked again, three at most; Esc goes on without (NOT WATCHED,
and why), and an apply on vCenter then asks again. The password is in no file of the state dir, nowhere on screen
and in no notification; the user and the vCenter are named as text, never markup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from gpuadmin.service import Service
from gpuadmin.store import Store
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.screens.password import PasswordScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from tests.tui.tuikit import header, make_app, notes, screen_text, settle, static_text, wait_for
from tests.vsphere.estate import bind, find, session
from tests.vsphere.vcsim import Simulator

SIZE = (160, 48)
# a vGPU of a VM powered off first (vSphere changes a powered-off VM's PCI devices only): one ReconfigVM_Task
REMOVE = {"op": "remove-vgpu", "node": "esx-vdi-02", "gpu": 1, "vm": "ds-vm-04", "profile": "L40S-12C"}


@pytest.fixture
def bound(vcsim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state made from the simulator by the real `init` (with the password in its environment), then ds-vm-04
    powered off and synced (its vGPU kept where the state had it: a powered-off VM is on no GPU's list); then the
    variable unset, for the console."""
    state = tmp_path / "state"
    bind(vcsim, state, "ds-vm-04")
    monkeypatch.delenv("GPUADMIN_VCENTER_PASSWORD", raising=False)
    return state


def on_view(app: GpuadminApp) -> bool:
    return isinstance(app.screen, ViewScreen)


async def asked(pilot: Pilot[Any]) -> PasswordScreen:
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, PasswordScreen))
    assert isinstance(app.screen, PasswordScreen)
    return app.screen


async def type_password(pilot: Pilot[Any], password: str) -> None:
    """Each character pressed into the password field, as typed (none is drawn), then Enter."""
    field = pilot.app.screen.query_one("#password-input", Input)
    assert field.has_focus and field.password
    await pilot.press(*password)
    assert field.value == password
    await pilot.press("enter")
    await settle(pilot)


def said(app: GpuadminApp) -> str:
    return static_text(app, "#password-said")


def _vgpus(vcsim: Simulator, vm: str) -> list[str]:
    from pyVmomi import vim

    with session(vcsim) as admin:
        return [str(d.backing.vgpu) for d in find(admin, "VirtualMachine", vm).config.hardware.device
                if isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)]


def files_holding(directory: Path, secret: str) -> list[Path]:
    return [path for path in directory.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()]


async def test_the_console_asks_and_the_right_password_watches_and_applies_on_vcenter(vcsim: Simulator,
                                                                                       bound: Path) -> None:
    app = make_app(Service(state_dir=bound), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await asked(pilot)
        assert f"Password for {vcsim.user} at {vcsim.server}" in static_text(app, "#password-who")
        await pilot.press(*vcsim.password)
        assert vcsim.password not in screen_text(app), "the field draws no character of it"
        await pilot.press("enter")
        await wait_for(pilot, lambda: on_view(app) and " LIVE " in header(app))
        assert f"ctx {vcsim.user}" in header(app)

        # the draft applied from the console: its vCenter task runs with the password the login kept
        app.review("remove a vGPU from ds-vm-04", [REMOVE])
        await settle(pilot)
        review = app.screen
        assert isinstance(review, PlanReviewScreen) and "ReconfigVM_Task" in static_text(app, "#review")
        token = review.query_one("#review-token", Input)
        token.value = review.asked.shown
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("executed on the cluster" in text for _, _, text in notes(app)))
        assert not any(severity == "error" for severity, _, _ in notes(app)), notes(app)
        assert vcsim.password not in screen_text(app)
        assert not any(vcsim.password in text for _, _, text in notes(app))
    assert _vgpus(vcsim, "ds-vm-04") == []
    with Store.open(bound) as store:  # (the watch's sync of what the task changed may follow it)
        [entry] = [e for e in store.journal() if e.origin != "cluster" and e.execution]
    assert entry.outcome == "executed" and entry.execution is not None
    assert entry.execution[0]["calls"][0].startswith("ReconfigVM_Task vm-")
    assert files_holding(bound, vcsim.password) == []


async def test_a_wrong_password_is_said_and_asked_again(vcsim: Simulator, bound: Path) -> None:
    app = make_app(Service(state_dir=bound), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        screen = await asked(pilot)
        await type_password(pilot, f"q:/{vcsim.password}")  # `q`, `:` and `/` are characters here, not keys
        await wait_for(pilot, lambda: "refused the login" in said(app))
        assert app.screen is screen, "still asking"
        assert "wrong user or password (try 1 of 3)" in said(app) and "Traceback" not in screen_text(app)
        field = screen.query_one("#password-input", Input)
        assert field.value == "" and not field.disabled and field.has_focus
        await type_password(pilot, vcsim.password)
        await wait_for(pilot, lambda: on_view(app) and " LIVE " in header(app))
        assert not any(severity == "error" for severity, _, _ in notes(app)) and app.unexpected is None
    assert files_holding(bound, vcsim.password) == []


async def test_three_wrong_passwords_go_on_without_saying_why(bound: Path) -> None:
    app = make_app(Service(state_dir=bound), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await asked(pilot)
        for attempt in (1, 2):
            await type_password(pilot, f"wrong-{attempt}")
            await wait_for(pilot, lambda attempt=attempt: f"(try {attempt} of 3)" in said(app))  # type: ignore[misc]
        await type_password(pilot, "wrong-3")
        await wait_for(pilot, lambda: on_view(app))
        assert " NOT WATCHED " in header(app)
        assert "(login refused 3 times; no vCenter password: set GPUADMIN_VCENTER_PASSWORD)" in header(app)
        assert app.cluster_link._feed is None and app.unexpected is None


async def confirm_removal(pilot: Pilot[Any], *, kept: bool = False) -> None:
    """The vGPU's removal reviewed from the console — made as an edit is, or `kept` in the draft and reviewed
    with `b` — and confirmed (destructive: its token typed)."""
    app = pilot.app
    assert isinstance(app, GpuadminApp)
    if kept:
        await pilot.press("b")
    else:
        app.review("remove a vGPU from ds-vm-04", [REMOVE])
    await settle(pilot)
    review = app.screen
    assert isinstance(review, PlanReviewScreen) and "ReconfigVM_Task" in static_text(app, "#review")
    review.query_one("#review-token", Input).value = review.asked.shown
    await pilot.press("enter")
    await settle(pilot)


async def test_esc_goes_on_without_and_an_apply_on_vcenter_asks_again(vcsim: Simulator, bound: Path) -> None:
    """Esc: NOT WATCHED, and why. An apply that runs vCenter tasks then needs the password: the login is asked
    again (nothing ran, nothing journaled); Esc there leaves the change in the draft, a password applies it."""
    app = make_app(Service(state_dir=bound), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await asked(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: on_view(app) and " NOT WATCHED " in header(app))
        assert "(no vCenter password: set GPUADMIN_VCENTER_PASSWORD)" in header(app)
        assert app.cluster_link._feed is None and app.unexpected is None

        await confirm_removal(pilot)
        await asked(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: on_view(app))
        assert any("not applied: kept in the draft" in text for _, _, text in notes(app))
        assert " NOT WATCHED " in header(app) and app.session.draft.size == 1
        with Store.open(bound) as store:
            assert [e.outcome for e in store.journal()] == ["applied", "applied"], \
                "init's and the power-off sync's entries only"
        assert _vgpus(vcsim, "ds-vm-04") == ["grid_l40s-12c"]

        await confirm_removal(pilot, kept=True)
        await asked(pilot)
        await type_password(pilot, vcsim.password)
        await wait_for(pilot, lambda: any("executed on the cluster" in text for _, _, text in notes(app)))
        await wait_for(pilot, lambda: on_view(app) and " LIVE " in header(app))
        assert not any(severity == "error" for severity, _, _ in notes(app)), notes(app)
        assert app.session.draft.size == 0
    assert _vgpus(vcsim, "ds-vm-04") == []
    assert files_holding(bound, vcsim.password) == []


async def test_the_login_names_a_hostile_user_and_vcenter_as_text() -> None:
    """The user and the server come from the state's binding, anyone's text: drawn as text, a control byte as
    its escape, never as markup (an in-memory console: no vCenter needed to draw the pop-up)."""
    app = make_app(view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(PasswordScreen("[bold red]root[/]\x1b[2J", "https://vc.example.com"))
        await settle(pilot)
        shown = screen_text(app)
        assert "Password for [bold red]root[/]\\x1b[2J at https://vc.example.com" in shown
        assert "\x1b[2J" not in shown


def test_the_kept_password_yields_to_the_variable_and_hides_from_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    """`SessionPasswords`: $GPUADMIN_VCENTER_PASSWORD first (as `sync`), else the one kept for that user and
    vCenter, else PasswordNeeded (the console asks); its repr counts, never shows."""
    from gpuadmin.service import PasswordNeeded, SessionPasswords

    monkeypatch.delenv("GPUADMIN_VCENTER_PASSWORD", raising=False)
    kept = SessionPasswords()
    source = kept.source()
    with pytest.raises(PasswordNeeded):
        source("u@vsphere.local", "https://vc:443")
    kept.keep("u@vsphere.local", "https://vc:443", "s3cret-typed")
    assert source("u@vsphere.local", "https://vc:443") == "s3cret-typed"
    with pytest.raises(PasswordNeeded):
        source("other@vsphere.local", "https://vc:443")
    monkeypatch.setenv("GPUADMIN_VCENTER_PASSWORD", "from-the-variable")
    assert source("u@vsphere.local", "https://vc:443") == "from-the-variable"
    assert "s3cret" not in repr(kept) and "s3cret" not in str(vars(kept).keys())
