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
    from gpuadmin.service import HealthFinding, SourceStatus
    from gpuadmin.service.telemetry import IdleResult

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

        head = {"format_version": FORMAT_VERSION, "kind": "top", "source": _source(status), "at": result.snapshot.at,
                "alerts": [a.to_json() for a in result.snapshot.alerts],
                "health": [f.to_json() for f in result.health]}
        output.json_list(head, "items", ({k.lower(): v for k, v in row.items()} for row in result.rows))
        return ExitCode.OK
    from gpuadmin.cli import style
    from gpuadmin.render.telemetry import TOP

    style.configure(ctx.color)
    columns = [TOP.column(name) for name in (TOP.columns + (TOP.wide if args.output == "wide" else ()))]
    output.table(result.rows[: args.limit] if args.limit else result.rows, columns, width=style.terminal_width())
    write_health_hints(result.health, ctx)
    write_source_notes(status)
    unplaced = [a for a in result.snapshot.alerts if a.placed is None]
    if unplaced:
        sys.stderr.write(safe(f"gpuadmin: {len(unplaced)} firing alert(s) about a GPU the state does not have: "
                              + ", ".join(f"{a.short} on {a.node or '?'}/{a.gpu_label or a.uuid or '?'}"
                                          for a in unplaced[:5])) + "\n")
    return ExitCode.OK


SHOWN_NOTES = 5


def write_source_notes(status: SourceStatus) -> None:
    """The source's notes on stderr (what it could not place, e.g. NVML's host not being a node of the state): on
    a real H200 an empty `top` said nothing while `-o json` held the reason. The first few; JSON lists them all."""
    for note in status.notes[:SHOWN_NOTES]:
        sys.stderr.write(safe(f"gpuadmin: note: {note}") + "\n")
    if len(status.notes) > SHOWN_NOTES:
        sys.stderr.write(f"gpuadmin: note: {len(status.notes) - SHOWN_NOTES} more (-o json lists them all)\n")


def write_health_hints(flagged: list[HealthFinding], ctx: Context) -> None:
    """One line on stderr per flagged GPU: why (the XID's meaning, NVIDIA's action) and the command that
    fences it, to review and run as printed (with this command's `--state`, where one was given)."""
    options = ("--state", str(ctx.state_dir)) if ctx.state_dir is not None else ()
    for finding in flagged:
        sys.stderr.write(safe(f"gpuadmin: {finding.node}/{finding.gpu} flagged: {finding.reason} (NVIDIA's action: "
                              f"{finding.action}); to keep new work off it: {finding.fence_command(options)}")
                         + "\n")


IDLE_EXAMPLES = (
    "examples:\n  gpuadmin idle\n  gpuadmin idle --for 2h --below 10\n  gpuadmin idle -o json\n"
    "  gpuadmin config set idle.for 1h    # the default for --for (idle.below for --below)\n\n"
    "exit codes: 0 done (none idle included); 2 no Prometheus is set (the message says how to set one), or bad "
    "usage (a duration, a percentage); 3 Prometheus did not answer (down, a timeout, an error); 4 not permitted")


def _duration(text: str) -> float:
    from gpuadmin.service.telemetry import parse_minutes

    try:
        return parse_minutes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _percent(text: str) -> float:
    from gpuadmin.service.telemetry import parse_percent

    try:
        return parse_percent(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _idle(args: argparse.Namespace, ctx: Context) -> int:
    result = ctx.service().idle(for_minutes=args.for_minutes, below=args.below)
    write_idle(result, args.output)
    return ExitCode.OK


def write_idle(result: IdleResult, fmt: str) -> None:
    """`gpuadmin idle`'s output: JSON (the figures as computed), or the idle holders' table and the GPU-hours
    held idle per queue."""
    from gpuadmin.cli import output

    items = [i.to_json() for i in result.idle]
    if fmt == "json":
        from gpuadmin.render.output_models import FORMAT_VERSION

        output.as_json({"format_version": FORMAT_VERSION, "kind": "idle", "below": result.below,
                        "for_minutes": result.for_minutes, "window_minutes": result.window_minutes, "at": result.at,
                        "wasted_gpu_hours_per_queue": {q: round(h, 3) for q, h in result.wasted.items()},
                        "items": items})
        return
    from gpuadmin.cli import style
    from gpuadmin.render.telemetry import IDLE, WASTED, idle_row

    sys.stdout.write(f"Held under {result.below:g}% busy for {result.for_minutes:g} minutes or more "
                     f"(history: the last {result.window_minutes:g} minutes):\n")
    if not items:
        sys.stdout.write("  none\n")
        return
    output.table([idle_row(i) for i in items], [IDLE.column(c) for c in IDLE.columns], width=style.terminal_width())
    sys.stdout.write("\nGPU-hours held idle, per queue (VMs under -):\n")
    output.table([{"QUEUE": q, "GPU_HOURS": round(h, 3)} for q, h in result.wasted.items()],
                 [WASTED.column(c) for c in WASTED.columns], width=style.terminal_width())


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

    idle = sub.add_parser("idle", help="slices held by a job or VM and used under N%% for M minutes, with the "
                                       "GPU-hours held idle per queue",
                          description="Running jobs and VMs whose every slice has been under --below % busy "
                                      "(default: the idle.below setting, else 5) for --for or more (default: "
                                      "idle.for, else 30m), from the utilisation history in the Prometheus set "
                                      "with `config set metrics.prometheus`. A slice without samples is not known "
                                      "to be idle, never counted as such. Each holder's REMEDY is the change to "
                                      "review (preempt-job, cancel-job, detach-vm); nothing is applied.",
                          epilog=IDLE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    idle.add_argument("--for", dest="for_minutes", type=_duration, default=None, metavar="DURATION",
                      help="how long (30m, 2h, 90s; 1m to 24h)")
    idle.add_argument("--below", type=_percent, default=None, metavar="PERCENT", help="the utilisation threshold")
    idle.add_argument("-o", "--output", choices=("table", "json"), default="table")
    idle.set_defaults(func=_idle)
