"""The scheduling review at scale (issue 21 item 4): what the console's `p` and `gpuadmin schedule` show first.

One cycle on the generated state (default 1,024 nodes / 100,000 jobs, where it binds thousands of jobs), then,
in the same process and interleaved, the two texts a review can open on: the cycle's summary
(`render.cycle_summary`: binds and preemptions per queue and per node pool, the jobs left pending by reason) and the
full plan (`render.plan.plan_text`, the diff the review showed alone before). Prints the medians of each, their
ratio, and the lines each puts in front of the operator.

    .venv/bin/python -m bench.bench_review [--nodes 1024] [--jobs 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import time

from bench.common import generated_file, interleaved_medians
from gpuadmin.render.cycle_summary import cycle_summary, summary_text
from gpuadmin.render.plan import plan_text
from gpuadmin.service import Service


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    service = Service(inventory=generated_file(args.nodes, args.jobs))
    started = time.perf_counter()
    result = service.schedule()
    cycle = time.perf_counter() - started
    summary = summary_text(cycle_summary(result))
    full = plan_text(result.plan.to_json())
    summarised, planned = interleaved_medians(
        [lambda: summary_text(cycle_summary(result)), lambda: plan_text(result.plan.to_json())], args.repeat)
    print(f"{args.nodes} nodes / {args.jobs} jobs: {len(result.bound)} binds, {len(result.preempted)} preemptions, "
          f"{len(result.pending)} left pending; the cycle took {cycle:.2f} s")
    print(f"summary: {summarised * 1000:.0f} ms, {len(summary.splitlines())} lines")
    print(f"full plan text (the baseline, the review before): {planned * 1000:.0f} ms, {len(full.splitlines())} lines")
    print(f"summary / full plan: {summarised / planned:.2f}x the time, "
          f"{len(summary.splitlines()) / len(full.splitlines()):.3f}x the lines")


if __name__ == "__main__":
    main()
