"""`init --from-cluster`, `sync` and `diff`: a state bound to a live Kubernetes cluster (docs/kubernetes.md).

Thin: the workflow is `gpuadmin.service.cluster_sync`; this module parses, prints and picks the exit code.
`diff` exits as `kubectl diff` does: 0 when the state and the cluster agree, 1 when they differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuadmin.errors import ExitCode

if TYPE_CHECKING:
    from gpuadmin.cli.main import Context
    from gpuadmin.service import ReadSettings

DIFF_VALUE_WIDTH = 60  # characters of a value `diff` prints in its table (-o json has them whole)


def add_kubeconfig_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", type=Path, default=None, metavar="FILE",
                        help="the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """Where the cluster is, and where its GPU Operator keeps its configs (the ClusterPolicy's names): `init
    --from-cluster`'s, stored with the binding for every later sync, diff and execution."""
    add_kubeconfig_option(parser)
    parser.add_argument("--gpu-operator-namespace", default=None, metavar="NS",
                        help="the GPU Operator's namespace (default gpu-operator)")
    parser.add_argument("--mig-parted-configmap", default=None, metavar="NAME",
                        help="the mig-manager's ConfigMap (default: as the ClusterPolicy's migManager.config.name "
                             "says, else default-mig-parted-config)")
    parser.add_argument("--device-plugin-configmap", default=None, metavar="NAME",
                        help="the device plugin's ConfigMap (default: as the ClusterPolicy's "
                             "devicePlugin.config.name says, else time-slicing-config)")


def settings_of(args: argparse.Namespace) -> ReadSettings:
    from dataclasses import replace

    from gpuadmin.service import ReadSettings

    given = {"namespace": args.gpu_operator_namespace, "mig_parted_configmap": args.mig_parted_configmap,
             "device_plugin_configmap": args.device_plugin_configmap}
    return replace(ReadSettings(), **{k: v for k, v in given.items() if v is not None})


def _say(line: str) -> None:
    from gpuadmin.render.text import safe

    sys.stderr.write(safe(line) + "\n")  # names, messages and values come from the cluster: escaped


def _report(findings: list[Any], warnings: list[Any]) -> None:
    for finding in findings:
        _say(f"gpuadmin: finding: {finding}")
    for warning in warnings:
        _say(f"gpuadmin: warning: the cluster breaks rule {warning.rule} ({warning.target}): {warning.message}")


def init_from_cluster(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output
    from gpuadmin.service import init_from_cluster as init

    state_dir = ctx.resolved_state_dir()
    made = init(state_dir, kubeconfig=args.kubeconfig, context=args.context, force=args.force,
                role=ctx.requested_role, settings=settings_of(args))
    if args.output == "json":
        output.as_json(made.to_json())
    counts = made.counts
    _say(f"gpuadmin: state created at {state_dir} (revision {made.revision}), bound to cluster "
         f"{made.binding.context} ({made.binding.server}): {counts['nodes']} node(s), {counts['jobs']} job(s), "
         f"{counts['queues']} queue(s); {counts['other_pods']} pod(s) asking for no GPU passed over")
    _report(made.findings, made.warnings)
    return ExitCode.OK


def _sync(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output

    synced = ctx.service().sync(args.kubeconfig)
    if args.output == "json":
        output.as_json(synced.to_json())
    else:
        from gpuadmin.render.text import safe

        for kind, name, action in synced.changed:
            sys.stdout.write(safe(f"{kind}/{name} {action}") + "\n")
    where = f"cluster {synced.binding.context} ({synced.binding.server})"
    if synced.entry is None:
        _say(f"gpuadmin: the state matches {where}: nothing to sync (revision {synced.revision})")
    else:
        _say(f"gpuadmin: synced from {where}: {len(synced.changed)} change(s), journal entry {synced.entry}, "
             f"revision {synced.revision}")
    _report(synced.findings, synced.warnings)
    return ExitCode.OK


def _shown(value: Any) -> str:
    text = "-" if value is None else value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= DIFF_VALUE_WIDTH else text[: DIFF_VALUE_WIDTH - 1] + "…"


def _diff(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output
    from gpuadmin.render.columns import Column

    found = ctx.service().cluster_diff(args.kubeconfig)
    if args.output == "json":
        output.as_json(found.to_json())
    elif found.drift:
        rows = [{"KIND": d.kind, "NAME": d.name, "FIELD": d.field or "(whole)", "STATE": _shown(d.state),
                 "CLUSTER": _shown(d.cluster)} for d in found.drift]
        output.table(rows, [Column(name) for name in ("KIND", "NAME", "FIELD", "STATE", "CLUSTER")])
    entities = len({(d.kind, d.name) for d in found.drift})
    _say(f"gpuadmin: {entities} entit{'y differs' if entities == 1 else 'ies differ'} from cluster "
         f"{found.binding.context} ({found.binding.server})" if entities else
         f"gpuadmin: the state matches cluster {found.binding.context} ({found.binding.server})")
    _report(found.findings, [])
    return ExitCode.REFUSED if found.drift else ExitCode.OK  # kubectl diff: 1 when there are differences


SYNC_EPILOG = """example:
  gpuadmin --state /srv/gpuadmin sync
  gpuadmin sync -o json

exit codes: 0 synced (or nothing to sync; the rules the cluster breaks are warnings); 2 bad input (the state is
not bound to a cluster, a bad kubeconfig); 3 the cluster unreachable, its context now another server, or the lock
held; 4 not permitted (a viewer; a 403 from the API server, with its message)"""

DIFF_EPILOG = """example:
  gpuadmin diff
  gpuadmin diff -o json | jq '.drift[] | select(.kind == "node")'

exit codes (as kubectl diff): 0 the state and the cluster agree; 1 they differ; 2 bad input (the state is not
bound to a cluster, a bad kubeconfig); 3 the cluster unreachable; 4 a 403 from the API server, with its message"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    sync = sub.add_parser("sync", help="bring the bound cluster's truth into the state (one journal entry)",
                          epilog=SYNC_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_kubeconfig_option(sync)
    sync.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sync.set_defaults(func=_sync)
    diff = sub.add_parser("diff", help="where the state and the bound cluster differ (nothing is written)",
                          epilog=DIFF_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_kubeconfig_option(diff)
    diff.add_argument("-o", "--output", choices=("text", "json"), default="text")
    diff.set_defaults(func=_diff)
