"""Node rules: node states gate placements (DESIGN §4 cordon/drain, §5 Placement), and the lookups every rule
family shares (a catalog model, a job's slices on one GPU, what a plan newly placed)."""

from __future__ import annotations

from collections.abc import Iterable

from gpuadmin.catalog import get_catalog
from gpuadmin.catalog.entities import GpuModel
from gpuadmin.engine.rules.base import GpuSite, Violation, gpu_target, job_target, node_target, rule
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu, Job, Node, Slot

EPSILON = 1e-9  # float tolerance for fractions and GiB sums


# ---------------------------------------------------------------------------------------- shared lookups


def model_of(gpu: Gpu) -> GpuModel | None:
    return get_catalog().model(gpu.model)


def running(job: Job | None) -> bool:
    return job is not None and job.status == "running"


def slots_on(job: Job, node: str, gpu: int) -> list[Slot]:
    return [s for s in job.placement if s.node == node and s.gpu == gpu]


def holder_jobs(view: View, node: str, gpu: int) -> tuple[Job, ...]:
    """The running jobs holding (part of) a GPU, by name (stable order)."""
    return view.holder_jobs((node, gpu))


def base_slots(view: View, job_name: str) -> frozenset[tuple[str, int, int | None]]:
    """The slices a job held in the committed state (empty if it was not running)."""
    return view.shared("base-slots", job_name, lambda: _base_slots(view, job_name))


def _base_slots(view: View, job_name: str) -> frozenset[tuple[str, int, int | None]]:
    job = view.base.jobs.get(job_name)
    if job is None or job.status != "running":
        return frozenset()
    return frozenset((s.node, s.gpu, s.mig_start) for s in job.placement)


def new_slots(view: View, job: Job) -> list[Slot]:
    """The slots of a running job that this plan adds (all of them for a job bound in this plan, or placed by a
    hand-written restore).

    Only an undo (or redo) gives back slots without the new-placement rules, and only those the journal entry it
    reverts released (`View.released`).
    """
    if job.status != "running":
        return []
    before = base_slots(view, job.name) | view.released.get(job.name, frozenset())
    return [s for s in job.placement if (s.node, s.gpu, s.mig_start) not in before]


def names(items: Iterable[str]) -> str:
    return ", ".join(items)


# ------------------------------------------------------------------------------------------------ rules

_NO_NEW = ("cordoned", "draining", "down")


@rule("node.no-new-placements", "Cordoned, draining and down nodes take no new placements.", "job")
def no_new_placements(view: View, name: str) -> Iterable[Violation]:
    job = view.job(name)
    if job is None:
        return
    for slot in new_slots(view, job):
        node = view.node(slot.node)
        if node is not None and node.state in _NO_NEW:
            yield Violation(
                "node.no-new-placements",
                job_target(name),
                f"job {name} would be placed on node {slot.node} (GPU {slot.gpu}), which is {node.state}",
                ("place the job on a ready node; a down node comes back only with repair-node"
                 if node.state == "down" else f"uncordon {slot.node} first, or place the job on a ready node"),
            )


def _entering_drain(view: View, node: Node) -> bool:
    base = view.base.nodes.get(node.name)
    return node.state == "draining" and (base is None or base.state != "draining")


def _running_on(view: View, node: Node) -> list[Job]:
    seen: dict[str, Job] = {}
    for gpu in node.gpus:
        for job in holder_jobs(view, node.name, gpu.index):
            seen[job.name] = job
    return [seen[n] for n in sorted(seen)]


@rule("node.drain-blocked", "A node cannot be drained while it runs non-preemptible jobs.", "node")
def drain_blocked(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or not _entering_drain(view, node):
        return
    stuck = [j.name for j in _running_on(view, node) if not j.preemptible]
    if stuck:
        yield Violation(
            "node.drain-blocked",
            node_target(name),
            f"draining {name} is blocked by {len(stuck)} non-preemptible running job(s): {names(stuck)}",
            "cancel those jobs or wait for them to complete, then drain; or cordon the node instead",
        )


@rule(
    "node.drain-evicts",
    "Draining a node evicts its preemptible jobs in the same plan, never silently.",
    "node",
)
def drain_evicts(view: View, name: str) -> Iterable[Violation]:
    node = view.node(name)
    if node is None or not _entering_drain(view, node):
        return
    left = [j.name for j in _running_on(view, node) if j.preemptible]
    if left:
        yield Violation(
            "node.drain-evicts",
            node_target(name),
            f"{name} is set to draining but {len(left)} preemptible job(s) still run on it: {names(left)}",
            "use the drain op (it preempts them), or add preempt-job for each in the same plan",
        )


@rule(
    "node.gpu-model-known",
    "A GPU's model is a catalog model, or the GPU is marked not_in_catalog (kept whole, with its memory).",
    "gpu",
)
def gpu_model_known(view: View, site: GpuSite) -> Iterable[Violation]:
    key = site.key
    found = view.gpu_at(key)
    if found is None:
        return
    gpu = found[1]
    catalogued = site.model
    if catalogued is None and gpu.not_in_catalog is None:
        yield Violation(
            "node.gpu-model-known",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} names model {gpu.model!r}, which is not in the catalog",
            "use a catalog model name (`gpuadmin describe catalog`), or keep a product the catalog does not "
            "know with 'not_in_catalog: {memory_mib: N}'",
        )
    elif catalogued is not None and gpu.not_in_catalog is not None:
        yield Violation(
            "node.gpu-model-known",
            gpu_target(*key),
            f"GPU {key[1]} on {key[0]} is marked not_in_catalog, but {gpu.model!r} is the catalog's "
            f"{catalogued.name}",
            "drop 'not_in_catalog' so the catalog's facts apply",
        )
