"""The benchmarks' harness (bench/ never runs as a test; its harness does): the speed cases of bench_schedule
run interleaved, a baseline revision is checked out into a temporary worktree and removed after, the worker
times cycles on the tree it is given, and bench_load's rule timing follows the chosen clock."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from bench import bench_schedule
from bench.common import baseline_checkout, median_seconds

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def git_checkout() -> Iterator[None]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    yield


@pytest.mark.usefixtures("git_checkout")
def test_baseline_checkout_is_a_temporary_worktree_of_the_revision() -> None:
    head = _git("rev-parse", "HEAD")
    with baseline_checkout("HEAD") as tree:
        assert (tree / "gpuadmin" / "__init__.py").is_file()
        assert _git("rev-parse", "HEAD", cwd=tree) == head
        assert str(tree) in _git("worktree", "list")
    assert not tree.exists()
    assert str(tree) not in _git("worktree", "list")


def test_the_speed_cases_run_interleaved(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Case A once, case B once, ..., then again: a load that changes falls on every case alike."""
    calls: list[int] = []

    class Recorder:
        def __init__(self, label: str, _root: Path, _cases: list[list[Any]]) -> None:
            self.label = label

        def ready(self) -> str:
            return "recorded"

        def cycle(self, case: int) -> dict[str, Any]:
            calls.append(case)
            return {"wall": 1.0, "cpu": 1.0, "plan": 0.5, "binds": 1, "pending": 2, "decisions": "x"}

        def close(self) -> None:
            pass

    monkeypatch.setattr(bench_schedule, "Worker", Recorder)
    bench_schedule.speed(3, growth=False, baseline_rev=None)
    assert calls == [0, 1, 2, 3] * 3
    assert "wall = time.perf_counter" in capsys.readouterr().out


def test_the_worker_times_cycles_on_the_tree_it_is_given() -> None:
    worker = bench_schedule.Worker("this tree", ROOT, [["tiny", 4, 30, 0, True, False]])
    try:
        assert worker.ready() == str(ROOT / "gpuadmin" / "__init__.py")
        answer = worker.cycle(0)
    finally:
        worker.close()
    assert answer["pending"] == 30 and 0 < answer["binds"] <= 30
    assert answer["wall"] > 0 and answer["cpu"] > 0 and len(answer["decisions"]) == 12


def test_median_seconds_uses_the_clock_it_is_given() -> None:
    """bench_load --cpu times the rules in CPU time like its other figures (they were in wall time)."""
    ticks = count(0, 5)
    assert median_seconds(lambda: None, 3, clock=lambda: float(next(ticks))) == 5.0
