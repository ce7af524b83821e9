"""`plan`, `apply` and `undo`: every change passes plan → check → apply."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuadmin.cli import exitcodes, output
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.render.plan import plan_text, violation_lines

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.engine.changes import Change
    from gpuadmin.engine.planner import Plan
    from gpuadmin.engine.rules import Violation
    from gpuadmin.service import Service


def print_violations(violations: list[Violation]) -> None:
    lines = violation_lines([{"rule": v.rule, "target": v.target, "message": v.message, "hint": v.hint}
                             for v in violations])
    sys.stderr.write("gpuadmin: refused by the rules:\n" + "\n".join(lines) + "\n")


def _show(plan: Plan, fmt: str) -> None:
    if fmt == "json":
        output.as_json(plan.to_json())
    elif fmt == "yaml":
        output.as_yaml(plan.to_json())
    else:
        sys.stdout.write(plan_text(plan.to_json()))


def _plan(args: argparse.Namespace, ctx: Context) -> int:
    service = ctx.service()
    plan = service.plan(service.load_changes(args.file))
    _show(plan, args.output)
    if args.save is not None:
        args.save.write_text(json.dumps(plan.to_json(), indent=2) + "\n", encoding="utf-8")
        sys.stderr.write(f"gpuadmin: plan saved to {args.save}\n")
    return exitcodes.OK if plan.allowed else exitcodes.REFUSED


def confirm(plan: Plan, yes: bool) -> bool:
    if yes:
        return True
    if not sys.stdin.isatty():
        raise InputError([Diagnostic("apply needs --yes when standard input is not a terminal")])
    destructive = plan.effects.evicted or any(d.action == "remove" for d in plan.diff)
    if destructive:
        nodes = sorted({d.name for d in plan.diff if d.kind == "node"} or {"yes"})
        sys.stderr.write(f"This plan evicts or removes. Type {nodes[0]!r} to apply: ")
        return input().strip() == nodes[0]
    sys.stderr.write("Apply this plan? [y/N] ")
    return input().strip().lower() in ("y", "yes")


def _apply(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.service import Conflict, check_action, plan_from_json

    check_action(ctx.role, "apply")  # before the state is opened, locked or journaled
    service = ctx.service()
    expected_hash = None
    if args.plan is not None:
        changes, expected_hash, base = plan_from_json(args.plan)
        if base != service.revision():
            raise Conflict(f"stale plan: it was made at revision {base}, the state is now at revision "
                           f"{service.revision()}; plan again")
    else:
        changes = service.load_changes(args.file)
    return apply_changes(ctx, service, changes, yes=args.yes, fmt=args.output, expected_hash=expected_hash)


def apply_changes(ctx: Context, service: Service, changes: list[Change], *, yes: bool, fmt: str,
                  expected_hash: str | None = None) -> int:
    """Plan, show, confirm and apply: what `apply`, `import --apply` and `schedule` share."""
    from gpuadmin.service import check_action

    check_action(ctx.role, "apply", changes)
    plan = service.plan(changes)
    _show(plan, fmt)
    if not plan.allowed:
        service.record_refusal(plan)
        print_violations(plan.violations)
        return exitcodes.REFUSED
    if plan.empty:
        sys.stderr.write("gpuadmin: nothing to apply\n")
        return exitcodes.OK
    if not confirm(plan, yes):
        sys.stderr.write("gpuadmin: not applied\n")
        return exitcodes.INTERRUPTED
    result = service.apply(plan, expected_hash=expected_hash)
    sys.stderr.write(f"gpuadmin: applied, revision {result.revision}\n")
    return exitcodes.OK


def _undo(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.service import check_action

    check_action(ctx.role, "undo")
    service = ctx.service()
    plan = service.undo_plan(args.to)
    _show(plan, args.output)
    if not plan.allowed:
        service.record_refusal(plan)
        print_violations(plan.violations)
        return exitcodes.REFUSED
    if not confirm(plan, args.yes):
        sys.stderr.write("gpuadmin: not undone\n")
        return exitcodes.INTERRUPTED
    result = service.apply(plan)
    sys.stderr.write(f"gpuadmin: undone, revision {result.revision}\n")
    return exitcodes.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = sub.add_parser("plan", help="check a change file against the state; writes nothing")
    plan.add_argument("-f", "--file", type=Path, required=True, metavar="CHANGES.yaml")
    plan.add_argument("--save", type=Path, metavar="PLAN.json", help="save the plan for `apply --plan`")
    plan.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    plan.set_defaults(func=_plan)

    apply = sub.add_parser("apply", help="plan, check and apply changes (journaled, undoable)")
    source = apply.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--file", type=Path, metavar="CHANGES.yaml")
    source.add_argument("--plan", type=Path, metavar="PLAN.json", help="a plan saved by `plan --save`")
    apply.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    apply.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    apply.set_defaults(func=_apply)

    undo = sub.add_parser("undo", help="plan and apply the inverse of the last change (or back to --to)")
    undo.add_argument("--to", type=int, metavar="REVISION")
    undo.add_argument("--yes", action="store_true")
    undo.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    undo.set_defaults(func=_undo)
