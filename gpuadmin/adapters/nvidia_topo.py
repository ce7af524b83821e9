"""`nvidia-smi topo -m` text → NVLink domains, NIC and CPU affinity, and what they mean for a Node.

The matrix has one column per GPU and NIC, then `CPU Affinity`, `NUMA Affinity` and (newer drivers)
`GPU NUMA ID`. NICs are either named in the header directly (`mlx5_0`, older drivers) or as `NIC0`… with a
`NIC Legend:` block below the matrix that maps them to device names (newer drivers); both are read.

- `NV#` cells are NVLink bonds of # links; GPUs joined by them form NVLink domains (connected components).
  One domain of every GPU with all-to-all links and more than two GPUs is an NVSwitch board (`nvswitch`),
  domains of two are bridged `pairs`, no NVLink at all is `none`.
- NIC affinity per GPU is the cell of each NIC (`PIX`, `PXB`, `PHB`, `NODE`, `SYS`); the closest NICs of a
  GPU are those at its best level. NICs next to no GPU (no `PIX`/`PXB` cell: e.g. the storage and in-band
  NICs on the CPU side of an HGX node) are kept as NICs of the node and listed in `cpu_side_nics`.

Real output is tab-separated and its header line is wrapped in terminal escapes (`ESC[4m … ESC[0m`,
underline); escapes are stripped first. Tab-separated rows are split on each tab, so an empty
`CPU Affinity` or `NUMA Affinity` cell (seen inside a cgroup or container) stays in its column; both
affinity columns accept any text (`N/A`, empty, odd CPU lists).
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
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")  # CSI sequences and two-byte escapes
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

    @property
    def cpu_side_nics(self) -> list[str]:
        """NICs that sit next to no GPU: no GPU reaches them through at most PCIe bridges (PIX/PXB)."""
        near = {n for cells in self.nic_affinity.values() for n, v in cells.items() if v in ("PIX", "PXB")}
        return [n for n in self.nics if n not in near]

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


def _cells(line: str) -> list[str]:
    """A matrix row: on tab-separated (real) output every tab is a column boundary, so empty cells keep
    their place; on space-aligned (transcribed) output runs of two or more spaces are."""
    if "\t" in line:
        return [c.strip() for c in line.rstrip("\r\n").split("\t")]
    return _header(line)


def _int_or_none(text: str | None) -> int | None:
    if text is None or not text.strip().lstrip("-").isdigit():
        return None
    return int(text)


def parse_topology(text: str, file: str = "<topo>") -> Topology:
    """Parse `nvidia-smi topo -m` output; `InputError` with the line on anything that is not that."""
    lines = [_ESCAPE.sub("", line) for line in text.splitlines()]
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
        cells = _cells(line)
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
        tail = values[len(devices) :]
        if "\t" in line and extra and extra[0] == "CPU Affinity":
            # real rows pad with extra tabs after NUMA Affinity (`0-55\t0\t\tN/A`); the CPU Affinity cell
            # comes first and may be empty (inside a cgroup), the later ones are the non-empty cells left
            tail = tail[:1] + [c for c in tail[1:] if c]
        rest = dict(zip(extra, tail, strict=False))
        cpu = rest.get("CPU Affinity")
        topo.cpu_affinity[gpu] = None if cpu in (None, "", "N/A") else cpu
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
        cpu_side = topo.cpu_side_nics
        if cpu_side:
            warnings.append(
                f"{len(cpu_side)} of the {len(topo.nics)} NICs sit next to no GPU (CPU side: "
                f"{', '.join(cpu_side)}); counted as NICs of the node"
            )
    return node.model_copy(update=update), warnings
