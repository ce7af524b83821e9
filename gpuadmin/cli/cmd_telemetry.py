"""`config` (the state's settings: where telemetry comes from) and `top` (every GPU and MIG instance with its
live readings, the worst first)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from gpuadmin.errors import ExitCode
from gpuadmin.render.text import safe

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.service import SourceStatus

TOP_EXAMPLES = (
    "examples:\n  gpuadmin config set metrics.prometheus http://prometheus.monitoring:9090\n  gpuadmin top\n"
    "  gpuadmin top --sort temp -o json\n"
    "  gpuadmin config set metrics.source nvml && gpuadmin top -o wide   # on a GPU node: with its processes\n\n"
    "exit codes: 0 done (slow: a note on stderr); 2 no Prometheus is set (the message says how to set one), "
    "metrics.source nvml on a host without nvidia-ml-py or an NVIDIA driver, or bad usage; 3 the source did not "
    "answer (Prometheus down, a timeout, an error; an NVML error); 4 not permitted")
CONFIG_EXAMPLES = (
    "examples:\n  gpuadmin config set metrics.prometheus http://127.0.0.1:9090\n  gpuadmin config get\n"
    "  gpuadmin config unset metrics.prometheus\n"
    "  gpuadmin config set metrics.source nvml        # on a GPU node: this host's GPUs through NVML\n\n"
    "exit codes: 0 done; 2 bad input (an unknown setting, a URL that is not http(s)://HOST[:PORT][/PATH], a "
    "source other than prometheus or nvml, --inventory); 4 not permitted (setting needs an admin)")


def _config(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output

    service = ctx.service()
    if args.action == "set":
        stored = service.set_setting(args.key, args.value)
        sys.stderr.write(safe(f"gpuadmin: {args.key} = {stored}") + "\n")
        return ExitCode.OK
    if args.action == "unset":
        removed = service.unset_setting(args.key)
        sys.stderr.write(safe(f"gpuadmin: {args.key} {'unset' if removed else 'was not set'}") + "\n")
        return ExitCode.OK
    settings = service.settings(args.key)  # an unknown key: exit 2, naming the known ones
    if args.output == "json":
        output.as_json(settings)
        return ExitCode.OK
    for key, about in settings.items():
        value = about["value"]
        shown = value if value is not None else (f"{about['default']} (default)" if about["default"] else "-")
        sys.stdout.write(safe(f"{key}  {shown}") + "\n")
    return ExitCode.OK


def status_line(status: SourceStatus) -> str:
    """One line on how the source answered (stderr), e.g. `prometheus down since 12:01:02Z (3m): refused`."""
    since = time.strftime("%H:%M:%SZ", time.gmtime(status.since)) if status.since is not None else "?"
    if status.state == "down":
        return f"gpuadmin: {status.source} down since {since}: {status.message}"
    if status.state == "slow":
        return f"gpuadmin: {status.source} slow since {since}: {status.message}"
    return f"gpuadmin: {status.message}" if status.message else ""


def _source(status: SourceStatus) -> dict[str, Any]:
    return {"source": status.source, "state": status.state, "url": status.url, "since": status.since,
            "message": status.message,
            "seconds": round(status.seconds, 3) if status.seconds is not None else None, "queries": status.queries,
            "notes": list(status.notes)}


def _top(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output

    result = ctx.service().top(args.sort)  # no Prometheus set: exit 2 saying how; down, no readings: exit 3
    status = result.snapshot.status
    if status.state != "ok":
        sys.stderr.write(safe(status_line(status)) + "\n")
    if args.output == "json":
        from gpuadmin.render.output_models import FORMAT_VERSION

        head = {"format_version": FORMAT_VERSION, "kind": "top", "source": _source(status), "at": result.snapshot.at}
        output.json_list(head, "items", ({k.lower(): v for k, v in row.items()} for row in result.rows))
        return ExitCode.OK
    from gpuadmin.cli import style
    from gpuadmin.render.telemetry import TOP

    style.configure(ctx.color)
    columns = [TOP.column(name) for name in (TOP.columns + (TOP.wide if args.output == "wide" else ()))]
    output.table(result.rows[: args.limit] if args.limit else result.rows, columns, width=style.terminal_width())
    return ExitCode.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = sub.add_parser("config", help="the state's settings: where telemetry comes from",
                            description="Settings of the state (a file beside it, not journaled): "
                                        "metrics.source (prometheus, the default, or nvml: this host's GPUs), "
                                        "metrics.prometheus (the Prometheus holding the DCGM exporter's series), "
                                        "metrics.node-label (the label naming the node; Hostname by default), "
                                        "metrics.local-node (with nvml: the state's node this host is). "
                                        "Setting one needs an admin.",
                            epilog=CONFIG_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = config.add_subparsers(dest="action", metavar="ACTION", required=True)
    get = actions.add_parser("get", help="show the settings (or one)", epilog=CONFIG_EXAMPLES,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    get.add_argument("key", nargs="?")
    get.add_argument("-o", "--output", choices=("text", "json"), default="text")
    put = actions.add_parser("set", help="set one (checked)", epilog=CONFIG_EXAMPLES,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    put.add_argument("key")
    put.add_argument("value")
    unset = actions.add_parser("unset", help="remove one (its default applies)", epilog=CONFIG_EXAMPLES,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    unset.add_argument("key")
    config.set_defaults(func=_config)

    top = sub.add_parser("top", help="every GPU and MIG instance with live util, memory, temperature, power and "
                                     "errors, the worst first",
                         description="Live telemetry from the Prometheus set with `config set metrics.prometheus` "
                                     "(the DCGM exporter's series), or with `config set metrics.source nvml` from "
                                     "this host's NVML (with each GPU's processes: PROCS in -o wide), joined to the "
                                     "state: the most erroring GPUs "
                                     "first (XID, double-bit ECC, remapped rows), then the busiest, then the "
                                     "hottest (--sort changes it). A `-` is a reading not known; NOTE says why.",
                         epilog=TOP_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("-o", "--output", choices=("table", "wide", "json"), default="table")
    top.add_argument("--sort", choices=("errors", "util", "temp", "power", "mem"), default="errors")
    top.add_argument("-n", "--limit", type=int, default=None, metavar="N", help="the first N rows (table)")
    top.set_defaults(func=_top)
