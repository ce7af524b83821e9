"""Drawings of the console: a GPU's slices, a node's NVLink domains and device groups, quota bars.

Pure functions from the service's plain data to Rich `Text`. They use text attributes only (reverse, bold,
dim), never colours, so every theme, 16 colours and NO_COLOR draw them the same; what is held and what is
free is also spelt in the characters (`#` held compute, `.` free, a holder's name or `free`). Every name
goes in as plain text (`Text.append`), so names are never read as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from gpuadmin.render.text import safe

HELD = "reverse"
FREE = "dim"


def shorten(text: str, width: int) -> str:
    """`text` in exactly `width` terminal cells: padded, or cut with an ellipsis (wide characters counted)."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text + " " * (width - cell_len(text))
    out, used = "", 0
    for char in text:
        if used + cell_len(char) > width - 1:
            break
        out += char
        used += cell_len(char)
    return out + "…" + " " * (width - 1 - used)


def _fit(text: str, width: int) -> str:
    return shorten(safe(text), width)


def _segment(line: Text, text: str, width: int, style: str) -> None:
    """One bracketed cell span: `|text    ` of exactly `width` characters."""
    line.append("|", style="dim")
    line.append(_fit(text, width - 1), style=style)


def gpu_lines(gpu: dict[str, Any], width: int) -> list[Text]:
    """A GPU as 2–4 lines: its title, then its slices drawn to scale with their holders."""
    title = Text()
    title.append(f"GPU {gpu['index']} ", style="bold")
    title.append(safe(gpu["model"]))
    title.append(f"  {gpu['mode']}")
    body = width - 10
    if gpu["mode"] == "mig":
        return [title, *_mig_lines(gpu, body)]
    if gpu["mode"] == "vgpu":
        line = Text("  vgpus   ")
        vgpus = gpu["vgpus"]
        cell = max(8, body // max(1, len(vgpus))) if vgpus else body
        for v in vgpus:
            _segment(line, f"{v['profile']} > vm {v['vm']}", cell, HELD)
        if not vgpus:
            _segment(line, "no vGPUs (free)", body, FREE)
        return [title, line]
    if gpu["mode"] == "passthrough":
        line = Text("  vm      ")
        _segment(line, f"vm {gpu['vm']}" if gpu["vm"] else "unattached (free)", body, HELD if gpu["vm"] else FREE)
        return [title, line]
    holders = gpu["holders"]
    if gpu["mode"] == "time-sliced":
        replicas = gpu["replicas"] or 1
        title.append(f" x{replicas} replicas")
        line = Text("  share   ")
        cell = max(6, body // replicas)
        for i in range(replicas):
            if i < len(holders):
                h = holders[i]
                _segment(line, f"{h['job']} {h['share']:g}", cell, HELD)
            else:
                _segment(line, "free", cell, FREE)
        return [title, line]
    if gpu.get("dynamic") is not None:
        return [title, *_dynamic_lines(gpu, body)]
    line = Text("  whole   ")
    if holders:
        cell = max(6, body // len(holders))
        for h in holders:
            _segment(line, f"{h['job']} {h['share']:g} GPU", cell, HELD)
        if sum(h["share"] for h in holders) < 1 - 1e-9:
            title.append("  (shared: partly used)")
    else:
        _segment(line, "free", body, FREE)
    return [title, line]


def _dynamic_lines(gpu: dict[str, Any], body: int) -> list[Text]:
    """A full GPU that fractions may share: each holder's span to scale (share and GiB), then what is left."""
    shared = gpu["dynamic"]
    line = Text("  shared  " if gpu["holders"] else "  whole   ")
    if not gpu["holders"]:
        _segment(line, "free (fractions may share it)", body, FREE)
        return [line]
    left = 1.0 - shared["used"]
    left_text = f"{shared['left_gib']:g}G left"
    left_width = max(len(left_text) + 2, round(body * left)) if left > 1e-9 else 0
    used = max(shared["used"], 1e-9)
    for h in gpu["holders"]:  # spans to scale, in what the left-over span does not take
        _segment(line, f"{h['job']} {h['share']:g} {h['gib']:g}G",
                 max(6, round((body - left_width) * h["share"] / used)), HELD)
    if left_width:
        _segment(line, left_text, left_width, FREE)
    return [line]


def _mig_lines(gpu: dict[str, Any], body: int) -> list[Text]:
    """Memory slices across, compute slices under them (a 7x8 grid on H100/A100, 4x4 on A30)."""
    slots = gpu["memory_slices"] or 8
    compute = gpu["compute_slices"] or 7
    cell = max(3, min(12, body // slots))
    owner: list[dict[str, Any] | None] = [None] * slots
    for inst in gpu["instances"]:
        start = inst["start"] or 0
        for s in range(start, min(slots, start + inst["memory_slices"])):
            owner[s] = inst
    memory, sm, jobs = Text("  memory  "), Text("  compute "), Text("  holders ")
    s = 0
    while s < slots:
        inst = owner[s]
        if inst is None:
            _segment(memory, ".", cell, FREE)
            _segment(sm, "." if s < compute else "", cell, FREE)
            _segment(jobs, "", cell, FREE)
            s += 1
            continue
        span = min(slots - s, inst["memory_slices"])
        style = HELD if inst["holders"] else ""
        _segment(memory, inst["profile"] + (f" x{inst['replicas']}" if inst["replicas"] else ""), span * cell, style)
        cs = min(inst["compute_slices"], max(0, compute - s))
        _segment(sm, " ".join(["#" * max(1, cell - 2)] * cs), span * cell, style)
        _segment(jobs, ",".join(inst["holders"]) or "free", span * cell, style if inst["holders"] else FREE)
        s += span
    for line in (memory, sm, jobs):
        line.append("|", style="dim")
    return [memory, sm, jobs]


def _host(board: dict[str, Any]) -> str:
    """The node's hardware place, and Kubernetes where it schedules pods there: `baremetal + kubernetes`."""
    return str(board["platform"]) + (f" + {board['orchestrator']}" if board["orchestrator"] != "none" else "")


def node_lines(board: dict[str, Any], width: int) -> list[Text]:
    """A node's header facts, its NVLink domains and device groups, then every GPU drawn."""
    lines: list[Text] = []
    head = Text()
    head.append(safe(board["name"]), style="bold")
    head.append(f"  {_host(board)}  state {board['state']}")
    if board.get("shape"):
        head.append(f"  {safe(board['shape'])}")
    lines.append(head)
    lines += topology_lines(board, width)[1:]
    lines.append(Text(""))
    for gpu in board["gpus"]:
        lines += gpu_lines(gpu, width)
    return lines


def topology_lines(board: dict[str, Any], width: int) -> list[Text]:
    """A node's NVLink domains (NVSwitch board, bridged pairs), device groups with their VMs, NICs."""
    out = [Text.assemble((safe(board["name"]), "bold"), f"  {_host(board)}  {board['state']}")]
    label = {"nvswitch": "NVSwitch domain", "mesh": "NVLink mesh", "pairs": "NVLink pair", "none": "no NVLink",
             "unknown": "NVLink unknown"}[board["nvlink"]]
    for domain in board["domains"]:
        out.append(Text(f"  {label}: [" + " ".join(str(i) for i in domain) + "]"))
    for group in board["device_groups"]:
        line = Text(f"  device group {len(group['gpus'])}: ")
        line.append(safe(group["name"]), style="bold")
        line.append(" [" + " ".join(str(i) for i in group["gpus"]) + "] ")
        line.append(f"-> vm {safe(group['vm'])}" if group["vm"] else "(free)", style=HELD if group["vm"] else FREE)
        out.append(line)
    rdma = board["rdma"]
    if rdma:
        per = board["nics_per_gpu"]
        text = f"  RDMA: {rdma['nics']} NICs x {rdma['gbps']} Gb/s on {safe(rdma['network'])}"
        if per:
            text += f"; {per} per GPU (an even split: the inventory records counts, not affinity)"
        out.append(Text(_fit(text, max(20, width - 1)).rstrip()))
    else:
        out.append(Text("  RDMA: none"))
    return out


def topology_line_count(board: dict[str, Any]) -> int:
    """How many lines `topology_lines` draws for `board`, without drawing them (the topology view's height)."""
    return 1 + len(board["domains"]) + len(board["device_groups"]) + 1


@dataclass(frozen=True)
class TreeItem:
    """One line of the topology tree (k9s's xray): node -> NVLink domain / device group -> GPU -> slice ->
    holder. `key` is its path from the node, which is what expanding and collapsing remember; `opens` is what
    Enter opens: ("node", NODE), ("gpu", "NODE/INDEX") or ("job", NAME)."""

    depth: int
    key: tuple[str, ...]
    kind: str  # node, domain, group, loose, rdma, gpu, slice, holder
    parts: tuple[tuple[str, str], ...]  # (text, style); names already made safe
    expandable: bool
    opens: tuple[str, str]
    ref: tuple[Any, ...] = ()  # the GPUs of a domain or group; a GPU's index; a slice's holders


Toggled = set[tuple[str, ...]]  # items whose expansion differs from the default (nodes open, the rest shut)


def is_open(item: TreeItem, toggled: Toggled) -> bool:
    return item.expandable and (item.depth == 0) != (item.key in toggled)


def tree_items(board: dict[str, Any], toggled: Toggled) -> list[TreeItem]:
    """The lines of one node's tree as it is expanded now: only what is open is built (1,024 shut nodes cost
    a few lines each)."""
    name = str(board["name"])
    root = TreeItem(0, (name,), "node", ((safe(name), "bold"), (f"  {_host(board)}  {board['state']}", "")), True,
                    ("node", name))
    out: list[TreeItem] = []
    _walk(board, root, toggled, out)
    return out


def _walk(board: dict[str, Any], item: TreeItem, toggled: Toggled, out: list[TreeItem]) -> None:
    out.append(item)
    if is_open(item, toggled):
        for child in _children(board, item):
            _walk(board, child, toggled, out)


def _child(parent: TreeItem, kind: str, name: str, parts: tuple[tuple[str, str], ...], expandable: bool,
           opens: tuple[str, str], ref: tuple[Any, ...] = ()) -> TreeItem:
    return TreeItem(parent.depth + 1, (*parent.key, f"{kind}:{name}"), kind, parts, expandable, opens, ref)


def _children(board: dict[str, Any], item: TreeItem) -> list[TreeItem]:
    node = str(board["name"])
    if item.kind == "node":
        return _node_children(board, item)
    if item.kind in ("domain", "group", "loose"):
        gpus = {gpu["index"]: gpu for gpu in board["gpus"]}
        return [_gpu_item(node, gpus[i], item) for i in item.ref if i in gpus]
    if item.kind == "gpu":
        gpu = next(g for g in board["gpus"] if g["index"] == item.ref[0])
        return [_child(item, "slice", str(n), ((label, ""), *_held(holders)), bool(holders), item.opens, tuple(holders))
                for n, (label, holders) in enumerate(_slices(gpu))]
    if item.kind == "slice":
        return [_child(item, "holder", f"{kind}:{name}", ((f"{kind} ", ""), (safe(name), HELD)), False,
                       ("job", name) if kind == "job" else ("node", node)) for kind, name in item.ref]
    return []


def _node_children(board: dict[str, Any], item: TreeItem) -> list[TreeItem]:
    node = str(board["name"])
    label = {"nvswitch": "NVSwitch domain", "mesh": "NVLink mesh", "pairs": "NVLink pair", "none": "no NVLink",
             "unknown": "NVLink unknown"}[board["nvlink"]]
    out = [_child(item, "domain", str(n), ((f"{label}: [" + " ".join(str(i) for i in domain) + "]", ""),), True,
                  ("node", node), tuple(domain)) for n, domain in enumerate(board["domains"])]
    for group in board["device_groups"]:
        vm = ((f" -> vm {safe(group['vm'])}", HELD) if group["vm"] else (" (free)", FREE))
        parts = ((f"device group {len(group['gpus'])}: ", ""), (safe(group["name"]), "bold"),
                 (" [" + " ".join(str(i) for i in group["gpus"]) + "]", ""), vm)
        out.append(_child(item, "group", str(group["name"]), parts, True, ("node", node), tuple(group["gpus"])))
    placed = {i for domain in board["domains"] for i in domain} | {i for g in board["device_groups"] for i in g["gpus"]}
    loose = tuple(gpu["index"] for gpu in board["gpus"] if gpu["index"] not in placed)
    if loose:
        out.append(_child(item, "loose", "gpus", ((f"GPUs: [{' '.join(str(i) for i in loose)}]", ""),), True,
                          ("node", node), loose))
    rdma = board["rdma"]
    text = f"RDMA: {rdma['nics']} NICs x {rdma['gbps']} Gb/s on {safe(rdma['network'])}" if rdma else "RDMA: none"
    if rdma and board["nics_per_gpu"]:
        text += f"; {board['nics_per_gpu']} per GPU (an even split, not affinity)"
    out.append(_child(item, "rdma", "rdma", ((text, ""),), False, ("node", node)))
    return out


def _gpu_item(node: str, gpu: dict[str, Any], parent: TreeItem) -> TreeItem:
    parts = ((f"GPU {gpu['index']} ", "bold"), (safe(gpu["model"]), ""), (f"  {gpu['mode']}", ""))
    return _child(parent, "gpu", str(gpu["index"]), parts, bool(_slices(gpu)), ("gpu", f"{node}/{gpu['index']}"),
                  (gpu["index"],))


def _slices(gpu: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """A GPU's slices, each with its holders ("job" or "vm", name), as the slices view lists them."""
    jobs = [("job", str(h["job"])) for h in gpu["holders"]]
    if gpu["mode"] == "mig":
        return [(f"MIG {i['profile']}" + (f"@{i['start']}" if i["start"] is not None else "")
                 + (f" x{i['replicas']}" if i["replicas"] else ""),
                 [("job", str(h)) for h in i["holders"]]) for i in gpu["instances"]]
    if gpu["mode"] == "vgpu":
        return [(f"vGPU {v['profile']}", [("vm", str(v["vm"]))]) for v in gpu["vgpus"]]
    if gpu["mode"] == "passthrough":
        return [("passthrough", [("vm", str(gpu["vm"]))] if gpu["vm"] else [])]
    if gpu["mode"] == "time-sliced":
        return [(f"time-sliced x{gpu['replicas'] or 1}", jobs)]
    return [("whole", jobs)]


def _held(holders: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    if not holders:
        return ((" (free)", FREE),)
    return ((" -> ", ""), (", ".join(f"{kind} {safe(name)}" for kind, name in holders), HELD))


def tree_lines(items: list[TreeItem], toggled: Toggled) -> list[Text]:
    """The tree's lines: a two-cell gutter (the view draws its cursor there), the depth, `-` open, `+` shut."""
    lines = []
    for item in items:
        mark = ("- " if is_open(item, toggled) else "+ ") if item.expandable else "  "
        line = Text("  " + "  " * item.depth + mark)
        for text, style in item.parts:
            line.append(text, style=style)
        lines.append(line)
    return lines


def unwrapped(lines: list[Text]) -> Text:
    """Lines joined into one text; the views draw it without wrapping (`text-wrap: nowrap` in app.tcss)."""
    return Text("\n").join(lines)


def quota_bar(used: float, quota: float | None, limit: float | None, width: int) -> str:
    """`######..|++.....`: `#` used within the quota, `|` the quota (a cell of its own), `+` borrowed over it,
    `.` room (under the quota, and past it up to the limit). Borrowing gets at least one `+`, and use at least
    one `#`, however small against the bar's scale: a queue that borrows 0.88 of 48 GPUs still shows it, in
    glyphs that read without colour."""
    top = max(used, quota or 0.0, limit or 0.0, 1e-9)
    marked = quota is not None and 0 < quota < top
    cells = width - 1 if marked else width
    scale = cells / top
    borrowed = max(0.0, used - quota) if quota is not None else 0.0
    left = cells if quota is None else min(cells, round(quota * scale))  # the part up to the quota
    if borrowed > 0 and left == cells and cells > 0:
        left -= 1  # the quota's part rounded to the whole bar: keep a cell for the borrowed part
    right = cells - left
    within = _at_least_one(min(used, quota) if quota is not None else used, scale, left)
    over = _at_least_one(borrowed, scale, right)
    return ("#" * within + "." * (left - within) + ("|" if marked else "") + "+" * over + "." * (right - over))[:width]


def _at_least_one(amount: float, scale: float, room: int) -> int:
    """Cells for `amount`: rounded, but one for any amount above zero, never more than `room`."""
    return min(room, max(1 if amount > 1e-9 else 0, round(amount * scale)))


def use_bar(counts: dict[str, int], width: int) -> Text:
    """Free / partly used / full as one bar, each part spelt by its own character and named after it."""
    total = max(1, sum(counts.values()))
    glyph = {"full": ("#", HELD), "partly used": ("+", ""), "free": (".", FREE)}
    bar = Text()
    used = 0
    parts = list(counts.items())
    for i, (name, n) in enumerate(parts):
        cells = width - used if i == len(parts) - 1 else round(n * width / total)
        char, style = glyph.get(name, ("?", ""))
        bar.append(char * cells, style=style)
        used += cells
    return bar


__all__ = ["TreeItem", "gpu_lines", "is_open", "node_lines", "quota_bar", "shorten", "topology_line_count",
           "topology_lines", "tree_items", "tree_lines", "unwrapped", "use_bar"]


def level_bar(percent: float | None, width: int, missing: str) -> str:
    """`######....`: a reading in percent as filled cells (any reading above zero gets one, glyphs that read
    without colour); a reading that is not there is its word (`stale`, `no data`), never an empty bar: an empty
    bar says 0 %."""
    if percent is None:
        return missing[:width]
    filled = _at_least_one(min(100.0, max(0.0, percent)), width / 100, width)
    return "#" * filled + "." * (width - filled)
