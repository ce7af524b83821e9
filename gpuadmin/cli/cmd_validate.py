"""`validate FILE...`: inventories and change files, checked without changing anything.

Exit 2 when a file cannot be read as what it claims to be (every error with file:line:column and
the field); exit 1 when an inventory reads fine but breaks an isolation rule; 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuadmin.errors import ExitCode

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context


def _validate(args: argparse.Namespace, _ctx: Context) -> int:  # validate reads files, never the state
    from gpuadmin.errors import InputError
    from gpuadmin.render.plan import violation_lines
    from gpuadmin.render.text import safe
    from gpuadmin.service import validate_document

    worst = ExitCode.OK
    for path in args.files:
        try:
            kind, violations = validate_document(path)
        except InputError as bad:
            for diagnostic in bad.diagnostics:
                sys.stderr.write(f"{safe(diagnostic)}\n")
            worst = max(worst, ExitCode.BAD_INPUT)
            continue
        if violations:
            sys.stderr.write(f"{safe(path)}: {len(violations)} rule violation(s):\n")
            sys.stderr.write("\n".join(violation_lines([
                {"rule": v.rule, "target": v.target, "message": v.message, "hint": v.hint}
                for v in violations])) + "\n")
            worst = max(worst, ExitCode.REFUSED)
            continue
        sys.stdout.write(f"{safe(path)}: ok ({kind})\n")
    return worst


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = sub.add_parser("validate", help="check inventories and change files; changes nothing")
    validate.add_argument("files", nargs="+", type=Path, metavar="FILE")
    validate.set_defaults(func=_validate)
