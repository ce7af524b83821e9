"""Deterministic generator of large, physically valid inventories (for benchmarks and scale tests).

    python -m bench.generate --nodes 1024 --jobs 100000 [--seed N] [-o FILE]

The cluster looks like a large OCI estate: blocks of bare-metal 8-GPU shapes (BM.GPU.H100.8,
BM.GPU.H200.8, BM.GPU.A100-v2.8, BM.GPU.B200.8), each block on its own RDMA cluster network, one
NVSwitch board per node; some nodes are carved with mig-parted-style MIG layouts, some are time-sliced
for notebooks, a few are cordoned, draining or down. Queues scale with the cluster. Jobs mix whole-GPU
work (1/2/4/8 GPUs, NVLink for 8), 2-4 node RDMA gangs, MIG requests, fractional notebooks and a few
requests that cannot fit as-is. A share of the jobs is running with a consistent placement (no slice
double-booked, MIG jobs on instances of their profile, fractions on one GPU summing to <= 1 within its
replicas, gangs on one network, queues within their limits, non-preemptible work within quota); the
rest are pending.

With `sharing` (`--sharing`) the same draws give a dynamic-sharing estate instead (Run:ai-style fractions
on full GPUs): the notebook pool's GPUs are full-mode, and every node that is not MIG-carved has
`sharing: {fractions: dynamic}`, so fractions and whole-GPU jobs compete for the same GPUs. Without it the
output is unchanged.

Same (nodes, jobs, seed, sharing) -> the same output, byte for byte.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any

import yaml

# ------------------------------------------------------------------------------------------------ hardware

# (profile, start) lists: every layout places each instance at a legal `nvidia-smi mig -lgipp` start, never
# overlaps memory slices, and uses <= 7 compute slices (shared/reference/gpu-facts.md §1.4).
Layout = tuple[tuple[str, int], ...]


def _layouts(one: str, double: str, two: str, three: str, four: str, seven: str) -> tuple[Layout, ...]:
    return (
        ((two, 0), (one, 2), (one, 3), (three, 4)),  # all-balanced: 1g x2 + 2g + 3g
        ((two, 0), (one, 2), (one, 3), (three, 4)),  # (weighted: the commonest mig-parted config)
        tuple((one, s) for s in range(7)),  # all-1g
        ((three, 0), (three, 4)),  # all-3g
        ((four, 0), (three, 4)),
        ((seven, 0),),  # all-7g
        ((two, 0), (two, 2), (two, 4), (one, 6)),
        ((double, 0), (double, 2), (double, 4), (double, 6)),
        ((four, 0), (two, 4), (one, 6)),
    )


@dataclass(frozen=True)
class Shape:
    name: str
    model: str
    tag: str  # node-name infix
    cpus: int
    memory_gib: int
    nics: int
    gbps: int
    gpu_memory_mib: int  # device total (catalog / nvidia-smi figure)
    weight: float
    # profile -> (compute slices, memory slices)
    profiles: dict[str, tuple[int, int]]
    layouts: tuple[Layout, ...]


def _profiles(
    one: str, me: str, double: str, two: str, three: str, four: str, seven: str
) -> dict[str, tuple[int, int]]:
    return {one: (1, 1), me: (1, 1), double: (1, 2), two: (2, 2), three: (3, 4), four: (4, 4), seven: (7, 8)}


_H100 = ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
_H200 = ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")
_B200 = ("1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb")


def _shape(
    name: str,
    model: str,
    tag: str,
    cpus: int,
    mem: int,
    nics: int,
    gbps: int,
    gpu_mib: int,
    weight: float,
    names: tuple[str, str, str, str, str, str, str],
) -> Shape:
    one, _me, double, two, three, four, seven = names
    return Shape(
        name,
        model,
        tag,
        cpus,
        mem,
        nics,
        gbps,
        gpu_mib,
        weight,
        _profiles(*names),
        _layouts(one, double, two, three, four, seven),
    )


# OCI bare-metal shapes (gpu-facts §5.1): OCPUs, RAM, RDMA HCAs x Gb/s.
SHAPES: tuple[Shape, ...] = (
    _shape("BM.GPU.H100.8", "H100-SXM5-80GB", "h100", 112, 2048, 16, 200, 81559, 0.45, _H100),
    _shape("BM.GPU.H200.8", "H200-SXM5-141GB", "h200", 112, 3072, 8, 400, 143771, 0.25, _H200),
    _shape("BM.GPU.A100-v2.8", "A100-SXM4-80GB", "a100", 128, 2048, 16, 100, 81920, 0.25, _H100),
    _shape("BM.GPU.B200.8", "B200", "b200", 128, 4096, 8, 400, 183359, 0.05, _B200),
)
GPUS_PER_NODE = 8
FAULT_DOMAINS = ("FAULT-DOMAIN-1", "FAULT-DOMAIN-2", "FAULT-DOMAIN-3")

# Quota arithmetic in 1/56 GPU (56 = lcm(7 compute slices, 8 memory slices)): exact, no float drift.
UNIT = 56
EIGHTH = UNIT // 8

_TEAMS = (
    "research",
    "inference",
    "platform",
    "interns",
    "nlp",
    "vision",
    "speech",
    "robotics",
    "recsys",
    "search",
    "ads-ranking",
    "safety",
    "eval",
    "data-eng",
    "genai-apps",
    "fraud",
    "forecasting",
    "bio-ml",
    "chip-design",
    "simulation",
)


def _is_serving(queue: str) -> bool:
    return queue.startswith(("inference", "ads-ranking", "fraud", "search"))


# -------------------------------------------------------------------------------------------------- build


@dataclass
class _NodeState:
    name: str
    shape: Shape
    network: str
    schedulable: bool
    free_full: list[int]


class _Pool:
    """An indexable bag with O(1) random pick and removal (order is deterministic)."""

    __slots__ = ("items", "pos")

    def __init__(self) -> None:
        self.items: list[int] = []
        self.pos: dict[int, int] = {}

    def add(self, item: int) -> None:
        if item not in self.pos:
            self.pos[item] = len(self.items)
            self.items.append(item)

    def discard(self, item: int) -> None:
        i = self.pos.pop(item, None)
        if i is None:
            return
        last = self.items.pop()
        if i < len(self.items):
            self.items[i] = last
            self.pos[last] = i

    def __len__(self) -> int:
        return len(self.items)


def _pick_shape(rng: random.Random, assigned: dict[str, int], total: int) -> Shape:
    """The shape furthest below its share so far (ties broken at random): the mix tracks the weights."""
    deficit = {s.name: s.weight * total - assigned[s.name] + rng.random() for s in SHAPES}
    return max(SHAPES, key=lambda s: deficit[s.name])


# Replicas left on a dynamically shared GPU for the generator's bookkeeping: only its share limits it.
_DYNAMIC_REPLICAS = 64


@dataclass
class _Cluster:
    """The generated nodes and the pools placement draws free capacity from."""

    node_dicts: list[dict[str, Any]] = field(default_factory=list)
    states: list[_NodeState] = field(default_factory=list)
    shapes_present: list[Shape] = field(default_factory=list)
    networks_of: dict[str, list[str]] = field(default_factory=dict)  # model -> networks
    whole_free: dict[str, _Pool] = field(default_factory=dict)  # network -> nodes with all GPUs full-mode and free
    full_avail: dict[str, _Pool] = field(default_factory=dict)  # model -> nodes with >= 1 free full GPU
    # (model, profile) -> (node, gpu, start)
    mig_free: dict[tuple[str, str], list[tuple[int, int, int]]] = field(default_factory=dict)
    shared_gpus: dict[str, list[list[int]]] = field(default_factory=dict)  # model -> [node, gpu, eighths, replicas]
    capacity: int = 0


@dataclass
class _Queues:
    names: list[str]
    dicts: list[dict[str, Any]]
    limit_units: dict[str, int]
    quota_units: dict[str, int]


def generate_inventory(nodes: int, jobs: int, seed: int = 0, sharing: bool = False) -> dict[str, Any]:
    """A plain-data inventory (ready for `yaml.dump` or `Inventory.model_validate`); `sharing`: the
    dynamic-sharing variant (module docstring)."""
    if nodes < 1 or jobs < 0:
        raise ValueError("need nodes >= 1 and jobs >= 0")
    rng = random.Random(seed)
    cluster = _generate_nodes(rng, nodes, sharing)
    queues = _generate_queues(rng, nodes, cluster.capacity)
    models = [s.model for s in cluster.shapes_present]
    model_weights = [s.weight for s in cluster.shapes_present]
    shape_of = {s.model: s for s in cluster.shapes_present}
    job_dicts: list[dict[str, Any]] = []
    for j in range(jobs):
        qname = rng.choice(queues.names)
        shape = shape_of[rng.choices(models, weights=model_weights)[0]]
        job_dicts.append(_generate_job(rng, j, qname, shape))
    _place_jobs(rng, job_dicts, cluster, queues)
    return {
        "version": 1,
        "cluster": f"oci-gen-{nodes}n-s{seed}",
        "queues": queues.dicts,
        "nodes": cluster.node_dicts,
        "jobs": job_dicts,
    }


def _generate_nodes(rng: random.Random, nodes: int, sharing: bool) -> _Cluster:
    """The nodes, in blocks: one shape and one RDMA cluster network per block."""
    cluster = _Cluster()
    i = 0
    net_no = 0
    assigned = {s.name: 0 for s in SHAPES}
    while i < nodes:
        block = min(nodes - i, rng.randint(32, 128) if nodes > 128 else max(4, nodes // 3))
        shape = _pick_shape(rng, assigned, i + block)
        assigned[shape.name] += block
        net_no += 1
        network = f"cluster-net-{net_no}"
        cluster.networks_of.setdefault(shape.model, []).append(network)
        cluster.whole_free[network] = _Pool()
        if shape not in cluster.shapes_present:
            cluster.shapes_present.append(shape)
        for _ in range(block):
            _generate_node(rng, cluster, shape, network, i, sharing)
            i += 1
    return cluster


def _generate_node(rng: random.Random, cluster: _Cluster, shape: Shape, network: str, i: int, sharing: bool) -> None:
    r = rng.random()
    state = "cordoned" if r < 0.02 else "down" if r < 0.03 else "draining" if r < 0.035 else "ready"
    r = rng.random()
    kind = "mig" if r < 0.10 else "shared" if r < 0.17 else "training"
    name = f"gpu-{shape.tag}-{i + 1:04d}"
    schedulable = state == "ready"
    idx = len(cluster.states)
    gpus, free_full = _generate_gpus(rng, cluster, shape, kind, idx if schedulable else None, sharing)
    if schedulable:
        cluster.capacity += GPUS_PER_NODE
    node: dict[str, Any] = {
        "name": name,
        "platform": "baremetal",
        "shape": shape.name,
        "cpus": shape.cpus,
        "memory_gib": shape.memory_gib,
        "rdma": {"nics": shape.nics, "gbps": shape.gbps, "network": network},
        "labels": {"pool": kind, "oci.oraclecloud.com/fault-domain": FAULT_DOMAINS[i % 3]},
    }
    if state != "ready":
        node["state"] = state
    if sharing and kind != "mig":
        node["sharing"] = {"fractions": "dynamic"}
    node["nvlink"] = "nvswitch"
    node["gpus"] = gpus
    cluster.node_dicts.append(node)
    cluster.states.append(_NodeState(name, shape, network, schedulable, free_full))
    if schedulable and free_full:
        cluster.full_avail.setdefault(shape.model, _Pool()).add(idx)
        if len(free_full) == GPUS_PER_NODE:
            cluster.whole_free[network].add(idx)


def _generate_gpus(
    rng: random.Random, cluster: _Cluster, shape: Shape, kind: str, idx: int | None, sharing: bool
) -> tuple[list[dict[str, Any]], list[int]]:
    """One node's GPUs by its pool kind, and its free full GPUs; `idx`: the node's index when schedulable
    (its MIG instances and shared GPUs then go to the placement pools), else None."""
    gpus: list[dict[str, Any]] = []
    free_full: list[int] = []
    replicas = rng.choice((4, 8))
    for g in range(GPUS_PER_NODE):
        if kind == "mig" and rng.random() < 0.9:
            layout = rng.choice(shape.layouts)
            gpus.append(
                {"index": g, "model": shape.model, "mode": "mig",
                 "mig": [{"profile": p, "start": s} for p, s in layout]}
            )
            if idx is not None:
                for p, s in layout:
                    cluster.mig_free.setdefault((shape.model, p), []).append((idx, g, s))
        elif kind == "shared" and sharing:  # fractions open these full GPUs (running ones below)
            gpus.append({"index": g, "model": shape.model, "mode": "full"})
            if idx is not None:
                cluster.shared_gpus.setdefault(shape.model, []).append([idx, g, 8, _DYNAMIC_REPLICAS])
        elif kind == "shared":
            gpus.append(
                {"index": g, "model": shape.model, "mode": "time-sliced", "replicas": replicas,
                 "sharing": "time-slicing"}
            )
            if idx is not None:
                cluster.shared_gpus.setdefault(shape.model, []).append([idx, g, 8, replicas])
        else:
            gpus.append({"index": g, "model": shape.model, "mode": "full"})
            free_full.append(g)
    return gpus, free_full


def _generate_queues(rng: random.Random, nodes: int, capacity: int) -> _Queues:
    """Queues whose deserved quotas split ~90% of the schedulable GPUs."""
    n_queues = max(4, min(200, nodes // 16))
    queue_names = [
        _TEAMS[q % len(_TEAMS)] if q < len(_TEAMS) else f"{_TEAMS[q % len(_TEAMS)]}-{q // len(_TEAMS) + 1}"
        for q in range(n_queues)
    ]
    shares = [
        rng.uniform(0.1, 0.3) if n.startswith("interns") else rng.uniform(0.5, 3.0) for n in queue_names
    ]
    total_share = sum(shares)
    queues = _Queues(queue_names, [], {}, {})
    for qname, share in zip(queue_names, shares, strict=True):
        quota = max(1, int(capacity * 0.9 * share / total_share))
        q: dict[str, Any] = {"name": qname, "quota": {"gpus": quota}}
        if qname.startswith("interns") or rng.random() < 0.8:
            limit = max(quota, int(quota * rng.uniform(1.25, 2.5)))
            q["limit"] = {"gpus": limit}
            queues.limit_units[qname] = limit * UNIT
        else:
            queues.limit_units[qname] = 1 << 62
        q["over_quota_weight"] = rng.choice((0.5, 1, 1, 2, 3))
        q["priority"] = 200 if _is_serving(qname) else rng.choice((10, 50, 100, 100, 150))
        queues.quota_units[qname] = quota * UNIT
        queues.dicts.append(q)
    return queues


def _generate_job(rng: random.Random, j: int, qname: str, shape: Shape) -> dict[str, Any]:
    request, kind = _job_request(rng, shape)
    job: dict[str, Any] = {"name": f"{qname}-{kind}-{j:06d}", "queue": qname, "request": request}
    if _is_serving(qname):
        job["priority"] = rng.choice((500, 700, 900))
        if kind != "nb":
            job["preemptible"] = False
    else:
        job["priority"] = rng.choice((0, 10, 20, 50))
    if kind == "nb" and rng.random() < 0.5:
        job["isolation"] = "shared"
    elif kind == "mig" and rng.random() < 0.2:
        job["isolation"] = "exclusive"
    return job


def _job_request(rng: random.Random, shape: Shape) -> tuple[dict[str, Any], str]:
    """A request and its kind (train, gang, mig, nb: a notebook's fraction) in the mix the module describes."""
    r = rng.random()
    request: dict[str, Any]
    if r < 0.45:
        n = rng.choices((1, 2, 4, 8), weights=(40, 20, 20, 20))[0]
        request = {"gpus": n}
        if n == 8 or (n == 4 and rng.random() < 0.5):
            request["nvlink"] = True
        if rng.random() < 0.3:
            request["model"] = shape.model
        return request, "train"
    if r < 0.52:
        big = rng.random() < 0.05
        request = {
            "gpus": 8,
            "nodes": rng.randint(12, 32) if big else rng.randint(2, 4),
            "nvlink": True,
            "rdma": True,
            "model": shape.model,
        }
        return request, "gang"
    if r < 0.80:
        profiles = list(shape.profiles)
        me = rng.random() < 0.02  # +me is never carved by the layouts above: stays pending
        profile = profiles[1] if me else rng.choice([p for p in profiles if "+me" not in p])
        return {"mig": profile, "model": shape.model}, "mig"
    if rng.random() < 0.15:
        request = {"gpu_memory_gib": rng.choice((10, 20, 40))}
    else:
        request = {"fraction": rng.choice((0.125, 0.25, 0.25, 0.5))}
    if rng.random() < 0.5:
        request["model"] = shape.model
    return request, "nb"


def _place_jobs(rng: random.Random, job_dicts: list[dict[str, Any]], cluster: _Cluster, queues: _Queues) -> None:
    """Placement: a random order, so running jobs are spread over the list; stop near 85% full."""
    models = [s.model for s in cluster.shapes_present]
    model_weights = [s.weight for s in cluster.shapes_present]
    shape_of = {s.model: s for s in cluster.shapes_present}
    used = dict.fromkeys(queues.names, 0)
    used_np = dict.fromkeys(queues.names, 0)
    order = list(range(len(job_dicts)))
    rng.shuffle(order)
    budget = int(cluster.capacity * UNIT * 0.85)
    placed = 0
    for j in order:
        if placed >= budget:
            break
        if rng.random() < 0.25:
            continue  # left for the scheduler
        job = job_dicts[j]
        req = job["request"]
        qname = job["queue"]
        nonpreempt = job.get("preemptible") is False
        model = req.get("model") or rng.choices(models, weights=model_weights)[0]
        shape = shape_of[model]
        cost, need = _cost(req, shape)
        if used[qname] + cost > queues.limit_units[qname]:
            continue
        if nonpreempt and used_np[qname] + cost > queues.quota_units[qname]:
            continue
        slots = _slots(rng, req, model, need, cluster)
        if slots is None:
            continue
        job["status"] = "running"
        job["placement"] = slots
        used[qname] += cost
        if nonpreempt:
            used_np[qname] += cost
        placed += cost


def _cost(req: dict[str, Any], shape: Shape) -> tuple[int, int]:
    """The request's cost in units, and for a fraction the eighths of a GPU it needs (0 otherwise)."""
    if "mig" in req:
        c, m = shape.profiles[req["mig"]]
        return max(c * 8, m * 7), 0
    if "gpus" in req:
        return req["gpus"] * req.get("nodes", 1) * UNIT, 0
    if "fraction" in req:
        need = int(req["fraction"] * 8)
    else:
        need = -(-req["gpu_memory_gib"] * 1024 * 8 // shape.gpu_memory_mib)  # eighths, rounded up
    return need * EIGHTH, need


def _slots(
    rng: random.Random, req: dict[str, Any], model: str, need: int, cluster: _Cluster
) -> list[dict[str, Any]] | None:
    """Slots for the request taken from the pools, or None where none was found (the job stays pending)."""
    states = cluster.states
    if "mig" in req:
        bag = cluster.mig_free.get((model, req["mig"]))
        if not bag:
            return None
        k = rng.randrange(len(bag))
        bag[k], bag[-1] = bag[-1], bag[k]
        ni, g, s = bag.pop()
        return [{"node": states[ni].name, "gpu": g, "mig_start": s}]
    if "gpus" in req:
        return _place_whole(
            rng, req["gpus"], req.get("nodes", 1), model, states, cluster.networks_of, cluster.whole_free,
            cluster.full_avail,
        )
    cands = cluster.shared_gpus.get(model)
    if not cands:
        return None
    for _ in range(6):
        k = rng.randrange(len(cands))
        entry = cands[k]
        if entry[2] >= need:
            entry[2] -= need
            entry[3] -= 1
            if entry[2] == 0 or entry[3] == 0:
                cands[k] = cands[-1]
                cands.pop()
            return [{"node": states[entry[0]].name, "gpu": entry[1]}]
    return None


def _take(
    ni: int, count: int, states: list[_NodeState], whole_free: dict[str, _Pool], full_avail: dict[str, _Pool]
) -> list[dict[str, Any]]:
    st = states[ni]
    taken, st.free_full = st.free_full[:count], st.free_full[count:]
    whole_free[st.network].discard(ni)
    if not st.free_full:
        full_avail[st.shape.model].discard(ni)
    return [{"node": st.name, "gpu": g} for g in taken]


def _place_whole(
    rng: random.Random,
    gpus: int,
    n_nodes: int,
    model: str,
    states: list[_NodeState],
    networks_of: dict[str, list[str]],
    whole_free: dict[str, _Pool],
    full_avail: dict[str, _Pool],
) -> list[dict[str, Any]] | None:
    if n_nodes > 1 or gpus == GPUS_PER_NODE:
        # whole nodes on one RDMA network (a single 8-GPU job is one NVSwitch domain)
        nets = networks_of.get(model, [])
        for _ in range(min(4, len(nets))):
            pool = whole_free[rng.choice(nets)]
            if len(pool) >= n_nodes:
                picked = rng.sample(pool.items, n_nodes)
                slots: list[dict[str, Any]] = []
                for ni in picked:
                    slots += _take(ni, gpus, states, whole_free, full_avail)
                return slots
        return None
    avail = full_avail.get(model)
    if not avail:
        return None
    for _ in range(8):
        ni = avail.items[rng.randrange(len(avail))]
        if len(states[ni].free_full) >= gpus:
            return _take(ni, gpus, states, whole_free, full_avail)
    return None


# --------------------------------------------------------------------------------------------------- YAML

_FLOW_KEYS = ("index", "request", "quota")
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class _Dumper(yaml.CSafeDumper):
    """The C-accelerated safe dumper, specialised for plain generated data.

    GPU, job and queue entries are written in flow style (one line each, compact); there are never anchors or
    aliases. Representation is a direct walk over dict/list/str/int/float/bool (the generic representer's
    per-object MRO lookups and alias bookkeeping cost more than the C emitter itself), and the implicit-tag
    resolution the serializer asks for twice per scalar is memoised (node names, models and modes repeat).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plain: dict[str, str] = {}  # value -> tag, asked with implicit (True, False)
        self._quoted: dict[str, str] = {}  # ... and with (False, True)

    def ignore_aliases(self, _data: Any) -> bool:
        return True

    def represent_data(self, data: Any) -> yaml.Node:
        t = type(data)
        if t is str:
            return yaml.ScalarNode(_STR, data)
        if t is dict:
            flow = any(k in data for k in _FLOW_KEYS)
            rep = self.represent_data
            pairs = [(yaml.ScalarNode(_STR, k), rep(v)) for k, v in data.items()]
            return yaml.MappingNode(_MAP, pairs, flow_style=flow)
        if t is list:
            rep = self.represent_data
            return yaml.SequenceNode(_SEQ, [rep(v) for v in data], flow_style=False)
        if t is bool:
            return yaml.ScalarNode(_BOOL, "true" if data else "false")
        if t is int:
            return yaml.ScalarNode(_INT, str(data))
        if t is float:
            return self.represent_float(data)
        return super().represent_data(data)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            cache = self._plain if implicit[0] else self._quoted
            tag = cache.get(value)
            if tag is None:
                tag = cache[value] = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
            return tag
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call,no-any-return]


def dump_inventory(data: dict[str, Any], stream: IO[str]) -> None:
    """Write `data` as YAML; the cyclic GC is paused meanwhile (millions of short-lived nodes, no cycles)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yaml.dump(data, stream, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)
    finally:
        if enabled:
            gc.enable()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.generate", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--nodes", type=int, default=1024, help="number of 8-GPU nodes (default 1024)")
    ap.add_argument("--jobs", type=int, default=100_000, help="number of jobs (default 100000)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    ap.add_argument("--sharing", action="store_true", help="dynamic sharing: fractions on full GPUs")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    data = generate_inventory(args.nodes, args.jobs, args.seed, args.sharing)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            dump_inventory(data, fh)
    else:
        dump_inventory(data, sys.stdout)
    running = sum(1 for j in data["jobs"] if j.get("status") == "running")
    print(
        f"generated {len(data['nodes'])} nodes, {len(data['jobs'])} jobs ({running} running) "
        f"in {time.perf_counter() - t0:.2f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
