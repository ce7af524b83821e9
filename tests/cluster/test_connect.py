"""Connecting to a cluster from a kubeconfig (issue 22 item 1): the context and server a state records, TLS always
verified, clear text only on loopback, a bad kubeconfig named (exit 2), and failures mapped to the exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuadmin.cluster.connect import connect, connect_bound
from gpuadmin.cluster.errors import (
    ClusterApiError,
    ClusterConflict,
    ClusterError,
    ClusterForbidden,
    ClusterUnreachable,
    api_failure,
)
from gpuadmin.errors import ExitCode, InputError
from gpuadmin.store import ClusterBinding
from tests.kube.apiserver_double import ApiServerDouble

TOKEN = "s3cr3t-token-never-shown"


def kubeconfig(path: Path, server: str, *, context: str = "prod", insecure: bool = False,
               extra_contexts: tuple[str, ...] = ()) -> Path:
    cluster: dict[str, Any] = {"server": server}
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    contexts = [{"name": name, "context": {"cluster": "c", "user": "u"}} for name in (context, *extra_contexts)]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": contexts}))
    return path


def test_the_context_and_server_are_what_the_state_records(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", "https://user:pw@oke.example.com:6443/", extra_contexts=("dr",))
    connection = connect(path)
    assert (connection.context, connection.server) == ("prod", "https://oke.example.com:6443")
    assert connect(path, "dr").context == "dr"
    assert connection.binding() == ClusterBinding("kubernetes", "prod", "https://oke.example.com:6443")
    assert TOKEN not in repr(connection.binding())


@pytest.mark.parametrize(("server", "insecure", "why"), [
    ("https://oke.example.com:6443", True, "always verifies"),
    ("http://oke.example.com:8080", False, "in clear"),
    ("ftp://oke.example.com", False, "https://"),
    ("not a url", False, "https://"),
])
def test_an_unsafe_server_is_refused(tmp_path: Path, server: str, insecure: bool, why: str) -> None:
    path = kubeconfig(tmp_path / "kc", server, insecure=insecure)
    with pytest.raises(InputError, match=why) as refused:
        connect(path)
    assert refused.value.exit_code == ExitCode.BAD_INPUT and str(path) in str(refused.value)
    assert TOKEN not in str(refused.value)


@pytest.mark.parametrize("server", ["http://127.0.0.1:8001", "http://localhost:8001", "http://[::1]:8001"])
def test_clear_text_is_accepted_on_loopback(tmp_path: Path, server: str) -> None:
    assert connect(kubeconfig(tmp_path / "kc", server)).server == server


def test_a_bad_kubeconfig_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    garbage = tmp_path / "garbage"
    garbage.write_text("- just\n- a list\n")
    for path in (missing, garbage):
        with pytest.raises(InputError, match="kubeconfig") as refused:
            connect(path)
        assert str(path) in str(refused.value)
    with pytest.raises(InputError, match="Context 'nope' not found"):
        connect(kubeconfig(tmp_path / "kc", "https://h:6443"), "nope")


def test_a_binding_to_another_server_is_refused(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", "https://new.example.com:6443")
    with pytest.raises(ClusterError, match=r"bound to https://old\.example\.com:6443") as refused:
        connect_bound(ClusterBinding("kubernetes", "prod", "https://old.example.com:6443"), path)
    assert refused.value.exit_code == ExitCode.CONFLICT
    assert connect_bound(ClusterBinding("kubernetes", "prod", "https://new.example.com:6443"), path).context == "prod"


def test_api_failures_map_to_the_exit_codes(tmp_path: Path) -> None:
    from lightkube.resources.core_v1 import Node

    with ApiServerDouble() as double:
        client = connect(double.write_kubeconfig(tmp_path / "kc")).client
        double.deny.add(("list", "nodes"))
        with pytest.raises(Exception) as caught:
            list(client.list(Node))
        forbidden = api_failure(caught.value, "list nodes")
        assert isinstance(forbidden, ClusterForbidden) and forbidden.exit_code == ExitCode.NOT_PERMITTED
        assert str(forbidden).startswith("list nodes: ")
        with pytest.raises(Exception) as caught:
            client.get(Node, "missing")
        missing = api_failure(caught.value, "get node missing")
        assert isinstance(missing, ClusterApiError) and missing.code == 404
        url = double.url
    unreachable = kubeconfig(tmp_path / "gone", url)
    with pytest.raises(Exception) as caught:
        list(connect(unreachable).client.list(Node))
    failure = api_failure(caught.value, "list nodes")
    assert isinstance(failure, ClusterUnreachable) and failure.exit_code == ExitCode.CONFLICT
    assert TOKEN not in str(failure)
    assert ClusterConflict.exit_code == ExitCode.CONFLICT
    with pytest.raises(TypeError):
        api_failure(ValueError("a bug"), "x")
