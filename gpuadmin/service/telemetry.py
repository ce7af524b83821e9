"""The state's settings (`gpuadmin config`) and live telemetry: the snapshot, the listings' telemetry columns
and `top`.

Settings (`store.settings`: a file beside the state, not in its journal): `metrics.source`, where readings come
from (`prometheus`, the default, or `nvml`: this host's GPUs); `metrics.prometheus`, the base URL of the
Prometheus holding the DCGM exporter's series; `metrics.node-label`, the label naming the node in them
(`Hostname`, the exporter's own, by default); `metrics.local-node`, with `nvml`, the state's node this host is
(default: the host name). Setting one needs an admin (the `configure` use case): it decides where every
operator's gpuadmin sends requests.
"""

from __future__ import annotations

import math
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gpuadmin.catalog import get_catalog
from gpuadmin.engine.state import View
from gpuadmin.model import Gpu
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.places import parse_place
from gpuadmin.model.telemetry import DeviceTelemetry, SourceStatus
from gpuadmin.render.overview import vm_holders
from gpuadmin.render.rows import LISTINGS, Row
from gpuadmin.render.telemetry import TopOrder, alerts_cell, health_cell, telemetry_cells, top_order, top_row
from gpuadmin.service.caller import use_case
from gpuadmin.service.core import ServiceCore
from gpuadmin.service.errors import NvmlUnavailable, TelemetryUnavailable, TelemetryUnset
from gpuadmin.store.settings import read_settings, write_settings
from gpuadmin.telemetry import PrometheusClient, PrometheusSource, Targets, TelemetrySnapshot, check_url
from gpuadmin.telemetry.alerts import worst_first
from gpuadmin.telemetry.dcgm import DEFAULT_NODE_LABEL
from gpuadmin.telemetry.idle import (
    DEFAULT_BELOW_PERCENT,
    DEFAULT_FOR_MINUTES,
    Holding,
    Idle,
    Sample,
    SliceKey,
    idle_holdings,
    wasted_per_queue,
)
from gpuadmin.telemetry.nvml import NvmlSource
from gpuadmin.telemetry.xid import Finding, unlisted

PROMETHEUS = "metrics.prometheus"
NODE_LABEL = "metrics.node-label"
IDLE_FOR = "idle.for"
IDLE_BELOW = "idle.below"
MAX_IDLE_MINUTES = 24 * 60  # the history asked for spans this at most: one range query a minute apart
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h)?$")
HOW_TO_SET = (f"no Prometheus is set for this state: gpuadmin config set {PROMETHEUS} http://HOST:9090 "
              "(the one holding the DCGM exporter's series; docs/telemetry.md)")
SOURCE = "metrics.source"
LOCAL_NODE = "metrics.local-node"
SOURCES = ("prometheus", "nvml")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,127}$")  # Prometheus's label names


def _label_name(value: str) -> str:
    if not _LABEL_NAME.match(value) or value.startswith("__"):
        raise ValueError("a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)")
    return value


def parse_minutes(text: str) -> float:
    """A duration as `30m`, `2h`, `90s` or plain minutes (`45`), in minutes: at least 1, at most a day."""
    found = _DURATION.match(text.strip())
    if found is None:
        raise ValueError(f"a duration such as 30m, 2h or 90s, not {text!r}")
    minutes = float(found.group(1)) * {"s": 1 / 60, "m": 1.0, "h": 60.0, None: 1.0}[found.group(2)]
    if not 1 <= minutes <= MAX_IDLE_MINUTES:
        raise ValueError(f"from 1m to {MAX_IDLE_MINUTES // 60}h, not {text!r}")
    return minutes


def parse_percent(text: str) -> float:
    """A utilisation threshold in percent: above 0, at most 100."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"a percentage (e.g. 5), not {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= 100:
        raise ValueError(f"a percentage above 0 and at most 100, not {text!r}")
    return value


def _stored(settings: dict[str, str], key: str, parse: Callable[[str], float], default: str) -> float:
    """A stored setting parsed; one the settings file holds wrong (edited by hand: `config set` checks what it
    stores) is bad input naming the setting and how to mend it, never a traceback."""
    try:
        return parse(settings.get(key, default))
    except ValueError as why:
        raise InputError([Diagnostic(f"the setting {key}: {why}", hint=f"gpuadmin config set {key} {default} "
                                     f"(or config unset {key})")]) from None


def _checked(parse: Callable[[str], float]) -> Callable[[str], str]:
    def check(text: str) -> str:
        parse(text)
        return text.strip()
    return check
def _source_name(value: str) -> str:
    if value not in SOURCES:
        raise ValueError(f"one of {', '.join(SOURCES)}")
    return value


_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")


def _node_name(value: str) -> str:
    if not _NODE_NAME.match(value):
        raise ValueError("a node name (letters, digits, '.', '_', '-'; at most 253)")
    return value


def local_host_name() -> str:
    """This host's name as `gpuadmin import local` names its node: the host name up to its first dot."""
    return socket.gethostname().split(".")[0]


