"""Rows of every listing (`get KIND`, the TUI's tables): pure functions from domain objects to columns.

Each kind has its typed columns (`gpuadmin.render.columns`: the table's, the `wide` ones that add to it, the
`hidden` ones only the data carries), a row function, and a name function for `-o name`. The values are plain
data; the CLI formats them as text, JSON or YAML, the TUI as cells, both by the columns' kinds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu, Job, MigInstance, Node, Queue
from gpuadmin.model.places import slice_place, vm_place
from gpuadmin.render.columns import Column, Kind, number, text
from gpuadmin.render.overview import DynamicShare, dynamic_share, gpu_use, holders_by_slice, vm_holders

Row = dict[str, Any]


@dataclass(frozen=True)
class Listing:
    kind: str
    fields: tuple[Column, ...]  # every column its rows hold, the table's in table order
    rows: Callable[[View], Iterator[Row]] | None  # None: rows come from the store (the journal)
    key: str = "NAME"  # the column `get KIND NAME` and `-o name` use
    # each row's `key`, in row order, without making the rows, for `get KIND -o name` where making them is
    # most of its time (100,000 jobs): held equal to `row[key] for row in rows(view)` by tests/cli/test_columns.py
    names: Callable[[View], Iterator[str]] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """The names of the table's columns."""
        return tuple(c.name for c in self.fields if not c.wide and not c.hidden)

    @property
    def wide(self) -> tuple[str, ...]:
        """The names of the columns `-o wide` adds."""
        return tuple(c.name for c in self.fields if c.wide)

    def column(self, name: str) -> Column:
        """The column named `name`; a plain text column where the listing does not declare it."""
        return next((c for c in self.fields if c.name == name), Column(name))


def _mode_summary(node: Node) -> str:
    counts = Counter(g.mode for g in node.gpus)
    return " ".join(f"{mode}:{n}" for mode, n in sorted(counts.items()))


def _models(node: Node) -> str:
    counts = Counter(g.model for g in node.gpus)
    return ",".join(f"{n}x{model}" for model, n in sorted(counts.items()))


def node_row(view: View, node: Node) -> Row:
    uses = Counter(gpu_use(view, node, g) for g in node.gpus)
    rdma = f"{node.rdma.nics}x{node.rdma.gbps}G {node.rdma.network}" if node.rdma else "-"
    return {
        "NAME": node.name, "PLATFORM": node.platform, "ORCHESTRATOR": node.orchestrator, "STATE": node.state,
        "GPUS": len(node.gpus),
        "FREE": uses["free"], "PARTLY_USED": uses["partly used"], "FULL": uses["full"],
        "MODELS": _models(node), "MODES": _mode_summary(node),
        "RDMA": rdma, "SHAPE": node.shape or "-", "CPUS": node.cpus, "MEMORY_GIB": node.memory_gib,
        "NVLINK": node.nvlink_kind, "LABELS": ",".join(f"{k}={v}" for k, v in sorted(node.labels.items())),
    }


def _compute_instances(inst: MigInstance) -> str:
    """`(1c+1c)` after a GI split into compute instances; nothing for the default full-width CI."""
    return f"({'+'.join(c.split('.', 1)[0] for c in inst.compute_instances or ())})" if inst.split else ""


def _dynamic_layout(shared: DynamicShare) -> str:
    if not shared.holders:
        return "whole (fractions may share it)"
    return f"shared by {len(shared.holders)}: {shared.used:.2g} GPU used, {shared.left_gib:.1f} GiB left"


def _layout(gpu: Gpu, shared: DynamicShare | None = None) -> str:
    if shared is not None:
        return _dynamic_layout(shared)
    if gpu.not_in_catalog is not None and gpu.mode == "full":
        return "whole (not in catalog)"
    if gpu.mode == "mig":
        return " ".join(f"{i.profile}@{i.start if i.start is not None else '?'}" + _compute_instances(i)
                        + (f"x{i.replicas}" if i.replicas else "") for i in gpu.mig or ()) or "(no instances)"
    if gpu.mode == "time-sliced":
        return f"{gpu.replicas} replicas" + (f" ({gpu.sharing})" if gpu.sharing else "")
    if gpu.mode == "vgpu":
        return " ".join(f"{v.profile}>{v.vm}" for v in gpu.vgpus or ()) or "(no vGPUs)"
    if gpu.mode == "passthrough":
        return f"vm {gpu.vm}" if gpu.vm else "(unattached)"
    return "whole"


