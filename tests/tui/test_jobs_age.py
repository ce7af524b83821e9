"""The console's jobs view shows each job's AGE (from its submit time, at the console's clock) and OWNER."""

from __future__ import annotations

from datetime import UTC, datetime

from gpuadmin.render.rows import age_text
from gpuadmin.service import Service
from tests.tui.tuikit import ROOT, make_app, screen_text, settle, shown

VSPHERE = ROOT / "sample-inventories" / "vsphere-hgx.yaml"


async def test_jobs_view_shows_age_and_owner() -> None:
    app = make_app(Service(inventory=VSPHERE), view="jobs")
    before = datetime.now(UTC)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        after = datetime.now(UTC)
        ages = dict(zip(shown(app), shown(app, "AGE"), strict=True))
        owners = dict(zip(shown(app), shown(app, "OWNER"), strict=True))
        text = screen_text(app)
    assert ages["bert-ft-vm02"] in {age_text("2026-11-28T09:12:00+00:00", t) for t in (before, after)}
    assert ages["sweep-vm04"] == "-"  # no submit time
    assert owners == {"bert-ft-vm02": "priya", "llm-eval-vm02": "priya", "sweep-vm04": "tomas"}
    header = next(line for line in text.splitlines() if "NAME" in line and "STATUS" in line)
    assert header.index("STATUS") < header.index("AGE") < header.index("REASON")
    assert ages["bert-ft-vm02"] in next(line for line in text.splitlines() if "bert-ft-vm02" in line)
