"""Importing nodes as changes and exporting the state for the tools that enforce it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuadmin.engine import changes as ch
from gpuadmin.model import Node
from gpuadmin.model.diagnostics import Diagnostic, InputError
from gpuadmin.service.caller import use_case
from gpuadmin.service.core import ServiceCore
from gpuadmin.store import (
    dump_inventory,
    inventory_data,
)


class Transfer(ServiceCore):
    """Nodes imported as changes; the state exported for the tools that enforce it."""

    @use_case("read")
    def import_changes(self, nodes: Sequence[Node]) -> list[ch.Change]:
        """Imported nodes as changes: `add-node` for a new one, `restore` (replace) for a known one."""
        out: list[ch.Change] = []
        for node in nodes:
            if self.state.nodes.get(node.name) is None:
                out.append(ch.AddNode(op="add-node", node=node))
            else:
                out.append(ch.Restore(op="restore", kind="node", name=node.name, node=node))
        return out

    @use_case("read")
    def export(self, kind: str, **options: Any) -> Any:
        """What `gpuadmin export KIND` prints: plain data (dicts and lists), or YAML text for `inventory` (its
        plain data with `fmt="json"`)."""
        from gpuadmin import adapters  # the exporters load when used: every other command starts faster

        nodes = list(self.state.nodes.values())
        if kind == "inventory":
            inventory = self.state.to_inventory()
            return inventory_data(inventory) if options.get("fmt") == "json" else dump_inventory(inventory)
        if kind == "mig-parted":
            return adapters.export_mig_parted(nodes, warnings=options.get("warnings"))
        if kind == "device-plugin":
            return adapters.export_device_plugin(nodes, warnings=options.get("warnings"))
        if kind == "labels":
            return adapters.export_labels(nodes)
        if kind == "pods":
            return adapters.export_pods(list(self.state.jobs.values()), nodes, warnings=options.get("warnings"),
                                        queue_system=options.get("queue_system", "none"))
        if kind == "queues":
            return adapters.export_queues(list(self.state.queues.values()), fmt=options.get("fmt", "all"))
        raise InputError([Diagnostic(f"unknown export {kind!r}")])


