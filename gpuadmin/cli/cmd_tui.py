"""`gpuadmin tui` (and bare `gpuadmin`): the console.

On the default state, a first run creates that state from the bundled OCI sample and says so. Textual is
imported here, when the console starts, never by the headless commands.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from gpuadmin.cli.args import integer
from gpuadmin.errors import ExitCode
from gpuadmin.render.text import safe

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context

VIEWS = ("overview", "nodes", "gpus", "topology", "slices", "jobs", "queues", "journal", "top", "idle")
BUNDLED_SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "oci-h100.yaml"


def first_run_state(ctx: Context) -> str | None:
    """Create the default state from the bundled sample when none exists; the notice to show, if so."""
    from gpuadmin.service import DB_NAME, Service

    if ctx.inventory is not None or ctx.state_dir is not None:
        return None
    state_dir = ctx.resolved_state_dir()
    if (state_dir / DB_NAME).exists():
        return None
    revision = Service.init(state_dir, BUNDLED_SAMPLE, role="admin")
    return (f"First run: created the state {state_dir} from the bundled OCI sample "
            f"(revision {revision}). Start from your own inventory with `gpuadmin init --from FILE --force`.")


def locale_is_utf8(environ: Mapping[str, str]) -> bool:
    """Whether the locale the terminal was set up with (LC_ALL, else LC_CTYPE, else LANG: the first one set)
    names UTF-8. None set is the C locale, which is ASCII. Python's own C-locale coercion to UTF-8 is not asked:
    it says how Python encodes, not what the terminal draws."""
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = environ.get(name, "")
        if value:
            codeset = value.partition(".")[2].partition("@")[0]
            return codeset.lower().replace("-", "").replace("_", "") == "utf8"
    return False


def _tui(args: argparse.Namespace, ctx: Context) -> int:
    if getattr(args, "tui_state", None) is not None:
        ctx.state_dir = args.tui_state
    if getattr(args, "tui_inventory", None) is not None:
        ctx.inventory = args.tui_inventory
    if ctx.state_dir is not None and ctx.inventory is not None:
        from gpuadmin.errors import Diagnostic, InputError

        raise InputError([Diagnostic("--state and --inventory exclude each other")])
    if args.readonly:
        ctx.role = "viewer"
    notice = first_run_state(ctx)
    if notice is not None:
        sys.stderr.write(f"gpuadmin: {safe(notice)}\n")
    service = ctx.service()

    from gpuadmin.tui.app import GpuadminApp

    ascii_only = args.ascii if args.ascii is not None else not locale_is_utf8(os.environ)
    app = GpuadminApp(service, theme=args.theme, view=args.view, notice=notice, color=ctx.color,
                      ascii_only=ascii_only)
    if args.screenshot is not None:
        path = app.save_screenshot_headless(args.screenshot, size=(args.width, args.height))
        sys.stderr.write(f"gpuadmin: screenshot saved to {safe(path)}\n")
        return ExitCode.OK
    app.run()
    if app.unexpected is not None:  # the console ended on an error nothing handled: one line, exit 70
        from gpuadmin.cli.main import last_resort

        return last_resort(app.unexpected)
    return app.return_code or ExitCode.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tui = sub.add_parser(
        "tui", help="open the console (what bare `gpuadmin` does)",
        description="Open the console: nodes, GPUs and their slices, topology, jobs, queues and the journal.",
        epilog="examples:\n  gpuadmin                         the console on the default state\n"
               "  gpuadmin tui --readonly --view jobs\n"
               "  gpuadmin tui --inventory sample-inventories/k8s-mixed.yaml --theme gpuadmin-ansi\n"
               "  gpuadmin tui --screenshot console.svg\n"
               "  LANG=C gpuadmin tui                the console in ASCII (or: gpuadmin tui --ascii)\n\n"
               "exit codes: 0 quit; 2 bad input (a missing state, an unknown theme); 4 not permitted",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    # Also accepted after `tui`; SUPPRESS keeps a global --state from being reset by this parser's default.
    tui.add_argument("--state", dest="tui_state", type=Path, default=argparse.SUPPRESS, help="state directory")
    tui.add_argument("--inventory", dest="tui_inventory", type=Path, default=argparse.SUPPRESS,
                     help="an inventory in memory (changes are not persisted)")
    tui.add_argument("--readonly", action="store_true",
                     help="view only (role viewer): a change key says why; p plans a scheduling dry run")
    tui.add_argument("--theme", default=None, help="a theme name (see `:theme`); default: picked for the terminal")
    tui.add_argument("--view", choices=VIEWS, default="overview", help="the view to open on")
    tui.add_argument("--ascii", action=argparse.BooleanOptionalAction, default=None,
                     help="draw in ASCII only: borders, bars, the MIG drawing, cut text (default: when the locale "
                          "is not UTF-8, e.g. LANG=C); --no-ascii draws in UTF-8 whatever the locale")
    tui.add_argument("--screenshot", type=Path, default=None, metavar="FILE.svg",
                     help="render the first screen headless to an SVG file and exit")
    tui.add_argument("--width", type=integer(20, 1000, "a width"), default=120,
                     help="screenshot width in columns (20 to 1000)")
    tui.add_argument("--height", type=integer(5, 1000, "a height"), default=36,
                     help="screenshot height in rows (5 to 1000)")
    tui.set_defaults(func=_tui)
