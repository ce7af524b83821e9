"""Issue 18, point 13, through the real CLI: no name reaches a terminal as an escape. Nodes, jobs, queues, labels,
VMs, the cluster, file names and the lock holder's text hold CSI (clear screen), OSC 0 (window title), OSC 52
(clipboard write), the 8-bit CSI U+009B and bidi overrides and isolates; every command's stdout and stderr, in
every output format, carries none of them raw. Text shows them as `\\x1b`; JSON and YAML as their own escapes
(`\\u001b`), and read back to the very names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.clikit import Result, gpuadmin, hold_lock

# what a terminal would act on or reorder: C0 but the line break, DEL, C1, line/paragraph separators, bidi
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

CLEAR = "\x1b[2J\x1b[Hclear"
TITLE = "\x1b]0;pwned\x07title"
CLIPBOARD = "\x1b]52;c;cHduZWQ=\x07clip"
C1_BIDI = "\x9b31mc1\u202eevil"
ISOLATE = "\u2066iso\u2069late\u200f"
NAMES = [CLEAR, TITLE, CLIPBOARD, C1_BIDI, ISOLATE]


def _yaml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


INVENTORY = f"""\
version: 1
cluster: {_yaml_string(TITLE)}
queues:
  - {{name: {_yaml_string(ISOLATE)}, quota: {{gpus: 8}}}}
  - {{name: plain, quota: {{gpus: 8}}}}
nodes:
  - name: {_yaml_string(CLEAR)}
    platform: baremetal
    shape: BM.GPU.H100.8
    rdma: {{nics: 16, gbps: 200, network: {_yaml_string(CLIPBOARD)}}}
    labels: {{pool: {_yaml_string(C1_BIDI)}}}
    gpus:
      - {{index: 0, model: H100-SXM5-80GB}}
      - {{index: 1, model: H100-SXM5-80GB, mode: mig, mig: [{{profile: 3g.40gb, start: 0}}]}}
      - {{index: 2, model: H100-SXM5-80GB, mode: time-sliced, replicas: 4}}
  - name: {_yaml_string(C1_BIDI)}
    platform: vsphere
    vsphere: {{version: "8.0U1"}}
    nvlink: nvswitch
    gpus:
      - {{index: 0, model: A100-SXM4-80GB, mode: vgpu, vgpus: [{{vm: {_yaml_string(ISOLATE)}, profile: A100DX-80C}}]}}
      - {{index: 1, model: A100-SXM4-80GB, mode: vgpu, vgpus: [{{vm: {_yaml_string(ISOLATE)}, profile: A100DX-80C}}]}}
    device_groups: [{{name: {_yaml_string(TITLE)}, gpus: [0, 1]}}]
    vms: [{{name: {_yaml_string(ISOLATE)}, hardware_version: 20, device_group: {_yaml_string(TITLE)}}}]
jobs:
  - {{name: {_yaml_string(CLIPBOARD)}, queue: {_yaml_string(ISOLATE)}, request: {{gpus: 1}}, status: running,
     placement: [{_yaml_string(CLEAR + "/0")}]}}
  - {{name: {_yaml_string(TITLE)}, queue: plain, request: {{mig: 3g.40gb}}, status: running,
     placement: [{{node: {_yaml_string(CLEAR)}, gpu: 1, mig_start: 0}}]}}
  - {{name: {_yaml_string(C1_BIDI)}, queue: plain, request: {{fraction: 0.5}}, status: running,
     placement: [{{node: {_yaml_string(CLEAR)}, gpu: 2}}]}}
  - {{name: {_yaml_string(ISOLATE)}, queue: plain, request: {{gpus: 1}}}}
"""


def assert_clean(result: Result, *what: object) -> None:
    for stream, text in (("stdout", result.out), ("stderr", result.err)):
        found = RAW.findall(text)
        assert not found, f"{what}: raw {found[:5]} on {stream}: {text[:400]!r}"


def _every_string(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_every_string(k) | _every_string(v) for k, v in value.items())) if value else set()
    if isinstance(value, list):
        return set().union(*(_every_string(v) for v in value)) if value else set()
    return set()


def assert_reads_back(result: Result, fmt: str, *what: object) -> None:
    """JSON and YAML escape the names in their own way: the document reads back to the very characters."""
    if fmt not in ("json", "yaml"):
        return
    document = json.loads(result.out) if fmt == "json" else list(yaml.safe_load_all(result.out))
    strings = " ".join(_every_string(document))
    assert any(name in strings for name in NAMES), (what, result.out[:400])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The inventory (its file name hostile too) and a state made from it."""
    where = tmp_path_factory.mktemp("escapes")
    inventory = where / f"inv{TITLE}{C1_BIDI}.yaml"
    inventory.write_text(INVENTORY, encoding="utf-8")
    state = where / "state"
    made = gpuadmin("--state", state, "init", "--from", inventory)
    assert made.code == 0, made.err
    return inventory, state


@pytest.mark.parametrize("kind", ["nodes", "gpus", "slices", "groups", "jobs", "queues", "journal"])
def test_every_listing_in_every_format(hostile: tuple[Path, Path], kind: str) -> None:
    inventory, state = hostile
    runs = [(("--state", state), fmt) for fmt in ("table", "wide", "json", "yaml", "name")]
    if kind != "journal":
        runs += [(("--inventory", inventory), fmt) for fmt in ("wide", "json")]
    for source, fmt in runs:
        result = gpuadmin(*source, "get", kind, "-o", fmt)
        assert result.code == 0, result.err
        assert_clean(result, kind, fmt)
        if kind != "journal":
            assert_reads_back(result, fmt, kind)


