"""Issue 18, point 1: a state reads the same as the inventory it was made from.

The CLI reads a state (`--state`, the normal mode) through the store — node listings through a path that does
not parse every job — and an inventory file (`--inventory`) straight into memory. Right after `init` both hold the
same cluster at the same revision, so every listing and every `describe`, in every output format, must print the
same bytes. This differential test holds each read path of a state equal to the in-memory reference: every sample
inventory and two generated ones (one with dynamic sharing), every listing kind, every output format, and every
object described (all of them in the samples, a fixed sample of each kind in the generated ones).

What legitimately differs is pinned or left out by name, never by dropping a column:
- the clock (a job's AGE): the service's clock is pinned to one instant for both runs;
- the journal (`get journal`, `describe entry`): only a state has one (an inventory's is empty by design).
The revision needs nothing: `init` creates a state at revision 0, an inventory reads as revision 0.

Run in-process through `gpuadmin.cli.main.run` (the console script's code path), as test_golden.py does, so the
matrix stays quick; test_cli_process.py covers the real process.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.generate import dump_inventory, generate_inventory
from gpuadmin.cli.main import run
from gpuadmin.render.rows import LISTINGS
from tests.cli.clikit import SAMPLES

SAMPLE_FILES = sorted(p.name for p in SAMPLES.glob("*.yaml"))
# small enough to keep the matrix quick, large enough for every GPU mode the generator draws (full, MIG,
# time-sliced) and a draining node; the sharing variant puts fractions on dynamically shared full GPUs
GENERATED = {"generated": dict(nodes=24, jobs=480, seed=0, sharing=False),
             "generated-sharing": dict(nodes=24, jobs=480, seed=0, sharing=True)}
SOURCES = [*SAMPLE_FILES, *GENERATED]
LISTING_FORMATS = ("table", "wide", "json", "yaml", "name")
DESCRIBE_FORMATS = ("text", "json", "yaml")
DESCRIBED = {"nodes": "node", "gpus": "gpu", "jobs": "job", "queues": "queue"}  # listing -> describe kind
# in a generated cluster, every n-th object of each kind is described (all of them in a sample)
GENERATED_STRIDE = {"node": 3, "gpu": 11, "job": 23, "queue": 1}
PINNED_NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


class _PinnedClock(datetime):
    """`datetime` whose `now` is PINNED_NOW: both runs of a pair see the same AGE, whenever they run."""

    @classmethod
    def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
        return PINNED_NOW if tz is None else PINNED_NOW.astimezone(tz)


@pytest.fixture(autouse=True)
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuadmin.service.changes
    import gpuadmin.service.queries

    for module in (gpuadmin.service.changes, gpuadmin.service.queries):  # a job's submission time, its AGE
        monkeypatch.setattr(module, "datetime", _PinnedClock)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Each source as (inventory file, state directory made from it by the real `init`)."""
    root = tmp_path_factory.mktemp("differential")
    out: dict[str, tuple[Path, Path]] = {}
    for source in SOURCES:
        if source in GENERATED:
            inventory = root / f"{source}.yaml"
            with inventory.open("w", encoding="utf-8") as stream:
                dump_inventory(generate_inventory(**GENERATED[source]), stream)  # type: ignore[arg-type]
        else:
            inventory = SAMPLES / source
        state = root / f"{source}.state"
        assert run(["--state", str(state), "init", "--from", str(inventory)]) == 0
        out[source] = (inventory, state)
    return out


def both(capsys: pytest.CaptureFixture[str], pair: tuple[Path, Path], *args: str) -> tuple[Any, Any]:
    """(exit code, stdout, stderr) of one command on the state, then on the inventory."""
    inventory, state = pair
    results = []
    for where in (["--state", str(state)], ["--inventory", str(inventory)]):
        code = run([*where, *args])
        captured = capsys.readouterr()
        results.append((code, captured.out, captured.err))
    return results[0], results[1]


@pytest.mark.parametrize("fmt", LISTING_FORMATS)
@pytest.mark.parametrize("kind", list(LISTINGS))
@pytest.mark.parametrize("source", SOURCES)
def test_every_listing_reads_the_same_from_a_state(capsys: pytest.CaptureFixture[str], pairs: dict[str, Any],
                                                   source: str, kind: str, fmt: str) -> None:
    on_state, on_inventory = both(capsys, pairs[source], "get", kind, "-o", fmt)
    assert on_inventory[0] == 0, on_inventory[2]
    assert on_state == on_inventory, f"get {kind} -o {fmt} on {source}: the state reads differently"


@pytest.mark.parametrize("kind", list(DESCRIBED))
@pytest.mark.parametrize("source", SOURCES)
def test_every_describe_reads_the_same_from_a_state(capsys: pytest.CaptureFixture[str], pairs: dict[str, Any],
                                                    source: str, kind: str) -> None:
    _, names, _ = both(capsys, pairs[source], "get", kind, "-o", "name")[1]
    described = DESCRIBED[kind]
    objects = [line.split("/", 1)[1] for line in names.splitlines()]
    if source in GENERATED:
        objects = objects[::GENERATED_STRIDE[described]]
    assert objects, f"no {kind} in {source}"
    for name in objects:
        for fmt in DESCRIBE_FORMATS:
            on_state, on_inventory = both(capsys, pairs[source], "describe", described, name, "-o", fmt)
            assert on_inventory[0] == 0, on_inventory[2]
            assert on_state == on_inventory, f"describe {described} {name} -o {fmt} on {source}"


@pytest.mark.parametrize("source", SOURCES)
def test_node_label_selectors_pick_the_same_rows_from_a_state(capsys: pytest.CaptureFixture[str],
                                                              pairs: dict[str, Any], source: str) -> None:
    """`get gpus -l pool=mig` (the README's example) and every other node label: the rows a selector keeps come
    from the same listing, and keep the same counts."""
    from gpuadmin.store import load_inventory

    inventory = load_inventory(pairs[source][0])
    labels = sorted({f"{key}={value}" for node in inventory.nodes for key, value in node.labels.items()})
    for selector in labels:
        for kind in ("nodes", "gpus", "slices", "groups"):
            on_state, on_inventory = both(capsys, pairs[source], "get", kind, "-l", selector, "-o", "wide")
            assert on_inventory[0] == 0, on_inventory[2]
            assert on_state == on_inventory, f"get {kind} -l {selector} on {source}"


def test_a_held_mig_gpu_and_a_held_whole_gpu_are_not_free_on_a_state(capsys: pytest.CaptureFixture[str],
                                                                    pairs: dict[str, Any]) -> None:
    """The issue's own figures: on the OCI sample a state counts 40 free, 14 partly used, 42 full GPUs, as the
    inventory and the overview do (it used to read 51 / 44 / 1)."""
    import json

    (code, out, err), _ = both(capsys, pairs["oci-h100.yaml"], "get", "gpus", "-o", "json")
    assert code == 0, err
    uses = [item["use"] for item in json.loads(out)["items"]]
    assert (uses.count("free"), uses.count("partly used"), uses.count("full")) == (40, 14, 42)
