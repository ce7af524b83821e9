"""`nvidia-smi topo -m` text → NVLink domains, NIC and CPU affinity, and what they mean for a Node.

The matrix has one column per GPU and NIC, then `CPU Affinity`, `NUMA Affinity` and (newer drivers)
`GPU NUMA ID`. NICs are either named in the header directly (`mlx5_0`, older drivers) or as `NIC0`… with a
`NIC Legend:` block below the matrix that maps them to device names (newer drivers); both are read.

- `NV#` cells are NVLink bonds of # links; GPUs joined by them form NVLink domains (connected components).
  One domain of every GPU with all-to-all links and more than two GPUs is an NVSwitch board (`nvswitch`),
  domains of two are bridged `pairs`, no NVLink at all is `none`.
- NIC affinity per GPU is the cell of each NIC (`PIX`, `PXB`, `PHB`, `NODE`, `SYS`); the closest NICs of a
  GPU are those at its best level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gpuadmin.adapters._common import input_error
from gpuadmin.model import Node, Rdma
from gpuadmin.model.inventory import NvlinkKind

LEVELS = ("X", "PIX", "PXB", "PHB", "NODE", "SYS")  # nearest first
_SPLIT = re.compile(r"\t+|\s{2,}")
_NV = re.compile(r"^NV(\d+)$")
_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


@dataclass
class Topology:
    """What `nvidia-smi topo -m` says. GPUs by index; NICs by device name (legend resolved)."""

    gpus: list[int]
    nics: list[str]
    nvlinks: dict[tuple[int, int], int] = field(default_factory=dict)  # (i, j), i < j → bonded links
    nic_affinity: dict[int, dict[str, str]] = field(default_factory=dict)  # GPU → NIC → PIX/PXB/...
    cpu_affinity: dict[int, str | None] = field(default_factory=dict)
    numa_affinity: dict[int, int | None] = field(default_factory=dict)
    gpu_numa_id: dict[int, int | None] = field(default_factory=dict)

    @property
    def nvlink_domains(self) -> list[list[int]]:
        """Connected components of the NVLink graph, each sorted, largest first (singletons included)."""
        parent = {g: g for g in self.gpus}

        def find(g: int) -> int:
            while parent[g] != g:
                parent[g] = parent[parent[g]]
                g = parent[g]
            return g

        for i, j in self.nvlinks:
            parent[find(i)] = find(j)
        groups: dict[int, list[int]] = {}
        for g in self.gpus:
            groups.setdefault(find(g), []).append(g)
        return sorted((sorted(v) for v in groups.values()), key=lambda d: (-len(d), d))

    def all_to_all(self, domain: list[int]) -> bool:
        return all((a, b) in self.nvlinks for i, a in enumerate(domain) for b in domain[i + 1 :])

    @property
    def nvlink_kind(self) -> NvlinkKind:
        if not self.nvlinks:
            return "none"
        domains = [d for d in self.nvlink_domains if len(d) > 1]
        if len(domains) == 1 and len(domains[0]) > 2 and self.all_to_all(domains[0]):
            return "nvswitch"
        if all(len(d) == 2 for d in domains):
            return "pairs"
        return "nvswitch" if all(self.all_to_all(d) for d in domains) else "pairs"

    def closest_nics(self, gpu: int) -> list[str]:
        """The NICs at the GPU's nearest PCIe level (e.g. its two PXB NICs)."""
        cells = self.nic_affinity.get(gpu, {})
        ranked = [(LEVELS.index(v) if v in LEVELS else len(LEVELS), n) for n, v in cells.items()]
        if not ranked:
            return []
        best = min(r for r, _ in ranked)
        return [n for r, n in ranked if r == best]


def _header(line: str) -> list[str]:
    return [c.strip() for c in _SPLIT.split(line.strip()) if c.strip()]


def _int_or_none(text: str | None) -> int | None:
    if text is None or not text.strip().lstrip("-").isdigit():
        return None
    return int(text)


