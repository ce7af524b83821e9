"""The console sorts and aligns each column by its declared kind (`gpuadmin.render.columns`): AGE by the time it
spells, not as text (`10m, 1d, 2h, 3d, 45s` before), and numbers to the right."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from gpuadmin.service import Service
from tests.tui.tuikit import CLUSTER, command, grid, make_app, screen_text, settle, shown

AGO = {"sweep-45s": timedelta(seconds=45), "sweep-10m": timedelta(minutes=10), "sweep-2h": timedelta(hours=2),
       "sweep-1d": timedelta(days=1), "sweep-3d": timedelta(days=3)}


def _cluster_with_ages(tmp_path: Path) -> Path:
    inventory = yaml.safe_load(CLUSTER.read_text(encoding="utf-8"))
    now = datetime.now(UTC)
    # listed in an order that is neither the text order nor the age order
    for name in ("sweep-10m", "sweep-1d", "sweep-45s", "sweep-3d", "sweep-2h"):
        inventory["jobs"].append({"name": name, "queue": "research", "request": {"gpus": 1}, "status": "pending",
                                  "submitted": (now - AGO[name]).isoformat()})
    path = tmp_path / "ages.yaml"
    path.write_text(yaml.safe_dump(inventory), encoding="utf-8")
    return path


async def test_age_sorts_by_the_time_it_spells(tmp_path: Path) -> None:
    app = make_app(Service(inventory=_cluster_with_ages(tmp_path)), view="jobs")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await command(pilot, "sort age")
        await settle(pilot)
        ages = [age for name, age in zip(shown(app), shown(app, "AGE"), strict=True) if name in AGO]
        assert ages == ["45s", "10m", "2h", "1d", "3d"]
        await command(pilot, "sort age")  # again: reversed
        await settle(pilot)
        ages = [age for name, age in zip(shown(app), shown(app, "AGE"), strict=True) if name in AGO]
        assert ages == ["3d", "1d", "2h", "10m", "45s"]


async def test_numbers_are_drawn_to_the_right() -> None:
    app = make_app(view="queues")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert grid(app).columns[:3] == ("NAME", "USE", "QUOTA_GPUS")  # the bar, then the listing's own order
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "USED_GPUS" in line)
        end = header.index("USED_GPUS") + len("USED_GPUS")
        values = [line for line in lines if any(f" {q} " in line for q in ("research", "interns"))]
        assert values and all(line[end - 1] != " " and line[end] == " " for line in values), "\n".join(lines)