@dataclass(frozen=True)
class Setting:
    check: Callable[[str], str]  # the value as stored, or ValueError saying what is wrong
    doc: str
    default: str | None = None


SETTINGS: dict[str, Setting] = {
    PROMETHEUS: Setting(check_url, "the base URL of the Prometheus holding the DCGM exporter's series "
                                   "(http or https; no credentials)"),
    NODE_LABEL: Setting(_label_name, "the label of the DCGM series that names the node", DEFAULT_NODE_LABEL),
    IDLE_FOR: Setting(_checked(parse_minutes), "how long a holder's slices must stay under idle.below to be idle "
                                               "(`gpuadmin idle`; 30m, 2h)", f"{DEFAULT_FOR_MINUTES:g}m"),
    IDLE_BELOW: Setting(_checked(parse_percent), "the utilisation (%) under which a held slice counts as idle "
                                                 "(`gpuadmin idle`)", f"{DEFAULT_BELOW_PERCENT:g}"),
    SOURCE: Setting(_source_name, "where readings come from: prometheus (the DCGM exporter's series, the whole "
                                  "cluster) or nvml (this host's GPUs through NVIDIA's NVML, with their "
                                  "processes: gpuadmin run on the GPU node)", "prometheus"),
    LOCAL_NODE: Setting(_node_name, "with metrics.source nvml: the state's node this host is (default: the "
                                    "host name)"),
}


@dataclass(frozen=True)
class TopResult:
    snapshot: TelemetrySnapshot
    rows: list[Row]
    health: list[Finding]  # the GPUs the readings flag (not fenced yet), each with its fence command


@dataclass(frozen=True)
class IdleResult:
    """`gpuadmin idle`: the holders idle under `below` % for `for_minutes` or more, most wasteful first, the
    GPU-hours each queue holds idle (counted over `window_minutes` of history at most), and when."""

    below: float
    for_minutes: float
    window_minutes: float
    at: float
    idle: list[Idle]
    wasted: dict[str, float]


def holdings(view: View) -> list[Holding]:
    """Who holds which slices: each running job (its queue; a share of 1 per whole GPU, the MIG instance's
    compute share, or its fraction of a shared GPU) and each VM that is its GPU's only VM (passthrough, a device
    group, or its vGPUs: their framebuffer's share of the board). A GPU whose vGPUs belong to several VMs is left
    out: DCGM reads the GPU, so no VM's use is its own."""
    out: list[Holding] = []
    for job in view.jobs():
        if job.status == "running" and job.placement:
            fraction = job.request.fraction
            slices = tuple(((s.node, s.gpu, s.mig_start), _share(view, s.node, s.gpu, s.mig_start, fraction))
                           for s in job.placement)
            out.append(Holding("job", job.name, job.queue, job.placement[0].node, slices, job.preemptible))
    for node in view.nodes():
        held: dict[str, list[tuple[SliceKey, float]]] = {}
        for gpu in node.gpus:
            vms = vm_holders(node, gpu)
            if len(vms) == 1:
                held.setdefault(vms[0], []).append(((node.name, gpu.index, None), _vm_share(gpu)))
        out.extend(Holding("vm", vm, None, node.name, tuple(found)) for vm, found in sorted(held.items()))
    return out


def _vm_share(gpu: Gpu) -> float:
    """A VM's share of the GPU it alone holds: whole, or its vGPUs' framebuffer over the board's."""
    if gpu.mode != "vgpu" or not gpu.vgpus:
        return 1.0
    model = get_catalog().model(gpu.model)
    board = model.vgpu_framebuffer_mib if model is not None else None
    types = [model.vgpu_type(v.profile) if model is not None else None for v in gpu.vgpus]
    if not board or any(t is None for t in types):
        return 1.0  # a type the catalog does not know: counted whole (the GPU-hours say at most this)
    return min(1.0, sum(t.framebuffer_mib for t in types if t is not None) / board)


