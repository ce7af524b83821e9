"""The state's settings (`gpuadmin config`) and live telemetry: the snapshot, the listings' telemetry columns
and `top`.

Settings (`store.settings`: a file beside the state, not in its journal): `metrics.prometheus`, the base URL of
the Prometheus holding the DCGM exporter's series; `metrics.node-label`, the label naming the node in them
(`Hostname`, the exporter's own, by default). Setting one needs an admin (the `configure` use case): it decides
where every operator's gpuadmin sends requests.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gpuadmin.engine.state import View
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.model.places import parse_place
from gpuadmin.model.telemetry import SourceStatus
from gpuadmin.render.rows import LISTINGS, Row
from gpuadmin.render.telemetry import TopOrder, telemetry_cells, top_order, top_row
from gpuadmin.service.caller import use_case
from gpuadmin.service.core import ServiceCore
from gpuadmin.service.errors import TelemetryUnavailable, TelemetryUnset
from gpuadmin.store.settings import read_settings, write_settings
from gpuadmin.telemetry import PrometheusClient, PrometheusSource, Targets, TelemetrySnapshot, check_url
from gpuadmin.telemetry.dcgm import DEFAULT_NODE_LABEL

PROMETHEUS = "metrics.prometheus"
NODE_LABEL = "metrics.node-label"
HOW_TO_SET = (f"no Prometheus is set for this state: gpuadmin config set {PROMETHEUS} http://HOST:9090 "
              "(the one holding the DCGM exporter's series; docs/telemetry.md)")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,127}$")  # Prometheus's label names


def _label_name(value: str) -> str:
    if not _LABEL_NAME.match(value) or value.startswith("__"):
        raise ValueError("a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)")
    return value


@dataclass(frozen=True)
class Setting:
    check: Callable[[str], str]  # the value as stored, or ValueError saying what is wrong
    doc: str
    default: str | None = None


SETTINGS: dict[str, Setting] = {
    PROMETHEUS: Setting(check_url, "the base URL of the Prometheus holding the DCGM exporter's series "
                                   "(http or https; no credentials)"),
    NODE_LABEL: Setting(_label_name, "the label of the DCGM series that names the node", DEFAULT_NODE_LABEL),
}


@dataclass(frozen=True)
class TopResult:
    snapshot: TelemetrySnapshot
    rows: list[Row]


class TelemetryUseCases(ServiceCore):
    """`config get/set/unset`, the telemetry snapshot, telemetry columns of the listings, and `top`."""

    _telemetry: tuple[str, str, PrometheusSource] | None = None  # (url, node label, source): polled with back-off
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
        try:
            source = self._source()
        except TelemetryUnset as unset:
            return TelemetrySnapshot(SourceStatus("unset", message=str(unset)), time.time())
        return source.refresh(self._telemetry_targets())

    def _last_telemetry(self) -> TelemetrySnapshot:
        """The last refresh's snapshot, as `telemetry` held it while backing off; status `unset` before any."""
        source = self._telemetry[2] if self._telemetry is not None else None
        if source is None or source.last is None:
            return TelemetrySnapshot(SourceStatus("unset", message=HOW_TO_SET), time.time())
        return replace(source.last, status=source.status)

    @use_case("read")
    def utilisation_history(self, *, seconds: float = 3600, step: float = 60) -> dict[Any, Any]:
        """Every GPU's (`(node, index)`) and MIG instance's (`(node, index, start)`) utilisation in % over the
        last `seconds`, a point every `step` (None where not known): what idle allocations are computed from.
        Exit 2 where no Prometheus is set; Prometheus's failures are exit 3 (`PrometheusUnavailable`)."""
        source = self._source()
        return source.util_history(self._telemetry_targets(), seconds=seconds, step=step)

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
        for row in rows:
            row.update(telemetry_cells(_device_of(snapshot, kind, row)))
        return snapshot.status

    @use_case("read")
    def top(self, order: TopOrder = "errors", *, refresh: bool = True) -> TopResult:
        """Every GPU and MIG instance with its readings, the worst first (`order`); holders from the state.
        Refused where no Prometheus is set (exit 2, saying how), and where it is down with no readings yet
        (exit 3); slow, or down with the last readings, it answers with the status. `refresh=False` asks
        Prometheus nothing: the last refresh's readings (the console's `:top`, which its poll refreshes)."""
        snapshot = self.telemetry() if refresh else self._last_telemetry()
        if snapshot.status.state == "unset":
            raise TelemetryUnset(snapshot.status.message)
        if snapshot.status.state == "down" and not snapshot.gpus:
            raise TelemetryUnavailable(f"prometheus down: {snapshot.status.message}")
        view = View(self._holding_state())
        gpus = {(r["NODE"], r["GPU"]): r for r in _rows(view, "gpus")}
        slices = {r["NAME"]: r for r in _rows(view, "slices")}
        rows: list[Row] = []
        for (node, index), device in snapshot.gpus.items():
            gpu_row = gpus.get((node, index))
            if gpu_row is not None:
                rows.append(top_row(f"{node}/{index}", gpu_row["MODEL"], gpu_row["HOLDERS"], device))
        for (node, index, _start), device in snapshot.instances.items():
            name = f"{node}/{index}/{device.profile}@{device.mig_start}"
            slice_row = slices.get(name)
            if slice_row is not None:
                rows.append(top_row(name, slice_row["MODEL"], slice_row["HOLDERS"], device))
        return TopResult(snapshot, top_order(rows, order))


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
