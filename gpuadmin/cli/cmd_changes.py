"""`plan`, `apply` and `undo`: every change passes plan → check → apply.

The workflow (refuse and journal, skip an empty plan, what a confirmation needs, stale saved plans) is the
service's; this module shows plans and asks at the terminal.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuadmin.cli.args import revision, seconds
from gpuadmin.errors import ExitCode
from gpuadmin.render.text import safe

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.service import Change, Plan, Service

EXAMPLES = {
    "plan": "example:\n  gpuadmin plan -f docs/examples/repartition.yaml --save /tmp/plan.json",
    "apply": "examples:\n  gpuadmin apply -f docs/examples/repartition.yaml --yes\n"
             "  gpuadmin import kube-nodes nodes.json | gpuadmin apply -f - --yes\n"
             "  gpuadmin apply --plan /tmp/plan.json",
    "undo": "examples:\n  gpuadmin undo --yes          the latest change; again: the one before it\n"
            "  gpuadmin undo --to 3         every change after revision 3",
    "redo": "example:\n  gpuadmin redo --yes          what the latest undo reverted",
}
EXIT_CODES = ("exit codes: 0 applied (or nothing to apply); 1 refused by a rule; 2 bad input (a saved plan of "
              "another state, or malformed); 3 stale plan or lock held; 4 not permitted; 74 the state's disk failed "
              "(full, read-only); 130 not confirmed")


def show(service: Service, plan: Plan, fmt: str, steps: Sequence[Any] = ()) -> None:
    """The plan as `fmt`. On a bound state it says what apply will execute on the cluster (the executors' API
    calls: a document's `cluster_steps`), not commands for someone to run; with the `steps` the cluster carried
    out, a document gains `execution` (text shows them after the apply, on stderr)."""
    from gpuadmin.cli import output
    from gpuadmin.render.plan import plan_text

    planned = service.cluster_steps(plan)
    on_cluster = [step.to_json() for step in planned] if planned is not None else None
    data = plan.to_json() if fmt in ("json", "yaml") else {}
    if on_cluster is not None and fmt in ("json", "yaml"):
        data["cluster_steps"] = on_cluster
    if steps:
        data["execution"] = [step.as_journal() for step in steps]
    if fmt == "json":
        output.as_json(data)
    elif fmt == "yaml":
        output.as_yaml(data)
    else:
        from gpuadmin.cli import style

        sys.stdout.write(style.plan(plan_text(plan.to_json(), on_cluster)))


STDIN = Path("-")


def load(service: Service, file: Path) -> tuple[list[Change], Path | None]:
    """A change file's changes and the file to name in a later diagnostic: `-` is standard input, named
    `<stdin>` (its text is read once: a plan's later diagnostics name the change, not a line)."""
    if file == STDIN:
        return service.read_changes(sys.stdin.buffer.read(), "<stdin>"), None
    return service.load_changes(file), file


def _plan(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import style

    style.configure(ctx.color)
    service = ctx.service()
    changes, source = load(service, args.file)
    plan = service.plan(changes, source=source)
    show(service, plan, args.output)
    if args.save is not None:
        service.save_plan(plan, args.save, force=args.force)
        sys.stderr.write(f"gpuadmin: plan saved to {safe(args.save)}\n")
    return ExitCode.OK if plan.allowed else ExitCode.REFUSED


def ask_confirmation(plan: Plan, yes: bool) -> bool | str:
    """The confirmation the service asks for: True with --yes, else the operator's answer at the terminal."""
    from gpuadmin.errors import Diagnostic, InputError
    from gpuadmin.service import confirmation

    if yes or not plan.allowed or plan.empty:
        return True
    if not sys.stdin.isatty():
        raise InputError([Diagnostic("apply needs --yes when standard input is not a terminal")])
    sys.stderr.write(confirmation(plan).prompt)
    sys.stderr.flush()
    return input()


def submit(service: Service, plan: Plan, *, yes: bool, fmt: str, verb: str = "applied",
           expected_hash: str | None = None, intent: dict[str, Any] | None = None) -> int:
    """Show, confirm and submit a plan: what `apply`, `undo`, `redo` and `import --apply` share. With `-o json` or
    `-o yaml` and --yes (nobody reads the plan before the answer), the document is written once the plan is applied,
    so that it holds the steps executed on a bound cluster (`execution`)."""
    after = fmt in ("json", "yaml") and yes
    if not after:
        show(service, plan, fmt)
    try:
        result = service.submit(plan, confirmed=ask_confirmation(plan, yes), expected_hash=expected_hash,
                                intent=intent)
    except Exception:
        if after:  # refused, stale or failed on the cluster: the plan is still what the document says
            show(service, plan, fmt)
        raise
    if after:
        show(service, plan, fmt, result.steps if result is not None else ())
    if result is None:
        sys.stderr.write("gpuadmin: nothing to apply\n")
    elif result.steps:
        from gpuadmin.render.plan import step_lines

        sys.stderr.write("".join(f"gpuadmin: {safe(line)}\n" for line in step_lines(result.steps)))
        sys.stderr.write(f"gpuadmin: executed on the cluster, revision {result.revision}\n")
    else:
        sys.stderr.write(f"gpuadmin: {verb}, revision {result.revision}\n")
    return ExitCode.OK



def apply_changes(ctx: Context, service: Service, changes: list[Change], *, yes: bool, fmt: str,
                  source: Path | None = None) -> int:

    ctx.caller().require("apply", changes)  # before anything is planned, locked or journaled
    return submit(service, service.plan(changes, source=source), yes=yes, fmt=fmt)


def _apply(args: argparse.Namespace, ctx: Context) -> int:
    ctx.caller().require("apply")  # before the state is opened, locked or journaled
    from gpuadmin.cli import style

    style.configure(ctx.color)
    service = ctx.service()
    configure_apply(service, args)
    if args.plan is not None:
        ready = service.plan_saved(args.plan)
        if ready.foreign:  # said first, on stderr: then the plan and its diff, even with --yes
            sys.stderr.write(f"gpuadmin: this plan was saved by {safe(ready.author)} (uid {ready.author_uid}), not "
                             "by you: read what it does before it is applied\n")
        return submit(service, ready.plan, yes=args.yes, fmt=args.output, expected_hash=ready.hash)
    changes, source = load(service, args.file)
    return apply_changes(ctx, service, changes, yes=args.yes, fmt=args.output, source=source)


def _reverse(args: argparse.Namespace, ctx: Context) -> int:
    """`undo` and `redo`: each says which journal entry it reverts, then goes through the same review."""
    ctx.caller().require("undo")
    service = ctx.service()
    configure_apply(service, args)
    reversal = service.undo(args.to) if args.command == "undo" else service.redo()
    sys.stderr.write(f"gpuadmin: {safe(reversal.description)}\n")
    return submit(service, reversal.plan, yes=args.yes, fmt=args.output, intent=reversal.intent,
                  verb="undone" if args.command == "undo" else "redone")


def add_wait(parser: argparse.ArgumentParser) -> None:
    """The options of every command that applies a plan: the lock's wait, and on a state bound to a cluster how the
    plan is executed there."""
    parser.add_argument("--wait", type=seconds, default=5.0, metavar="SECONDS",
                        help="wait up to SECONDS (0 to 86400) for another writer's lock before giving up with exit 3 "
                             "(default 5)")
    cluster = parser.add_argument_group("on a state bound to a cluster (docs/kubernetes.md)")
    cluster.add_argument("--model-only", action="store_true",
                         help="change gpuadmin's state only, a what-if: nothing is executed on the cluster")
    cluster.add_argument("--timeout", type=seconds, default=300.0, metavar="SECONDS",
                         help="how long a step may wait on the cluster: a PodDisruptionBudget's refusals (drain), "
                              "the mig-manager (mig, time-slice) (default 300)")
    cluster.add_argument("--kubeconfig", type=Path, default=None, metavar="FILE",
                         help="the kubeconfig that reaches the bound cluster (default: $KUBECONFIG, else "
                              "~/.kube/config; the context is the state's)")
    cluster.add_argument("--password-file", type=Path, default=None, metavar="FILE",
                         help="a bound vCenter's password: the first line of FILE, which only you may read (mode "
                              "0600); else $GPUADMIN_VCENTER_PASSWORD, else a prompt (docs/vsphere.md)")


def configure_apply(service: Service, args: argparse.Namespace) -> None:
    """What `add_wait`'s options ask of the service."""
    from gpuadmin.cli.cmd_cluster import password_source
    from gpuadmin.service import ExecutionOptions

    service.lock_wait = args.wait
    service.execution = ExecutionOptions(kubeconfig=args.kubeconfig, timeout_s=args.timeout,
                                         model_only=args.model_only, password=password_source(args))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def parser(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, epilog=f"{EXAMPLES[name]}\n\n{EXIT_CODES}",
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    plan = parser("plan", "check a change file against the state; writes nothing")
    plan.add_argument("-f", "--file", type=Path, required=True, metavar="CHANGES.yaml",
                      help="the change file; - reads standard input")
    plan.add_argument("--save", type=Path, metavar="PLAN.json",
                      help="save the plan for `apply --plan`, as a new file (an existing path is refused)")
    plan.add_argument("--force", action="store_true", help="with --save: replace an existing file at the path")
    plan.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    plan.set_defaults(func=_plan)

    apply = parser("apply", "plan, check and apply changes (journaled, undoable)")
    source = apply.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--file", type=Path, metavar="CHANGES.yaml",
                        help="the change file; - reads standard input")
    source.add_argument("--plan", type=Path, metavar="PLAN.json", help="a plan saved by `plan --save`")
    apply.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_wait(apply)
    apply.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    apply.set_defaults(func=_apply)

    undo = parser("undo", "revert the latest change not yet undone (again: the one before), or back to --to")
    undo.add_argument("--to", type=revision, metavar="REVISION")
    redo = parser("redo", "apply again what the latest undo reverted")
    for reverse in (undo, redo):
        reverse.add_argument("--yes", action="store_true")
        add_wait(reverse)
        reverse.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
        reverse.set_defaults(func=_reverse)
