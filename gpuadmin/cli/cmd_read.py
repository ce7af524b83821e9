"""`init`, `get` and `describe`: create a state, and read it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuadmin.errors import ExitCode
from gpuadmin.render.text import safe

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.render.rows import Row

LISTING_KINDS = ("nodes", "gpus", "slices", "groups", "jobs", "queues", "journal")


def _init(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.errors import Diagnostic, InputError
    from gpuadmin.service import Service

    if ctx.inventory is not None:
        raise InputError([Diagnostic("init writes a state directory; use --state, not --inventory")])
    if args.from_cluster is not None:
        if args.shared:
            raise InputError([Diagnostic("init --from-cluster makes a personal state; --shared goes with --from")])
        from gpuadmin.cli.cmd_cluster import init_from_cluster

        return init_from_cluster(args, ctx)
    cluster_options = (args.kubeconfig, args.context, args.gpu_operator_namespace, args.mig_parted_configmap,
                       args.device_plugin_configmap, args.server, args.user, args.password_file)
    if any(option is not None for option in cluster_options) or args.insecure or args.output != "text":
        raise InputError([Diagnostic("--kubeconfig, --context, the GPU Operator's names, --server, --user, "
                                     "--insecure, --password-file and -o go with --from-cluster")])
    state_dir = ctx.resolved_state_dir()
    if args.shared and args.group is None:
        raise InputError([Diagnostic("init --shared needs --group GROUP: the group of the operators who may write")])
    if (args.group is not None or args.no_others or args.take_over) and not args.shared:
        raise InputError([Diagnostic("--group, --no-others and --take-over go with --shared")])
    revision = Service.init(state_dir, args.source, role=ctx.requested_role, force=args.force,
                            shared_group=args.group, others_read=not args.no_others, take_over=args.take_over)
    sys.stderr.write(safe(f"gpuadmin: state created at {state_dir} (revision {revision})") + "\n")
    if args.shared:
        decision = ctx.caller().decision
        sys.stderr.write(safe(f"gpuadmin: shared with group {args.group}"
                              f"{'' if args.no_others else '; other users may read it (viewers)'}; "
                              f"your role on it: {decision.role} ({decision.why}, from {decision.source})") + "\n")
    return ExitCode.OK


def _json_item(kind: str, row: Row, spec: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"kind": kind}
    item.update({k.lower(): v for k, v in row.items()})
    if spec is not None:
        item["spec"] = spec
    return item


def _names_only(kind: str, ctx: Context) -> bool:
    """`get KIND -o name` of a whole listing that can name its rows without making them (the jobs): written
    from the service's view, the one `Service.get` reads them from; False where the listing cannot."""
    from gpuadmin.cli import output
    from gpuadmin.render.rows import LISTINGS

    listing = LISTINGS.get(kind)
    if listing is None or listing.names is None:
        return False
    output.names(listing.kind, listing.names(ctx.service().view()))
    return True


def _telemetry(kind: str, rows: list[Row], ctx: Context, *, hints: bool) -> None:
    """The telemetry columns where a Prometheus is set; while it is slow or down, a line on stderr (the
    columns then show the last readings this process has, or `-`). `hints`: a line on stderr per GPU its
    readings flag, with the command that fences it (a table's reader; JSON and YAML carry HEALTH)."""
    from gpuadmin.cli.cmd_telemetry import status_line, write_health_hints

    service = ctx.service()  # one service: `health` reads the refresh `telemetry_rows` made
    status = service.telemetry_rows(kind, rows)
    if status.state in ("slow", "down"):
        sys.stderr.write(safe(status_line(status)) + "\n")
    if hints and kind == "gpus":
        shown = {(row["NODE"], row["GPU"]) for row in rows}
        write_health_hints([f for f in service.health(refresh=False) if (f.node, f.gpu) in shown], ctx)


