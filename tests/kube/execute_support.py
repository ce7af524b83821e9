"""A live cluster for the executor tests (tests/kube/test_execute_*.py): the API server double, a lightkube client
made by `cluster.connect` from its kubeconfig, and gpuadmin's state read from the double's
own objects (`adapters.kube_cluster`), so a plan is planned and checked against what the cluster holds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuadmin.adapters.kube_cluster import cluster_node, kai_queue
from gpuadmin.cluster.connect import Connection, connect
from gpuadmin.cluster.exec_base import ExecuteSettings
from gpuadmin.cluster.execute import Execution, execute
from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import plan
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Job
from gpuadmin.model.inventory import Inventory
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import ApiServerDouble

FAST = ExecuteSettings(poll_interval_s=0.02, backoff_initial_s=0.02, backoff_cap_s=0.1)
MIG_PARTED = ("gpu-operator", FAST.mig_parted_configmap)


@dataclass
class Cluster:
    double: ApiServerDouble
    conn: Connection
    jobs: list[Job] = field(default_factory=list)

    def state(self) -> ClusterState:
        """gpuadmin's state as a sync would read it now: the double's nodes and queues, and the tests' jobs."""
        nodes = [cluster_node(n)[0].node for n in self._objects("nodes")]
        queues = [kai_queue(q) for q in self._objects("queues") if q["metadata"]["name"] != FAST.kai_root_queue]
        return ClusterState.from_inventory(Inventory(version=1, cluster="double", nodes=nodes, queues=queues,
                                                     jobs=self.jobs))

    def versions(self) -> dict[tuple[str, str], str]:
        return {("node", n["metadata"]["name"]): n["metadata"]["resourceVersion"] for n in self._objects("nodes")}

    def _objects(self, plural: str) -> list[dict[str, Any]]:
        return [o for (p, _ns, _n), o in sorted(self.double._objects.items()) if p == plural]

    def planned(self, changes: Sequence[dict[str, Any]]) -> tuple[list[Any], View, View]:
        state = self.state()
        parsed = ch.CHANGE_LIST.validate_python(list(changes))
        result = plan(state, parsed)
        assert result.allowed, result.violations
        return parsed, View(state), result.view

    def run(self, changes: Sequence[dict[str, Any]], *, timeout: float = 2.0,
            versions: dict[tuple[str, str], str] | None = None, settings: ExecuteSettings = FAST) -> Execution:
        """Plan and check `changes` against the state read from the double, then execute them on it."""
        parsed, before, after = self.planned(changes)
        return execute(self.conn, parsed, before, after, self.versions() if versions is None else versions,
                       timeout=timeout, settings=settings)


def cluster(tmp_path: Path, **double_options: Any) -> Iterator[Cluster]:
    """The double with two GPU nodes (gpu-a, gpu-b: H100s under the mixed MIG strategy), its mig-manager reading the
    mig-parted ConfigMap gpuadmin writes, and a client for it."""
    options = {"mig_delay_s": 0.05, "mig_configmap": MIG_PARTED, **double_options}
    with ApiServerDouble(**options) as double:
        double.create(objects.node("gpu-a"))
        double.create(objects.node("gpu-b"))
        conn = connect(double.write_kubeconfig(tmp_path / "kubeconfig"))
        yield Cluster(double, conn)
        conn.client.close()


def statuses(execution: Execution) -> list[str]:
    return [s.status for s in execution.steps]


def full_gpu_node(name: str) -> dict[str, Any]:
    """A node of the same H100 without MIG: GFD drops the MIG labels and reports `mig.strategy=none`."""
    node = objects.node(name)
    labels = node["metadata"]["labels"]
    for key in [k for k in labels if k.startswith("nvidia.com/mig")]:
        del labels[key]
    labels["nvidia.com/mig.strategy"] = "none"
    node["status"]["capacity"]["nvidia.com/gpu"] = node["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    return node
