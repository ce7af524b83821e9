"""Issue 18, point 3, through the real CLI: a node that Kubernetes schedules (`orchestrator: kubernetes`) has a
name Kubernetes could hold (a DNS-1123 subdomain, short enough for the `gpuadmin-NAME` label value gpuadmin puts
on a GPU node), wherever the node comes in: an inventory, a change file (`add-node`, `restore`), an import. The
refusal is bad input (exit 2) at the name's file:line:column, and nothing is written. A name a state already
holds is quoted in the commands a plan prints (tests/engine/test_node_commands_shell.py runs every kind)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.cli.clikit import SAMPLES, gpuadmin

SMI_XML = Path(__file__).resolve().parents[1] / "adapters" / "fixtures" / "k8s-test-infra_8x-h100-80gb-hbm3_no-mig.xml"
NOT_DNS = ("is not a Kubernetes node name: it must be a DNS-1123 subdomain (lower-case letters, digits, '-' and "
           "'.', starting and ending with a letter or digit, at most 253 characters)")
GPU = "[{index: 0, model: H100-SXM5-80GB}]"


def _inventory(tmp_path: Path, nodes: str) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(f"version: 1\ncluster: t\nqueues: [{{name: q}}]\nnodes:\n{nodes}", encoding="utf-8")
    return path


def test_an_inventory_with_names_kubernetes_cannot_hold_is_refused_at_the_name(tmp_path: Path) -> None:
    inventory = _inventory(tmp_path, (
        '  - name: "w1;touch${IFS}INJECTED;#"\n'
        "    platform: baremetal\n"
        "    orchestrator: kubernetes\n"
        "  - {name: Worker_2, platform: kubernetes}\n"  # the old spelling is a Kubernetes node too
        f"  - {{name: {'n' * 55}, platform: baremetal, orchestrator: kubernetes, gpus: {GPU}}}\n"))
    checked = gpuadmin("validate", inventory)
    assert checked.code == 2, checked.err
    assert checked.err.splitlines() == [
        f"{inventory}:5:11: nodes[0].name: 'w1;touch${{IFS}}INJECTED;#' {NOT_DNS}",
        f"{inventory}:8:12: nodes[1].name: 'Worker_2' {NOT_DNS}",
        f"{inventory}:9:12: nodes[2].name: the name of a Kubernetes GPU node must be at most 54 characters (it has "
        "55): gpuadmin labels the node with the value gpuadmin-NAME, and a Kubernetes label value holds at most 63",
    ]
    init = gpuadmin("--state", tmp_path / "state", "init", "--from", inventory)
    assert init.code == 2 and not (tmp_path / "state" / "state.db").exists()


def test_names_kubernetes_can_hold_and_other_nodes_pass(tmp_path: Path) -> None:
    inventory = _inventory(tmp_path, (
        f"  - {{name: {'n' * 54}, platform: baremetal, orchestrator: kubernetes, gpus: {GPU}}}\n"
        f"  - {{name: {'n.' * 40}n, platform: baremetal, orchestrator: kubernetes}}\n"  # no GPU: no label
        "  - {name: ip-10-0-1-23.us-west-2.compute.internal, platform: kubernetes}\n"
        "  - {name: 'Host_1 (rack 4)', platform: baremetal}\n"))  # nothing schedules pods there: any name
    checked = gpuadmin("validate", inventory)
    assert checked.code == 0, checked.err


def test_a_change_file_cannot_bring_such_a_name_in(state: Path, tmp_path: Path) -> None:
    changes = tmp_path / "changes.yaml"
    changes.write_text(
        "changes:\n"
        "  - op: add-node\n"
        "    node: {name: 'w1;touch${IFS}INJECTED;#', platform: baremetal, orchestrator: kubernetes}\n"
        "  - op: restore\n"
        "    kind: node\n"
        "    name: Worker.\n"
        "    node: {name: Worker., platform: kubernetes}\n", encoding="utf-8")
    expected = [f"{changes}:3:18: changes[0].node.name: 'w1;touch${{IFS}}INJECTED;#' {NOT_DNS}",
                f"{changes}:7:18: changes[1].node.name: 'Worker.' {NOT_DNS}"]
    checked = gpuadmin("validate", changes)
    assert (checked.code, checked.err.splitlines()) == (2, expected)
    before = (state / "state.db").read_bytes()
    for command in (("plan",), ("apply", "--yes")):
        result = gpuadmin("--state", state, *command, "-f", changes)
        assert (result.code, result.err.splitlines()) == (2, expected)
    assert (state / "state.db").read_bytes() == before


def test_an_import_cannot_bring_such_a_name_in(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": [
        {"kind": "Node", "metadata": {"name": "w1;touch${IFS}INJECTED;#", "labels": {}}}]}), encoding="utf-8")
    listed = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "import", "kube-nodes", nodes)
    assert (listed.code, listed.err) == (2, f"{nodes}: items[0].metadata.name: 'w1;touch${{IFS}}INJECTED;#' "
                                            f"{NOT_DNS}\n")
    named = gpuadmin("import", "nvidia-smi", SMI_XML, "--node", "GPU_Node", "--orchestrator", "kubernetes")
    assert (named.code, named.err) == (2, f"--node: 'GPU_Node' {NOT_DNS}\n")
    long = gpuadmin("import", "nvidia-smi", SMI_XML, "--node", "n" * 254)
    assert (long.code, long.err) == (2, "--node: a node name has 1 to 253 characters (this one has 254)\n")
    elsewhere = gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "import", "nvidia-smi", SMI_XML, "--node",
                         "GPU_Node")  # not a Kubernetes node: any name
    assert elsewhere.code == 0, elsewhere.err


def test_a_state_written_before_the_check_still_gets_quoted_commands(state: Path, tmp_path: Path) -> None:
    """A Kubernetes node a state already holds under a name Kubernetes could not hold (written before the check):
    the state opens, the plan's commands, piped into a real `sh` whose kubectl records its arguments, pass the name
    as one argument and nothing else runs; apply and undo work."""
    hostile = "w1;touch${IFS}INJECTED;#$(touch INJECTED)"
    with sqlite3.connect(state / "state.db") as conn:
        free = [(name, json.loads(data)) for name, data in conn.execute(
            "SELECT name, data FROM nodes WHERE name NOT IN (SELECT node FROM slots) ORDER BY seq")]
        old, node = next((name, node) for name, node in free
                         if node.get("orchestrator") == "kubernetes" and node.get("state", "ready") == "ready")
        conn.execute("UPDATE nodes SET name = ?, data = ? WHERE name = ?",
                     (hostile, json.dumps({**node, "name": hostile}, separators=(",", ":")), old))
    changes = tmp_path / "cordon.yaml"
    changes.write_text(f"changes: [{{op: cordon, node: {json.dumps(hostile)}}}]\n", encoding="utf-8")
    planned = gpuadmin("--state", state, "plan", "-f", changes, "-o", "json")
    assert planned.code == 0, planned.err
    lines = json.loads(planned.out)["commands"][hostile]
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    (bin_dir / "kubectl").write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n",
                                     encoding="utf-8")
    (bin_dir / "kubectl").chmod(0o755)
    ran = subprocess.run(["sh", "-e"], input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=work,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    assert [json.loads(line) for line in ran.stdout.splitlines()] == [["cordon", "--", hostile]]
    assert list(work.iterdir()) == []
    # the state still opens, applies and undoes: the name rule is for what comes in, not what a state holds
    for command in (("apply", "-f", changes, "--yes"), ("undo", "--yes")):
        done = gpuadmin("--state", state, *command)
        assert done.code == 0, done.err
    listed = json.loads(gpuadmin("--state", state, "get", "nodes", hostile, "-o", "json").out)["items"]
    assert [(n["name"], n["state"]) for n in listed] == [(hostile, "ready")]