def _get(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output

    fmt = args.output
    if fmt == "name" and args.name is None and not args.selector and _names_only(args.kind, ctx):
        return ExitCode.OK
    # `-o name` skips the why-pending cycle unless a selector may ask for it (`-l reason=over-limit`)
    reasons = fmt != "name" or bool(args.selector)
    table = ctx.service().get(args.kind, name=args.name, selector=args.selector, reasons=reasons,
                              specs=fmt in ("json", "yaml"))
    kind = table.listing.kind
    if args.kind in ("gpus", "slices") and fmt in ("wide", "json", "yaml"):
        _telemetry(args.kind, table.rows, ctx, hints=fmt == "wide")
    if fmt in ("table", "wide"):
        from gpuadmin.cli import style

        style.configure(ctx.color)
        columns = [table.listing.column(name) for name in table.columns(wide=fmt == "wide")]
        output.table(table.rows, columns, width=style.terminal_width())
    elif fmt == "name":
        output.names(kind, (str(r[table.listing.key]) for r in table.rows))
    else:
        from gpuadmin.render.output_models import FORMAT_VERSION

        spec_of = table.spec_of
        items = (_json_item(kind, r, spec_of(r) if spec_of is not None else None) for r in table.rows)
        # the shape of the document is gpuadmin.render.output_models' (docs/schemas/); FORMAT_VERSION its version
        head = {"format_version": FORMAT_VERSION, "kind": f"{kind}-list", "revision": table.revision}
        (output.json_list if fmt == "json" else output.yaml_list)(head, "items", items)
    return ExitCode.OK


def _describe(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output
    from gpuadmin.render import describe

    service = ctx.service()
    described = service.describe(args.kind, args.name)
    if args.output == "json":
        output.as_json(described)
    elif args.output == "yaml":
        output.as_yaml(described)
    else:
        sys.stdout.write(describe.as_text(described))
    return ExitCode.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gpuadmin.cli.cmd_cluster import add_cluster_options

    init = sub.add_parser("init", help="create a state from an inventory, or from a live cluster")
    source = init.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="source", type=Path, metavar="INVENTORY.yaml")
    source.add_argument("--from-cluster", dest="from_cluster", choices=("kubernetes", "vcenter"), default=None,
                        help="read the live cluster (kubernetes: --kubeconfig's --context; vcenter: --server) and "
                             "bind the state to it")
    add_cluster_options(init)
    vcenter = init.add_argument_group("with --from-cluster vcenter (docs/vsphere.md)")
    vcenter.add_argument("--server", default=None, metavar="URL", help="the vCenter: https://vcenter.example.com")
    vcenter.add_argument("--user", default=None, metavar="USER",
                         help="the vCenter user (default administrator@vsphere.local)")
    vcenter.add_argument("--insecure", action="store_true",
                         help="do not verify the vCenter's TLS certificate (recorded in the binding and shown)")
    init.add_argument("--context", default=None, metavar="NAME",
                      help="with --from-cluster: the kubeconfig context (default: its current context)")
    init.add_argument("-o", "--output", choices=("text", "json"), default="text",
                      help="with --from-cluster: json prints what was read, found and warned on stdout")
    init.add_argument("--force", action="store_true", help="replace an existing state")
    init.add_argument("--shared", action="store_true",
                      help="a state for a group of operators: set-group-id directory, group-writable files "
                           "(see docs/operations.md)")
    init.add_argument("--group", default=None, metavar="GROUP", help="with --shared: the operators' group")
    init.add_argument("--no-others", action="store_true",
                      help="with --shared: other users may not read the state (default: they may, as viewers)")
    init.add_argument("--take-over", action="store_true",
                      help="with --shared, as root: make an empty directory of another user's root's (without it, "
                           "such a directory is refused: its owner would be trusted like root)")
    init.set_defaults(func=_init)

    get = sub.add_parser("get", help="list nodes, gpus, slices, groups, jobs, queues or the journal")
    get.add_argument("kind", choices=LISTING_KINDS)
    get.add_argument("name", nargs="?")
    get.add_argument("-o", "--output", choices=("table", "wide", "json", "yaml", "name"), default="table")
    get.add_argument("-l", "--selector", metavar="SELECTOR",
                     help="node labels or columns: key=value, key!=value, key in (a,b), key, !key; "
                          "comma for and (status=pending,queue=research)")
    get.set_defaults(func=_get)

    desc = sub.add_parser("describe", help="everything about one node, gpu (NODE/INDEX), job, queue or journal entry")
    desc.add_argument("kind", choices=("node", "gpu", "job", "queue", "entry"))
    desc.add_argument("name")
    desc.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    desc.set_defaults(func=_describe)
