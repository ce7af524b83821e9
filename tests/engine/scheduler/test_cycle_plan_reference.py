"""What a whole scheduling cycle hands on — its plan's digest (over the changes and the diff), violations, effects
and node commands, and the cycle's outcome per pending job — held to a golden file captured from the code before
issue 20's speed-ups (commit 7ccae69), on the benchmark's generated states; and each fast path the cycle and the
rules take held equal to the slow way it skips, on the same states and on every rule case.

Rewrite the golden file (and review its diff) with GPUADMIN_UPDATE_GOLDEN=1; to capture it from another
revision's code, run this file as a script with that revision's tree first on PYTHONPATH:
    PYTHONPATH=/path/to/tree .venv/bin/python tests/engine/scheduler/test_cycle_plan_reference.py
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from generated_states import generated

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import Plan, plan
from gpuadmin.engine.scheduler import schedule

GOLDEN = Path(__file__).parent / "golden" / "cycle_plans.txt"

# (nodes, jobs, seed, empty, sharing): bench_schedule's four speed cases, scaled down to keep the test quick
CASES: dict[str, tuple[int, int, int, bool, bool]] = {
    "64 nodes, empty": (64, 620, 4, True, False),
    "64 nodes, loaded": (64, 1_250, 5, False, False),
    "64 nodes, sharing, empty": (64, 620, 6, True, True),
    "64 nodes, sharing, loaded": (64, 1_250, 7, False, True),
}


def _sha(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def fingerprints() -> str:
    """Per case: the plan's digest, and digests of its violations, effects, commands and the cycle's outcomes
    (only the API the reference revision shares, so that its tree can write this file)."""
    lines: list[str] = []
    for label, args in CASES.items():
        state = generated(*args)
        result = schedule(state)
        lines += [
            *_plan_lines(label, result.plan),
            f"outcomes {_sha(sorted(result.cycle.outcome.items()))}",
            f"pending {_sha(result.pending)}",
            *_plan_lines(f"{label}, rotated", plan(state, rotated(result.changes))),
        ]
    return "\n".join(lines) + "\n"


def rotated(changes: list[ch.Change]) -> list[ch.Change]:
    """The cycle's binds, each job on the next one's slots: a refused plan, with violations of most placement
    rules (slices held twice, the wrong kind or model, shared slices past their replicas)."""
    binds = [c for c in changes if isinstance(c, ch.BindJob)]
    return [ch.BindJob(op="bind-job", name=c.name, placement=binds[(i + 1) % len(binds)].placement)
            for i, c in enumerate(binds)]


def _plan_lines(label: str, planned: Plan) -> list[str]:
    violations = [(v.rule, v.target, v.message, v.hint) for v in planned.violations]
    return [
        f"# {label}: {len(planned.diff)} diffs, {len(planned.violations)} violations "
        f"({len({v.rule for v in planned.violations})} rules)",
        f"plan digest {planned.hash}",
        f"violations {_sha(violations)}",
        f"effects {_sha(planned.effects.to_json())}",
        f"commands {_sha(planned.commands)}",
    ]


def test_cycle_plans_as_the_reference_did() -> None:
    got = fingerprints()
    if os.environ.get("GPUADMIN_UPDATE_GOLDEN"):
        GOLDEN.write_text(got, encoding="utf-8")
    assert got == GOLDEN.read_text(encoding="utf-8")


def test_one_shape_per_request_is_each_jobs_own_shape() -> None:
    """The cycle computes one Shape per distinct request (`_memo_shape`): it equals `shape_of` of every job that
    shares it, on every generated state."""
    from gpuadmin.engine.scheduler.cycle import _memo_shape
    from gpuadmin.engine.scheduler.shape import shape_of

    for args in CASES.values():
        memo: dict[tuple[object, ...], object] = {}
        jobs = list(generated(*args).jobs.values())
        assert [_memo_shape(memo, job) for job in jobs] == [shape_of(job) for job in jobs]  # type: ignore[arg-type]
        assert len(memo) < len(jobs) / 2  # jobs ask alike: the memo is what saves the work


def test_no_oversubscription_skips_only_what_the_slow_way_clears_on_generated_plans() -> None:
    """The rule's early return on GPUs without a shareable slice, on every GPU of each generated state after its
    cycle's binds and after the rotated binds (shared slices held past their replicas)."""
    from gpuadmin.engine.rules.base import GpuSite
    from gpuadmin.engine.rules.placement import _oversubscription, no_oversubscription

    for args in CASES.values():
        state = generated(*args)
        result = schedule(state)
        for view in (result.plan.view, plan(state, rotated(result.changes)).view):
            with view.reading():
                for node in view.nodes():
                    for gpu in node.gpus:
                        site = GpuSite.resolve(view, (node.name, gpu.index))
                        assert list(no_oversubscription(view, site)) == list(
                            _oversubscription(view, site, node, gpu))


if __name__ == "__main__":
    GOLDEN.write_text(fingerprints(), encoding="utf-8")
    print(f"wrote {GOLDEN} with {sys.modules['gpuadmin'].__file__}")
