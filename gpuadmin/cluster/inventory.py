"""A cluster snapshot as gpuadmin's inventory: the nodes as read, the GPU pods as jobs, the KAI Queues as queues.

- A pod is a job named `NAMESPACE/NAME`. The pods of one PodGroup (KAI's `pod-group-name` annotation, or the
  coscheduling label) that all ask for the same whole GPUs are one gang job, `NAMESPACE/GROUP`, of `nodes:` as many
  as it has pods: the scheduler places all of it or none. A PodGroup whose pods ask for different things is read as
  its pods, one job each, and a finding says so. Pods of a ReplicaSet or a Job without a PodGroup are scheduled one
  by one by Kubernetes, so they are one job each too.
- A running pod holds slots of its node, which neither the Pod nor the device plugin's API names (which GPU a
  container got is the kubelet's secret): gpuadmin gives it the first free ones that fit, in name order — whole
  GPUs of full mode, an instance of its MIG profile, a replica of a time-sliced GPU (or a share of a full one, for
  a KAI fraction). A running pod that fits nowhere on its node is skipped with a finding.
- A queue that pods name but no KAI Queue defines is read as a queue without quota, and a finding says so.

Pure: nothing here talks to the cluster (`read.py` does).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from gpuadmin.adapters._common import held_by_the_models
from gpuadmin.adapters.kube_cluster import ClusterPod
from gpuadmin.cluster.read import ClusterSnapshot, Finding
from gpuadmin.engine.scheduler.cycle import GPUADMIN_SCHEDULER
from gpuadmin.model import Inventory, Job, Node, Queue, Request, Slot
from gpuadmin.model.inventory import JobStatus

GpuKey = tuple[str, int]


@dataclass
class _Held:
    """What the running pods read so far hold, so that the next one gets other slots."""

    whole: set[GpuKey] = field(default_factory=set)
    mig: set[tuple[str, int, int]] = field(default_factory=set)
    replicas: dict[GpuKey, int] = field(default_factory=dict)  # replicas of a time-sliced GPU taken
    shares: dict[GpuKey, float] = field(default_factory=dict)  # fractions of a full GPU taken

    def whole_gpus(self, node: Node, count: int) -> list[Slot] | None:
        free = [g.index for g in node.gpus if g.mode == "full" and (node.name, g.index) not in self.whole
                and not self.shares.get((node.name, g.index))]
        if len(free) < count:
            return None
        self.whole |= {(node.name, i) for i in free[:count]}
        return [Slot(node=node.name, gpu=i) for i in free[:count]]

    def mig_instance(self, node: Node, profile: str) -> list[Slot] | None:
        for gpu in node.gpus:
            for instance in gpu.mig or ():
                key = (node.name, gpu.index, instance.start)
                if instance.profile == profile and instance.start is not None and key not in self.mig:
                    self.mig.add((node.name, gpu.index, instance.start))
                    return [Slot(node=node.name, gpu=gpu.index, mig_start=instance.start)]
        return None

    def shared_gpu(self, node: Node, fraction: float) -> list[Slot] | None:
        for gpu in node.gpus:
            key = (node.name, gpu.index)
            if gpu.mode == "time-sliced" and self.replicas.get(key, 0) < (gpu.replicas or 0):
                self.replicas[key] = self.replicas.get(key, 0) + 1
                return [Slot(node=node.name, gpu=gpu.index)]
        for gpu in node.gpus:
            key = (node.name, gpu.index)
            if gpu.mode == "full" and key not in self.whole and self.shares.get(key, 0.0) + fraction <= 1.0 + 1e-9:
                self.shares[key] = self.shares.get(key, 0.0) + fraction
                return [Slot(node=node.name, gpu=gpu.index)]
        return None

    def claim(self, nodes: Mapping[str, Node], placement: list[Slot], fraction: float | None = None) -> bool:
        """Hold exactly these slots (the state's placement of a job still running where it ran), if all are free
        and still there; else hold nothing. `fraction`: the job holds that share of each GPU (KAI's gpu-fraction),
        not the whole of it, so other fractions may share the GPU as they did in the state."""
        taken: list[tuple[Slot, str]] = []
        for slot in placement:
            node = nodes.get(slot.node)
            gpu = node.gpu(slot.gpu) if node is not None else None
            if gpu is None or not self.take(slot, gpu.mode, gpu.replicas or 0, fraction):
                for done, mode in taken:
                    self.give_back(done, mode, fraction)
                return False
            taken.append((slot, gpu.mode))
        return True

    def give_back(self, slot: Slot, mode: str, fraction: float | None = None) -> None:
        key = (slot.node, slot.gpu)
        if slot.mig_start is not None:
            self.mig.discard((slot.node, slot.gpu, slot.mig_start))
        elif mode == "time-sliced":
            self.replicas[key] -= 1
        elif fraction is not None:
            self.shares[key] -= fraction
        else:
            self.whole.discard(key)

    def take(self, slot: Slot, mode: str, replicas: int, fraction: float | None = None) -> bool:
        key = (slot.node, slot.gpu)
        if mode == "full" and fraction is not None and slot.mig_start is None:
            if key in self.whole or self.shares.get(key, 0.0) + fraction > 1.0 + 1e-9:
                return False
            self.shares[key] = self.shares.get(key, 0.0) + fraction
            return True
        if slot.mig_start is not None:
            if (slot.node, slot.gpu, slot.mig_start) in self.mig:
                return False
            self.mig.add((slot.node, slot.gpu, slot.mig_start))
        elif mode == "time-sliced":
            if self.replicas.get(key, 0) >= replicas:
                return False
            self.replicas[key] = self.replicas.get(key, 0) + 1
        elif mode != "full" or key in self.whole:
            return False
        else:
            self.whole.add(key)
        return True

    def slots(self, node: Node, request: Request) -> list[Slot] | None:
        if request.gpus is not None:
            return self.whole_gpus(node, request.gpus)
        if request.mig is not None:
            return self.mig_instance(node, request.mig)
        return self.shared_gpu(node, request.fraction or 0.0)


@dataclass
class ClusterInventory:
    inventory: Inventory
    findings: list[Finding]


def cluster_inventory(snapshot: ClusterSnapshot, cluster: str,
                      previous: Mapping[str, Job] | None = None) -> ClusterInventory:
    """The snapshot as an inventory named `cluster`, and the findings of making it (with the snapshot's own).
    `previous`: the state's jobs; a running job still running on the same nodes keeps the slots the state gave it
    (the cluster does not say which GPU a pod holds: a sync must not reshuffle them)."""
    nodes = {read.node.name: read.node for read in snapshot.nodes}
    findings = list(snapshot.findings)
    held = _Held()
    units = _units(snapshot.pods, findings)
    kept: dict[str, list[Slot]] = {}
    for unit in units:
        before = (previous or {}).get(_unit_name(unit))
        running = [p for p in unit if p.status == "running"]
        if before is not None and before.status == "running" and running and \
                {s.node for s in before.placement} == {p.node for p in running} and \
                held.claim(nodes, before.placement, before.request.fraction):
            kept[_unit_name(unit)] = before.placement
    jobs: dict[str, Job] = {}
    for unit in units:
        job = _job(unit, snapshot, nodes, held, findings, kept.get(_unit_name(unit)))
        if job is not None and job.name in jobs:  # a pod named as another's PodGroup, in the same namespace
            findings.append(Finding("pod", unit[0].job_name, "", f"skipped: job {job.name} is read already"))
        elif job is not None:
            jobs[job.name] = job
    queues = list(snapshot.queues)
    known = {q.name for q in queues}
    unknown: dict[str, int] = defaultdict(int)
    for job in jobs.values():
        if job.queue not in known:
            unknown[job.queue] += 1
    for name, count in sorted(unknown.items()):
        queues.append(Queue(name=name))
        findings.append(Finding("queue", name, "", f"named by {count} job(s) but defined by no KAI Queue: read as a "
                                                   "queue without quota"))
    with held_by_the_models(f"cluster {cluster[:80]!r}"):  # more nodes or jobs than a state holds, say
        inventory = Inventory(version=1, cluster=cluster, queues=queues, nodes=list(nodes.values()),
                              jobs=list(jobs.values()))
    return ClusterInventory(inventory, findings)


def _units(pods: list[ClusterPod], findings: list[Finding]) -> list[list[ClusterPod]]:
    """The pods grouped as they become jobs: each PodGroup whose pods all ask for the same whole GPUs is one gang,
    every other pod one job; in name order."""
    groups: dict[str, list[ClusterPod]] = defaultdict(list)
    units: list[list[ClusterPod]] = []
    for pod in pods:
        if pod.pod_group is not None:
            groups[f"{pod.namespace}/{pod.pod_group}"].append(pod)
        elif pod.gpuadmin_job is not None:  # the pods gpuadmin submitted for one job: a gang's are one job again
            groups[pod.gpuadmin_job].append(pod)
        else:
            units.append([pod])
    for name, members in groups.items():
        requests = {(p.request.kind, p.request.gpus) for p in members}
        if len(members) > 1 and (len(requests) > 1 or next(iter(requests))[0] != "gpus"):
            findings.append(Finding("podgroup", name, "", f"its {len(members)} pods ask for different or partial "
                                    "GPUs: read as one job each, not as a gang"))
            units += [[p] for p in members]
        else:
            units.append(members)
    return sorted(units, key=lambda unit: _unit_name(unit))


def _unit_name(unit: list[ClusterPod]) -> str:
    first = unit[0]
    if first.gpuadmin_job is not None and first.pod_group is None:
        return first.gpuadmin_job
    return f"{first.namespace}/{first.pod_group}" if len(unit) > 1 else first.job_name


def _status(unit: list[ClusterPod]) -> JobStatus:
    """A gang runs while any of its pods runs (the rest are being replaced), is done when all are, else waits."""
    statuses = {p.status for p in unit}
    if "running" in statuses:
        return "running"
    if statuses == {"completed"}:
        return "completed"
    return "pending"


def _job(unit: list[ClusterPod], snapshot: ClusterSnapshot, nodes: dict[str, Node], held: _Held,
         findings: list[Finding], kept: list[Slot] | None) -> Job | None:
    first, name = unit[0], _unit_name(unit)
    status = _status(unit)
    placement: list[Slot] = list(kept or ())
    for pod in unit:
        if pod.status != "running" or kept is not None:
            continue
        node = nodes.get(pod.node or "")
        slots = held.slots(node, pod.request) if node is not None else None
        if slots is None:
            why = (f"runs on node {pod.node}, which was not read" if node is None else
                   f"runs on node {pod.node}, where gpuadmin finds no free {pod.request.kind} slot for it")
            findings.append(Finding("pod", pod.job_name, "spec.nodeName", f"skipped: {why}"))
            return None
        placement += slots
    group = snapshot.pod_groups.get(name) if len(unit) > 1 else None
    queue = group.queue if group is not None and group.queue else first.queue
    request = first.request if len(unit) == 1 else first.request.model_copy(update={"nodes": len(unit)})
    try:
        return Job(name=name, queue=queue, request=request, priority=max(p.priority for p in unit), status=status,
                   placement=placement, scheduler=_scheduler(first), tolerations=list(first.tolerations) or None)
    except ValidationError as invalid:
        problem = invalid.errors()[0]
        where = ".".join(str(p) for p in problem["loc"])
        findings.append(Finding("pod", first.job_name, "", f"skipped: as job {name[:80]!r}: {where}: "
                                                           f"{problem['msg']}"))
        return None


def _scheduler(pod: ClusterPod) -> str | None:
    """The job's scheduler as the model holds it: None for gpuadmin's own (schedulerName `gpuadmin`: a pod gpuadmin
    submitted, or one a user addressed to it), so that a job submitted through gpuadmin reads back as it was."""
    return None if pod.scheduler_name == GPUADMIN_SCHEDULER else pod.scheduler_name
