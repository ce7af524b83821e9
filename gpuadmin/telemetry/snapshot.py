"""The join: the DCGM exporter's series, one answer per metric for the whole cluster, onto gpuadmin's GPUs and
MIG instances.

A GPU is found by its node label (`Hostname` by default) and `gpu` (its index, exactly as gpuadmin writes it:
`"0"`, never `"00"`). A MIG instance's series (`GPU_I_ID`, `GPU_I_PROFILE`) is found on that GPU by its pod
first (a job holding one of the GPU's instances of that profile, named as the pod or as gpuadmin names the
job's pod), else by its profile where the GPU has exactly one instance of it; otherwise it is not placed (the
driver's GPU-instance id is not a placement start gpuadmin could read), and the snapshot's notes say how many.
A series naming a node or GPU gpuadmin does not know is counted, never guessed onto another.

Every GPU and MIG instance of the state has every reading in the snapshot: a value, or None with the reason.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from gpuadmin.adapters._common import dns_name
from gpuadmin.engine.state import View
from gpuadmin.model.telemetry import READING_FIELDS, DeviceTelemetry, Reading, SourceStatus
from gpuadmin.telemetry.alerts import Alert, by_gpu
from gpuadmin.telemetry.dcgm import ANCHOR, DEFAULT_NODE_LABEL, METRICS, Metric
from gpuadmin.telemetry.prometheus import Sample, Series
from gpuadmin.telemetry.xid import Finding, findings, reading_of

GpuKey = tuple[str, int]  # node, index
InstanceKey = tuple[str, int, int]  # node, index, MIG start
DeviceKey = GpuKey | InstanceKey
MAX_NOTES = 8  # examples of unplaced series a snapshot keeps (a count says the rest)


@dataclass(frozen=True, slots=True)
class MigTarget:
    start: int
    profile: str


@dataclass(frozen=True)
class Targets:
    """What the join places series on, made once per state revision: the GPUs by the exporter's keys, the MIG
    instances by GPU, and which instance each job's pod holds."""

    gpus: dict[tuple[str, str], GpuKey]  # (node name, str(index)) -> the GPU
    instances: dict[GpuKey, tuple[MigTarget, ...]]  # a MIG-mode GPU's instances with a start
    pod_instances: dict[tuple[GpuKey, str], int]  # (GPU, pod name) -> the start of the instance its job holds

    @staticmethod
    def from_view(view: View) -> Targets:
        gpus: dict[tuple[str, str], GpuKey] = {}
        instances: dict[GpuKey, tuple[MigTarget, ...]] = {}
        for node in view.nodes():
            for gpu in node.gpus:
                gpus[(node.name, str(gpu.index))] = (node.name, gpu.index)
                if gpu.mode == "mig":
                    instances[(node.name, gpu.index)] = tuple(
                        MigTarget(i.start, i.profile) for i in gpu.mig or () if i.start is not None)
        pod_instances: dict[tuple[GpuKey, str], int] = {}
        for job in view.jobs():
            for slot in job.placement:
                if slot.mig_start is not None:
                    for pod in {job.name, dns_name(job.name)}:
                        pod_instances[((slot.node, slot.gpu), pod)] = slot.mig_start
        return Targets(gpus, instances, pod_instances)


@dataclass(frozen=True)
class TelemetrySnapshot:
    """Every GPU's and MIG instance's readings at `at` (Unix time), Prometheus's firing alerts about GPUs
    (worst first; `gpu_alerts` those placed, by GPU), the GPUs their XID/ECC readings flag (`health`), and how
    the source answered."""

    status: SourceStatus
    at: float
    gpus: dict[GpuKey, DeviceTelemetry] = field(default_factory=dict)
    instances: dict[InstanceKey, DeviceTelemetry] = field(default_factory=dict)
    alerts: tuple[Alert, ...] = ()
    gpu_alerts: dict[GpuKey, tuple[Alert, ...]] = field(default_factory=dict)
    health: tuple[Finding, ...] = ()  # the GPUs whose XID/DBE readings flag them, fenced or not (the state says)

    @staticmethod
    def judged(status: SourceStatus, at: float, gpus: dict[GpuKey, DeviceTelemetry],
               instances: dict[InstanceKey, DeviceTelemetry], alerts: tuple[Alert, ...]) -> TelemetrySnapshot:
        """A snapshot with its alerts by GPU and its health findings (each GPU's XID and volatile DBE readings)."""
        return TelemetrySnapshot(status, at, gpus, instances, alerts, by_gpu(alerts),
                                 tuple(findings(reading_of(d) for d in gpus.values())))

    def gpu(self, node: str, index: int) -> DeviceTelemetry | None:
        return self.gpus.get((node, index))

    def alerts_on(self, node: str, index: int) -> tuple[Alert, ...]:
        """The firing alerts placed on a GPU, worst first (a MIG instance's are its GPU's)."""
        return self.gpu_alerts.get((node, index), ())

    def instance(self, node: str, index: int, start: int) -> DeviceTelemetry | None:
        return self.instances.get((node, index, start))

    def devices(self) -> Iterable[DeviceTelemetry]:
        yield from self.gpus.values()
        yield from self.instances.values()


