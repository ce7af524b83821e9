"""Every change an operator can make from the console, each registered with the views it applies to and the
form that builds its change ops (its key and label are its op's record in the registry, `engine/ops.py`) — so
the bindings, the gate and the help are generated from one table. A form yields change items (plain dicts, as a
change file holds them); the service plans them and the plan review decides. Nothing here applies anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuadmin.service import console_of
from gpuadmin.tui.screens.form import Field, FormSpec, Items

if TYPE_CHECKING:
    from gpuadmin.tui.session import Session

Row = dict[str, Any]
# An edit opens with the selected row (None where the view has no rows) and returns a form, a ready list of
# change items (no questions to ask), or "mig" for the MIG form.
Opener = Callable[["Session", Row | None], FormSpec | Items | str]


@dataclass(frozen=True)
class Edit:
    id: str  # the binding id (remappable)
    key: str
    label: str
    views: frozenset[str]  # where the edit applies ("node" is one node's screen)
    needs_row: bool
    open: Opener
    bulk: bool = False  # on marked rows it acts on each of them (one change item per row), in one plan

    @classmethod
    def of(cls, op: str, views: frozenset[str], needs_row: bool, opener: Opener, *, bulk: bool = False) -> Edit:
        """The edit that makes `op`: its key, label and binding id are the op's record in the registry."""
        console = console_of(op)
        return cls(console.binding, console.key, console.label, views, needs_row, opener, bulk)


def _ints(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise ValueError(f"GPU indexes are numbers separated by commas, not {text!r}") from None


def _groups(text: str) -> list[dict[str, Any]]:
    """`dg-a:0,1,2,3 dg-b:4,5,6,7` -> device groups."""
    groups = []
    for part in text.split():
        name, sep, gpus = part.partition(":")
        if not sep or not name:
            raise ValueError(f"write each group as NAME:GPU,GPU,... ({part!r})")
        groups.append({"name": name, "gpus": _ints(gpus) or []})
    return groups


def _labels(text: str) -> dict[str, str]:
    """`pool=training,zone=a` -> a node selector."""
    labels = {}
    for part in text.replace(" ", "").split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"node selector: write each label as KEY=VALUE, separated by commas ({part!r})")
        labels[key] = value
    return labels


def _gpu_of(row: Row) -> tuple[str, int]:
    return str(row["NODE"]), int(row["GPU"])


