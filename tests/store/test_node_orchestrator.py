"""Issue 12, item 4: a node's hardware (`platform`) and its orchestrator are two fields.

`platform: kubernetes` is the old spelling of `platform: baremetal` + `orchestrator: kubernetes`: read from
inventories and change files, written back in the new form. Bad values are located errors at the field.
"""

from __future__ import annotations

import pytest

from gpuadmin.engine.changes import AddNode
from gpuadmin.model import Node
from gpuadmin.model.diagnostics import InputError
from gpuadmin.store import dump_inventory, parse_changes, parse_inventory

HEAD = "version: 1\ncluster: t\nnodes:\n"


def _inventory(nodes: str) -> str:
    return HEAD + nodes


def _errors(text: str) -> list[tuple[int | None, int | None, str, str]]:
    with pytest.raises(InputError) as caught:
        parse_inventory(text, "inv.yaml")
    return [(d.line, d.column, ".".join(map(str, d.path)), d.message) for d in caught.value.diagnostics]


def test_the_two_fields_and_their_default() -> None:
    inv = parse_inventory(_inventory(
        "  - {name: oke-1, platform: baremetal, orchestrator: kubernetes}\n"
        "  - {name: bm-1, platform: baremetal}\n"
        "  - {name: esx-1, platform: vsphere, vsphere: {version: '8.0U1'}, orchestrator: none}\n"
    ))
    assert [(n.platform, n.orchestrator, n.kubernetes) for n in inv.nodes] == [
        ("baremetal", "kubernetes", True), ("baremetal", "none", False), ("vsphere", "none", False)]


def test_old_platform_spelling_is_read_and_written_back_new() -> None:
    inv = parse_inventory(_inventory(
        "  - {name: k8s-1, platform: kubernetes}\n"
        "  - {name: k8s-2, platform: kubernetes, orchestrator: kubernetes}\n"
    ))
    assert {(n.platform, n.orchestrator) for n in inv.nodes} == {("baremetal", "kubernetes")}
    text = dump_inventory(inv)
    assert "platform: kubernetes" not in text and text.count("orchestrator: kubernetes") == 2
    assert parse_inventory(text) == inv
    # a stored row or journal entry (JSON) of the old form loads the same way
    assert Node.model_validate_json('{"name": "k8s-1", "platform": "kubernetes"}') == inv.nodes[0]


def test_old_spelling_in_a_change_file() -> None:
    [change] = parse_changes("changes:\n  - {op: add-node, node: {name: k8s-9, platform: kubernetes}}\n")
    assert isinstance(change, AddNode)
    assert (change.node.platform, change.node.orchestrator) == ("baremetal", "kubernetes")


@pytest.mark.parametrize(
    "node_yaml, where, message",
    [
        ("  - {name: a, platform: baremetal, orchestrator: k8s}\n", (4, 50, "nodes.0.orchestrator"),
         "expected one of kubernetes, none, got 'k8s'"),
        ("  - name: esx\n    platform: vsphere\n    vsphere: {version: '8.0'}\n    orchestrator: kubernetes\n",
         (7, 19, "nodes.0.orchestrator"), "orchestrator: kubernetes is not allowed with platform: vsphere"),
        ("  - {name: a, platform: kubernetes, orchestrator: none}\n", (4, 5, "nodes.0"),
         "platform: kubernetes (the old spelling of platform: baremetal + orchestrator: kubernetes) "
         "contradicts orchestrator: none"),
    ],
    ids=["unknown-value", "vsphere-host", "contradicts-old-spelling"],
)
def test_bad_orchestrator_is_a_located_error(node_yaml: str, where: tuple[int, int, str], message: str) -> None:
    errors = _errors(_inventory(node_yaml))
    assert len(errors) == 1
    line, column, path, text = errors[0]
    assert (line, column, path) == where
    assert message in text
