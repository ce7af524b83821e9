"""Load and validate a 1,024-node, 10,000-job inventory (issue 20 item 6: ≤ 0.8 s).

Baseline, same run: PyYAML's C loader on the same file (parsing alone, no checks at all), so the ratio says
what the strict reading, the schema and the reference checks cost on top of parsing. The same load is timed
with the YAML read by the strict reader's other path (`gpuadmin/store/yamlsafe.py`): the composer
(`_parse_composed`, the reference, which reports every diagnostic), against libyaml's events straight to data
(`_read_plain`, what `load_inventory` uses for a file that needs no diagnostic). The stages are timed too:
libyaml's event stream alone (the floor of any reading through PyYAML), the strict YAML reading
(`load_yaml_file`), and the schema and reference checks on its result (`validate_inventory`).

    .venv/bin/python -m bench.bench_load [--nodes 1024] [--jobs 10000] [--repeat 7] [--cpu]
    .venv/bin/python -m bench.bench_load --rss [--jobs 100000]

`--rss` loads the file once in a fresh process and prints that first load's time, the process's peak RSS, and
its RSS with the inventory kept and the YAML data freed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from functools import partial

import yaml

from bench.common import generated_file, interleaved_medians, median_seconds
from gpuadmin.cli.main import set_gc_policy
from gpuadmin.engine.state import ClusterState
from gpuadmin.service import check_state
from gpuadmin.store import load_inventory, load_yaml_file, yamlsafe
from gpuadmin.store.inventory_io import validate_inventory


def _events_only(text: str) -> None:
    """Every libyaml event of `text` as PyYAML hands it to Python, and nothing done with it."""
    parser = yaml.CSafeLoader(text)
    try:
        while parser.get_event().__class__ is not yaml.StreamEndEvent:
            pass
    finally:
        parser.dispose()


def _load_composed(text: str, file: str) -> None:
    """`load_inventory` with the YAML read by the composer path alone."""
    validate_inventory(yamlsafe._parse_composed(text, file))


_FRESH_LOAD = """
import gc, os, resource, sys, time
from gpuadmin.cli.main import set_gc_policy
from gpuadmin.store import load_inventory
set_gc_policy(long_lived=False)
started = time.perf_counter()
inventory = load_inventory(sys.argv[1])
took = time.perf_counter() - started
gc.collect()
steady = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"{took:.3f} {peak} {steady} {len(inventory.jobs)}")
"""


def _rss(path: str) -> None:
    out = subprocess.run([sys.executable, "-c", _FRESH_LOAD, path], check=True, capture_output=True,
                         text=True).stdout.split()
    print(f"load_inventory in a fresh process: first load {float(out[0]):.3f} s (wall), peak RSS {out[1]} MB, "
          f"RSS with the inventory kept {out[2]} MB ({out[3]} jobs)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cpu", action="store_true",
                        help="time the stages and the rules in CPU time of this process (steadier on a busy machine)")
    parser.add_argument("--rss", action="store_true", help="memory of one load in a fresh process per reading")
    args = parser.parse_args()
    set_gc_policy(long_lived=False)  # the process-wide GC policy a headless gpuadmin command runs under
    path = generated_file(args.nodes, args.jobs)
    if args.rss:
        _rss(str(path))
        return
    text = path.read_text(encoding="utf-8")
    clock = time.process_time if args.cpu else time.perf_counter
    assert yamlsafe._read_plain(text) is not None, "the generated inventory is read from libyaml's events"
    # gpuadmin first: PyYAML's loader leaves a fragmented heap behind that slows whatever runs after it
    load, composed, read, validate, events = interleaved_medians([
        lambda: load_inventory(path),
        lambda: _load_composed(text, str(path)),
        lambda: load_yaml_file(path),
        partial(validate_inventory, load_yaml_file(path)),
        lambda: _events_only(text),
    ], args.repeat, clock)
    [baseline] = interleaved_medians([lambda: yaml.load(text, Loader=yaml.CSafeLoader)], args.repeat, clock)
    inventory = load_inventory(path)
    gpus = sum(len(n.gpus) for n in inventory.nodes)
    print(f"inventory: {args.nodes} nodes, {gpus} GPUs, {len(inventory.jobs)} jobs, {len(text) / 1e6:.1f} MB")
    state = ClusterState.from_inventory(inventory)
    rules = median_seconds(lambda: check_state(state), args.repeat, clock)
    # every figure below is on this one clock (the rules were timed in wall time even with --cpu before)
    print("clock: " + ("CPU time of this process (time.process_time)" if args.cpu
                       else "wall time (time.perf_counter)") + " for every figure below")
    print(f"baseline yaml.CSafeLoader parse only : {baseline * 1000:8.1f} ms (median of {args.repeat})")
    print(f"load_inventory (strict + schema + refs): {load * 1000:8.1f} ms   ratio {load / baseline:.2f}x baseline")
    print(f"  YAML read by the composer path      : {composed * 1000:8.1f} ms   ratio {load / composed:.2f}x")
    print(f"  libyaml events alone (PyYAML's floor): {events * 1000:8.1f} ms")
    print(f"  strict YAML reading (load_yaml_file): {read * 1000:8.1f} ms")
    print(f"  schema + references (validate)      : {validate * 1000:8.1f} ms")
    print(f"every rule on every entity            : {rules * 1000:8.1f} ms")
    print(f"load + validate with rules            : {(load + rules) * 1000:8.1f} ms (target <= 800 ms for load)")


if __name__ == "__main__":
    main()