# Live telemetry (issue 23), wide-only: None here; the service fills them from the Prometheus snapshot where a
# Prometheus is set (gpuadmin.render.telemetry.telemetry_cells), so a listing without one shows `-`, never 0
NO_TELEMETRY: Row = {"UTIL": None, "MEM": None, "TEMP": None, "POWER": None}
# A GPU's row's columns that telemetry fills (HEALTH: `fenced` is the state's, the rest the readings')
LIVE_GPU_KEYS = frozenset({*NO_TELEMETRY, "HEALTH", "ALERTS"})


def _telemetry_columns() -> tuple[Column, ...]:
    # asked for (`-o wide`, the console's ctrl+w), they outrank the state's wide columns (0), busy first: at 80
    # columns UTIL stays beside the holders (who holds it, and whether they use it); POWER gives way first
    return (number("UTIL", float | None, wide=True, priority=4), number("MEM", int | None, wide=True, priority=2),
            number("TEMP", int | None, wide=True, priority=3), number("POWER", float | None, wide=True, priority=1))


def gpu_row(view: View, node: Node, gpu: Gpu) -> Row:
    model = get_catalog().model(gpu.model)
    shared = dynamic_share(view, node, gpu)
    holders = sorted(view.holders(node.name, gpu.index)) + [f"vm:{vm}" for vm in vm_holders(node, gpu)]
    if shared is not None and shared.holders:  # who holds how much of a dynamically shared GPU
        holders = [f"{name}({share:g}, {gib:g}GiB)" for name, share, gib in shared.holders]
    return {
        "NODE": node.name, "GPU": gpu.index, "MODEL": gpu.model, "MODE": gpu.mode, "LAYOUT": _layout(gpu, shared),
        "USE": gpu_use(view, node, gpu), "HOLDERS": ",".join(holders) or "-", "NAME": f"{node.name}/{gpu.index}",
        "MEMORY_MIB": model.memory_mib if model else (gpu.not_in_catalog.memory_mib if gpu.not_in_catalog else None),
        "NODE_STATE": node.state, **NO_TELEMETRY,
        # fenced is the state's; the rest (flagged by XID/ECC readings, ok) and ALERTS come with telemetry
        "HEALTH": "fenced" if gpu.unhealthy else None, "ALERTS": None,
    }