@dataclass
class _Labels:
    """What the anchor series (frame buffer: every device has it) names of a device: its pods and UUID."""

    pods: set[str] = field(default_factory=set)
    uuid: str | None = None

    def add(self, labels: Mapping[str, str]) -> None:
        if labels.get("pod"):
            self.pods.add(f"{labels.get('namespace', '')}/{labels['pod']}")
        self.uuid = self.uuid or labels.get("UUID")


_new = tuple.__new__  # a named tuple made from a tuple in C, without its __new__'s Python frame


@dataclass
class _Join:
    """One join's work: every device of the state (a GPU's `(node, index)`, a MIG instance's `(node, index,
    start)`) with a row of its first reading of each field (READING_FIELDS' order; None: none yet), made up front
    so that placing a sample is an index into a list."""

    targets: Targets
    node_label: str
    rows: dict[DeviceKey, list[Reading | None]] = field(init=False)
    labels: dict[DeviceKey, _Labels] = field(default_factory=dict)
    gi_ids: dict[InstanceKey, str] = field(default_factory=dict)  # each placed instance: the last GPU_I_ID read
    unplaced: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    ambiguous: set[tuple[GpuKey, str]] = field(default_factory=set)  # (GPU, profile) with unplaced series
    # (GPU, GI id, profile, pod) -> the instance's start, or why there is none: one decision per MIG series
    _resolved: dict[tuple[GpuKey, str, str, str], int | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        empty: list[Reading | None] = [None] * len(READING_FIELDS)
        self.rows = {key: empty.copy() for key in self.targets.gpus.values()}
        for (node, index), found in self.targets.instances.items():
            for t in found:
                self.rows[(node, index, t.start)] = empty.copy()

    def miss(self, why: str, labels: Mapping[str, str]) -> None:
        self.unplaced[why] += 1
        if len(self.examples) < MAX_NOTES:
            shown = ", ".join(f"{k}={v!r}" for k, v in sorted(labels.items())[:8])
            self.examples.append(f"{why}: {{{shown[:300]}}}")

    def add_all(self, metric: Metric, samples: Iterable[Sample]) -> bool:
        """Place one metric's answer; True where it had any series. The loop is the refresh's work for 8,192
        GPUs (~100,000 samples, bench/bench_telemetry.py): the GPU's key read in one C call (`itemgetter`; a
        series missing a label takes the `.get` path), the device's row an index into a list, one reading per
        distinct value (most repeat: 0 errors, whole degrees, whole percents; fewer objects made is also fewer
        collections by the console's collector, half the join's time), made without a Python frame. Held equal
        to a reference written device by device (tests/telemetry/test_join_reference.py)."""
        index, node_label = self.targets.gpus, self.node_label
        key_of = itemgetter(node_label, "gpu")
        rows, at = self.rows, READING_FIELDS.index(metric.field)
        made: dict[float, Reading] = {}  # one reading per value: most figures repeat (0 errors, whole degrees)
        low, high, scale = metric.low, metric.high, metric.scale
        scaled = scale != 1.0
        gpu_level, instance_level, whole_gpu = "gpu" in metric.levels, "instance" in metric.levels, metric.whole_gpu
        anchor = metric.name == ANCHOR
        answered = False
        for sample in samples:
            answered = True
            labels = sample.labels
            try:
                gpu = index.get(key_of(labels))
            except KeyError:  # a series without the node or gpu label: no GPU of the state
                gpu = None
            if gpu is None:
                self.miss(f"no GPU {node_label}/gpu of the state", labels)
                continue
            value = sample.value
            if value is None:
                reading = Reading(None, f"{metric.name}: {sample.reason}")
            elif low <= value <= high:  # every DCGM blank is above every range: read without a check
                known = made.get(value)
                if known is None:
                    known = made[value] = _new(Reading, (value * scale if scaled else value, None))
                reading = known
            else:
                reading = Reading(*metric.check(value))
            if "GPU_I_ID" not in labels or not labels["GPU_I_ID"]:
                if gpu_level:
                    row = rows[gpu]
                    if row[at] is None:  # a device twice (a pod label each): its first
                        row[at] = reading
                    if anchor:
                        self._label(gpu, labels)
                continue
            if whole_gpu:  # the board's figure, repeated on each instance's series
                row = rows[gpu]
                if row[at] is None:
                    row[at] = reading
            if instance_level:
                self._add_instance(gpu, labels["GPU_I_ID"], labels, at, reading, anchor)
        return answered

    def _label(self, key: DeviceKey, labels: Mapping[str, str]) -> None:
        found = self.labels.get(key)
        if found is None:
            found = self.labels[key] = _Labels()
        found.add(labels)

    def _add_instance(self, gpu: GpuKey, gi_id: str, labels: Mapping[str, str], at: int, reading: Reading,
                      anchor: bool) -> None:
        start = self._instance(gpu, gi_id, labels)
        if isinstance(start, str):
            self.miss(start, labels)
            return
        key = (*gpu, start)
        self.gi_ids[key] = gi_id
        row = self.rows[key]
        if row[at] is None:
            row[at] = reading
        if anchor:
            self._label(key, labels)

    def _instance(self, gpu: GpuKey, gi_id: str, labels: Mapping[str, str]) -> int | str:
        profile, pod = labels.get("GPU_I_PROFILE", ""), labels.get("pod", "")
        key = (gpu, gi_id, profile, pod)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._place_instance(gpu, profile, pod)
        return found

    def _place_instance(self, gpu: GpuKey, profile: str, pod: str) -> int | str:
        targets = self.targets.instances.get(gpu)
        if targets is None:
            return "a MIG instance's series on a GPU gpuadmin does not hold in MIG mode"
        same = [t.start for t in targets if t.profile == profile]
        held = self.targets.pod_instances.get((gpu, pod)) if pod else None
        if held is not None and held in same:
            return held
        if len(same) == 1:
            return same[0]
        if not same:
            return "a MIG profile the GPU has no instance of in the state"
        self.ambiguous.add((gpu, profile))
        return ("several instances of its profile on that GPU, and no pod of a job holding one: which one is "
                "not known")


def join(samples: Mapping[str, Iterable[Sample]], targets: Targets, *, node_label: str = DEFAULT_NODE_LABEL,
         absent: Mapping[str, str] | None = None) -> tuple[dict[GpuKey, DeviceTelemetry],
                                                           dict[InstanceKey, DeviceTelemetry], tuple[str, ...]]:
    """The readings of every GPU and MIG instance of `targets` from `samples` (metric name -> its answer).

    `absent`: why a device's reading is missing where the metric answered for others (per device name:
    "stale since ..."); a metric with no series at all says so for every device. Returns the GPUs, the
    instances and the notes (counts of series not placed, with a few examples, labels shown as `repr`)."""
    work = _Join(targets, node_label)
    answered: set[str] = set()
    for metric in METRICS:
        answer = samples.get(metric.name)
        if answer is not None and work.add_all(metric, answer):
            answered.add(metric.name)
    missing = {m.field: _missing(m, answered) for m in METRICS}
    for m in METRICS:  # the util of a GPU is GPU_UTIL's reason, an instance's GR_ENGINE_ACTIVE's
        if m.field == "util":
            missing["util" if "gpu" in m.levels else "util@instance"] = _missing(m, answered)
    absent = dict(absent or {})
    gpus = _gpus(work, missing, absent)
    instances: dict[InstanceKey, DeviceTelemetry] = {}
    for (node, index), found in targets.instances.items():
        for t in found:
            if ((node, index), t.profile) in work.ambiguous:
                absent.setdefault(f"{node}/{index}/mig@{t.start}",
                                  f"not placed: several {t.profile} instances on this GPU, and the exporter's series "
                                  "of one no job holds cannot tell which (GPU_I_ID is the driver's, not a start)")
            instances[(node, index, t.start)] = _instance_device(work, node, index, t, missing, absent)
    notes = tuple(f"{n} series not placed: {why}" for why, n in work.unplaced.most_common()) + tuple(work.examples)
    return gpus, instances, notes


def _missing(metric: Metric, answered: set[str]) -> Reading:
    if metric.name in answered:
        return Reading(None, f"no {metric.name} series for it")
    hint = "" if metric.default else " (off in dcgm-exporter's default counters: enable it in its counters file)"
    return Reading(None, f"no {metric.name} series in Prometheus{hint}")


_WHOLE_GPU = {m.field for m in METRICS if m.whole_gpu}
_SEE_THE_GPU = Reading(None, "a figure of the whole GPU: see the GPU")


def _gpus(work: _Join, missing: Mapping[str, Reading], absent: Mapping[str, str]) -> dict[GpuKey, DeviceTelemetry]:
    """Every GPU of the state with its readings: a column's, else why not (stale, or the metric's reason).
    ~8,000 devices: each made from one tuple (its fields in `DeviceTelemetry`'s order)."""
    whys = [missing[f] for f in READING_FIELDS]
    labels, rows = work.labels, work.rows
    out: dict[GpuKey, DeviceTelemetry] = {}
    for key in work.targets.gpus.values():
        readings = rows[key]
        if None in readings:
            stale = absent.get(f"{key[0]}/{key[1]}") if absent else None
            reasons = whys if stale is None else [Reading(None, stale)] * len(whys)
            readings = [r if r is not None else why for r, why in zip(readings, reasons, strict=True)]
        found = labels.get(key)
        uuid, pods = (found.uuid, tuple(sorted(found.pods))) if found is not None else (None, ())
        out[key] = _new(DeviceTelemetry, (key[0], key[1], None, None, uuid, None, pods, *readings, None))
    return out


def _instance_device(work: _Join, node: str, index: int, target: MigTarget, missing: Mapping[str, Reading],
                     absent: Mapping[str, str]) -> DeviceTelemetry:
    key = (node, index, target.start)
    name = f"{node}/{index}/mig@{target.start}"
    stale = absent.get(name) or absent.get(f"{node}/{index}")
    gi_id = work.gi_ids.get(key)
    if gi_id is not None and name in absent:
        stale = None  # placed after all (some of its series named its pod)
    readings: dict[str, Any] = {}  # the DeviceTelemetry fields by name (mypy: ** of one value type)
    for field_name, reading in zip(READING_FIELDS, work.rows[key], strict=True):
        if reading is None:
            if field_name in _WHOLE_GPU:
                reading = _SEE_THE_GPU
            elif stale is not None:
                reading = Reading(None, stale)
            else:
                reading = missing["util@instance" if field_name == "util" else field_name]
        readings[field_name] = reading
    found = work.labels.get(key)
    return DeviceTelemetry(node, index, target.start, target.profile, found.uuid if found is not None else None,
                           gi_id, tuple(sorted(found.pods)) if found is not None else (), **readings)



def join_history(metric: Metric, series: Iterable[Series], targets: Targets, *,
                 node_label: str = DEFAULT_NODE_LABEL) -> dict[DeviceKey, tuple[tuple[float, float | None], ...]]:
    """A range query's series of `metric` placed on the state's GPUs (`(node, index)`) and MIG instances
    (`(node, index, start)`) by the same rules as the instant join; each point's value checked and scaled as a
    reading's (None where it is not one). A series the join cannot place is left out."""
    work = _Join(targets, node_label)
    out: dict[DeviceKey, tuple[tuple[float, float | None], ...]] = {}
    for one in series:
        labels = one.labels
        gpu = targets.gpus.get((labels.get(node_label, ""), labels.get("gpu", "")))
        if gpu is None:
            continue
        gi_id = labels.get("GPU_I_ID")
        key: DeviceKey
        if not gi_id:
            if "gpu" not in metric.levels:
                continue
            key = gpu
        else:
            start = work._instance(gpu, gi_id, labels)
            if isinstance(start, str) or "instance" not in metric.levels:
                continue
            key = (*gpu, start)
        if key not in out:
            out[key] = tuple((at, metric.check(v)[0] if v is not None else None) for at, v in one.points)
    return out


def stale_reasons(last_seen: Iterable[Sample], targets: Targets, now: float, fresh: set[GpuKey], *,
                  node_label: str = DEFAULT_NODE_LABEL) -> dict[str, str]:
    """Why a device that had samples in the window has none now: "stale: last sample at ... (12m ago)", by
    device name (`node/0`; a MIG instance's series counts for its GPU), for GPUs not in `fresh`. From
    `last_seen_query`'s answer."""
    out: dict[str, str] = {}
    for sample in last_seen:
        gpu = targets.gpus.get((sample.labels.get(node_label, ""), sample.labels.get("gpu", "")))
        if gpu is None or gpu in fresh or sample.value is None or not 0 <= sample.value <= now + 86400:
            continue  # a time no sample can have (a hostile answer) says nothing
        ago = max(0.0, now - sample.value)
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sample.value))
        name = f"{gpu[0]}/{gpu[1]}"
        if name not in out:
            out[name] = f"stale: last sample at {when} ({_ago(ago)} ago)"
    return out


def _ago(seconds: float) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"
