"""The inventory model: nodes, GPUs, partitions, device groups, VMs, queues, jobs."""

from gpuadmin.model.inventory import (
    DeviceGroup,
    Gpu,
    Inventory,
    Job,
    MigInstance,
    Node,
    NodeSelectorRequirement,
    NotInCatalog,
    Queue,
    Rdma,
    Request,
    Resources,
    Slot,
    VGpu,
    Vm,
    VSphere,
)

__all__ = [
    "DeviceGroup",
    "Gpu",
    "Inventory",
    "Job",
    "MigInstance",
    "Node",
    "NodeSelectorRequirement",
    "NotInCatalog",
    "Queue",
    "Rdma",
    "Request",
    "Resources",
    "Slot",
    "VGpu",
    "VSphere",
    "Vm",
]
