"""The change ops as imperative commands: `gpuadmin cordon NODE...`, `mig NODE/GPU 3g.40gb...`, `quota QUEUE
--quota 16`, one per op of the registry (`gpuadmin.cli.verb_table`, generated from `engine/ops.py`).

A verb builds the change dicts a change file holds and goes the way `apply -f` goes: the role gate before the
state is opened, then plan -> check -> show -> confirm -> apply (journaled, undoable), with the same exit codes.
`--dry-run` plans and shows only, as `plan` does. Only the standard library is imported at the top: these parsers
are built on every start.
"""

from __future__ import annotations

import argparse
import copy
import math
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from gpuadmin.cli.args import integer
from gpuadmin.cli.verb_table import VERBS, Arg, Verb
from gpuadmin.errors import ExitCode

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.errors import InputError
    from gpuadmin.service import Service

EXIT_CODES = ("exit codes: 0 applied (or nothing to apply; with --dry-run: the plan is allowed); 1 refused by a "
              "rule; 2 bad input or usage (the argument is named); 3 stale plan or lock held; 4 not permitted; "
              "74 the state's disk failed; 130 not confirmed")
_WIDE = 2**63 - 1  # the parser reads any integer SQLite could hold; the change model holds each to its bound


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


_gpu_index = integer(0, _WIDE, "a GPU index")


def _gpu(text: str) -> tuple[str, int]:
    node, slash, index = text.rpartition("/")
    if not (slash and node):
        raise argparse.ArgumentTypeError(f"{text!r} is not NODE/GPU (gpu-h100-08/4)")
    return node, _gpu_index(index)


def _indexes(text: str) -> list[int]:
    return [_gpu_index(part) for part in text.split(",")] if text.strip() else []


def _mig(text: str) -> dict[str, Any]:
    profile, at, start = text.partition("@")
    if not profile:
        raise argparse.ArgumentTypeError(f"{text!r} is not PROFILE or PROFILE@START (3g.40gb@4)")
    return {"profile": profile, "start": integer(0, _WIDE, "a MIG start")(start)} if at else {"profile": profile}


def _group(text: str) -> dict[str, Any]:
    name, equals, gpus = text.partition("=")
    if not (name and equals):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=GPU,GPU (nvl-a=0,1)")
    return {"name": name, "gpus": _indexes(gpus)}


