"""The ClusterRole docs/kubernetes.md gives the executors is exactly what their calls need: one plan of every op
that executes is run against the API server double, and the (verb, resource) pairs it served are the rules'."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpuadmin.model import Job
from tests.kube import cluster_objects as objects
from tests.kube.apiserver_double import KINDS
from tests.kube.execute_support import cluster, full_gpu_node

DOC = Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md"
BEGIN, END = "<!-- executor ClusterRole -->", "<!-- end of the executor ClusterRole -->"
GROUPS = {k.plural: k.group for k in KINDS}
FINETUNE = {"name": "finetune", "queue": "research", "request": {"mig": "1g.10gb"}}


def granted() -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) the documented ClusterRole grants."""
    text = DOC.read_text(encoding="utf-8").split(BEGIN, 1)[1].split(END, 1)[0]
    role = yaml.safe_load(text.strip().removeprefix("```yaml").removesuffix("```"))
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_the_documented_cluster_role_is_what_the_executors_call(tmp_path: Path) -> None:
    for live in cluster(tmp_path):
        live.double.create(objects.kai_queue("research", gpu_quota=8))
        for name in ("gpu-c", "gpu-d"):
            live.double.create(full_gpu_node(name))
        live.double.create(objects.pod("train-0", node_name="gpu-a"))
        live.double.create(objects.pod("p-0", resource="nvidia.com/mig-1g.10gb", scheduler="gpuadmin"))
        live.double.create(objects.pod("run-0", node_name="gpu-b", resource="nvidia.com/mig-1g.10gb"))
        live.jobs += [Job(name="default/p-0", queue="research", request={"mig": "1g.10gb"}),
                      Job(name="default/run-0", queue="research", request={"mig": "1g.10gb"}, status="running",
                          placement=[{"node": "gpu-b", "gpu": 0, "mig_start": 3}])]
        plans = [
            [{"op": "drain", "node": "gpu-a"}, {"op": "uncordon", "node": "gpu-a"},
             {"op": "set-mig", "node": "gpu-a", "gpu": 0, "instances": [{"profile": "7g.80gb"}]},
             {"op": "add-queue", "queue": {"name": "evals", "quota": {"gpus": 2}}},
             {"op": "set-quota", "queue": "research", "quota": {"gpus": 4}},
             {"op": "submit-job", "job": {"name": "pretrain", "queue": "research",
                                          "request": {"gpus": 1, "nodes": 2}}},
             {"op": "bind-job", "name": "default/p-0", "placement": [{"node": "gpu-b", "gpu": 0, "mig_start": 2}]},
             {"op": "submit-job", "job": FINETUNE},
             {"op": "preempt-job", "name": "default/run-0"}],
            [{"op": "remove-queue", "name": "evals"}, {"op": "cancel-job", "name": "pretrain"},
             {"op": "cancel-job", "name": "finetune"},
             {"op": "set-time-slicing", "node": "gpu-c", "gpu": 0, "replicas": 2}],
        ]
        for changes in plans:
            done = live.run(changes)
            assert done.outcome == "executed", [(s.op, s.status, s.message) for s in done.steps]
            if changes[-1]["op"] == "preempt-job":
                live.jobs += [Job(name="pretrain", queue="research", request={"gpus": 1, "nodes": 2}),
                              Job.model_validate(FINETUNE)]
        served = {(GROUPS[resource.split("/")[0]], resource, verb) for verb, resource in live.double.requests}
        assert served == granted()
