"""Which state a console shows, and moving it to another: the header names the state (its directory, shortened
to fit, or the inventory held in memory), `:state DIR` switches without a restart (on the service worker, the
caller's role read again for that state), and a bad DIR leaves the console where it was, saying why. The queue
bar draws borrowing, however small, in a glyph of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuadmin.service import Service
from gpuadmin.tui.draw import quota_bar
from gpuadmin.tui.screens.listing import BAR
from tests.tui.tuikit import CLUSTER, ROOT, command, errors, header, make_app, notes, settle, shown, wait_for

OCI = ROOT / "sample-inventories" / "oci-h100.yaml"


@pytest.mark.parametrize(("used", "quota", "limit", "bar"), [
    (32.88, 32, 48, "##########|+...."),  # research in the OCI sample: 0.88 borrowed of a 48-GPU scale
    (12.18, 8, 16, "########|++++..."),
    (16.71, 24, 40, "######...|......"),
    (16, 8, None, "########|+++++++"),  # no limit: everything past the quota is borrowed
    (5, None, None, "################"),
    (0, 8, 16, "........|......."),
])
def test_the_quota_bar_draws_borrowing(used: float, quota: float | None, limit: float | None, bar: str) -> None:
    assert quota_bar(used, quota, limit, BAR) == bar


async def test_the_queues_view_shows_a_small_borrowing() -> None:
    app = make_app(Service(inventory=OCI), view="queues")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        use = dict(zip(shown(app), shown(app, "USE"), strict=True))
        quota, borrowed = use["research"].split("|")
        assert borrowed.startswith("+") and "+" not in quota  # 0.88 GPUs over its quota of 32
        assert "+" not in use["inference"]  # within its quota: nothing borrowed


async def test_the_header_names_an_inventory_in_memory() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert f"tui-lab  {CLUSTER.name}  rev 0" in header(app) and "(in memory)" in header(app)


def _state(path: Path, inventory: Path) -> Path:
    Service.init(path, inventory)
    return path


async def test_the_header_names_the_state_shortened_to_fit(tmp_path: Path) -> None:
    deep = _state(tmp_path / ("a-rather-long-directory-name-" * 3) / "prod-gpu-state", CLUSTER)
    app = make_app(Service(state_dir=deep), view="nodes")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = header(app)
        assert "  …" in line and "/prod-gpu-state  rev 0" in line  # the end of the path tells states apart
        assert line.index("prod-gpu-state") < 80


async def test_state_switches_to_another_state(tmp_path: Path) -> None:
    first = _state(tmp_path / "one", CLUSTER)
    second = _state(tmp_path / "two", OCI)
    app = make_app(Service(state_dir=first), view="queues")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "/one  rev 0" in header(app)
        before = shown(app, "USED_GPUS")
        await command(pilot, f"state {second}")
        await settle(pilot)
        await wait_for(pilot, lambda: "/two" in header(app))
        assert app.session.service.store is not None and app.session.service.store.state_dir == second
        assert app.service_worker.service is app.session.service  # the worker runs on the new state
        assert shown(app, "USED_GPUS") != before  # the queues view read the new state again
        assert any("now on state" in message for _, _, message in notes(app))
        await command(pilot, "nodes")  # another view, stale since the switch, reads the new state too
        await settle(pilot)
        assert "gpu-h100-07" in shown(app) and "a30-01" not in shown(app)


@pytest.mark.parametrize(("make", "reason"), [
    (lambda tmp: tmp / "missing", "no gpuadmin state"),
    (lambda tmp: (tmp / "empty").mkdir() or tmp / "empty", "no gpuadmin state"),
])
async def test_a_bad_state_dir_is_refused_and_the_console_stays(tmp_path: Path, make, reason: str) -> None:
    first = _state(tmp_path / "one", CLUSTER)
    app = make_app(Service(state_dir=first), view="nodes")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        service, rows = app.session.service, shown(app)
        await command(pilot, f"state {make(tmp_path)}")
        await settle(pilot)
        assert any(reason in message for message in errors(app)), errors(app)
        assert app.session.service is service and app.service_worker.service is service
        assert "/one" in header(app) and shown(app) == rows
        assert service.revision() == 0  # the old state still reads: it was not closed


async def test_state_reads_the_role_again_lowered_as_before(tmp_path: Path) -> None:
    """The caller is resolved for the new state (its roles file is its own); a console opened with a lowered
    role (`--readonly`, `--as-role viewer`) stays lowered there."""
    first = _state(tmp_path / "one", CLUSTER)
    second = _state(tmp_path / "two", OCI)
    app = make_app(Service(state_dir=first, role="viewer"), view="nodes")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await command(pilot, f"state {second}")
        await settle(pilot)
        await wait_for(pilot, lambda: "/two" in header(app))
        caller = app.session.service.caller
        assert caller.role == "viewer" and caller.decision.role == "admin"  # root: admin on it, lowered
        assert "READ-ONLY" in header(app)


async def test_state_without_a_dir_says_where_the_console_is(tmp_path: Path) -> None:
    first = _state(tmp_path / "one", CLUSTER)
    app = make_app(Service(state_dir=first), view="nodes")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "state")
        assert any("/one (cluster tui-lab)" in message for _, _, message in notes(app))
