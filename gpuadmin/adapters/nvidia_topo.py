"""`nvidia-smi topo -m` text → NVLink domains, NIC and CPU affinity, and what they mean for a Node.

The matrix has one column per GPU and NIC, then `CPU Affinity`, `NUMA Affinity` and (newer drivers)
`GPU NUMA ID`. NICs are either named in the header directly (`mlx5_0`, older drivers) or as `NIC0`… with a
`NIC Legend:` block below the matrix that maps them to device names (newer drivers); both are read.

- `NV#` cells are NVLink bonds of # links; GPUs joined by them form NVLink domains (connected components).
  An all-to-all domain of every GPU is either an NVSwitch board or a mesh of direct links, and the cells
  alone do not say which: through a switch each peer is reached over all of a GPU's links (8 × `NV12` on
  HGX A100 8-GPU, 12 links per GPU), direct links split them among the peers (4 × `NV4` on HGX A100 4-GPU:
  3 × 4 = 12). So a GPU whose cells add up to more links than it has sits on a switch (`nvswitch`); one
  whose cells fit within its links, with a peer short of all of them, has direct links (`mesh`). The
  link count comes from the node's GPU model in the catalog (`nvlink.links`); without it, only a sum
  beyond what any catalog GPU has is proof of a switch. Bridged pairs (0,1), (2,3), … are `pairs`, no
  NVLink at all is `none`, and anything else (pairs in another order, partial meshes, a matrix that fits
  both readings) is `unknown` rather than a guess.
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpuadmin.adapters._common import input_error
from gpuadmin.catalog import get_catalog
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
    source: str = "<topo>"  # the file it was read from, for messages
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

    def links_per_gpu(self, gpu: int) -> int:
        """The NVLinks the matrix shows on a GPU: its bonds to every peer, added up."""
        return sum(n for pair, n in self.nvlinks.items() if gpu in pair)

    def nvlink_kind_for(self, links_per_gpu: int | None) -> NvlinkKind:
        """What the matrix says of the board, given how many NVLinks each GPU has (None: not known)."""
        if not self.nvlinks:
            return "none"
        domains = [d for d in self.nvlink_domains if len(d) > 1]
        if all(len(d) == 2 for d in domains):
            # the model's pairs are (0,1), (2,3), …: a board bridged otherwise is not that
            aligned = all(d[0] % 2 == 0 and d[1] == d[0] + 1 for d in domains)
            return "pairs" if aligned else "unknown"
        if len(domains) != 1 or domains[0] != sorted(self.gpus) or not self.all_to_all(domains[0]):
            return "unknown"
        shown = {g: self.links_per_gpu(g) for g in self.gpus}
        if links_per_gpu is None:
            # without the model, only more links than any catalog GPU has proves a switch
            most = max((s.nvlink.links for s in get_catalog().gpu_models.values() if s.nvlink), default=0)
            return "nvswitch" if all(n > most for n in shown.values()) else "unknown"
        if all(n <= links_per_gpu for n in shown.values()):
            return "mesh"
        if all(cell == links_per_gpu for cell in self.nvlinks.values()):
            return "nvswitch"  # every peer over all of a GPU's links: only a switch shares them
        return "unknown"

    @property
    def nvlink_kind(self) -> NvlinkKind:
        """The board as far as the matrix alone tells, without the GPUs' link count."""
        return self.nvlink_kind_for(None)

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
    topo = Topology(gpus=gpus, nics=[legend.get(d, d) for d in nic_columns], source=file)
    for n, line, label, values in _matrix_rows(lines, header_at, devices, file):
        if not label.startswith("GPU") or label in nic_columns:
            continue
        gpu = int(label[3:])
        _read_links(topo, gpu, values, devices, legend, (file, n, label))
        _read_affinities(topo, gpu, line, values[len(devices) :], extra)
    if sorted(topo.cpu_affinity) != sorted(gpus):
        missing = sorted(set(gpus) - set(topo.cpu_affinity))
        raise input_error(f"no matrix row for GPU {', '.join(map(str, missing))}", file, header_at + 1)
    return topo