def _share(view: View, node_name: str, index: int, start: int | None, fraction: float | None) -> float:
    if start is None:
        return fraction if fraction is not None else 1.0
    node = view.node(node_name)
    gpu = next((g for g in node.gpus if g.index == index), None) if node is not None else None
    inst = next((i for i in (gpu.mig or ()) if i.start == start), None) if gpu is not None else None
    model = get_catalog().model(gpu.model) if gpu is not None else None
    profile = model.mig_profile(inst.profile) if model is not None and inst is not None else None
    if profile is None or model is None or not model.compute_slices:
        return 1.0  # a profile the catalog does not know: counted whole (the GPU-hours say at most this)
    return profile.compute_slices / model.compute_slices


def _health_said(finding: Finding | None, device: DeviceTelemetry | None) -> str | None:
    """What a GPU's readings say of its health: the finding's reason, else a last XID outside gpuadmin's table said
    as such (never `ok`: gpuadmin does not know NVIDIA's action for it), else None."""
    if finding is not None:
        return finding.reason
    return unlisted(device) if device is not None else None


def health_findings(snapshot: TelemetrySnapshot, view: View) -> list[Finding]:
    """The GPUs a snapshot's XID and double-bit ECC readings flag, in the snapshot's order, leaving out those
    fenced already (set-gpu-health): what to fence. DCGM's XID and volatile ECC figures last until the driver
    reloads, so a GPU stays flagged while they say so and it is not fenced."""
    fenced = _fenced(view)
    return [f for f in snapshot.health if (f.node, f.gpu) not in fenced]


def _fenced(view: View) -> frozenset[tuple[str, int]]:
    return frozenset((node.name, gpu.index) for node in view.nodes() for gpu in node.gpus if gpu.unhealthy)


