"""A connection to a Kubernetes API server, from a kubeconfig and a context, as kubectl makes one.

What a state records of it is the context's name and the API server's address (`ClusterBinding`), never a
credential: tokens, client keys and exec-plugin output stay in the kubeconfig and in memory, and nothing here prints
them (a bad kubeconfig is named by its file, not quoted).

TLS is verified, always: a kubeconfig that asks to skip verification (`insecure-skip-tls-verify: true`) is refused.
A plain `http://` server is accepted only on the loopback interface (a local `kubectl proxy`, or the test double):
anywhere else it would send the credentials in clear.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from gpuadmin.cluster.errors import ClusterError
from gpuadmin.errors import Diagnostic, InputError
from gpuadmin.store import ClusterBinding

FIELD_MANAGER = "gpuadmin"  # the name server-side apply records for gpuadmin's fields
REQUEST_TIMEOUT_S = 10.0
LOOPBACK_NAMES = {"localhost"}


@dataclass(frozen=True)
class Connection:
    """A client for one cluster, and how the state names that cluster."""

    client: Any  # lightkube.Client (typed Any: the client is imported lazily, inside `connect`)
    context: str
    server: str  # scheme://host:port[/path], without any user:password part

    def binding(self) -> ClusterBinding:
        return ClusterBinding(kind="kubernetes", context=self.context, server=self.server)


def connect(kubeconfig: Path | None = None, context: str | None = None) -> Connection:
    """A client for `context` (default: the kubeconfig's current context) of `kubeconfig` (default: $KUBECONFIG,
    else ~/.kube/config, else the pod's service account when gpuadmin runs inside the cluster). A missing or bad
    kubeconfig, an unknown context or an unsafe server is an InputError (exit 2) naming the file."""
    from lightkube import Client
    from lightkube.config.kubeconfig import KubeConfig
    from lightkube.core.exceptions import ConfigError

    where = str(kubeconfig) if kubeconfig is not None else os.environ.get("KUBECONFIG", "~/.kube/config")
    try:
        config = KubeConfig.from_file(kubeconfig) if kubeconfig is not None else _from_environment()
        chosen = config.get(context_name=context)
    except ConfigError as bad:
        raise _bad_kubeconfig(where, str(bad)) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError) as bad:  # unreadable, not
        # YAML (a YAMLError is no ValueError), misshapen
        raise _bad_kubeconfig(where, f"not a kubeconfig ({type(bad).__name__})") from None
    if chosen is None:
        raise _bad_kubeconfig(where, "no context is set and none was given (--context NAME)")
    server = _checked_server(where, chosen.context_name, chosen.cluster.server, insecure=chosen.cluster.insecure)
    import httpx2

    client = Client(config=chosen, field_manager=FIELD_MANAGER, timeout=httpx2.Timeout(REQUEST_TIMEOUT_S))
    return Connection(client=client, context=chosen.context_name, server=server)


def connect_bound(binding: ClusterBinding, kubeconfig: Path | None = None) -> Connection:
    """The bound state's cluster: its context, which must still point at the API server the state was bound to
    (a kubeconfig edited to point the same context elsewhere would otherwise sync another cluster into it)."""
    connection = connect(kubeconfig, binding.context)
    if connection.server != binding.server:
        raise ClusterError(
            f"context {binding.context!r} now points at {connection.server}, but this state is bound to "
            f"{binding.server}: use the kubeconfig that reaches it, or `gpuadmin init --from-cluster kubernetes "
            "--force` to bind the state to the new server")
    return connection


def _from_environment() -> Any:
    from lightkube.config.kubeconfig import KubeConfig

    listed = os.environ.get("KUBECONFIG", "")
    if os.pathsep in listed:  # kubectl merges a list; gpuadmin reads one file, named
        raise _bad_kubeconfig(listed, "KUBECONFIG lists several files: pass the one to use with --kubeconfig")
    return KubeConfig.from_env()


def _checked_server(where: str, context: str, server: str, *, insecure: bool) -> str:
    """The server's address without credentials; refuses skipped TLS verification and clear text off loopback."""
    try:
        parts = urlsplit(server)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        raise _bad_kubeconfig(where, f"context {context!r}: the server is not a URL") from None
    if parts.scheme not in ("https", "http") or not host:
        raise _bad_kubeconfig(where, f"context {context!r}: the server must be an https:// URL")
    if insecure:
        raise _bad_kubeconfig(where, f"context {context!r} sets insecure-skip-tls-verify: gpuadmin always verifies "
                              "the API server's certificate (give certificate-authority or -data instead)")
    if parts.scheme == "http" and not _is_loopback(host):
        raise _bad_kubeconfig(where, f"context {context!r}: a plain http:// server off this host would carry the "
                              "credentials in clear; use https://")
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return f"{parts.scheme}://{netloc}{parts.path.rstrip('/')}"


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bad_kubeconfig(where: str, why: str) -> InputError:
    hint = ("pass --kubeconfig FILE, or set KUBECONFIG" if "not found" in why and "Context" not in why
            else "kubectl config get-contexts lists the contexts it has")
    return InputError([Diagnostic(f"kubeconfig: {why}", file=where, hint=hint)])