def _matrix_rows(
    lines: list[str], header_at: int, devices: list[str], file: str
) -> Iterator[tuple[int, str, str, list[str]]]:
    """(line number, line, row label, cells after the label) of each matrix row under the header: blank and
    other lines before the first row are skipped, the first one after the rows ends the matrix."""
    seen_rows = 0
    for n, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        cells = _cells(line) if line.strip() else []
        if not cells or cells[0] not in devices:
            if seen_rows:
                return
            continue
        seen_rows += 1
        label, values = cells[0], cells[1:]
        if len(values) < len(devices):
            raise input_error(
                f"row {label} has {len(values)} cells, the header names {len(devices)} devices", file, n
            )
        yield n, line, label, values


def _read_links(
    topo: Topology, gpu: int, values: list[str], devices: list[str], legend: dict[str, str],
    where: tuple[str, int, str],
) -> None:
    """One GPU row's device cells: NVLinks to other GPUs, the link kind to each NIC. `where`: (file, line,
    row label) for the error on an unknown link."""
    for column, value in zip(devices, values, strict=False):
        if not re.fullmatch(r"GPU\d+", column):
            topo.nic_affinity.setdefault(gpu, {})[legend.get(column, column)] = value
            continue
        other = int(column[3:])
        nv = _NV.match(value)
        if nv and other != gpu:
            topo.nvlinks[(min(gpu, other), max(gpu, other))] = int(nv.group(1))
        elif value not in LEVELS and not nv:
            file, n, label = where
            raise input_error(
                f"row {label}, column {column}: unknown link {value!r}",
                file,
                n,
                hint="expected X, NV#, PIX, PXB, PHB, NODE or SYS",
            )


def _read_affinities(topo: Topology, gpu: int, line: str, tail: list[str], extra: list[str]) -> None:
    """One GPU row's cells after the devices: CPU and NUMA affinity, the GPU's own NUMA id."""
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

    A matrix of another machine (another GPU count) is refused: its links and NICs are not this node's.
    The NVLink kind uses the node's GPU model for the links per GPU (`Topology.nvlink_kind_for`); where the
    matrix cannot tell, a kind the node already has (from its shape or its XML) is kept, else it becomes
    `unknown`, and a warning says why.
    The matrix names NICs but not their speed or network: an existing `rdma` keeps its `gbps` and
    `network`; a node without one needs `rdma_gbps` and `rdma_network`, else `rdma` is left unset (warned).
    """
    if len(node.gpus) != len(topo.gpus):
        raise input_error(
            f"the topology has {len(topo.gpus)} GPUs, node {node.name} has {len(node.gpus)}: "
            "it is another machine's `nvidia-smi topo -m`",
            topo.source,
            hint="run `nvidia-smi topo -m` on the node the XML came from",
        )
    warnings: list[str] = []
    links = _links_per_gpu(node)
    kind = topo.nvlink_kind_for(links)
    if kind == "unknown":
        kept = node.nvlink
        said = f"kept nvlink: {kept}" if kept not in (None, "unknown") else "nvlink set to unknown"
        warnings.append(
            f"the NVLink matrix of {node.name} fits no layout gpuadmin can name for sure "
            f"({_nvlink_summary(topo)}, {links if links is not None else 'unknown'} links per GPU); {said}"
        )
        if kept not in (None, "unknown"):
            kind = kept
    update: dict[str, object] = {"nvlink": kind}
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


def _links_per_gpu(node: Node) -> int | None:
    """The NVLinks per GPU of the node's GPU model in the catalog; None for mixed or unknown models."""
    models = {gpu.model for gpu in node.gpus}
    spec = get_catalog().model(models.pop()) if len(models) == 1 else None
    return spec.nvlink.links if spec is not None and spec.nvlink is not None else None


def _nvlink_summary(topo: Topology) -> str:
    bonds = sorted(set(topo.nvlinks.values()))
    domains = [d for d in topo.nvlink_domains if len(d) > 1]
    return f"{len(topo.nvlinks)} NVLink bonds of {'/'.join(f'NV{b}' for b in bonds)} in {len(domains)} domain(s)"
