"""`whoami`: who gpuadmin takes you for, where from, and the role you have on the state — and why."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from gpuadmin.errors import ExitCode
from gpuadmin.render.text import safe

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context


def whoami(ctx: Context) -> dict[str, Any]:
    from gpuadmin.service import whoami as who

    return who(ctx.caller(), state_dir=None if ctx.inventory is not None else ctx.resolved_state_dir(),
               inventory=ctx.inventory)


def _whoami(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output

    data = whoami(ctx)
    if args.output == "json":
        output.as_json(data)
        return ExitCode.OK
    lowered = f" (lowered from {data['role_limit']})" if data["role"] != data["role_limit"] else ""
    lines = [
        f"user     {data['user']} (uid {data['uid']}, from {data['identity_source']})",
        f"groups   {', '.join(data['groups']) or '-'}",
        f"origin   {data['origin']}",
        f"role     {data['role']}{lowered}: {data['why']} ({data['roles_from']})",
    ]
    if "state" in data:
        lines.append(f"state    {data['state']} ({'shared' if data['shared'] else 'personal'}; "
                     f"your access: {data['access']})")
    else:
        lines.append(f"inventory {data['inventory']} (in memory)")
    sys.stdout.write("".join(f"{safe(line)}\n" for line in lines))  # user and group names are the system's
    return ExitCode.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    who = sub.add_parser("whoami", help="who gpuadmin takes you for, and your role on the state (and why)",
                         description="Your login identity (not $USER), your groups, where you connect from, and "
                                     "the role you have on the state, with the rule that gives it.")
    who.add_argument("-o", "--output", choices=("text", "json"), default="text")
    who.set_defaults(func=_whoami)
