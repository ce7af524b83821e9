"""The reader ClusterRole docs/kubernetes.md gives is exactly what reading and watching a cluster calls: `init
--from-cluster`, `sync`, `diff` and the console's watch run against the double seeded with the OCI sample, and the
(verb, resource) pairs it served are the rules' — none missing, none unused."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from gpuadmin.cli.main import run
from gpuadmin.cluster.connect import connect
from gpuadmin.cluster.watch import ClusterWatch, HttpTransport
from gpuadmin.errors import ExitCode
from tests.kube import seed
from tests.kube.apiserver_double import KINDS, ApiServerDouble

DOC = Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md"
BEGIN, END = "<!-- reader ClusterRole -->", "<!-- end of the reader ClusterRole -->"
GROUPS = {k.plural: k.group for k in KINDS}


def granted() -> set[tuple[str, str, str]]:
    text = DOC.read_text(encoding="utf-8").split(BEGIN, 1)[1].split(END, 1)[0]
    role = yaml.safe_load(text.strip().removeprefix("```yaml").removesuffix("```"))
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_the_documented_reader_role_is_what_reading_and_watching_call(tmp_path: Path) -> None:
    cluster = seed.cluster_of(seed.load_sample("oci-h100.yaml"))
    with ApiServerDouble(mig_configs=cluster.mig_configs) as double:
        seed.seed(double, cluster)
        kubeconfig = str(double.write_kubeconfig(tmp_path / "kubeconfig"))
        state = str(tmp_path / "state")
        assert run(["--state", state, "init", "--from-cluster", "kubernetes", "--kubeconfig", kubeconfig]) == 0
        assert run(["--state", state, "sync", "--kubeconfig", kubeconfig]) == ExitCode.OK
        assert run(["--state", state, "diff", "--kubeconfig", kubeconfig]) == ExitCode.OK
        transport = HttpTransport.of_client(connect(Path(kubeconfig)).client)
        with ClusterWatch(transport, lambda _batch: None).start() as watch:
            deadline = time.monotonic() + 5
            while watch.status.state != "live" and time.monotonic() < deadline:
                time.sleep(0.05)
            assert watch.status.state == "live"
        served = {(GROUPS[resource.split("/")[0]], resource, verb) for verb, resource in double.requests}
    assert served == granted()
