"""The console shows Prometheus's firing GPU alerts (issue 23), from a real Prometheus evaluating the GPU rules
(tests/telemetry/fixtures/gpu-alerts.rules.yml): the overview's count and worst (Enter on the worst opens its
node), and the GPUs view's marker, `!` on the XID 79 GPU, after one telemetry poll on the service worker."""

from __future__ import annotations

import time
from pathlib import Path

from gpuadmin.service import Service
from gpuadmin.tui.screens.overview import Drill
from tests.cli.clikit import gpuadmin, state_from
from tests.telemetry import promserver
from tests.telemetry.conftest import FAULTS, needs_prometheus
from tests.telemetry.scenario import devices
from tests.tui.test_overview_drill import select
from tests.tui.tuikit import command, grid, make_app, settle, static_text, wait_for

SIZE = (120, 40)


async def test_the_overview_and_the_gpus_view_show_the_firing_alerts(tmp_path: Path) -> None:
    needs_prometheus()
    state = state_from("oci-h100.yaml", tmp_path / "state")
    now = time.time()
    text = promserver.openmetrics(devices(Service(state_dir=state).state, FAULTS, end=now + 600), now - 600,
                                  now + 600, 30)
    with promserver.running(text, tmp_path / "prom", rules=promserver.GPU_RULES) as server:
        assert gpuadmin("--state", state, "config", "set", "metrics.prometheus", server.url).code == 0
        app = make_app(Service(state_dir=state), view="overview", metrics_seconds=1.0)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await wait_for(pilot, lambda: "2 firing" in static_text(app, "#overview"), 30)
            page = static_text(app, "#overview")
            assert "! worst: GpuDoubleBitEccErrors (critical) on gpu-h100-05/3" in page
            await select(pilot, lambda target: target == Drill("nodes", node="gpu-h100-05"))  # the worst's node
            await command(pilot, "gpus")
            await wait_for(pilot, lambda: any(r.get("!") for r in grid(app).rows), 20)
            marked = [(r["NODE"], r["GPU"], r["!"]) for r in grid(app).rows if r["!"]]
            assert marked == [("gpu-h100-05", 3, "!")]
