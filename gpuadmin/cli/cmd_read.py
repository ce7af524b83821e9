"""`init`, `get` and `describe`: create a state, and read it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuadmin.cli import exitcodes, output
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.render import describe
from gpuadmin.render.rows import JOURNAL, LISTINGS, Row

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context


def _init(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.service import Service

    if ctx.inventory is not None:
        raise InputError([Diagnostic("init writes a state directory; use --state, not --inventory")])
    state_dir = ctx.resolved_state_dir()
    revision = Service.init(state_dir, args.source, role=ctx.role, force=args.force)
    sys.stderr.write(f"gpuadmin: state created at {state_dir} (revision {revision})\n")
    return exitcodes.OK


def _selector(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise InputError([Diagnostic(f"bad selector {part!r}: write key=value[,key=value]")])
        out[key.strip()] = value.strip()
    return out


def _matches(row: Row, labels: dict[str, str], selector: dict[str, str]) -> bool:
    """A selector key matches a node label, or else a column of the row (case-insensitive name)."""
    for key, value in selector.items():
        if key in labels:
            if labels[key] != value:
                return False
            continue
        column = key.upper().replace("-", "_")
        if column not in row or str(row[column]) != value:
            return False
    return True


def _json_item(kind: str, row: Row, spec: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"kind": kind}
    item.update({k.lower(): v for k, v in row.items()})
    if spec is not None:
        item["spec"] = spec
    return item


def _get(args: argparse.Namespace, ctx: Context) -> int:
    service = ctx.service()
    listing = JOURNAL if args.kind == "journal" else LISTINGS[args.kind]
    selector = _selector(args.selector)
    rows, specs = service.get(args.kind, reasons=args.output != "name")
    node_kind = args.kind in ("nodes", "gpus", "slices", "groups")
    view_labels = service.labels_by_node() if node_kind and selector else {}
    picked: list[tuple[Row, Any]] = []
    for row, spec in zip(rows, specs, strict=True):
        if args.name is not None and str(row.get(listing.key)) != args.name:
            continue
        node = row.get("NODE", row.get("NAME")) if node_kind else None
        labels = view_labels.get(str(node), {}) if node is not None else {}
        if _matches(row, labels, selector):
            picked.append((row, spec))
    if args.name is not None and not picked:
        raise InputError([Diagnostic(f"{listing.kind} {args.name!r} not found")])
    fmt = args.output
    if fmt in ("table", "wide"):
        columns = listing.columns + (listing.wide if fmt == "wide" else ())
        output.table([r for r, _ in picked], columns)
    elif fmt == "name":
        output.names(listing.kind, (str(r[listing.key]) for r, _ in picked))
    else:
        data = {"kind": f"{listing.kind}-list", "revision": service.revision(),
                "items": [_json_item(listing.kind, r, s) for r, s in picked]}
        (output.as_json if fmt == "json" else output.as_yaml)(data)
    return exitcodes.OK


def _describe(args: argparse.Namespace, ctx: Context) -> int:
    service = ctx.service()
    check_and_read = service.describe(args.kind, args.name)
    if args.output == "json":
        output.as_json(check_and_read)
    elif args.output == "yaml":
        output.as_yaml(check_and_read)
    else:
        sys.stdout.write(describe.as_text(check_and_read))
    return exitcodes.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = sub.add_parser("init", help="create a state from an inventory")
    init.add_argument("--from", dest="source", type=Path, required=True, metavar="INVENTORY.yaml")
    init.add_argument("--force", action="store_true", help="replace an existing state")
    init.set_defaults(func=_init)

    get = sub.add_parser("get", help="list nodes, gpus, slices, groups, jobs, queues or the journal")
    get.add_argument("kind", choices=(*LISTINGS, "journal"))
    get.add_argument("name", nargs="?")
    get.add_argument("-o", "--output", choices=output.FORMATS, default="table")
    get.add_argument("-l", "--selector", metavar="KEY=VALUE[,KEY=VALUE]",
                     help="node labels, or columns (status=pending, queue=research)")
    get.set_defaults(func=_get)

    desc = sub.add_parser("describe", help="everything about one node, gpu (NODE/INDEX), job or queue")
    desc.add_argument("kind", choices=("node", "gpu", "job", "queue"))
    desc.add_argument("name")
    desc.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    desc.set_defaults(func=_describe)
