"""Building blocks for the rule tests: one small, valid cluster built from real inventory models, and a
`Scenario` that edits a copy-on-write `View` of it and records what the edits touch."""

from __future__ import annotations

from typing import Any

from gpuadmin.engine.rules import Touched, Violation, check
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Gpu, Inventory, Job, Node, Queue, Slot


def _gpus(model: str, count: int, **fields: Any) -> list[dict[str, Any]]:
    return [{"index": i, "model": model, "mode": "full", **fields} for i in range(count)]


def base_inventory() -> Inventory:
    """A cluster on which every rule passes: bare metal with MIG / time-slicing / gangs (and, on bm5, a GI split
    into compute instances and a GPU the catalog does not know), vSphere hosts with device groups, vGPUs and
    passthrough, a Kubernetes A30 node, and queues with room to spare."""
    bm1_gpus = _gpus("H100-SXM5-80GB", 8)
    bm1_gpus[2] = {
        "index": 2,
        "model": "H100-SXM5-80GB",
        "mode": "mig",
        "mig": [
            {"profile": "3g.40gb", "start": 4},
            {"profile": "2g.20gb", "start": 0},
            {"profile": "1g.10gb", "start": 2},
        ],
    }
    bm1_gpus[3] = {"index": 3, "model": "H100-SXM5-80GB", "mode": "time-sliced", "replicas": 4}
    bm1_gpus[4] = {
        "index": 4,
        "model": "H100-SXM5-80GB",
        "mode": "mig",
        "mig": [{"profile": "3g.40gb", "start": 0, "replicas": 2}, {"profile": "3g.40gb", "start": 4}],
    }
    esx1_gpus = [
        {
            "index": i,
            "model": "A100-SXM4-80GB",
            "mode": "vgpu",
            "vgpus": [{"vm": "train-01", "profile": "A100DX-80C"}],
        }
        for i in range(4)
    ]
    esx1_gpus += [
        {
            "index": 4,
            "model": "A100-SXM4-80GB",
            "mode": "vgpu",
            "vgpus": [{"vm": "dev-01", "profile": "A100DX-40C"}, {"vm": "dev-02", "profile": "A100DX-40C"}],
        }
    ]
    esx1_gpus += [{"index": i, "model": "A100-SXM4-80GB", "mode": "vgpu"} for i in range(5, 8)]
    raw: dict[str, Any] = {
        "version": 1,
        "cluster": "test",
        "queues": [
            {"name": "research", "quota": {"gpus": 16}, "limit": {"gpus": 32, "gpu_memory_gib": 4000}},
            {"name": "inference", "quota": {"gpus": 8}},
            {"name": "scratch", "quota": {"gpus": 1}, "limit": {"gpus": 2}},
        ],
        "nodes": [
            {
                "name": "bm1",
                "platform": "baremetal",
                "nvlink": "nvswitch",
                "rdma": {"nics": 16, "gbps": 200, "network": "net-a"},
                "gpus": bm1_gpus,
            },
            {
                "name": "bm2",
                "platform": "baremetal",
                "nvlink": "nvswitch",
                "rdma": {"nics": 16, "gbps": 200, "network": "net-a"},
                "gpus": _gpus("H100-SXM5-80GB", 8),
            },
            {
                "name": "bm3",
                "platform": "baremetal",
                "nvlink": "pairs",
                "rdma": {"nics": 2, "gbps": 100, "network": "net-b"},
                "gpus": _gpus("H100-PCIE-80GB", 4),
            },
            {"name": "bm4", "platform": "baremetal", "nvlink": "none", "gpus": _gpus("A100-PCIE-40GB", 2)},
            {
                "name": "bm5",
                "platform": "baremetal",
                "nvlink": "none",
                "gpus": [
                    {
                        "index": 0,
                        "model": "H200-SXM5-141GB",
                        "mode": "mig",
                        "mig": [
                            {"profile": "3g.71gb", "start": 0},
                            {"profile": "3g.71gb", "start": 4, "compute_instances": ["1c.3g.71gb", "1c.3g.71gb"]},
                        ],
                    },
                    {
                        "index": 1,
                        "model": "NVIDIA RTX 6000 Ada Generation",
                        "mode": "full",
                        "not_in_catalog": {"memory_mib": 49140, "pci_device_id": "0x26B1"},
                    },
                ],
            },
            {
                "name": "esx1",
                "platform": "vsphere",
                "vsphere": {"version": "8.0U1"},
                "nvlink": "nvswitch",
                "gpus": esx1_gpus,
                "device_groups": [{"name": "dg-a", "gpus": [0, 1, 2, 3]}, {"name": "dg-b", "gpus": [6, 7]}],
                "vms": [
                    {"name": "train-01", "hardware_version": 20, "device_group": "dg-a"},
                    {"name": "dev-01", "hardware_version": 20},
                    {"name": "dev-02", "hardware_version": 19},
                ],
            },
            {
                "name": "esx2",
                "platform": "vsphere",
                "vsphere": {"version": "8.0U3"},
                "nvlink": "none",
                "gpus": [
                    {
                        "index": 0,
                        "model": "A40",
                        "mode": "vgpu",
                        "vgpus": [
                            {"vm": "vdi-01", "profile": "A40-8C"},
                            {"vm": "vdi-02", "profile": "A40-8C"},
                        ],
                    },
                    {
                        "index": 1,
                        "model": "A40",
                        "mode": "vgpu",
                        "vgpus": [{"vm": "vdi-01", "profile": "A40-16C"}],
                    },
                    {
                        "index": 2,
                        "model": "A100-PCIE-40GB",
                        "mode": "vgpu",
                        "vgpus": [
                            {"vm": "ml-01", "profile": "A100-3-20C"},
                            {"vm": "ml-01", "profile": "A100-2-10C"},
                        ],
                    },
                    {"index": 3, "model": "L40S", "mode": "passthrough", "vm": "pt-01"},
                ],
                "vms": [
                    {"name": "vdi-01", "hardware_version": 21},
                    {"name": "vdi-02", "hardware_version": 21},
                    {"name": "ml-01", "hardware_version": 21},
                    {"name": "pt-01", "hardware_version": 21, "gpus": [3]},
                ],
            },
            {
                "name": "esx7",
                "platform": "vsphere",
                "vsphere": {"version": "7.0U3"},
                "nvlink": "none",
                "gpus": [
                    {
                        "index": i,
                        "model": "A40",
                        "mode": "vgpu",
                        "vgpus": [{"vm": "old-01", "profile": "A40-48C"}],
                    }
                    for i in range(2)
                ],
                "vms": [{"name": "old-01", "hardware_version": 19}],
            },
            {
                "name": "k8s1",
                "platform": "baremetal", "orchestrator": "kubernetes",
                "gpus": [
                    {
                        "index": 0,
                        "model": "A30",
                        "mode": "mig",
                        "mig": [
                            {"profile": "2g.12gb", "start": 0},
                            {"profile": "1g.6gb", "start": 2},
                            {"profile": "1g.6gb+me", "start": 3},
                        ],
                    },
                    {"index": 1, "model": "A30", "mode": "time-sliced", "replicas": 2},
                ],
            },
        ],
        "jobs": [
            {
                "name": "train",
                "queue": "research",
                "request": {"gpus": 2, "nvlink": True},
                "status": "running",
                "placement": [{"node": "bm1", "gpu": 0}, {"node": "bm1", "gpu": 1}],
            },
            {
                "name": "infer",
                "queue": "inference",
                "request": {"mig": "2g.20gb"},
                "preemptible": False,
                "status": "running",
                "placement": [{"node": "bm1", "gpu": 2, "mig_start": 0}],
            },
            {
                "name": "nb1",
                "queue": "research",
                "request": {"fraction": 0.5},
                "status": "running",
                "placement": [{"node": "bm1", "gpu": 3}],
            },
            {
                "name": "nb2",
                "queue": "research",
                "request": {"gpu_memory_gib": 20},
                "status": "running",
                "placement": [{"node": "bm1", "gpu": 3}],
            },
            {
                "name": "mig-nb",
                "queue": "research",
                "request": {"fraction": 0.5},
                "status": "running",
                "placement": [{"node": "bm1", "gpu": 4, "mig_start": 0}],
            },
            {
                "name": "gang",
                "queue": "research",
                "request": {"gpus": 2, "nodes": 2, "nvlink": True, "rdma": True},
                "status": "running",
                "placement": [
                    {"node": "bm1", "gpu": 5},
                    {"node": "bm1", "gpu": 6},
                    {"node": "bm2", "gpu": 0},
                    {"node": "bm2", "gpu": 1},
                ],
            },
            {
                "name": "a30-job",
                "queue": "inference",
                "request": {"mig": "1g.6gb", "model": "A30"},
                "status": "running",
                "placement": [{"node": "k8s1", "gpu": 0, "mig_start": 2}],
            },
            {"name": "wait", "queue": "research", "request": {"gpus": 1}},
        ],
    }
    return Inventory.model_validate(raw)