class TelemetryUseCases(ServiceCore):
    """`config get/set/unset`, the telemetry snapshot, telemetry columns of the listings, and `top`."""

    _telemetry: tuple[str, str, PrometheusSource] | None = None  # (url, node label, source): polled with back-off
    _nvml: NvmlSource | None = None  # metrics.source nvml: this host's, kept (its XID event sets) across refreshes
    _targets: tuple[int, Targets] | None = None  # per revision

    # settings ---------------------------------------------------------------------------------
    def _settings(self) -> dict[str, str]:
        return read_settings(self.store.state_dir) if self.store is not None else {}

    @use_case("read")
    def settings(self, key: str | None = None) -> dict[str, dict[str, Any]]:
        """Every known setting (or `key` alone): its value (None where unset), its default and what it is."""
        stored = self._settings()
        keys = [key] if key is not None and self._setting(key) else list(SETTINGS)
        return {k: {"value": stored.get(k), "default": SETTINGS[k].default, "doc": SETTINGS[k].doc} for k in keys}

    @use_case("configure")
    def set_setting(self, key: str, value: str) -> str:
        """Check and store one setting; returns the value as stored."""
        spec = self._setting(key)
        try:
            checked = spec.check(value)
        except ValueError as exc:
            raise InputError([Diagnostic(f"{key}: {exc}")]) from None
        store = self._settings_store()
        settings = read_settings(store)
        settings[key] = checked
        write_settings(store, settings)
        self._telemetry = None
        self._drop_nvml()
        return checked

    @use_case("configure")
    def unset_setting(self, key: str) -> bool:
        """Remove one setting (its default applies again); False where it was not set."""
        self._setting(key)
        store = self._settings_store()
        settings = read_settings(store)
        if settings.pop(key, None) is None:
            return False
        write_settings(store, settings)
        self._telemetry = None
        self._drop_nvml()
        return True

    @staticmethod
    def _setting(key: str) -> Setting:
        spec = SETTINGS.get(key)
        if spec is None:
            raise InputError([Diagnostic(f"unknown setting {key!r}; known: {', '.join(SETTINGS)}")])
        return spec

    def _settings_store(self) -> Any:
        if self.store is None:
            raise InputError([Diagnostic("settings belong to a state: use --state (or the default state), "
                                         "not --inventory")])
        return self.store.state_dir

    # telemetry --------------------------------------------------------------------------------
    @use_case("read")
    def telemetry(self) -> TelemetrySnapshot:
        """The readings of every GPU and MIG instance now (one query per metric for the whole cluster), or while
        Prometheus is slow or down the last ones with its status; status `unset` where no Prometheus is set."""
        nvml = self._nvml_source()
        if nvml is not None:
            return nvml.refresh(self._telemetry_targets())
        try:
            source = self._source()
        except TelemetryUnset as unset:
            return TelemetrySnapshot(SourceStatus("unset", message=str(unset)), time.time())
        return source.refresh(self._telemetry_targets())

    def _nvml_source(self) -> NvmlSource | None:
        """This host's NVML source where `metrics.source` is nvml (made once, for its node), else None."""
        settings = self._settings()
        if settings.get(SOURCE) != "nvml":
            self._drop_nvml()
            return None
        node = settings.get(LOCAL_NODE) or local_host_name()
        if self._nvml is None or self._nvml.node != node:
            self._drop_nvml()
            self._nvml = NvmlSource(node)
        return self._nvml

    def _drop_nvml(self) -> None:
        if self._nvml is not None:
            self._nvml.close()
            self._nvml = None

    def _last_telemetry(self) -> TelemetrySnapshot:
        """The last refresh's snapshot, as `telemetry` held it while backing off; status `unset` before any."""
        source: PrometheusSource | NvmlSource | None = self._telemetry[2] if self._telemetry is not None else None
        if self._nvml is not None:
            source = self._nvml
        if source is None or source.last is None:
            return TelemetrySnapshot(SourceStatus("unset", message=HOW_TO_SET), time.time())
        return replace(source.last, status=source.status)

    @use_case("read")
    def utilisation_history(self, *, seconds: float = 3600, step: float = 60) -> dict[Any, Any]:
        """Every GPU's (`(node, index)`) and MIG instance's (`(node, index, start)`) utilisation in % over the
        last `seconds`, a point every `step` (None where not known): what idle allocations are computed from.
        Exit 2 where no Prometheus is set, or the source is NVML (it keeps no history); Prometheus's failures are
        exit 3 (`PrometheusUnavailable`)."""
        source = self._history_source()
        return source.util_history(self._telemetry_targets(), seconds=seconds, step=step)

    @use_case("read")
    def idle(self, *, for_minutes: float | None = None, below: float | None = None) -> IdleResult:
        """The holders (running jobs, VMs) whose every slice has been under `below` % busy for at least
        `for_minutes` (defaults: the settings idle.below and idle.for, else 5 % and 30 minutes), from each
        slice's utilisation history (two range queries for the whole cluster, a point a minute, over the
        threshold plus 5 minutes or the last hour, whichever is longer); GPU-hours held idle per queue. A
        slice without samples is not known to be idle. Exit 2 where no Prometheus is set or the source is NVML; 3
        where Prometheus fails."""
        settings = self._settings()
        for_minutes = for_minutes if for_minutes is not None else _stored(
            settings, IDLE_FOR, parse_minutes, f"{DEFAULT_FOR_MINUTES:g}m")
        below = below if below is not None else _stored(settings, IDLE_BELOW, parse_percent,
                                                        f"{DEFAULT_BELOW_PERCENT:g}")
        window = max(60.0, for_minutes + 5)
        source = self._history_source()
        at = source.clock()
        history = source.util_history(self._telemetry_targets(), seconds=window * 60, step=60)
        samples: dict[SliceKey, list[Sample]] = {}
        for key, points in history.items():
            slice_key: SliceKey = (key[0], key[1], key[2] if len(key) == 3 else None)
            samples[slice_key] = [Sample(t, v) for t, v in points if v is not None]
        found = idle_holdings(holdings(View(self._holding_state())), samples, at, below, for_minutes)
        return IdleResult(below, for_minutes, window, at, found, wasted_per_queue(found))

    def _history_source(self) -> PrometheusSource:
        """The Prometheus whose range queries give utilisation history; refused (exit 2) where the source is NVML,
        which keeps none."""
        if self._settings().get(SOURCE) == "nvml":
            raise TelemetryUnset(f"{SOURCE} is nvml, which keeps no history of utilisation: idle allocations need "
                                 f"the DCGM exporter's series in a Prometheus (gpuadmin config set {SOURCE} "
                                 f"prometheus; {PROMETHEUS} URL)")
        return self._source()

    def _source(self) -> PrometheusSource:
        settings = self._settings()
        url = settings.get(PROMETHEUS)
        if url is None:
            raise TelemetryUnset(HOW_TO_SET)
        label = settings.get(NODE_LABEL, DEFAULT_NODE_LABEL)
        if self._telemetry is None or self._telemetry[:2] != (url, label):
            self._telemetry = (url, label, PrometheusSource(PrometheusClient(url), node_label=label))
        return self._telemetry[2]

    def _telemetry_targets(self) -> Targets:
        state = self._holding_state()
        if self._targets is None or self._targets[0] != state.revision:
            self._targets = (state.revision, Targets.from_view(View(state)))
        return self._targets[1]

    @use_case("read")
    def telemetry_rows(self, kind: str, rows: list[Row], *, refresh: bool = True) -> SourceStatus:
        """Fill the telemetry columns of `get gpus|slices` rows in place (None where not known, or where no
        Prometheus is set); the source's status, for the front end to say why they are empty. `refresh=False`
        asks Prometheus nothing: the last refresh's readings (the console's views, which its poll refreshes)."""
        snapshot = self.telemetry() if refresh else self._last_telemetry()
        if snapshot.status.state == "unset" or not (snapshot.gpus or snapshot.instances):
            return snapshot.status
        flagged = {(f.node, f.gpu): f for f in health_findings(snapshot, View(self._holding_state()))}
        for row in rows:
            device = _device_of(snapshot, kind, row)
            row.update(telemetry_cells(device))
            if kind == "gpus":  # HEALTH: fenced (the state's) stays; else what the readings say
                key = (row["NODE"], row["GPU"])
                finding = flagged.get(key)
                row["HEALTH"] = health_cell(row["HEALTH"] == "fenced", _health_said(finding, device), device)
                row["ALERTS"] = alerts_cell(a.short for a in snapshot.alerts_on(*key))
        return snapshot.status

    @use_case("read")
    def health(self, *, refresh: bool = True) -> list[Finding]:
        """The GPUs the telemetry's XID and double-bit ECC readings flag and that are not fenced yet, each with
        the set-gpu-health command that fences it; `refresh=False` asks Prometheus nothing (the last readings)."""
        snapshot = self.telemetry() if refresh else self._last_telemetry()
        return health_findings(snapshot, View(self._holding_state()))

    @use_case("read")
    def alerts_summary(self) -> dict[str, Any]:
        """The last refresh's firing alerts about GPUs (asks Prometheus nothing: the console's overview): how
        many, how many are on a GPU of the state, and the worst (`Alert.to_json`, None where none fires)."""
        snapshot = self._last_telemetry()
        alerts = worst_first(snapshot.alerts)
        return {"count": len(alerts), "placed": sum(a.placed is not None for a in alerts),
                "worst": alerts[0].to_json() if alerts else None, "state": snapshot.status.state}

    @use_case("read")
    def top(self, order: TopOrder = "errors", *, refresh: bool = True) -> TopResult:
        """Every GPU and MIG instance with its readings, the worst first (`order`); holders from the state.
        Refused where no Prometheus is set (exit 2, saying how), with the NVML source where NVML cannot be used
        on this host (exit 2: no package, no library, no driver), and where the source is down with no readings
        yet (exit 3); slow, or down with the last readings, it answers with the status. `refresh=False` asks
        the source nothing: the last refresh's readings (the console's `:top`, which its poll refreshes)."""
        snapshot = self.telemetry() if refresh else self._last_telemetry()
        if snapshot.status.state == "unset":
            raise TelemetryUnset(snapshot.status.message)
        if self._nvml is not None and self._nvml.unavailable is not None and not snapshot.gpus:
            raise NvmlUnavailable(self._nvml.unavailable)
        if snapshot.status.state == "down" and not snapshot.gpus:
            raise TelemetryUnavailable(f"{snapshot.status.source} down: {snapshot.status.message}")
        view = View(self._holding_state())
        gpus = {(r["NODE"], r["GPU"]): r for r in _rows(view, "gpus")}
        slices = {r["NAME"]: r for r in _rows(view, "slices")}
        flagged = health_findings(snapshot, view)
        by_gpu = {(f.node, f.gpu): f for f in flagged}
        rows: list[Row] = []
        for (node, index), device in snapshot.gpus.items():
            gpu_row = gpus.get((node, index))
            if gpu_row is not None:
                finding = by_gpu.get((node, index))
                health = health_cell(gpu_row["HEALTH"] == "fenced", _health_said(finding, device), device)
                rows.append(top_row(f"{node}/{index}", gpu_row["MODEL"], gpu_row["HOLDERS"], device,
                                    (a.short for a in snapshot.alerts_on(node, index)), health))
        for (node, index, _start), device in snapshot.instances.items():
            name = f"{node}/{index}/{device.profile}@{device.mig_start}"
            slice_row = slices.get(name)
            if slice_row is not None:
                rows.append(top_row(name, slice_row["MODEL"], slice_row["HOLDERS"], device))
        return TopResult(snapshot, top_order(rows, order), flagged)


def _rows(view: View, kind: str) -> list[Row]:
    make = LISTINGS[kind].rows
    assert make is not None
    return list(make(view))


def _device_of(snapshot: TelemetrySnapshot, kind: str, row: Row) -> Any:
    if kind == "gpus":
        return snapshot.gpu(row["NODE"], row["GPU"])
    try:
        node, index, _profile, start = parse_place(str(row["NAME"]))
    except ValueError:  # a vGPU's or a VM's slice: no reading of its own
        return None
    return snapshot.gpu(node, index) if start is None else snapshot.instance(node, index, start)
