"""`schedule` and `explain`: one scheduling cycle as a plan, and why a job is pending."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from gpuadmin.errors import ExitCode

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.service import Service


def _schedule(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli.cmd_changes import ask_confirmation, configure_apply

    if not args.dry_run:
        ctx.caller().require("schedule")
    service = ctx.service()
    configure_apply(service, args)
    result = service.schedule(args.policy)
    revision = None
    if not args.dry_run and result.changes:
        ctx.caller().require("schedule", result.changes)
        asks = not args.yes and result.plan.allowed and not result.plan.empty
        if asks:  # the operator reads the plan, then is asked: shown first, as `apply` does
            _show_cycle(service, result, args.output, None)
        applied = service.submit(result.plan, confirmed=ask_confirmation(result.plan, args.yes))
        revision = applied.revision if applied is not None else None
        steps = applied.steps if applied is not None else ()
        if asks:
            return _applied(revision, steps)
        _show_cycle(service, result, args.output, revision)
        return _applied(revision, steps)
    _show_cycle(service, result, args.output, revision)
    return _applied(revision)


def _show_cycle(service: Service, result: Any, fmt: str, revision: int | None) -> None:
    """The cycle; on a bound state its plan says what apply executes on the cluster (the Bindings), as `plan`."""
    from gpuadmin.cli import output
    from gpuadmin.render.schedule import cycle_json, cycle_text

    data = cycle_json(result, applied_revision=revision)
    planned = service.cluster_steps(result.plan)
    on_cluster = [step.to_json() for step in planned] if planned is not None else None
    if fmt == "json":
        if on_cluster is not None:
            data["plan"]["cluster_steps"] = on_cluster
        output.as_json(data)
    else:
        sys.stdout.write(cycle_text(data, on_cluster))
    sys.stdout.flush()


def _applied(revision: int | None, steps: tuple[Any, ...] = ()) -> int:
    """`applied, revision N`; on a bound state each step as carried out on the cluster (the Bindings), then so."""
    if revision is not None and steps:
        from gpuadmin.render.plan import step_lines
        from gpuadmin.render.text import safe

        sys.stderr.write("".join(f"gpuadmin: {safe(line)}\n" for line in step_lines(steps)))
        sys.stderr.write(f"gpuadmin: executed on the cluster, revision {revision}\n")
    elif revision is not None:
        sys.stderr.write(f"gpuadmin: applied, revision {revision}\n")
    return ExitCode.OK


def _explain(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output
    from gpuadmin.render.schedule import explanation_text

    data = ctx.service().explain(args.job, args.policy).to_json()
    if args.output == "json":
        output.as_json(data)
    else:
        sys.stdout.write(explanation_text(data))
    return ExitCode.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gpuadmin.cli.cmd_changes import add_wait

    sched = sub.add_parser("schedule", help="run one scheduling cycle: bind and preempt jobs, as a plan")
    sched.add_argument("--dry-run", action="store_true", help="show the plan; apply nothing")
    sched.add_argument("--policy", choices=("binpack", "spread"), default="binpack")
    sched.add_argument("--yes", action="store_true")
    add_wait(sched)
    sched.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sched.set_defaults(func=_schedule)

    exp = sub.add_parser("explain", help="why a job is pending: the reason with its numbers, and a remedy")
    exp.add_argument("job")
    exp.add_argument("--policy", choices=("binpack", "spread"), default="binpack")
    exp.add_argument("-o", "--output", choices=("text", "json"), default="text")
    exp.set_defaults(func=_explain)