def test_describe_plan_schedule_explain_and_exports(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    inventory, _ = hostile
    runs: list[tuple[tuple[str | Path, ...], str]] = []
    for kind, name in (("node", CLEAR), ("job", CLIPBOARD), ("queue", ISOLATE), ("gpu", f"{CLEAR}/1")):
        runs += [(("describe", kind, name, "-o", fmt), fmt) for fmt in ("text", "json", "yaml")]
    changes = tmp_path / "changes.yaml"
    changes.write_text(f"changes:\n  - {{op: cordon, node: {_yaml_string(CLEAR)}}}\n"
                       f"  - {{op: preempt-job, name: {_yaml_string(C1_BIDI)}}}\n", encoding="utf-8")
    runs += [(("plan", "-f", str(changes), "-o", fmt), fmt) for fmt in ("text", "json", "yaml")]
    runs += [(("schedule", "--dry-run", "-o", fmt), fmt) for fmt in ("text", "json")]
    runs += [(("explain", ISOLATE, "-o", fmt), fmt) for fmt in ("text", "json")]
    for kind in ("inventory", "mig-parted", "device-plugin", "labels", "pods", "queues"):
        runs += [(("export", kind, "-o", fmt), fmt) for fmt in ("yaml", "json")]
    for args, fmt in runs:
        result = gpuadmin("--inventory", inventory, *args)
        assert result.code in (0, 1), (args, result.err)
        assert_clean(result, *args)
        if args[0] in ("describe", "plan"):
            assert_reads_back(result, fmt, *args)
    warned = gpuadmin("--inventory", inventory, "export", "pods")
    assert "warning" in warned.err and "\\x1b]52;c;cHduZWQ=\\x07clip" in warned.err  # named, escaped


def test_diagnostics_name_hostile_files_and_values_escaped(tmp_path: Path) -> None:
    bad = tmp_path / f"bad{CLEAR}{ISOLATE}.yaml"
    bad.write_text(f"version: 1\ncluster: t\nqueues: [{{name: q, priority: {_yaml_string(TITLE)}}}]\n"
                   f"nodes: [{{name: n, platform: {_yaml_string(CLIPBOARD)}}}]\n", encoding="utf-8")
    for args in (("validate", bad), ("--state", tmp_path / "s", "init", "--from", bad),
                 ("--inventory", bad, "get", "nodes"), ("validate", tmp_path / f"missing{TITLE}.yaml")):
        result = gpuadmin(*args)
        assert result.code == 2, result.err
        assert_clean(result, *args)
    checked = gpuadmin("validate", bad)
    shown = str(bad).replace("\x1b", "\\x1b").replace("\u2066", "\\u2066").replace("\u2069", "\\u2069") \
        .replace("\u200f", "\\u200f")
    assert checked.err.startswith(f"{shown}:3:"), checked.err
    ok = tmp_path / f"ok{C1_BIDI}.yaml"
    ok.write_text("changes: []\n", encoding="utf-8")
    listed = gpuadmin("validate", ok)
    shown = str(ok).replace("\x9b", "\\x9b").replace("\u202e", "\\u202e")
    assert (listed.code, listed.out) == (0, f"{shown}: ok (changes)\n")


def test_argument_errors_escape_what_was_typed() -> None:
    for args in (("get", CLEAR), ("--as-role", TITLE, "get", "nodes"), ("describe", "node", "-o", CLIPBOARD)):
        result = gpuadmin(*args)
        assert result.code == 2
        assert_clean(result, *args)


def test_the_lock_holders_text_is_escaped(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    _, state = hostile
    changes = tmp_path / "changes.yaml"
    changes.write_text("changes: [{op: add-queue, queue: {name: more}}]\n", encoding="utf-8")
    holder = hold_lock(state, f"gpuadmin apply {CLIPBOARD} {CLEAR} {C1_BIDI}", 30)
    try:
        result = gpuadmin("--state", state, "apply", "-f", changes, "--yes", "--wait", "0")
    finally:
        holder.terminate()
        holder.wait(timeout=30)
    assert result.code == 3, result.err
    assert_clean(result, "lock holder")
    assert "\\x1b]52;c;cHduZWQ=\\x07clip" in result.err  # shown, escaped


def test_a_refused_confirmation_names_the_plan_escaped(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    _, state = hostile
    changes = tmp_path / "cordon.yaml"
    changes.write_text(f"changes: [{{op: cordon, node: {_yaml_string(C1_BIDI)}}}]\n", encoding="utf-8")
    result = gpuadmin("--state", state, "apply", "-f", changes)  # no terminal to confirm on, no --yes
    assert result.code != 0, result.err
    assert_clean(result, "apply without --yes")


def test_stderr_escapes_a_line_whoever_writes_it() -> None:
    """The CLI's stderr escapes what a writer forgot to (here a print straight to sys.stderr), in a real process,
    chunk by chunk: an escape split over two writes is still escaped, the line breaks are kept."""
    code = ("import sys; from gpuadmin.cli import main; main.run = lambda argv, before_command=None: ("
            f"sys.stderr.write({CLEAR[:2]!r}), sys.stderr.write({CLEAR[2:] + chr(10) + CLIPBOARD!r}), "
            "print('x\\u202e', file=sys.stderr), 0)[-1]; main.main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0
    assert proc.stderr == "\\x1b[2J\\x1b[Hclear\n\\x1b]52;c;cHduZWQ=\\x07clipx\\u202e\n"
