"""`gpuadmin`: argument parsing, the global options, and the mapping of failures to exit codes.

Each command lives in its own module with a `register(subparsers)` that adds its parser and sets
`func(args, ctx) -> int`. Everything a command does goes through `gpuadmin.service`. With no command,
`gpuadmin` opens the console (`gpuadmin tui`).

Start-up is kept light: this module and the command modules import only the standard library at the
top; the engine, pydantic and (for the console) Textual load when a command runs, so `--help` is quick.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpuadmin import __version__
from gpuadmin.cli.terminal import TerminalSafeStream
from gpuadmin.errors import ExitCode, GpuadminError

if TYPE_CHECKING:
    from gpuadmin.service import Caller, Role, Service

EPILOG = """\
exit codes: 0 done; 1 refused by a rule; 2 bad input or usage; 3 conflict (stale plan, lock held);
4 not permitted (role, file modes, a read-only file system); 70 internal error; 74 the state's disk failed
(full, a quota, an I/O error); 130 interrupted or not confirmed.

Your role comes from who you are (your login user and its groups, through /etc/gpuadmin/roles.yaml or the
state's roles.yaml); --as-role and tui --readonly can only lower it. `gpuadmin whoami` says what it is and why.

With no command, gpuadmin opens the console on the default state (created from the bundled OCI
sample on first run). `gpuadmin COMMAND --help` shows a command's options and an example."""


@dataclass
class Context:
    state_dir: Path | None
    inventory: Path | None
    requested_role: Role | None  # --as-role (or --readonly): only ever lowers the role
    color: bool
    argv: list[str]
    _caller: Caller | None = field(default=None, repr=False)
    opened: list[Service] = field(default_factory=list)  # the services (and their states) this command opened

    @property
    def command(self) -> str:
        return "gpuadmin " + " ".join(self.argv)

    @property
    def role(self) -> Role:
        """The role this command runs with: the login identity's on the state, lowered by what was asked."""
        return self.caller().role

    @role.setter
    def role(self, value: Role) -> None:
        """Ask for a lower role (`tui --readonly`); asking for a higher one changes nothing."""
        from gpuadmin.service import lower_role

        self.requested_role = value if self.requested_role is None else lower_role(self.requested_role, value)

    def caller(self) -> Caller:
        """Who runs this command and with what role: read from the system once per command (the service it
        makes reuses it), on the state as it is when first asked."""
        from gpuadmin.service import resolve_caller

        if self._caller is None:
            self._caller = resolve_caller(None if self.inventory is not None else self.resolved_state_dir())
        return self._caller.lowered(self.requested_role)

    def service(self) -> Service:
        from gpuadmin.service import Service

        if self.inventory is not None:
            return Service(inventory=self.inventory, command=self.command, caller=self.caller())
        service = Service(state_dir=self.resolved_state_dir(), command=self.command, caller=self.caller())
        self.opened.append(service)
        return service

    def close(self) -> None:
        """Close the states this command opened, when it ends (`Service.close`)."""
        for service in self.opened:
            service.close()
        self.opened.clear()

    def resolved_state_dir(self) -> Path:
        from gpuadmin.service import default_state_dir

        return self.state_dir if self.state_dir is not None else default_state_dir()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        from gpuadmin.render.text import safe

        self.print_usage(sys.stderr)
        sys.stderr.write(f"gpuadmin: error: {safe(message)}\n")  # it quotes the arguments as given
        raise SystemExit(ExitCode.BAD_INPUT)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the command line, only the verb it names gets its arguments (`cmd_verbs`)."""
    from gpuadmin.cli import (
        cmd_changes,
        cmd_cluster,
        cmd_io,
        cmd_read,
        cmd_schedule,
        cmd_telemetry,
        cmd_tui,
        cmd_validate,
        cmd_verbs,
        cmd_whoami,
        examples,
    )

    parser = _Parser(prog="gpuadmin", description="Terminal admin console for GPU clusters.", epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpuadmin {__version__}")
    parser.add_argument("--state", type=Path, default=None,
                        help="state directory (env GPUADMIN_STATE; default under the XDG state dir)")
    parser.add_argument("--inventory", type=Path, default=None,
                        help="work on this inventory in memory; nothing is persisted")
    parser.add_argument("--as-role", dest="role", choices=("viewer", "operator", "admin"), default=None,
                        help="act with at most this role (viewer: read-only); it never raises the role your "
                             "user has (see `gpuadmin whoami`)")
    parser.add_argument("--no-color", action="store_true", help="no colour (also honoured: NO_COLOR)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in (cmd_tui, cmd_validate, cmd_read, cmd_changes, cmd_schedule, cmd_io, cmd_whoami, cmd_cluster,
                   cmd_telemetry):
        module.register(sub)
    cmd_verbs.register(sub, used=None if argv is None else set(argv))
    examples.add_examples(sub)  # an example and the exit codes in every command's --help
    return parser


def report(error: GpuadminError) -> ExitCode:
    """The one place a failure becomes text on stderr and an exit code, every line escaped."""
    from gpuadmin.render.text import safe_lines

    sys.stderr.write("".join(f"{safe_lines(line)}\n" for line in error.lines()))
    return error.exit_code


def run(argv: Sequence[str], before_command: Callable[[str], None] | None = None) -> int:
    """Parse `argv` and run its command; `before_command(name)` is called once the command is known (`main` sets
    the process's GC policy there: a test that calls `run` keeps its own)."""
    argv = list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:  # bare `gpuadmin`: the console
        args = parser.parse_args([*argv, "tui"])
    if before_command is not None:
        before_command(args.command)
    if args.state is not None and args.inventory is not None:
        parser.error("--state and --inventory exclude each other")
    ctx = Context(args.state, args.inventory, args.role,
                  not args.no_color and not os.environ.get("NO_COLOR"), argv)
    try:
        code: int = args.func(args, ctx)
        return code
    except GpuadminError as failed:
        return report(failed)
    finally:
        ctx.close()


# The cyclic GC's policy for the whole process, set here once and nowhere else (issue 20 item 6). gpuadmin builds
# hundreds of thousands of objects that live as long as the command (a state's models, a cycle's tuples) and makes
# almost no reference cycles; with CPython's default thresholds (700, 10, 10) young collections run every 700
# allocations and the full ones rescan the growing heap again and again: about 3x the time of validating a
# 100,000-job state. A headless command loads, computes, prints and exits: the collector is off for it, as the
# load, the YAML reading and the scheduling cycle each switched it off before (a young generation of 100,000 still
# cost 7-10% of the CPU time of `get jobs` and `schedule`, bench/bench_entry.py). The console lives on, so it keeps
# the collector, with a young generation this large: collections are rare and each object is scanned a few times.
CONSOLE_GC_THRESHOLDS = (100_000, 50, 100)


def set_gc_policy(*, long_lived: bool) -> None:
    """What start-up imported lives as long as the process: frozen, never rescanned. Then the console
    (`long_lived`) collects rarely, and a headless command not at all (its memory goes back when it exits)."""
    gc.freeze()
    if long_lived:
        gc.set_threshold(*CONSOLE_GC_THRESHOLDS)
    else:
        gc.disable()


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a name in a non-UTF-8 terminal prints escaped, never crashes
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    sys.stderr = TerminalSafeStream(sys.stderr)
    try:
        code = run(sys.argv[1:], lambda command: set_gc_policy(long_lived=command == "tui"))
    except KeyboardInterrupt:
        sys.stderr.write("gpuadmin: interrupted\n")
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        code = ExitCode.OK
    except Exception as unexpected:  # the last resort: no traceback ever reaches an operator
        code = last_resort(unexpected)
    sys.exit(code)


def last_resort(unexpected: Exception) -> ExitCode:
    """An error no code path turned into a `GpuadminError`, as one line and an exit code that is never 1 (which
    says a rule refused the plan): the OS's errors by what they mean (a full disk 74, a read-only file system
    or a file mode 4, a missing or unreadable file 2), anything else an internal error (70). The traceback is
    for a bug report: only with GPUADMIN_DEBUG=1."""
    from gpuadmin.render.text import safe

    if os.environ.get("GPUADMIN_DEBUG") == "1":
        import traceback

        traceback.print_exception(unexpected)
    if isinstance(unexpected, OSError):
        code = _os_error_code(unexpected)
        where = f"{unexpected.filename}: " if unexpected.filename is not None else ""
        sys.stderr.write(safe(f"gpuadmin: {where}{unexpected.strerror or unexpected}") + "\n")
        return code
    what = safe(f"{type(unexpected).__name__}: {unexpected}")
    sys.stderr.write(f"gpuadmin: internal error: {what[:300]} (a bug: GPUADMIN_DEBUG=1 shows the traceback to "
                     "report)\n")
    return ExitCode.INTERNAL


def _os_error_code(error: OSError) -> ExitCode:
    import errno

    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
        return ExitCode.STORAGE
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return ExitCode.NOT_PERMITTED
    if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP, errno.ENAMETOOLONG):
        return ExitCode.BAD_INPUT
    return ExitCode.INTERNAL


if __name__ == "__main__":
    main()