def parse_topology(text: str, file: str = "<topo>") -> Topology:
    """Parse `nvidia-smi topo -m` output; `InputError` with the line on anything that is not that."""
    lines = text.splitlines()
    header_at = next(
        (n for n, line in enumerate(lines) if line.split()[:1] == ["GPU0"] and line.split()[1:2] != ["X"]),
        None,
    )
    if header_at is None:
        raise input_error("not `nvidia-smi topo -m` output: no header row with GPU0", file, 1)
    columns = _header(lines[header_at])
    devices = [c for c in columns if c not in _AFFINITY_COLUMNS]
    extra = [c for c in columns if c in _AFFINITY_COLUMNS]
    legend: dict[str, str] = {}
    for line in lines[header_at + 1 :]:
        match = _LEGEND.match(line)
        if match:
            legend[match.group(1)] = match.group(2)
    gpus = [int(d[3:]) for d in devices if re.fullmatch(r"GPU\d+", d)]
    nic_columns = [d for d in devices if not re.fullmatch(r"GPU\d+", d)]
    topo = Topology(gpus=gpus, nics=[legend.get(d, d) for d in nic_columns])
    seen_rows = 0
    for n, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        if not line.strip():
            if seen_rows:
                break
            continue
        cells = _header(line)
        label = cells[0]
        if label not in devices:
            if seen_rows:
                break
            continue
        seen_rows += 1
        values = cells[1:]
        if len(values) < len(devices):
            raise input_error(
                f"row {label} has {len(values)} cells, the header names {len(devices)} devices", file, n
            )
        if not label.startswith("GPU") or label in nic_columns:
            continue
        gpu = int(label[3:])
        for column, value in zip(devices, values, strict=False):
            if re.fullmatch(r"GPU\d+", column):
                other = int(column[3:])
                nv = _NV.match(value)
                if nv and other != gpu:
                    topo.nvlinks[(min(gpu, other), max(gpu, other))] = int(nv.group(1))
                elif value not in LEVELS and not nv:
                    raise input_error(
                        f"row {label}, column {column}: unknown link {value!r}",
                        file,
                        n,
                        hint="expected X, NV#, PIX, PXB, PHB, NODE or SYS",
                    )
            else:
                topo.nic_affinity.setdefault(gpu, {})[legend.get(column, column)] = value
        rest = dict(zip(extra, values[len(devices) :], strict=False))
        cpu = rest.get("CPU Affinity")
        topo.cpu_affinity[gpu] = None if cpu in (None, "N/A") else cpu
        topo.numa_affinity[gpu] = _int_or_none(rest.get("NUMA Affinity"))
        if "GPU NUMA ID" in extra:
            topo.gpu_numa_id[gpu] = _int_or_none(rest.get("GPU NUMA ID"))
    if sorted(topo.cpu_affinity) != sorted(gpus):
        missing = sorted(set(gpus) - set(topo.cpu_affinity))
        raise input_error(f"no matrix row for GPU {', '.join(map(str, missing))}", file, header_at + 1)
    return topo


def read_topology(path: str | Path) -> Topology:
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise input_error(f"cannot read: {exc}", file) from None
    return parse_topology(text, file)


def apply_topology(
    node: Node, topo: Topology, *, rdma_gbps: int | None = None, rdma_network: str | None = None
) -> tuple[Node, list[str]]:
    """The node with its NVLink kind and RDMA NIC count from the topology, and warnings.

    The matrix names NICs but not their speed or network: an existing `rdma` keeps its `gbps` and
    `network`; a node without one needs `rdma_gbps` and `rdma_network`, else `rdma` is left unset (warned).
    """
    warnings: list[str] = []
    if node.gpus and len(node.gpus) != len(topo.gpus):
        warnings.append(f"the node has {len(node.gpus)} GPUs, the topology {len(topo.gpus)}")
    update: dict[str, object] = {"nvlink": topo.nvlink_kind}
    if topo.nics:
        gbps = rdma_gbps or (node.rdma.gbps if node.rdma else None)
        network = rdma_network or (node.rdma.network if node.rdma else None)
        if gbps is None or network is None:
            warnings.append(
                f"{len(topo.nics)} NICs in the topology, but their speed and network are unknown; "
                "give rdma gbps and network to record them"
            )
        else:
            update["rdma"] = Rdma(nics=len(topo.nics), gbps=gbps, network=network)
    return node.model_copy(update=update), warnings
