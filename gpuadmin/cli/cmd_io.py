"""`import` and `export`: inventories from real machines and clusters, and the formats their tools read.

An import prints a change file (`add-node`, or `restore` to replace a known node) — review it, then `apply -f`
it, or pass `--apply` to plan and apply at once; `-o inventory` prints the nodes as an inventory instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuadmin.cli.args import MAX_NIC_GBPS, integer
from gpuadmin.errors import ExitCode

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.service import Node, Orchestrator, Platform


def _warn(warnings: list[str]) -> None:
    from gpuadmin.render.text import safe

    for warning in warnings:  # they name nodes, jobs and products as the inventory or the source spells them
        sys.stderr.write(f"gpuadmin: warning: {safe(warning)}\n")


def _host(args: argparse.Namespace) -> tuple[Platform, Orchestrator]:
    """`--platform` and `--orchestrator` as the node's fields; `--platform kubernetes` is the old spelling of
    `--platform baremetal --orchestrator kubernetes`."""
    from gpuadmin.errors import Diagnostic, InputError

    if args.platform == "kubernetes":
        return "baremetal", "kubernetes"
    if args.platform == "vsphere" and args.orchestrator == "kubernetes":
        raise InputError([Diagnostic("--orchestrator kubernetes does not go with --platform vsphere: an ESXi host "
                                     "runs no pods itself; the Kubernetes nodes there are its VMs")])
    return args.platform, args.orchestrator


def _imported_nodes(args: argparse.Namespace) -> list[Node]:
    from gpuadmin.service import HostFacts, read_nodes

    platform, orchestrator = _host(args) if args.source != "kube-nodes" else ("baremetal", "none")
    host = HostFacts(platform, orchestrator, getattr(args, "rdma_gbps", None), getattr(args, "rdma_network", None))
    read = read_nodes(args.source, getattr(args, "file", None), getattr(args, "node", None), host,
                      getattr(args, "topo", None))
    _warn(read.warnings)
    return read.nodes


def _import(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli.cmd_changes import apply_changes

    nodes = _imported_nodes(args)
    if args.output == "inventory":
        from gpuadmin.service import inventory_text

        sys.stdout.write(inventory_text(args.cluster, nodes))
        return ExitCode.OK
    service = ctx.service()
    changes = service.import_changes(nodes)
    if args.apply:
        return apply_changes(ctx, service, changes, yes=args.yes, fmt="text")
    from gpuadmin.cli import output

    data = {"changes": [c.model_dump(mode="json", exclude_none=True) for c in changes]}
    (output.as_json if args.output == "json" else output.as_yaml)(data)
    return ExitCode.OK


def _nothing_to_export(kind: str, data: Any) -> str | None:
    """Why an export came out empty (said on stderr; the empty document still goes to stdout), else None."""
    if kind == "device-plugin" and isinstance(data, dict) and not data.get("data"):
        return "no Kubernetes node with GPUs in this state (device-plugin configs are per Kubernetes node)"
    if kind == "labels" and not data:
        return "no Kubernetes node with GPUs in this state (labels select per-node configs)"
    if kind == "mig-parted" and isinstance(data, dict) and not any(
            k != "all-disabled" for k in data.get("mig-configs") or {}):
        return "no node with MIG-capable GPUs in this state"
    if kind == "pods" and not data:
        return "no running or pending job to write a pod for"
    return None


def _export(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output
    from gpuadmin.service import consumer_refused

    service = ctx.service()
    warnings: list[str] = []
    options: dict[str, Any] = {"warnings": warnings}
    if args.kind == "pods":
        options["queue_system"] = args.queue_system
    if args.kind == "queues":
        options["fmt"] = args.format
    if args.kind == "inventory":
        options["fmt"] = args.output
    data = service.export(args.kind, **options)
    _warn(warnings)
    nothing = _nothing_to_export(args.kind, data)
    if nothing:
        sys.stderr.write(f"gpuadmin: export {args.kind}: nothing to export: {nothing}\n")
    if isinstance(data, str):
        sys.stdout.write(data)
    elif isinstance(data, list) and args.output == "yaml":
        output.yaml_documents(data)
    else:
        (output.as_json if args.output == "json" else output.as_yaml)(data)
    # What the consumer refuses was left out of the export (its warning names it): scripts must not apply it
    # as if it were the whole state.
    return ExitCode.REFUSED if consumer_refused(warnings) else ExitCode.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    imp = sub.add_parser("import", help="read nodes from nvidia-smi XML, kubectl node JSON, or this host")
    sources = imp.add_subparsers(dest="source", metavar="SOURCE", required=True)
    smi = sources.add_parser("nvidia-smi", help="`nvidia-smi -q -x` output (DTD v11-v13)")
    smi.add_argument("file", type=Path, metavar="FILE.xml")
    smi.add_argument("--node", required=True, help="the node's name")
    smi.add_argument("--topo", type=Path, metavar="TOPO.txt", help="`nvidia-smi topo -m` output of that node")
    kube = sources.add_parser("kube-nodes", help="`kubectl get nodes -o json` (GPU Feature Discovery labels)")
    kube.add_argument("file", type=Path, metavar="FILE.json")
    local = sources.add_parser("local", help="this host: NVML (nvidia-ml-py) for GPUs, psutil for the rest")
    local.add_argument("--node", default=None, help="the node's name (default: the host name)")
    for parser in (smi, kube, local):
        parser.add_argument("-o", "--output", choices=("yaml", "json", "inventory"), default="yaml",
                            help="a change file (yaml/json), or an inventory of the imported nodes")
        parser.add_argument("--cluster", default="imported", help="cluster name for -o inventory")
        parser.add_argument("--apply", action="store_true", help="plan and apply the import at once")
        parser.add_argument("--yes", action="store_true")
        if parser is not kube:
            parser.add_argument("--platform", choices=("baremetal", "vsphere", "kubernetes"), default="baremetal",
                                help="the node's hardware place (kubernetes: deprecated, means baremetal "
                                     "with --orchestrator kubernetes)")
            parser.add_argument("--orchestrator", choices=("kubernetes", "none"), default="none",
                                help="who schedules pods on the node: kubernetes (a worker node) or none")
            parser.add_argument("--rdma-network", default=None, help="RDMA network name for the node's NICs")
        if parser is smi:
            parser.add_argument("--rdma-gbps", type=integer(1, MAX_NIC_GBPS, "a NIC speed"), default=None,
                                help="RDMA NIC speed in Gb/s (with --topo)")
        parser.set_defaults(func=_import)

    exp = sub.add_parser("export", help="inventory, mig-parted, device-plugin, labels, pods or queues")
    exp.add_argument("kind", choices=("inventory", "mig-parted", "device-plugin", "labels", "pods", "queues"))
    exp.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    exp.add_argument("--queue-system", choices=("none", "kai", "kueue"), default="none",
                     help="pods: schedule them with KAI-Scheduler or Kueue")
    exp.add_argument("--format", choices=("all", "kai", "kueue"), default="all", help="queues: which manifests")
    exp.set_defaults(func=_export)
