"""`gpuadmin`: argument parsing, the global options, and the mapping of failures to exit codes.

Each command lives in its own module with a `register(subparsers)` that adds its parser and sets
`func(args, ctx) -> int`. Everything a command does goes through `gpuadmin.service`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuadmin.cli import exitcodes
from gpuadmin.model.diagnostics import InputError

if TYPE_CHECKING:
    from gpuadmin.service import Role, Service


@dataclass
class Context:
    state_dir: Path | None
    inventory: Path | None
    role: Role
    color: bool
    argv: list[str]

    @property
    def command(self) -> str:
        return "gpuadmin " + " ".join(self.argv)

    def service(self) -> Service:
        from gpuadmin.service import Service

        if self.inventory is not None:
            return Service(inventory=self.inventory, role=self.role, command=self.command)
        return Service(state_dir=self.resolved_state_dir(), role=self.role, command=self.command)

    def resolved_state_dir(self) -> Path:
        from gpuadmin.store import default_state_dir

        return self.state_dir if self.state_dir is not None else default_state_dir()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"gpuadmin: error: {message}\n")
        raise SystemExit(exitcodes.BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    from gpuadmin.cli import cmd_changes, cmd_io, cmd_read, cmd_schedule, cmd_validate

    parser = _Parser(prog="gpuadmin", description="Terminal admin console for GPU clusters.")
    parser.add_argument("--state", type=Path, default=None,
                        help="state directory (env GPUADMIN_STATE; default under the XDG state dir)")
    parser.add_argument("--inventory", type=Path, default=None,
                        help="work on this inventory in memory; nothing is persisted")
    parser.add_argument("--as-role", dest="role", choices=("viewer", "operator", "admin"), default="admin",
                        help="act with this role's permissions (viewer: read-only)")
    parser.add_argument("--no-color", action="store_true", help="no colour (also honoured: NO_COLOR)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in (cmd_validate, cmd_read, cmd_changes, cmd_schedule, cmd_io):
        module.register(sub)
    return parser


def run(argv: Sequence[str]) -> int:
    from gpuadmin.service import Conflict, NotPermitted, Refused
    from gpuadmin.store.errors import StateBusy, StoreError

    parser = build_parser()
    args = parser.parse_args(list(argv))
    if args.command is None:
        parser.print_help(sys.stderr)
        return exitcodes.BAD_INPUT
    if args.state is not None and args.inventory is not None:
        parser.error("--state and --inventory exclude each other")
    ctx = Context(args.state, args.inventory, args.role,
                  not args.no_color and "NO_COLOR" not in os.environ, list(argv))
    try:
        code: int = args.func(args, ctx)
        return code
    except InputError as bad:
        for diagnostic in bad.diagnostics:
            sys.stderr.write(f"{diagnostic}\n")
        return exitcodes.BAD_INPUT
    except NotPermitted as denied:
        sys.stderr.write(f"gpuadmin: not permitted: {denied}\n")
        return exitcodes.NOT_PERMITTED
    except Conflict as conflict:
        sys.stderr.write(f"gpuadmin: conflict: {conflict}\n")
        return exitcodes.CONFLICT
    except Refused as refused:
        from gpuadmin.cli.cmd_changes import print_violations

        print_violations(refused.plan.violations)
        return exitcodes.REFUSED
    except StateBusy as busy:
        sys.stderr.write(f"gpuadmin: conflict: {busy}\n")
        return exitcodes.CONFLICT
    except StoreError as failed:
        sys.stderr.write(f"gpuadmin: {failed}\n")
        return exitcodes.BAD_INPUT


def main() -> None:
    try:
        code = run(sys.argv[1:])
    except KeyboardInterrupt:
        sys.stderr.write("gpuadmin: interrupted\n")
        code = exitcodes.INTERRUPTED
    except BrokenPipeError:
        code = exitcodes.OK
    sys.exit(code)


if __name__ == "__main__":
    main()
