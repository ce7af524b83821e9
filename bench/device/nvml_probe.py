"""The NVML telemetry source on a real GPU, read-only: what it reads and how long a refresh takes.

For a machine with an NVIDIA GPU and driver (e.g. a lent H200), in one go from the checkout:

    .venv/bin/python -m bench.device.nvml_probe [--repeat 20] [--json]

It changes nothing on the GPU — no setting, clock, persistence, ECC or MIG mode; it only reads — and writes no
state to disk: the node is imported into memory with `import local`'s reader (the same NVML), the source
(`gpuadmin.telemetry.nvml.NvmlSource`) refreshed against it, and every reading, its reason where it has none, the
processes and the notes are printed, then the timings: the first refresh (NVML's init, the XID event sets) and
the median of the next `--repeat`, against a baseline in the same run: the same four figures per GPU read by bare
pynvml calls (utilisation, memory, temperature, power), the least any reader pays. Exit 0; 2 (one line) without
nvidia-ml-py or a driver.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from gpuadmin.adapters import NoDriverError, import_local
from gpuadmin.engine.state import ClusterState, View
from gpuadmin.model.diagnostics import InputError
from gpuadmin.model.inventory import Inventory
from gpuadmin.model.telemetry import READING_FIELDS, DeviceTelemetry
from gpuadmin.render.telemetry import processes_cell
from gpuadmin.telemetry.nvml import NvmlMissing, NvmlSource, load_nvml
from gpuadmin.telemetry.snapshot import Targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="the readings as JSON (timings on stderr)")
    args = parser.parse_args()
    try:
        nvml = load_nvml()
        imported = import_local(nvml=nvml)
    except NvmlMissing as missing:
        print(f"nvml_probe: {missing}", file=sys.stderr)
        return 2
    except (NoDriverError, InputError) as exc:
        print(f"nvml_probe: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    node = imported.node
    for warning in imported.warnings:
        print(f"import local: {warning}", file=sys.stderr)
    state = ClusterState.from_inventory(Inventory(version=1, cluster="probe", nodes=[node]))
    targets = Targets.from_view(View(state))
    source = NvmlSource(node.name, nvml=nvml)
    started = time.perf_counter()
    snapshot = source.refresh(targets)
    first = time.perf_counter() - started
    if snapshot.status.state != "ok":
        print(f"nvml_probe: the source is {snapshot.status.state}: {snapshot.status.message}", file=sys.stderr)
        return 2
    refresh = _median(lambda: source.refresh(targets), args.repeat)
    bare = _median(lambda: _bare(nvml, len(node.gpus)), args.repeat)
    snapshot = source.refresh(targets)
    source.close()
    devices = [*snapshot.gpus.values(), *snapshot.instances.values()]
    if args.json:
        json.dump({"node": node.name, "gpus": [g.model for g in node.gpus], "notes": list(snapshot.status.notes),
                   "devices": [_as_json(d) for d in devices]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"node {node.name}: {len(node.gpus)} GPU(s) ({', '.join(sorted({g.model for g in node.gpus}))}), "
              f"{len(snapshot.instances)} MIG instance(s)")
        for device in devices:
            _show(device)
        for note in snapshot.status.notes:
            print(f"note: {note}")
    timing = (f"timings: first refresh {first * 1000:.1f} ms (init, event sets); refresh median "
              f"{refresh * 1000:.2f} ms over {args.repeat}; baseline bare pynvml (util, memory, temperature, power "
              f"per GPU) {bare * 1000:.2f} ms; ratio {refresh / bare if bare else float('nan'):.2f}")
    print(timing, file=sys.stderr if args.json else sys.stdout)
    return 0


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _bare(nvml: Any, count: int) -> None:
    for index in range(count):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        for read in (nvml.nvmlDeviceGetUtilizationRates, nvml.nvmlDeviceGetMemoryInfo, nvml.nvmlDeviceGetPowerUsage,
                     lambda h: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)):
            with contextlib.suppress(nvml.NVMLError):  # not supported (a MIG-mode GPU's utilisation): as the source
                read(handle)


def _as_json(device: DeviceTelemetry) -> dict[str, Any]:
    return {"name": device.name, "uuid": device.uuid, "profile": device.profile,
            **{f: {"value": device.reading(f).value, "reason": device.reading(f).reason} for f in READING_FIELDS},
            "processes": [p._asdict() for p in device.processes] if device.processes is not None else None}


def _show(device: DeviceTelemetry) -> None:
    print(f"{device.name}  {device.profile or ''}  {device.uuid or '-'}")
    for field in READING_FIELDS:
        reading = device.reading(field)
        shown = f"{reading.value:g}" if reading.value is not None else f"- ({reading.reason})"
        print(f"    {field:28} {ascii(shown)[1:-1]}")
    print(f"    {'processes':28} {ascii(processes_cell(device.processes))[1:-1]}")


if __name__ == "__main__":
    sys.exit(main())
