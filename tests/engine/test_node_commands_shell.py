"""Issue 18, point 3: the node commands a plan prints are piped into a real `sh`; whatever a node is called, each
value arrives as one argument, after `--`, and nothing else runs.

The names here cannot come in through an inventory or a change file any more (the model refuses Kubernetes node
names Kubernetes could not hold: tests/cli/test_kubernetes_names_cli.py); a state written before that check may
still hold one, so the state is built here the way such a state loads: without validation.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuadmin.engine import changes as ch
from gpuadmin.engine.planner import plan
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Node
from gpuadmin.store import load_inventory

SAMPLES = Path(__file__).resolve().parents[2] / "sample-inventories"
OCI = load_inventory(SAMPLES / "oci-h100.yaml")

HOSTILE = [
    "w1;touch${IFS}INJECTED;#",
    "$(touch INJECTED)",
    "`touch INJECTED`",
    "w1\ntouch INJECTED",
    "w1 && touch INJECTED",
    "a'b\"c\\d",
    "*",
    "--kubeconfig=/tmp/INJECTED",
]

# Every call is appended to $CALLS as a JSON list: the program's name, then its arguments.
RECORDER = """#!{python}
import json, os, sys
with open(os.environ["CALLS"], "a", encoding="utf-8") as calls:
    calls.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


def _renamed(cluster: ClusterState, old: str, new: str, **update: Any) -> Node:
    """Rename node `old` (held by no job) to `new` in place, as a state loaded from its rows would hold it."""
    node = cluster.nodes.pop(old).model_copy(update={"name": new, **update})
    cluster.nodes[new] = node
    cluster.seqs["node"][new] = cluster.seqs["node"].pop(old)
    return node


def _free_kubernetes_gpu_node(state: ClusterState) -> Node:
    return next(n for n in state.nodes.values()
                if n.kubernetes and len(n.gpus) >= 2 and n.state == "ready"
                and not any(state.holders.get((n.name, g.index)) for g in n.gpus))


def _commands(name: str) -> list[str]:
    """The lines of plans that touch every kind of node command on a node called `name`."""
    lines: list[str] = []
    values: list[list[dict[str, Any]]] = [
        [{"op": "set-mig", "node": name, "gpu": 0, "instances": [{"profile": "3g.40gb"}, {"profile": "3g.40gb"}]},
         {"op": "set-time-slicing", "node": name, "gpu": 1, "replicas": 4},
         {"op": "set-sharing", "node": name, "fractions": "dynamic"}],
        [{"op": "cordon", "node": name}],
        [{"op": "drain", "node": name}],
    ]
    for changes in values:
        state = ClusterState.from_inventory(OCI)
        _renamed(state, _free_kubernetes_gpu_node(state).name, name)
        result = plan(state, ch.CHANGE_LIST.validate_python(changes))
        assert result.allowed, result.violations
        lines += result.commands[name]
    state = ClusterState.from_inventory(OCI)
    _renamed(state, _free_kubernetes_gpu_node(state).name, name, state="cordoned")
    result = plan(state, ch.CHANGE_LIST.validate_python([{"op": "uncordon", "node": name}]))
    assert result.allowed, result.violations
    return lines + result.commands[name]


def _run_in_sh(lines: list[str], where: Path) -> list[list[str]]:
    """Run the lines with `sh`, kubectl, nvidia-smi and gpuadmin being recorders; the calls they saw."""
    bin_dir = where / "bin"
    bin_dir.mkdir()
    for program in ("kubectl", "nvidia-smi", "gpuadmin"):
        (bin_dir / program).write_text(RECORDER.format(python=sys.executable), encoding="utf-8")
        (bin_dir / program).chmod(0o755)
    calls = where / "calls.jsonl"
    work = where / "work"
    work.mkdir()
    (work / "a-file-a-glob-would-find").write_text("", encoding="utf-8")
    script = "".join(f"{line}\n" for line in lines)
    syntax = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    # /usr/bin and /bin stay on the PATH: an injected `touch` would run
    ran = subprocess.run(["sh", "-e"], input=script, text=True, capture_output=True, cwd=work, check=False,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls)})
    assert ran.returncode == 0, ran.stderr
    assert sorted(p.name for p in work.iterdir()) == ["a-file-a-glob-would-find"], "something else ran"
    assert not Path("/tmp/INJECTED").exists()
    return [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", HOSTILE, ids=ascii)
def test_each_name_is_one_argument_and_nothing_else_runs(name: str, tmp_path: Path) -> None:
    lines = _commands(name)
    calls = _run_in_sh(lines, tmp_path)
    named = [c for c in calls if c[0] == "kubectl" and c[1] != "apply" and c[1] != "-n"]
    assert named == [
        ["kubectl", "label", "--overwrite", "node", "--", name, f"nvidia.com/mig.config=gpuadmin-{name}"],
        ["kubectl", "label", "--overwrite", "node", "--", name, f"nvidia.com/device-plugin.config=gpuadmin-{name}"],
        ["kubectl", "cordon", "--", name],
        ["kubectl", "drain", "--ignore-daemonsets", "--delete-emptydir-data", "--", name],
        ["kubectl", "uncordon", "--", name],
    ]
    # the rest are the fixed pipelines (export | kubectl apply): one call per program of each
    assert sorted(c[:2] for c in calls if c not in named) == sorted(
        [["gpuadmin", "export"]] * 2 + [["kubectl", "-n"], ["kubectl", "apply"], ["kubectl", "apply"]])
    comments = [line for line in lines if "#" in line and "\n" in line]
    assert comments == [], "a line break in a comment would start a command"


def test_a_plain_name_reads_as_before() -> None:
    """Quoting leaves a name Kubernetes can hold exactly as written: the lines stay readable."""
    state = ClusterState.from_inventory(OCI)
    node = _free_kubernetes_gpu_node(state)
    result = plan(state, ch.CHANGE_LIST.validate_python([{"op": "cordon", "node": node.name}]))
    assert result.commands == {node.name: [f"kubectl cordon -- {node.name}"]}