def _slices(view: View, node: Node, gpu: Gpu) -> Iterator[Row]:
    by_slice = holders_by_slice(view, node, gpu)

    def on(mig_start: int | None) -> list[Job]:
        return by_slice.get(mig_start, [])

    base = {"NODE": node.name, "GPU": gpu.index, "MODEL": gpu.model}
    model = get_catalog().model(gpu.model)
    memory_gib = (model.memory_mib / 1024) if model is not None else None
    vms = vm_holders(node, gpu)

    def held(jobs: list[Job], size: float, gib: float | None) -> float:
        """The GPUs these holders hold of a slice of `size` GPUs (and `gib` of memory): a fraction its
        fraction, a memory request its share of the memory, anything else the whole slice."""
        total = 0.0
        for j in jobs:
            if j.request.fraction is not None:
                total += j.request.fraction * size
            elif j.request.gpu_memory_gib is not None and gib:
                total += min(1.0, j.request.gpu_memory_gib / gib) * size
            else:
                total += size
        return round(min(total, size), 3)

    def row(slice_: str, size: float, used: float, replicas: str, holders: list[str], name: str) -> Row:
        return {**base, "SLICE": slice_, "SIZE_GPUS": round(size, 3), "HELD_GPUS": used, "REPLICAS": replicas,
                "HOLDERS": ",".join(holders) or "-", "NAME": name, **NO_TELEMETRY}

    if gpu.mode == "mig":
        for inst in gpu.mig or ():
            jobs = on(inst.start)
            kind = f"mig {inst.profile}@{inst.start}" + (
                f" [{', '.join(inst.compute_instances or ())}]" if inst.split else "")
            prof = model.mig_profile(inst.profile) if model is not None else None
            size = prof.compute_slices / model.compute_slices if prof is not None and model and \
                model.compute_slices else 0.0
            gib = (prof.memory_gib if prof is not None and prof.memory_gib is not None else
                   (memory_gib or 0) * prof.memory_slices / model.memory_slices
                   if prof is not None and model is not None and model.memory_slices else None)
            replicas = f"{len(jobs)}/{inst.replicas}" if inst.replicas else ("1/1" if jobs else "0/1")
            yield row(kind, size, held(jobs, size, gib), replicas, [j.name for j in jobs],
                      slice_place(node.name, gpu.index, inst.start, inst.profile))
    elif gpu.mode == "time-sliced":
        jobs = on(None)
        yield row(f"time-sliced x{gpu.replicas}", 1.0, held(jobs, 1.0, memory_gib), f"{len(jobs)}/{gpu.replicas}",
                  [j.name for j in jobs], f"{node.name}/{gpu.index}")
    elif gpu.mode == "vgpu":
        for i, v in enumerate(gpu.vgpus or ()):
            vtype = model.vgpu_type(v.profile) if model is not None else None
            board = model.vgpu_framebuffer_mib if model is not None else None
            size = round(vtype.framebuffer_mib / board, 3) if vtype is not None and board else 0.0
            yield row(f"vgpu {v.profile}", size, size, "1/1", [f"vm:{v.vm}"], f"{node.name}/{gpu.index}/vgpu{i}")
    elif gpu.mode == "passthrough" or vms:
        yield row("passthrough" if gpu.mode == "passthrough" else "whole", 1.0, 1.0 if vms else 0.0,
                  "1/1" if vms else "0/1", [f"vm:{vm}" for vm in vms], f"{node.name}/{gpu.index}")
    elif (shared := dynamic_share(view, node, gpu)) is not None and shared.holders:
        yield row("shared (dynamic)", 1.0, round(shared.used, 3), f"{len(shared.holders)} fractions",
                  [name for name, _, _ in shared.holders], f"{node.name}/{gpu.index}")
    else:
        jobs = on(None)
        yield row("whole", 1.0, 1.0 if jobs else 0.0, "1/1" if jobs else "0/1", [j.name for j in jobs],
                  f"{node.name}/{gpu.index}")


def _group_rows(view: View) -> Iterator[Row]:
    for node in view.nodes():
        holders = {vm.device_group: vm.name for vm in node.vms if vm.device_group}
        for group in node.device_groups:
            yield {"NODE": node.name, "NAME": group.name, "SIZE": len(group.gpus),
                   "GPUS": ",".join(str(g) for g in group.gpus), "VM": holders.get(group.name, "-"),
                   "NVLINK": node.nvlink_kind}


def describe_request(job: Job) -> str:
    r = job.request
    if r.gpus is not None:
        text = f"{r.gpus} GPU" + ("s" if r.gpus > 1 else "")
        if r.nodes > 1:
            text += f" x{r.nodes} nodes"
    elif r.mig is not None:
        text = f"mig {r.mig}"
    elif r.fraction is not None:
        text = f"{r.fraction:g} GPU"
    else:
        text = f"{r.gpu_memory_gib:g} GiB"
    flags = [f for f, on in (("nvlink", r.nvlink), ("rdma", r.rdma)) if on]
    if r.model:
        flags.append(r.model)
    if r.cpus is not None:
        flags.append(f"cpu={r.cpus:g}")
    if r.memory_gib is not None:
        flags.append(f"mem={r.memory_gib:g}GiB")
    if job.isolation:
        flags.append(job.isolation)
    return text + (" " + " ".join(flags) if flags else "")


