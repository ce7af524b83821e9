"""The scheduling cycle's decisions on the benchmark's generated states, held byte for byte to bindings captured
from the code before the rules shared their lookups (commit 7ccae69, `View.reading`): a fast path exists only
beside a test holding it equal to the reference.

Rewrite the golden file (and review its diff) with GPUADMIN_UPDATE_GOLDEN=1; to capture it from another
revision's code, run this file as a script with that revision's tree first on PYTHONPATH:
    PYTHONPATH=/path/to/worktree .venv/bin/python tests/engine/scheduler/test_cycle_bindings.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from generated_states import generated

from gpuadmin.engine.scheduler import schedule

GOLDEN = Path(__file__).parent / "golden" / "cycle_bindings.txt"

# (nodes, jobs, seed, empty, sharing): bench_schedule's four speed cases, scaled down to keep the test quick
CASES: dict[str, tuple[int, int, int, bool, bool]] = {
    "96 nodes, empty": (96, 940, 0, True, False),
    "96 nodes, loaded": (96, 1_900, 1, False, False),
    "96 nodes, sharing, empty": (96, 940, 2, True, True),
    "96 nodes, sharing, loaded": (96, 1_900, 3, False, True),
}


def decisions() -> str:
    """Each case's bound jobs in the cycle's order with their slots, and its preemptions."""
    lines: list[str] = []
    for label, args in CASES.items():
        result = schedule(generated(*args))
        assert result.plan.allowed, result.plan.violations[:3]
        lines.append(f"# {label}: {len(result.bound)} bound, {len(result.preempted)} preempted")
        for name in result.bound:
            job = result.plan.view.job(name)
            assert job is not None
            lines.append(name + " " + " ".join(f"{s.node}/{s.gpu}" + (f"@{s.mig_start}" if s.mig_start is not None
                                                                          else "") for s in job.placement))
        lines += [f"preempted {name}" for name in result.preempted]
    return "\n".join(lines) + "\n"


def test_cycle_binds_as_the_reference_did() -> None:
    got = decisions()
    if os.environ.get("GPUADMIN_UPDATE_GOLDEN"):
        GOLDEN.write_text(got, encoding="utf-8")
    assert got == GOLDEN.read_text(encoding="utf-8")


if __name__ == "__main__":
    import gpuadmin

    print(f"capturing from {Path(gpuadmin.__file__).parent}", file=sys.stderr)
    GOLDEN.write_text(decisions(), encoding="utf-8")