def _label(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not (key and equals):
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


_TYPES: dict[str, Callable[[str], Any]] = {
    "int": integer(-_WIDE, _WIDE, "an integer"), "float": _number, "gpu": _gpu, "indexes": _indexes, "mig": _mig,
    "group": _group, "label": _label,
}
for _name, _parse in _TYPES.items():
    _parse.__name__ = _name  # argparse names the type in "invalid ... value"


def _dest(arg: Arg) -> str:
    return "verb_" + arg.name.lstrip("-").lower().replace("/", "_").replace("-", "_")


def _add_argument(parser: argparse.ArgumentParser, arg: Arg, optional: bool) -> None:
    options: dict[str, Any] = {"help": arg.help}
    if arg.kind == "flag":
        options.update(action="store_true", default=None)
    else:
        options.update(metavar=arg.name.lstrip("-").upper() if arg.name.startswith("-") else arg.name,
                       type=_TYPES.get(arg.kind, str))
        if arg.choices:  # a positional keeps its name as argparse's, so that an error names it
            options.update(choices=arg.choices, help=f"{arg.help}: {' | '.join(arg.choices)}")
            if arg.name.startswith("-"):
                options["metavar"] = "{" + "|".join(arg.choices) + "}"
    if arg.name.startswith("-"):
        if arg.many:
            options["action"] = "append"
        parser.add_argument(arg.name, dest=_dest(arg), **options)
    else:
        nargs = ("*" if optional else "+") if arg.many else ("?" if optional else None)
        parser.add_argument(_dest(arg), nargs=nargs, **options)


def _add_verb(parser: argparse.ArgumentParser, verb: Verb) -> None:
    from gpuadmin.cli.cmd_changes import add_wait

    for arg in verb.args:
        _add_argument(parser, arg, optional=arg.name in verb.one_of)
    parser.add_argument("--dry-run", action="store_true", help="plan and show only; writes nothing (exit 1: refused)")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_wait(parser)
    parser.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    parser.set_defaults(func=_run, verb=verb, verb_parser=parser)


def register(sub: argparse._SubParsersAction[Any], used: Collection[str] | None = None) -> None:
    """Add a command per verb. Only the verbs named in `used` (the command line's words; None: all) get a parser
    of their own; the others are listed in `gpuadmin --help` only. The parser is built on every start, and a
    parser per verb (argparse looks up its translations for each) would cost `--help` a fifth of its time."""
    groups: dict[str, argparse._SubParsersAction[Any]] = {}
    unused = argparse.ArgumentParser(add_help=False)  # what an unnamed verb maps to: never parsed with
    for verb in VERBS:
        where, name = sub, verb.words[0]
        if used is not None and name not in used:
            if name not in sub.choices:
                _list_only(sub, name, _group_help(name) if len(verb.words) > 1 else verb.summary, unused)
            continue
        if len(verb.words) > 1:  # `vgpu assign`, `queue add`: one command with a subcommand per op
            if name not in groups:
                group = [v for v in VERBS if v.words[0] == name]
                examples = "\n  ".join(v.example.split("\n")[0] for v in group)
                parent = sub.add_parser(name, help=_group_help(name), epilog=f"examples:\n  {examples}\n\n"
                                        f"{EXIT_CODES}", formatter_class=argparse.RawDescriptionHelpFormatter)
                groups[name] = parent.add_subparsers(dest="verb_action", metavar="ACTION", required=True)
            where, name = groups[name], verb.words[1]
        epilog = f"example{'s' if chr(10) in verb.example else ''}:\n  {verb.example}\n\n{EXIT_CODES}"
        parser = where.add_parser(name, help=verb.summary, description=verb.summary, epilog=epilog,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        _add_verb(parser, verb)


def _group_help(name: str) -> str:
    return f"{name} {' | '.join(v.words[1] for v in VERBS if v.words[0] == name)}: see `gpuadmin {name} ACTION --help`"


def _list_only(sub: argparse._SubParsersAction[Any], name: str, help: str, unused: argparse.ArgumentParser) -> None:
    """A command in `--help`'s list and among the choices an error names, without a parser of its own: it is
    not on the command line, so nothing parses with it."""
    sub._choices_actions.append(sub._ChoicesPseudoAction(name, (), help))
    sub._name_parser_map[name] = unused


def _values(args: argparse.Namespace, verb: Verb) -> dict[str, Any]:
    """What was given, by argument name; an argument not given is left out (the change's default holds)."""
    out: dict[str, Any] = {}
    for arg in verb.args:
        value = getattr(args, _dest(arg))
        if value is not None and not (arg.many and not value):
            out[arg.name] = value
    return out


def _put(change: dict[str, Any], arg: Arg, value: Any) -> dict[str, Any]:
    """Set the change field `arg` fills (dotted into nested mappings) to `value`."""
    *parents, last = arg.field.split(".")
    target = change
    for key in parents:
        target = target.setdefault(key, {})
    if arg.kind == "gpu":  # NODE/GPU fills `node` and `gpu` beside its field
        target["node"], target["gpu"] = value
    else:
        target[last] = dict(value) if arg.kind == "label" else value
    return change


def change_items(verb: Verb, values: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes a verb's arguments make, as a change file holds them: one, or one per value of its `each`
    argument (`cordon a b` is two cordons in one plan)."""
    base: dict[str, Any] = {"op": verb.op}
    each = next((arg for arg in verb.args if arg.each and arg.name in values), None)
    for arg in verb.args:
        if arg.name in values and arg is not each:
            _put(base, arg, values[arg.name])
    if each is None:
        return [base]
    return [_put(copy.deepcopy(base), each, value) for value in values[each.name]]


def _one_of(verb: Verb, values: dict[str, Any]) -> str | None:
    """Why the arguments of which exactly one is needed are not so, or None."""
    given = [name for name in verb.one_of if name in values]
    if len(given) == 1 or not verb.one_of:
        return None
    return f"one of {', '.join(verb.one_of)} is needed" if not given else f"{' and '.join(given)} exclude each other"


def _layouts(parser: argparse.ArgumentParser, service: Service, verb: Verb, values: dict[str, Any]) -> dict[str, Any]:
    """A `layout` argument (a mig-parted config name) replaced by the instances it gives this GPU."""
    for arg in verb.args:
        if arg.kind == "layout" and arg.name in values:
            gpu = next(values[a.name] for a in verb.args if a.kind == "gpu")
            named = service.mig_form(*gpu)["named"]
            if values[arg.name] not in named:
                parser.error(f"argument {arg.name}: {values[arg.name]!r} is not a layout of this GPU's model; "
                             f"it has: {', '.join(named) or 'none'}")
            values = {**values, arg.name: [{"profile": p, "start": s} for p, s in named[values[arg.name]]]}
    return values


def _argument_of(verb: Verb, location: str) -> str | None:
    """The argument that fills the change field at a model error's location (`0.submit-job.job.queue`)."""
    parts = [p for p in location.split(".") if not p.isdigit() and p != verb.op]
    path = ".".join(parts)
    best: Arg | None = None
    for arg in verb.args:
        fields = [f"{arg.field}.node", f"{arg.field}.gpu"] if arg.kind == "gpu" and arg.field else \
            ["node", "gpu"] if arg.kind == "gpu" else [arg.field]
        if any(path == f or path.startswith(f + ".") for f in fields) and (best is None or len(arg.field) >= len(
                best.field)):
            best = arg
    return best.name if best is not None else None


def _named(verb: Verb, bad: InputError) -> str:
    """A model's errors, each said as the argument it concerns (`argument --replicas: ...`)."""
    lines = []
    for diagnostic in bad.diagnostics:
        location, _, message = diagnostic.message.partition(": ")
        name = _argument_of(verb, location)
        lines.append(f"argument {name}: {message}" if name else message or location)
    return "; ".join(lines)


def _run(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import style
    from gpuadmin.cli.cmd_changes import apply_changes, configure_apply, show
    from gpuadmin.errors import InputError

    verb: Verb = args.verb
    parser: argparse.ArgumentParser = args.verb_parser
    values = _values(args, verb)
    unsatisfied = _one_of(verb, values)
    if unsatisfied:
        parser.error(unsatisfied)
    if not args.dry_run:
        ctx.caller().require("apply")  # before the state is opened, locked or journaled (as `apply`)
    style.configure(ctx.color)
    service = ctx.service()
    configure_apply(service, args)
    values = _layouts(parser, service, verb, values)
    try:
        changes = service.build_changes(change_items(verb, values))
    except InputError as bad:
        parser.error(_named(verb, bad))
    if args.dry_run:
        plan = service.plan(changes)
        show(service, plan, args.output)
        return ExitCode.OK if plan.allowed else ExitCode.REFUSED
    return apply_changes(ctx, service, changes, yes=args.yes, fmt=args.output)