def _ranges(indexes: list[int]) -> str:
    """[0, 1, 2, 3, 6] -> "0-3,6"."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in runs)


def placement_text(job: Job, view: View | None = None) -> str:
    """`node/0-7,node2/0-7` for whole GPUs; `node/1/3g.40gb@4` for MIG instances; `node/vm:NAME` for a job
    in a VM (gpuadmin.model.places)."""
    if job.vm is not None and job.placement:
        return ",".join(vm_place(n, job.vm) for n in dict.fromkeys(s.node for s in job.placement))
    whole: dict[str, list[int]] = {}
    parts: list[str] = []
    for s in job.placement:
        if s.mig_start is None:
            if s.node not in whole:
                whole[s.node] = []
                parts.append(s.node)
            whole[s.node].append(s.gpu)
        else:
            node = view.node(s.node) if view is not None else None
            gpu = node.gpu(s.gpu) if node is not None else None
            found = [i.profile for i in (gpu.mig or ()) if i.start == s.mig_start] if gpu is not None else []
            parts.append(slice_place(s.node, s.gpu, s.mig_start, found[0] if found else None))
    return ",".join(f"{p}/{_ranges(whole[p])}" if p in whole else p for p in parts)


def age_text(submitted: str | None, now: datetime) -> str:
    """kubectl's AGE of an ISO 8601 time at `now`, in its largest whole unit: 42s, 7m, 3h, 12d. "-" where
    the time is not known; a time ahead of `now` (clocks disagree) is 0s."""
    if submitted is None or submitted == "-":
        return "-"
    seconds = max(0, int((now - datetime.fromisoformat(submitted)).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def job_row(view: View, job: Job) -> Row:
    """A job's row. AGE needs the clock: "-" here, filled by the caller that has `now` (`age_text`), as
    REASON (why a pending job waits, as a stable code: `over-limit`, `capacity`...), REMEDY (what would make
    room) and MESSAGE (all in words, with the figures) are by the one that ran the cycle."""
    return {
        "NAME": job.name, "QUEUE": job.queue, "STATUS": job.status, "REQUEST": describe_request(job),
        "PRIORITY": job.priority, "PREEMPTIBLE": job.preemptible,
        "PLACEMENT": placement_text(job, view) or "-", "AGE": "-", "REASON": "-", "REMEDY": "-",
        "MESSAGE": "-",
        "OWNER": job.owner or "-", "SUBMITTED": job.submitted.isoformat() if job.submitted else "-",
        "VM": job.vm or "-",
    }


def queue_row(view: View, queue: Queue) -> Row:
    used = view.queue_usage(queue.name)
    quota = queue.quota.gpus or 0
    limit = queue.limit
    return {
        "NAME": queue.name, "QUOTA_GPUS": queue.quota.gpus, "LIMIT_GPUS": limit.gpus if limit else None,
        "USED_GPUS": round(used.gpus, 2), "BORROWED_GPUS": round(max(0.0, used.gpus - quota), 2),
        "QUOTA_GIB": queue.quota.gpu_memory_gib, "LIMIT_GIB": limit.gpu_memory_gib if limit else None,
        "USED_GIB": round(used.gpu_memory_gib, 1), "WEIGHT": queue.over_quota_weight,
        "PRIORITY": queue.priority,
    }


def _node_rows(view: View) -> Iterator[Row]:
    for node in view.nodes():
        yield node_row(view, node)


def _gpu_rows(view: View) -> Iterator[Row]:
    for node in view.nodes():
        for gpu in node.gpus:
            yield gpu_row(view, node, gpu)


def _slice_rows(view: View) -> Iterator[Row]:
    for node in view.nodes():
        for gpu in node.gpus:
            yield from _slices(view, node, gpu)


def _job_rows(view: View) -> Iterator[Row]:
    for job in view.jobs():
        yield job_row(view, job)


def _queue_rows(view: View) -> Iterator[Row]:
    for queue in view.queues():
        yield queue_row(view, queue)


def journal_row(entry: Any) -> Row:
    """A journal entry (gpuadmin.store.JournalEntry) as a row; duck-typed to keep render free of store."""
    ops = Counter(c.get("op", "?") for c in (entry.plan or {}).get("changes", []))
    return {
        "ID": entry.id, "NAME": str(entry.id), "REVISION": entry.revision, "BASE": entry.base_revision,
        "AT": entry.at, "ACTOR": entry.actor, "ORIGIN": entry.origin or "local", "VERDICT": entry.verdict,
        "OUTCOME": entry.outcome, "CHANGES": " ".join(f"{op}x{n}" if n > 1 else op for op, n in ops.items()),
        "MESSAGE": entry.message or "", "COMMAND": entry.command or "-",
        "DIFF": ", ".join(f"{d.get('kind')}/{d.get('name')}" for d in entry.diff or ()) or "-",
    }


def _job_names(view: View) -> Iterator[str]:
    return (job.name for job in view.jobs())


_NODE_NAME = Column("NODE", Kind.PLACEMENT)

JOURNAL = Listing("entry", (
    number("ID"), number("REVISION", int | None, priority=4), text("AT", priority=2), text("ACTOR", priority=3),
    text("ORIGIN", priority=1), text("OUTCOME", priority=5), text("CHANGES", priority=3),
    number("BASE", wide=True), text("VERDICT", wide=True), text("COMMAND", wide=True), text("DIFF", wide=True),
    text("MESSAGE", wide=True),
    text("NAME", hidden=True),
), None, key="ID")


# Priorities (`Column.priority`: higher stays longer on a narrow terminal, in the console and the CLI alike) keep
# each listing's most telling columns at 80 columns: what holds a GPU, a job's queue, request and why it waits.
LISTINGS: dict[str, Listing] = {
    # ORCHESTRATOR, added last, gives way first: a terminal of 80 keeps what it showed before it existed
    "nodes": Listing("node", (
        Column("NAME", Kind.PLACEMENT), text("PLATFORM"), text("STATE", priority=6), number("GPUS", priority=5),
        number("FREE", priority=5), number("PARTLY_USED", priority=4), number("FULL", priority=4),
        text("MODES", priority=3), text("RDMA", priority=1), text("ORCHESTRATOR", priority=-1),
        text("MODELS", wide=True), text("SHAPE", wide=True), number("CPUS", int | None, wide=True),
        number("MEMORY_GIB", float | None, wide=True), text("NVLINK", wide=True), text("LABELS", wide=True),
    ), _node_rows),
    "gpus": Listing("gpu", (
        # HOLDERS, long and last, is kept after the short ones: it takes the room they leave, MODE and USE too
        _NODE_NAME, number("GPU", priority=6), text("MODEL", priority=-1), text("MODE", priority=4),
        text("LAYOUT", priority=1), text("USE", priority=5), text("HOLDERS", priority=3),
        number("MEMORY_MIB", int | None, wide=True), text("NODE_STATE", wide=True), *_telemetry_columns(),
        text("HEALTH", wide=True, json_type=str | None), text("ALERTS", wide=True, json_type=str | None),
        Column("NAME", Kind.PLACEMENT, hidden=True),
    ), _gpu_rows),
    "slices": Listing("slice", (
        # HOLDERS, as on gpus, after the short columns: it takes the room they leave
        _NODE_NAME, number("GPU", priority=6), text("SLICE", priority=5), number("SIZE_GPUS", float, priority=2),
        number("HELD_GPUS", float, priority=4), Column("REPLICAS", Kind.QUANTITY, priority=4),
        text("HOLDERS", priority=3),
        text("MODEL", wide=True), *_telemetry_columns(),
        Column("NAME", Kind.PLACEMENT, hidden=True),
    ), _slice_rows),
    "groups": Listing("group", (
        _NODE_NAME, text("NAME", priority=3), number("SIZE", priority=1), Column("GPUS", Kind.PLACEMENT, priority=2),
        text("VM", priority=3),
        text("NVLINK", wide=True),
    ), _group_rows),
    "jobs": Listing("job", (
        text("NAME"), text("QUEUE", priority=4), text("STATUS", priority=6),
        Column("REQUEST", Kind.QUANTITY, priority=3), Column("PLACEMENT", Kind.PLACEMENT, priority=1),
        Column("AGE", Kind.DURATION, priority=2), text("REASON", priority=5),
        # the remedy alone, last: where a wide terminal has room for it (at 160 columns), the MESSAGE cut before it
        # still shows what to do
        text("REMEDY", priority=1),
        number("PRIORITY", wide=True), text("PREEMPTIBLE", wide=True, json_type=bool), text("OWNER", wide=True),
        text("SUBMITTED", wide=True), text("VM", wide=True),
        # last, and kept before REQUEST: the console's wide toggle shows the start of it even at 80 columns
        text("MESSAGE", wide=True, priority=4),
    ), _job_rows, names=_job_names),
    "queues": Listing("queue", (
        text("NAME"), number("QUOTA_GPUS", int | None, priority=3), number("LIMIT_GPUS", int | None, priority=2),
        number("USED_GPUS", float, priority=4), number("BORROWED_GPUS", float, priority=3),
        number("QUOTA_GIB", float | None, wide=True), number("LIMIT_GIB", float | None, wide=True),
        number("USED_GIB", float, wide=True), number("WEIGHT", float, wide=True), number("PRIORITY", wide=True),
    ), _queue_rows),
}
