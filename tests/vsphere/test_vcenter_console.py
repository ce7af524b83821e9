"""The console on a vCenter-bound state (made from the simulator by the real `init`): its header names the user and
says, in words, that the vCenter's certificate is not verified (`--insecure`) and that the console does not follow
the vCenter between syncs (no watch tries to connect, nothing fails)."""

from __future__ import annotations

import os
from pathlib import Path

from gpuadmin.service import Service
from tests.cli.clikit import gpuadmin
from tests.tui.tuikit import errors, header, make_app, settle
from tests.vsphere.vcsim import Simulator

SIZE = (160, 48)


def _init(vcsim: Simulator, state: Path, *more: str) -> None:
    done = gpuadmin("--state", state, "init", "--from-cluster", "vcenter", "--server", vcsim.server, "--user",
                    vcsim.user, *more, env={**os.environ, "GPUADMIN_VCENTER_PASSWORD": vcsim.password})
    assert done.code == 0, done.err


async def test_the_header_says_not_watched_and_tls_not_verified(vcsim: Simulator, tmp_path: Path) -> None:
    _init(vcsim, tmp_path / "state", "--insecure")
    app = make_app(Service(state_dir=tmp_path / "state"), view="nodes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown = header(app)
        assert " NOT WATCHED " in shown and f"ctx {vcsim.user}" in shown and " TLS NOT VERIFIED " in shown
        assert errors(app) == []