def _time_slicing(_session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node, gpu = _gpu_of(row)
    return FormSpec(f"time-slicing {node}/{gpu}", [
        Field("replicas", "replicas per GPU (or per MIG instance)", "int", default="4"),
        Field("mig_profile", "only the MIG instances of this profile", required=False, help="e.g. 1g.10gb"),
    ], lambda v: [{"op": "set-time-slicing", "node": node, "gpu": gpu, "replicas": v["replicas"],
                   **({"mig_profile": v["mig_profile"]} if v["mig_profile"] else {})}])


def _mode(_session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node, gpu = _gpu_of(row)
    return FormSpec(f"mode of {node}/{gpu}", [
        Field("mode", "mode", "choice", ("full", "time-sliced", "vgpu", "passthrough"), default="full"),
        Field("replicas", "replicas (time-sliced)", "int", required=False),
    ], lambda v: [{"op": "set-mode", "node": node, "gpu": gpu, "mode": v["mode"],
                   **({"replicas": v["replicas"]} if v["replicas"] else {})}],
        note="Leaving MIG or vGPU mode evicts what runs there; the plan shows it.")


def _assign_vgpu(session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node, gpu = _gpu_of(row)
    choices = session.call(lambda: session.service.choices(node))
    types = choices["vgpu_types"].get(str(row.get("MODEL")), [])
    return FormSpec(f"assign a vGPU on {node}/{gpu}", [
        Field("vm", "VM", "choice", choices["vms"]),
        Field("profile", "vGPU type", "choice", types),
    ], lambda v: [{"op": "assign-vgpu", "node": node, "gpu": gpu, "vm": v["vm"], "profile": v["profile"]}])


def _remove_vgpu(session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node, gpu = _gpu_of(row)
    board = session.call(lambda: session.service.node_board(node))
    held = [f"{v['vm']} {v['profile']}" for g in board["gpus"] if g["index"] == gpu for v in g["vgpus"]]

    def build(values: dict[str, Any]) -> Items:
        vm, _, profile = str(values["vgpu"]).partition(" ")
        return [{"op": "remove-vgpu", "node": node, "gpu": gpu, "vm": vm, "profile": profile}]

    return FormSpec(f"remove a vGPU from {node}/{gpu}", [Field("vgpu", "vGPU (VM and type)", "choice", held)], build)


def _device_groups(session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node = str(row["NAME"])
    board = session.call(lambda: session.service.node_board(node))
    current = " ".join(f"{g['name']}:{','.join(str(i) for i in g['gpus'])}" for g in board["device_groups"])
    return FormSpec(f"device groups of {node}", [
        Field("groups", "groups (NAME:GPU,GPU,... separated by spaces)", default=current, required=False),
    ], lambda v: [{"op": "set-device-groups", "node": node, "groups": _groups(v["groups"] or "")}],
        note="Groups of 2, 4 or 8 GPUs in one NVSwitch domain; an empty value removes every group.")


def _sharing(session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node = str(row["NAME"])
    choices = session.call(lambda: session.service.choices(node))
    current = choices["sharing"]
    reserve = current["reserved_gib"] if current is not None else choices["reserved_gib_default"]

    def build(v: dict[str, Any]) -> Items:
        given = v["fractions"] == "dynamic" and v["reserved_gib"] is not None
        return [{"op": "set-sharing", "node": node, "fractions": v["fractions"],
                 **({"reserved_gib": v["reserved_gib"]} if given else {})}]

    return FormSpec(f"dynamic sharing of {node}", [
        Field("fractions", "fractions on full GPUs", "choice", ("dynamic", "off"),
              default="off" if current is None else "dynamic"),
        Field("reserved_gib", "GiB reserved per shared GPU (dynamic)", "float", default=_text(reserve),
              required=False, help=f"empty: the default, {_text(choices['reserved_gib_default'])}"),
    ], build, note="Turning sharing off (or raising the reserve) under running fractions is refused unless they are "
                   "preempted first; the plan names them.")


def _attach_vm(session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node = str(row["NAME"])
    choices = session.call(lambda: session.service.choices(node))
    return FormSpec(f"attach a VM on {node}", [
        Field("vm", "VM", "choice", choices["vms"]),
        Field("device_group", "a device group", "choice", choices["device_groups"], required=False),
        Field("gpus", "or passthrough GPUs", required=False, help="e.g. 0,1"),
    ], lambda v: [{"op": "attach-vm", "node": node, "vm": v["vm"],
                   **({"device_group": v["device_group"]} if v["device_group"] else {}),
                   **({"gpus": _ints(v["gpus"])} if v["gpus"] else {})}])


def _detach_vm(session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    node = str(row["NAME"])
    choices = session.call(lambda: session.service.choices(node))
    return FormSpec(f"detach a VM on {node}", [Field("vm", "VM", "choice", choices["vms"])],
                    lambda v: [{"op": "detach-vm", "node": node, "vm": v["vm"]}])


def _submit_job(session: Session, _row: Row | None) -> FormSpec:
    queues = session.call(lambda: session.service.choices())["queues"]

    def build(v: dict[str, Any]) -> Items:
        kind = v["kind"]
        amount: Any = v["amount"]
        try:
            amount = int(amount) if kind == "gpus" else amount if kind == "mig" else float(amount)
        except ValueError:
            raise ValueError(f"amount: a number for {kind}, not {amount!r}") from None
        request: dict[str, Any] = {kind: amount, "nvlink": v["nvlink"] or False, "rdma": v["rdma"] or False}
        for optional in ("nodes", "cpus", "memory_gib"):
            if v[optional]:
                request[optional] = v[optional]
        job: dict[str, Any] = {"name": v["name"], "queue": v["queue"], "request": request,
                               "priority": v["priority"] or 0, "preemptible": v["preemptible"] is not False}
        if v["node_selector"]:
            job["node_selector"] = _labels(v["node_selector"])
        return [{"op": "submit-job", "job": job}]  # the service stamps owner and submit time

    return FormSpec("submit a job", [
        Field("name", "name"),
        Field("queue", "queue", "choice", queues),
        Field("kind", "request", "choice", ("gpus", "mig", "fraction", "gpu_memory_gib"), default="gpus"),
        Field("amount", "how much", help="8 GPUs, 3g.40gb, 0.5 of a GPU, 20 GiB"),
        Field("nodes", "nodes (a gang of whole GPUs)", "int", required=False),
        Field("cpus", "CPUs per node", "float", required=False),
        Field("memory_gib", "memory per node, GiB", "float", required=False),
        Field("node_selector", "node selector", required=False, help="pool=training,zone=a (labels, all must match)"),
        Field("priority", "priority", "int", required=False),
        Field("preemptible", "preemptible", "bool", default="yes"),
        Field("nvlink", "NVLink (GPUs in one domain)", "bool", default="no"),
        Field("rdma", "RDMA", "bool", default="no"),
    ], build)


def _cancel_job(_session: Session, row: Row | None) -> Items:
    assert row is not None
    return [{"op": "cancel-job", "name": str(row["NAME"])}]


def _preempt_job(_session: Session, row: Row | None) -> Items:
    assert row is not None
    return [{"op": "preempt-job", "name": str(row["NAME"])}]


def _text(value: Any) -> str:
    """A row's number as a form field's starting text ("" for none)."""
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _quota(_session: Session, row: Row | None) -> FormSpec:
    assert row is not None
    queue = str(row["NAME"])
    return FormSpec(f"queue {queue}", [
        Field("quota", "deserved quota (GPUs)", "int", default=_text(row.get("QUOTA_GPUS"))),
        Field("limit", "limit (GPUs, with borrowing)", "int", default=_text(row.get("LIMIT_GPUS")),
              required=False),
        Field("weight", "over-quota weight", "float", default=str(row.get("WEIGHT", "")), required=False),
        Field("priority", "priority", "int", default=str(row.get("PRIORITY", "")), required=False),
    ], lambda v: [{"op": "set-quota", "queue": queue, "quota": {"gpus": v["quota"]},
                   **({"limit": {"gpus": v["limit"]}} if v["limit"] is not None else {}),
                   **({"over_quota_weight": v["weight"]} if v["weight"] is not None else {}),
                   **({"priority": v["priority"]} if v["priority"] is not None else {})}])


def _add_queue(_session: Session, _row: Row | None) -> FormSpec:
    return FormSpec("add a queue", [
        Field("name", "name"), Field("quota", "deserved quota (GPUs)", "int"),
        Field("limit", "limit (GPUs)", "int", required=False),
        Field("weight", "over-quota weight", "float", default="1"), Field("priority", "priority", "int", default="0"),
    ], lambda v: [{"op": "add-queue", "queue": {"name": v["name"], "quota": {"gpus": v["quota"]},
                                                  **({"limit": {"gpus": v["limit"]}} if v["limit"] else {}),
                                                  "over_quota_weight": v["weight"], "priority": v["priority"]}}])


def _remove_queue(_session: Session, row: Row | None) -> Items:
    assert row is not None
    return [{"op": "remove-queue", "name": str(row["NAME"])}]


def _add_node(session: Session, _row: Row | None) -> FormSpec:
    choices = session.call(lambda: session.service.choices())

    def build(v: dict[str, Any]) -> Items:
        node: dict[str, Any] = {"name": v["name"], "platform": v["platform"], "orchestrator": v["orchestrator"]}
        gpus = v["gpus"] or 0
        if v["shape"]:
            node["shape"] = v["shape"]
        if gpus:
            if not v["model"]:
                raise ValueError("GPU model: required with a GPU count")
            node["gpus"] = [{"index": i, "model": v["model"]} for i in range(gpus)]
        if v["platform"] == "vsphere":
            node["vsphere"] = {"version": v["vsphere"] or "8.0U1"}
        return [{"op": "add-node", "node": node}]

    return FormSpec("add a node", [
        Field("name", "name"),
        Field("platform", "platform", "choice", ("baremetal", "vsphere"), default="baremetal"),
        Field("orchestrator", "orchestrator (kubernetes: a worker node)", "choice", ("none", "kubernetes"),
              default="none"),
        Field("shape", "shape (fills CPUs, memory, NVLink)", "choice", choices["shapes"], required=False),
        Field("model", "GPU model", "choice", choices["models"], required=False),
        Field("gpus", "GPUs", "int", required=False),
        Field("vsphere", "vSphere version (vsphere)", required=False, help="8.0U1"),
    ], build, note="For a real host, `gpuadmin import nvidia-smi` reads its GPUs from the driver's own report.")


def _remove_node(_session: Session, row: Row | None) -> Items:
    assert row is not None
    return [{"op": "remove-node", "name": str(row["NAME"])}]


GPU_VIEWS = frozenset({"gpus", "slices"})
EDITS: tuple[Edit, ...] = (
    Edit.of("set-mig", GPU_VIEWS, True, lambda _s, _r: "mig"),
    Edit.of("set-time-slicing", GPU_VIEWS, True, _time_slicing),
    Edit.of("set-mode", GPU_VIEWS, True, _mode),
    Edit.of("assign-vgpu", GPU_VIEWS, True, _assign_vgpu),
    Edit.of("remove-vgpu", GPU_VIEWS, True, _remove_vgpu),
    Edit.of("set-device-groups", frozenset({"nodes"}), True, _device_groups),
    Edit.of("attach-vm", frozenset({"nodes"}), True, _attach_vm),
    Edit.of("detach-vm", frozenset({"nodes"}), True, _detach_vm),
    Edit.of("add-node", frozenset({"nodes"}), False, _add_node),
    Edit.of("remove-node", frozenset({"nodes"}), True, _remove_node),
    Edit.of("set-sharing", frozenset({"nodes", "node"}), True, _sharing),
    Edit.of("submit-job", frozenset({"jobs"}), False, _submit_job),
    Edit.of("cancel-job", frozenset({"jobs"}), True, _cancel_job, bulk=True),
    Edit.of("preempt-job", frozenset({"jobs"}), True, _preempt_job, bulk=True),
    Edit.of("set-quota", frozenset({"queues"}), True, _quota),
    Edit.of("add-queue", frozenset({"queues"}), False, _add_queue),
    Edit.of("remove-queue", frozenset({"queues"}), True, _remove_queue),
)
EDITS_BY_ID = {edit.id: edit for edit in EDITS}
