"""Importers and exporters between gpuadmin and the formats NVIDIA's and Kubernetes' tools read and write.

Importers return `Node`s (with warnings); exporters return plain data (dicts and lists) that the CLI dumps
as YAML or JSON. No function here prints, and none writes a file. `gpuadmin import <kind>` picks its reader in
`gpuadmin/cli/cmd_io.py`, `gpuadmin export <kind>` its writer in the service. See docs/adapters.md.
"""

from __future__ import annotations

from gpuadmin.adapters._common import ConsumerRefusal, ImportResult, NoDriverError, PlainDiagnostic
from gpuadmin.adapters.device_plugin import (
    export_device_plugin,
    export_labels,
    mig_strategy,
    node_config,
    parse_device_plugin_config,
    parse_device_plugin_configmap,
)
from gpuadmin.adapters.kube_nodes import import_kube_nodes, parse_kube_nodes, read_kube_nodes
from gpuadmin.adapters.local import import_local
from gpuadmin.adapters.mig_parted import (
    export_mig_parted,
    export_mig_parted_configmap,
    layouts_for_model,
    mig_parted_changes,
    mig_parted_layouts,
    parse_mig_parted,
    read_mig_parted,
)
from gpuadmin.adapters.nvidia_smi import import_nvidia_smi, parse_nvidia_smi
from gpuadmin.adapters.nvidia_topo import Topology, apply_topology, parse_topology, read_topology
from gpuadmin.adapters.pods import export_pods, job_manifests, shared_pvc
from gpuadmin.adapters.queues import export_queues, kai_queues, kueue_queues

__all__ = [
    "ConsumerRefusal",
    "ImportResult",
    "NoDriverError",
    "PlainDiagnostic",
    "Topology",
    "apply_topology",
    "export_device_plugin",
    "export_labels",
    "export_mig_parted",
    "export_mig_parted_configmap",
    "export_pods",
    "export_queues",
    "import_kube_nodes",
    "import_local",
    "import_nvidia_smi",
    "job_manifests",
    "kai_queues",
    "kueue_queues",
    "layouts_for_model",
    "mig_parted_changes",
    "mig_parted_layouts",
    "mig_strategy",
    "node_config",
    "parse_device_plugin_config",
    "parse_device_plugin_configmap",
    "parse_kube_nodes",
    "parse_mig_parted",
    "parse_nvidia_smi",
    "parse_topology",
    "read_kube_nodes",
    "read_mig_parted",
    "read_topology",
    "shared_pvc",
]