_BASE = base_inventory()


class Scenario:
    """Edits on a view of the base cluster; `violations()` checks what the edits touched."""

    def __init__(self, inventory: Inventory | None = None) -> None:
        self.state = ClusterState.from_inventory(inventory or _BASE)
        self.view = View(self.state)
        self.touched = Touched()

    # -- edits ---------------------------------------------------------------------------------------------
    def node(self, name: str, **fields: Any) -> Scenario:
        node = self.view.node(name)
        assert node is not None, name
        self.view.put_node(name, node.model_copy(update=fields))
        self.touched.nodes.add(name)
        for gpu in self.view.node(name).gpus:  # type: ignore[union-attr]
            self.touched.gpus.add((name, gpu.index))
        return self

    def gpu(self, node: str, index: int, **fields: Any) -> Scenario:
        current = self.view.node(node)
        assert current is not None, node
        gpus: list[Gpu] = [g.model_copy(update=fields) if g.index == index else g for g in current.gpus]
        self.view.put_node(node, current.model_copy(update={"gpus": gpus}))
        self.touched.nodes.add(node)
        self.touched.gpus.add((node, index))
        return self

    def add_node(self, raw: dict[str, Any]) -> Scenario:
        node = Node.model_validate(raw)
        self.view.put_node(node.name, node)
        self.touched.nodes.add(node.name)
        self.touched.gpus |= {(node.name, g.index) for g in node.gpus}
        return self

    def job(self, name: str, **fields: Any) -> Scenario:
        job = self.view.job(name)
        assert job is not None, name
        self.view.put_job(name, job.model_copy(update=fields))
        self.touched.jobs.add(name)
        return self

    def bind(self, name: str, *slots: tuple[str, int] | tuple[str, int, int]) -> Scenario:
        """What `bind-job` does: the job runs on these slots."""
        placement = [Slot(node=s[0], gpu=s[1], mig_start=s[2] if len(s) > 2 else None) for s in slots]
        return self.job(name, status="running", placement=placement)

    def preempt(self, name: str) -> Scenario:
        return self.job(name, status="preempted", placement=[])

    def submit(self, raw: dict[str, Any]) -> Scenario:
        job = Job.model_validate(raw)
        self.view.put_job(job.name, job)
        self.touched.jobs.add(job.name)
        return self

    def cancel(self, name: str) -> Scenario:
        self.view.put_job(name, None)
        self.touched.jobs.add(name)
        return self

    def queue(self, name: str, **fields: Any) -> Scenario:
        queue = self.view.queue(name)
        assert queue is not None, name
        self.view.put_queue(name, queue.model_copy(update=fields))
        self.touched.queues.add(name)
        return self

    def remove_queue(self, name: str) -> Scenario:
        """As a restore that removes it does: only the queue is touched (the rules find the jobs naming it)."""
        self.view.put_queue(name, None)
        self.touched.queues.add(name)
        return self

    def add_queue(self, raw: dict[str, Any]) -> Scenario:
        queue = Queue.model_validate(raw)
        self.view.put_queue(queue.name, queue)
        self.touched.queues.add(queue.name)
        return self

    # -- verdict -------------------------------------------------------------------------------------------
    def violations(self) -> list[Violation]:
        return check(self.view, self.touched)


def everything(view: View) -> Touched:
    """Touch every entity of a view (a whole-cluster check)."""
    nodes = list(view.nodes())
    return Touched(
        nodes={n.name for n in nodes},
        gpus={(n.name, g.index) for n in nodes for g in n.gpus},
        jobs={j.name for j in view.jobs()},
        queues={q.name for q in view.queues()},
    )
