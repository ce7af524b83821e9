"""Files the front ends hand over whole: a document to validate, nodes read from a machine or a cluster, an
inventory to print. The adapters load when used: every other command starts faster."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gpuadmin.engine.rules import Violation
from gpuadmin.engine.state import ClusterState
from gpuadmin.model import Inventory, Node
from gpuadmin.model.inventory import Orchestrator, Platform
from gpuadmin.service.core import check_state
from gpuadmin.store import default_state_dir, dump_inventory, load_document

NodeSource = Literal["nvidia-smi", "kube-nodes", "local"]


def validate_document(path: Path) -> tuple[Literal["inventory", "changes"], list[Violation]]:
    """What `validate` says of a file: what it is, and for an inventory the rules it breaks (an InputError when
    it cannot be read as either)."""
    kind, value = load_document(path)
    if kind == "inventory":
        assert isinstance(value, Inventory)
        return kind, check_state(ClusterState.from_inventory(value))
    return kind, []


@dataclass(frozen=True)
class HostFacts:
    """How a host read by `import` is placed, and its RDMA facts (from the command line)."""

    platform: Platform = "baremetal"
    orchestrator: Orchestrator = "none"
    rdma_gbps: int | None = None
    rdma_network: str | None = None


@dataclass
class ReadNodes:
    nodes: list[Node]
    warnings: list[str] = field(default_factory=list)


def read_nodes(source: NodeSource, file: Path | None, node: str | None, host: HostFacts,
               topo: Path | None = None) -> ReadNodes:
    """Nodes from nvidia-smi's XML (and `topo -m`), from `kubectl get nodes -o json`, or from this host."""
    from gpuadmin import adapters

    if source == "nvidia-smi":
        assert file is not None and node is not None
        result = adapters.import_nvidia_smi(file, node, platform=host.platform, orchestrator=host.orchestrator)
        read, warnings = result.node, list(result.warnings)
        if topo is not None:
            read, more = adapters.apply_topology(read, adapters.read_topology(topo), rdma_gbps=host.rdma_gbps,
                                                 rdma_network=host.rdma_network)
            warnings += more
        return ReadNodes([read], warnings)
    if source == "kube-nodes":
        assert file is not None
        nodes, more = adapters.read_kube_nodes(file)
        return ReadNodes(nodes, list(more))
    local = adapters.import_local(node, platform=host.platform, orchestrator=host.orchestrator,
                                  rdma_network=host.rdma_network)
    return ReadNodes([local.node], list(local.warnings))


def inventory_text(cluster: str, nodes: list[Node]) -> str:
    """Nodes as an inventory file (`import -o inventory`)."""
    return dump_inventory(Inventory(version=1, cluster=cluster, nodes=nodes))


def consumer_refused(warnings: list[str]) -> bool:
    """Whether an export left out something its consumer refuses (`gpuadmin export` then exits 1)."""
    from gpuadmin.adapters._common import ConsumerRefusal

    return any(isinstance(w, ConsumerRefusal) for w in warnings)


__all__ = ["HostFacts", "ReadNodes", "consumer_refused", "default_state_dir", "inventory_text", "read_nodes",
           "validate_document"]
