"""`init --from-cluster`, `sync` and `diff`: a state bound to a live Kubernetes cluster (docs/kubernetes.md) or a
vCenter (docs/vsphere.md).

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
    from gpuadmin.service import ClusterBinding, PasswordSource, ReadSettings

DEFAULT_VCENTER_USER = "administrator@vsphere.local"  # vCenter's own administrator, as VMware's docs name it

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
    add_password_option(parser)


def add_password_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--password-file", type=Path, default=None, metavar="FILE",
                        help="a vCenter's password: the first line of FILE, which only you may read (mode 0600); "
                             "else $GPUADMIN_VCENTER_PASSWORD, else a prompt")


def password_source(args: argparse.Namespace) -> PasswordSource:
    """Where a vCenter's password comes from: --password-file, $GPUADMIN_VCENTER_PASSWORD, or a prompt on a
    terminal (never echoed). Asked only when the state is bound to a vCenter."""
    from getpass import getpass

    from gpuadmin.service import password_from

    return password_from(args.password_file, getpass if sys.stdin.isatty() else None)


def _where(binding: ClusterBinding) -> str:
    """The bound cluster as the messages name it; a vCenter whose certificate goes unverified says so."""
    if binding.kind == "kubernetes":
        return f"cluster {binding.context} ({binding.server})"
    tls = "TLS NOT VERIFIED (--insecure)" if binding.insecure else "TLS verified"
    return f"vCenter {binding.server} as {binding.context}, {tls}"


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

    if args.from_cluster == "vcenter":
        return _init_from_vcenter(args, ctx)
    if args.server is not None or args.user is not None or args.insecure or args.password_file is not None:
        from gpuadmin.errors import Diagnostic, InputError

        raise InputError([Diagnostic("--server, --user, --insecure and --password-file go with --from-cluster "
                                     "vcenter")])
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


def _init_from_vcenter(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output
    from gpuadmin.errors import Diagnostic, InputError
    from gpuadmin.service import init_from_vcenter

    kube_options = (args.kubeconfig, args.context, args.gpu_operator_namespace, args.mig_parted_configmap,
                    args.device_plugin_configmap)
    if any(option is not None for option in kube_options):
        raise InputError([Diagnostic("--kubeconfig, --context and the GPU Operator's names go with --from-cluster "
                                     "kubernetes")])
    if args.server is None:
        raise InputError([Diagnostic("--from-cluster vcenter needs --server URL",
                                     hint="gpuadmin init --from-cluster vcenter --server https://vcenter.example.com")])
    user = args.user or DEFAULT_VCENTER_USER
    state_dir = ctx.resolved_state_dir()
    password = password_source(args)(user, args.server)
    made = init_from_vcenter(state_dir, server=args.server, user=user, password=password, insecure=args.insecure,
                             force=args.force, role=ctx.requested_role)
    if args.output == "json":
        output.as_json(made.to_json())
    counts = made.counts
    _say(f"gpuadmin: state created at {state_dir} (revision {made.revision}), bound to {_where(made.binding)}: "
         f"{counts['hosts']} host(s), {counts['gpus']} GPU(s), {counts['vms']} GPU VM(s); {counts['other_vms']} "
         "VM(s) holding no GPU passed over")
    _report(made.findings, made.warnings)
    return ExitCode.OK


def _sync(args: argparse.Namespace, ctx: Context) -> int:
    from gpuadmin.cli import output

    synced = ctx.service().sync(args.kubeconfig, password=password_source(args))
    if args.output == "json":
        output.as_json(synced.to_json())
    else:
        from gpuadmin.render.text import safe

        for kind, name, action in synced.changed:
            sys.stdout.write(safe(f"{kind}/{name} {action}") + "\n")
    where = _where(synced.binding)
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

    found = ctx.service().cluster_diff(args.kubeconfig, password=password_source(args))
    if args.output == "json":
        output.as_json(found.to_json())
    elif found.drift:
        rows = [{"KIND": d.kind, "NAME": d.name, "FIELD": d.field or "(whole)", "STATE": _shown(d.state),
                 "CLUSTER": _shown(d.cluster)} for d in found.drift]
        output.table(rows, [Column(name) for name in ("KIND", "NAME", "FIELD", "STATE", "CLUSTER")])
    entities = len({(d.kind, d.name) for d in found.drift})
    _say(f"gpuadmin: {entities} entit{'y differs' if entities == 1 else 'ies differ'} from {_where(found.binding)}"
         if entities else f"gpuadmin: the state matches {_where(found.binding)}")
    _report(found.findings, [])
    return ExitCode.REFUSED if found.drift else ExitCode.OK  # kubectl diff: 1 when there are differences


SYNC_EPILOG = """example:
  gpuadmin --state /srv/gpuadmin sync
  gpuadmin sync -o json

exit codes: 0 synced (or nothing to sync; the rules the cluster breaks are warnings); 2 bad input (the state is
not bound to a cluster, a bad kubeconfig, no vCenter password); 3 the cluster unreachable, its context now another
server, or the lock held; 4 not permitted (a viewer; a 403 from the API server, with its message; a vCenter login
refused)"""

DIFF_EPILOG = """example:
  gpuadmin diff
  gpuadmin diff -o json | jq '.drift[] | select(.kind == "node")'

exit codes (as kubectl diff): 0 the state and the cluster agree; 1 they differ; 2 bad input (the state is not
bound to a cluster, a bad kubeconfig, no vCenter password); 3 the cluster unreachable; 4 a 403 from the API
server, with its message, or a vCenter login refused"""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    sync = sub.add_parser("sync", help="bring the bound cluster's truth into the state (one journal entry)",
                          epilog=SYNC_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_kubeconfig_option(sync)
    add_password_option(sync)
    sync.add_argument("-o", "--output", choices=("text", "json"), default="text")
    sync.set_defaults(func=_sync)
    diff = sub.add_parser("diff", help="where the state and the bound cluster differ (nothing is written)",
                          epilog=DIFF_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_kubeconfig_option(diff)
    add_password_option(diff)
    diff.add_argument("-o", "--output", choices=("text", "json"), default="text")
    diff.set_defaults(func=_diff)
