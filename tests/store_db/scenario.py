"""A small cluster and a deterministic edit sequence, shared by the tests and the driver processes.

`edit_for(state, k)` builds the view that takes revision k-1 to revision k; replaying it in memory from
`base_inventory()` gives the exact state every revision must have on disk.
"""

from __future__ import annotations

from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model import Gpu, Inventory, Job, Node, Queue, Request, Resources, Slot

NODES = 4
GPUS = 8


def base_inventory(cluster: str = "crash") -> Inventory:
    nodes = [
        Node(
            name=f"n{i}",
            platform="baremetal",
            cpus=64,
            memory_gib=512,
            labels={"pool": "a" if i % 2 else "b"},
            gpus=[Gpu(index=g, model="H100-SXM5-80GB") for g in range(GPUS)],
        )
        for i in range(NODES)
    ]
    queues = [
        Queue(name="q0", quota=Resources(gpus=0)),
        Queue(name="q1", quota=Resources(gpus=16), priority=5),
        Queue(name="counter", quota=Resources(gpus=0)),
    ]
    jobs = [
        Job(name="p0", queue="q0", request=Request(gpus=1)),
        Job(
            name="r0",
            queue="q1",
            request=Request(gpus=2),
            status="running",
            placement=[Slot(node="n0", gpu=0), Slot(node="n0", gpu=1)],
        ),
        Job(name="p1", queue="q1", request=Request(gpus=4), priority=3),
        Job(
            name="r1",
            queue="q0",
            request=Request(fraction=0.5),
            status="running",
            placement=[Slot(node="n1", gpu=3)],
        ),
    ]
    return Inventory(version=1, cluster=cluster, queues=queues, nodes=nodes, jobs=jobs)


def edit_for(state: ClusterState, k: int) -> View:
    """The edits of revision k (applied on revision k-1): each revision touches jobs, and in turn
    queues and nodes, adds and removes rows, and moves running jobs (so the slots table changes)."""
    view = View(state)
    view.put_job(f"j{k}", Job(name=f"j{k}", queue="q0" if k % 2 else "q1", request=Request(gpus=1)))
    if k % 3 == 0 and view.job(f"j{k - 2}") is not None:
        view.put_job(f"j{k - 2}", None)
    if k % 4 == 0:  # start a running job on a GPU derived from k, and stop the one from 4 revisions ago
        node, gpu = f"n{(k // 4) % NODES}", k % GPUS
        view.put_job(
            f"run{k}",
            Job(
                name=f"run{k}",
                queue="q1",
                request=Request(gpus=1),
                status="running",
                placement=[Slot(node=node, gpu=gpu)],
            ),
        )
        old = view.job(f"run{k - 4}")
        if old is not None:
            view.put_job(old.name, old.model_copy(update={"status": "completed", "placement": []}))
    if k % 2 == 0:
        q = view.queue("q0")
        assert q is not None
        view.put_queue("q0", q.model_copy(update={"quota": Resources(gpus=k)}))
    if k % 5 == 0:
        n = view.node("n2")
        assert n is not None
        view.put_node("n2", n.model_copy(update={"labels": {**n.labels, "rev": str(k)}}))
    if k % 7 == 0:
        view.put_node(
            f"extra{k}",
            Node(name=f"extra{k}", platform="baremetal", orchestrator="kubernetes", gpus=[Gpu(index=0, model="A30")]),
        )
        if view.node(f"extra{k - 7}") is not None:
            view.put_node(f"extra{k - 7}", None)
    if k % 11 == 0:
        view.put_queue(f"tmp{k}", Queue(name=f"tmp{k}"))
        if view.queue(f"tmp{k - 11}") is not None:
            view.put_queue(f"tmp{k - 11}", None)
    return view


class Replay:
    """The expected state at each revision, computed in memory and advanced on demand."""

    def __init__(self, inventory: Inventory) -> None:
        self.state = ClusterState.from_inventory(inventory)

    def at(self, revision: int) -> Inventory:
        assert revision >= self.state.revision, "Replay only moves forward"
        while self.state.revision < revision:
            self.state.commit(edit_for(self.state, self.state.revision + 1))
        return self.state.to_inventory()
