"""The join (`gpuadmin.telemetry.snapshot.join`, a tight loop for 100,000 samples: the GPU's key read by one
`itemgetter` call, a `.get` path where a label is missing) held equal to a reference written for clarity, device
by device, on generated answers: hostile labels (escapes, `00`, unknown nodes, the node or gpu label missing), MIG
series with and without pods, duplicates, values out of range, NaN and DCGM's blanks; and the notes' counts of
series not placed equal to the reference's."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadmin.model.telemetry import READING_FIELDS, DeviceTelemetry, Reading
from gpuadmin.telemetry.dcgm import ANCHOR, METRICS, Metric
from gpuadmin.telemetry.prometheus import Sample, sample_value
from gpuadmin.telemetry.snapshot import MigTarget, Targets, join

TARGETS = Targets(
    gpus={("n1", "0"): ("n1", 0), ("n1", "1"): ("n1", 1), ("n2", "0"): ("n2", 0)},
    instances={("n1", 1): (MigTarget(0, "1g.10gb"), MigTarget(1, "1g.10gb"), MigTarget(4, "3g.40gb"))},
    pod_instances={(("n1", 1), "job-a"): 1},
)
VALUES = ["0", "42", "99.5", "1e308", "NaN", "+Inf", "-5", "9223372036854775794", "2147483632", "0.5", "1"]
LABEL = st.fixed_dictionaries(
    {},
    # the node and gpu labels are optional too: a series without one takes the join's slow path (`.get`)
    optional={"Hostname": st.sampled_from(["n1", "n1", "n2", "n3", "n1\x1b[31m", ""]),
              "gpu": st.sampled_from(["0", "1", "1", "00", "2"]),
              "GPU_I_ID": st.sampled_from(["", "1", "2", "7"]),
              "GPU_I_PROFILE": st.sampled_from(["1g.10gb", "3g.40gb", "7g.80gb"]),
              "pod": st.sampled_from(["", "job-a", "other"]), "namespace": st.sampled_from(["ns", ""]),
              "UUID": st.sampled_from(["GPU-a", "GPU-b"])})
SAMPLE = st.builds(lambda labels, text: Sample(labels, *sample_value(text)), LABEL, st.sampled_from(VALUES))
ANSWERS = st.dictionaries(st.sampled_from([m.name for m in METRICS]), st.lists(SAMPLE, max_size=12), max_size=12)


def _reading(metric: Metric, sample: Sample) -> Reading:
    if sample.value is None:
        return Reading(None, f"{metric.name}: {sample.reason}")
    value, why = metric.check(sample.value)
    return Reading(value, why)


def _place(gpu: tuple[str, int], profile: str, pod: str) -> int | None:
    """Which instance of `gpu` a MIG series names: its pod's job's, else the only one of its profile."""
    same = [t.start for t in TARGETS.instances.get(gpu, ()) if t.profile == profile]
    held = TARGETS.pod_instances.get((gpu, pod)) if pod else None
    if held is not None and held in same:
        return held
    return same[0] if len(same) == 1 else None


def _gpu_of(sample: Sample) -> tuple[str, int] | None:
    return TARGETS.gpus.get((sample.labels.get("Hostname", ""), sample.labels.get("gpu", "")))


def _ambiguous(answers: dict[str, list[Sample]], gpu: tuple[str, int], profile: str) -> bool:
    return any(_gpu_of(s) == gpu and s.labels.get("GPU_I_ID") and s.labels.get("GPU_I_PROFILE", "") == profile
               and _place(gpu, profile, s.labels.get("pod", "")) is None
               and sum(t.profile == profile for t in TARGETS.instances.get(gpu, ())) > 1
               for m in METRICS if "instance" in m.levels for s in answers.get(m.name, ()))


def _missing(metric: Metric, answers: dict[str, list[Sample]]) -> Reading:
    if answers.get(metric.name):
        return Reading(None, f"no {metric.name} series for it")
    hint = "" if metric.default else " (off in dcgm-exporter's default counters: enable it in its counters file)"
    return Reading(None, f"no {metric.name} series in Prometheus{hint}")


def _reference_device(answers: dict[str, list[Sample]], gpu: tuple[str, int],
                      target: MigTarget | None) -> DeviceTelemetry:
    def mine(sample: Sample, metric: Metric) -> bool:
        if _gpu_of(sample) != gpu:
            return False
        gi = sample.labels.get("GPU_I_ID")
        if target is None:
            return ("gpu" in metric.levels and not gi) or bool(gi and metric.whole_gpu)
        return bool(gi) and "instance" in metric.levels and _place(
            gpu, sample.labels.get("GPU_I_PROFILE", ""), sample.labels.get("pod", "")) == target.start

    readings: dict[str, Reading] = {}
    # an instance some series were placed on (by its pod) is not the one an unplaceable series may be: its other
    # figures are missing, not ambiguous
    placed_any = any(mine(s, m) for m in METRICS for s in answers.get(m.name, ()))
    for name in READING_FIELDS:
        metrics = [m for m in METRICS if m.field == name and (target is None or "instance" in m.levels)]
        found = [(m, s) for m in metrics for s in answers.get(m.name, ()) if mine(s, m)]
        if found:
            readings[name] = _reading(*found[0])
        elif target is not None and any(m.whole_gpu for m in METRICS if m.field == name):
            readings[name] = Reading(None, "a figure of the whole GPU: see the GPU")
        elif target is not None and not placed_any and _ambiguous(answers, gpu, target.profile):
            readings[name] = Reading(None, f"not placed: several {target.profile} instances on this GPU, and the "
                                           "exporter's series of one no job holds cannot tell which (GPU_I_ID is "
                                           "the driver's, not a start)")
        else:
            readings[name] = _missing(metrics[0] if target is None or name != "util" else metrics[-1], answers)
    anchors = [s for s in answers.get(ANCHOR, ()) if mine(s, METRICS[2])]
    pods = sorted({f"{s.labels.get('namespace', '')}/{s.labels['pod']}" for s in anchors if s.labels.get("pod")})
    uuid = next((s.labels["UUID"] for s in anchors if s.labels.get("UUID")), None)
    placed = [s for m in METRICS for s in answers.get(m.name, ()) if mine(s, m)]
    gi_id = next((s.labels["GPU_I_ID"] for s in reversed(placed)), None) if target is not None else None
    profile = target.profile if target is not None else None
    return DeviceTelemetry(gpu[0], gpu[1], target.start if target else None, profile, uuid, gi_id, tuple(pods),
                           **readings)  # type: ignore[arg-type]


def _same(a: DeviceTelemetry, b: DeviceTelemetry) -> bool:
    def norm(d: DeviceTelemetry) -> tuple[object, ...]:
        readings = [d.reading(f) for f in READING_FIELDS]
        assert all(r.value is None or math.isfinite(r.value) for r in readings)  # never NaN, never Inf
        return (*((r.value, r.reason) for r in readings), d.pods, d.uuid, d.mig_start, d.profile)
    return norm(a) == norm(b)


@settings(max_examples=300, deadline=None)
@given(ANSWERS)
def test_the_join_is_the_reference(answers: dict[str, list[Sample]]) -> None:
    gpus, instances, notes = join(answers, TARGETS)
    unknown = sum(1 for m in METRICS for s in answers.get(m.name, ()) if _gpu_of(s) is None)
    assert (f"{unknown} series not placed: no GPU Hostname/gpu of the state" in notes) == (unknown > 0), notes
    assert set(gpus) == set(TARGETS.gpus.values())
    for key, device in gpus.items():
        expected = _reference_device(answers, key, None)
        assert _same(device, expected), (key, device, expected)
    for (node, index), found in TARGETS.instances.items():
        for target in found:
            device = instances[(node, index, target.start)]
            expected = _reference_device(answers, (node, index), target)
            assert _same(device, expected), ((node, index, target.start), device, expected)
