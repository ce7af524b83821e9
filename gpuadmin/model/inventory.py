"""Pydantic models of the inventory file (DESIGN §3).

Every model is strict and forbids unknown keys: an inventory is read exactly as written, or refused.
Cross-references (catalog models, queues, VMs, device groups) are checked in `references.py`, which
needs the catalog; the models here check only what one object can know about itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from gpuadmin.catalog import get_catalog
from gpuadmin.model.k8s_names import (
    LABEL_VALUE_MAX,
    dns1123_subdomain_problems,
    label_value_problems,
    qualified_name_problems,
)

Platform = Literal["baremetal", "vsphere"]  # where the node's hardware is: a physical host, or an ESXi host
Orchestrator = Literal["kubernetes", "none"]  # who places pods on it: Kubernetes (a worker node), or nobody
NodeState = Literal["ready", "cordoned", "draining", "down"]
GpuMode = Literal["full", "mig", "time-sliced", "vgpu", "passthrough"]
# `mesh`: every GPU linked directly to every other (HGX A100 4-GPU), one domain without a switch;
# `unknown`: the source could not tell (a `topo -m` matrix that fits both a switch and direct links)
NvlinkKind = Literal["nvswitch", "mesh", "pairs", "none", "unknown"]
SharingStrategy = Literal["time-slicing", "mps"]
Isolation = Literal["exclusive", "shared"]
JobStatus = Literal["pending", "running", "completed", "preempted"]
AffinityOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
# the node conditions besides Ready whose status "True" means trouble (the kubelet taints the node for each)
PressureCondition = Literal["MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"]
# the GPU Operator mig-manager's `nvidia.com/mig.config.state` label
MigConfigState = Literal["pending", "success", "failed"]

Name = Annotated[str, Field(min_length=1, max_length=253)]

# --- bounded numbers ---------------------------------------------------------------------------------------
# Every number an inventory, a change file or a console form gives is finite and within a real-world bound, so
# nothing downstream (SQLite's 64-bit integers, JSON, Kubernetes' int32 fields, the scheduler's arithmetic, a
# screen drawing one cell per replica) meets a value it cannot hold. Each bound is documented, with its reason,
# in docs/inventory.md ("Numbers and their bounds").

#: Kubernetes' int32 fields (replicas, priorities, quota counts) hold at most this.
INT32_MAX = 2**31 - 1
#: A GPU's index on its node: NVML enumerates the GPUs of one host from 0; the largest hosts have 16.
MAX_GPU_INDEX = 63
#: A MIG placement start is a memory slice of one GPU (0-7 on every MIG-capable GPU); room for wider ones.
MAX_MIG_START = 63
#: Time-slicing replicas of one GPU or MIG instance (GKE allows 48 sharers; one screen cell each in the console).
MAX_REPLICAS = 1024
#: Logical CPUs of one node (the largest single hosts have a few thousand).
MAX_CPUS = 65_536
#: Memory of one node, GiB (1 PiB).
MAX_NODE_MEMORY_GIB = 1024 * 1024
#: Memory of one GPU, GiB (16 TiB; today's largest have 288 GB).
MAX_GPU_MEMORY_GIB = 16 * 1024
#: GPU memory a queue's quota or limit may name, GiB (1 EiB: far beyond any cluster).
MAX_QUOTA_MEMORY_GIB = 1024 * 1024 * 1024
#: A queue's over-quota weight: a ratio between queues.
MAX_WEIGHT = 1_000_000.0
#: RDMA NICs of one node and the speed of one, Gb/s.
MAX_NICS = 64
MAX_NIC_GBPS = 100_000
#: A vMotion link's speed, Gbit/s (400 GbE is today's fastest Ethernet port; 10x that is a typo, not a NIC).
MAX_VMOTION_GBPS = 4000.0
#: A VM's tolerated vMotion stun time, seconds (one hour: vMotion itself gives up long before).
MAX_STUN_S = 3600.0
#: A position in a table (`restore`'s `seq`): SQLite's largest integer.
MAX_SEQ = 2**63 - 1
#: Entities of one inventory: Kubernetes' tested limits are 5,000 nodes and 150,000 pods per cluster; the
#: 1,024-node, 100,000-job inventory of docs/benchmarks.md lies well inside.
MAX_NODES = 10_000
MAX_JOBS = 200_000
MAX_QUEUES = 10_000



def decimal_at_most(text: str, high: int) -> int | None:
    """`text` as a decimal integer from 0 to `high`, or None. Checked as text first: neither a 5,000-digit
    number (`int()` raises on it) nor a 20-digit one (SQLite cannot hold it) gets further."""
    if text.isascii() and text.isdigit() and len(text) <= len(str(high)):
        value = int(text)
        return value if value <= high else None
    return None


NonNegInt = Annotated[int, Field(ge=0, le=INT32_MAX)]  # a count that Kubernetes holds as an int32
PosInt = Annotated[int, Field(ge=1, le=INT32_MAX)]
Priority = Annotated[int, Field(ge=-INT32_MAX - 1, le=INT32_MAX)]  # PriorityClass values are int32
GpuIndex = Annotated[int, Field(ge=0, le=MAX_GPU_INDEX)]
MigStart = Annotated[int, Field(ge=0, le=MAX_MIG_START)]
Replicas = Annotated[int, Field(ge=1, le=MAX_REPLICAS)]
GpuMemoryMib = Annotated[int, Field(ge=1, le=MAX_GPU_MEMORY_GIB * 1024)]
NodeCpus = Annotated[int, Field(ge=1, le=MAX_CPUS)]
NodeMemoryGib = Annotated[int, Field(ge=1, le=MAX_NODE_MEMORY_GIB)]
NicCount = Annotated[int, Field(ge=1, le=MAX_NICS)]
NicGbps = Annotated[int, Field(ge=1, le=MAX_NIC_GBPS)]
Seq = Annotated[int, Field(ge=1, le=MAX_SEQ)]
ModuleId = Annotated[int, Field(ge=1, le=MAX_GPU_INDEX + 1)]  # nvidia-smi's Module ID: from 1, one per GPU
CpusRequest = Annotated[float, Field(gt=0, le=MAX_CPUS, allow_inf_nan=False)]
NodeMemoryGibRequest = Annotated[float, Field(gt=0, le=MAX_NODE_MEMORY_GIB, allow_inf_nan=False)]
GpuMemoryGib = Annotated[float, Field(gt=0, le=MAX_GPU_MEMORY_GIB, allow_inf_nan=False)]
ReservedGib = Annotated[float, Field(ge=0, le=MAX_GPU_MEMORY_GIB, allow_inf_nan=False)]
QuotaMemoryGib = Annotated[float, Field(ge=0, le=MAX_QUOTA_MEMORY_GIB, allow_inf_nan=False)]
Fraction = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
Weight = Annotated[float, Field(ge=0, le=MAX_WEIGHT, allow_inf_nan=False)]


def _timestamp(value: object) -> object:
    """An ISO 8601 timestamp with its zone. The inventory loader reads `2026-12-03T10:15:00Z` as the text it
    is (YAML 1.1 timestamps are not resolved), so it is parsed here, exactly, and a time without a zone is
    refused rather than guessed."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO 8601 timestamp (e.g. 2026-12-03T10:15:00Z)") from None
    if isinstance(value, datetime) and value.tzinfo is None:
        raise ValueError(f"timestamp {value.isoformat()} needs its zone (Z or +HH:MM)")
    return value


Timestamp = Annotated[
    datetime, BeforeValidator(_timestamp), PlainSerializer(datetime.isoformat, return_type=str)
]


#: gpuadmin names a Kubernetes GPU node's device-plugin and mig-parted configs `gpuadmin-NAME` and labels the
#: node with that name (`nvidia.com/device-plugin.config`, `nvidia.com/mig.config`): a label value holds at
#: most 63 characters.
NODE_CONFIG_PREFIX = "gpuadmin-"

#: The validation context of values gpuadmin wrote itself (a state's rows, the journal's before and after):
#: the name rule, younger than some states, is not applied to them, so a state that holds such a name still
#: opens and undoes (and its node commands quote the name). Everything that comes in is checked.
STORED: dict[str, Any] = {"stored": True}


def kubernetes_node_name_problem(name: str, has_gpus: bool) -> str | None:
    """Why Kubernetes could not hold a node of this name (or gpuadmin could not label it); None when it can.

    It is refused wherever a Kubernetes node comes in (inventory, change file, import), so that the `kubectl`
    lines of a plan name nodes that exist; the lines quote every name all the same."""
    if dns1123_subdomain_problems(name):  # Kubernetes node names are DNS-1123 subdomains
        return (f"{name!r} is not a Kubernetes node name: it must be a DNS-1123 subdomain (lower-case letters, "
                "digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)")
    longest = LABEL_VALUE_MAX - len(NODE_CONFIG_PREFIX)
    if has_gpus and len(name) > longest:
        return (f"the name of a Kubernetes GPU node must be at most {longest} characters (it has {len(name)}): "
                f"gpuadmin labels the node with the value {NODE_CONFIG_PREFIX}NAME, and a Kubernetes label value "
                f"holds at most {LABEL_VALUE_MAX}")
    return None


class StrictModel(BaseModel):
    # A non-finite float (only ever one forced past the bounded types) serialises as the bare word `Infinity` or
    # `NaN`, which no JSON reader takes and the store refuses, rather than as `null`, which reads back as "no
    # value" (a quota of .inf silently became "no quota")
    model_config = ConfigDict(strict=True, extra="forbid", validate_assignment=False, ser_json_inf_nan="constants")


PciDeviceId = Annotated[str, Field(pattern=r"^0x[0-9A-F]{4}$")]


class MigInstance(StrictModel):
    """One GPU instance. `start` is the first memory slice; the engine picks one where it is omitted.

    `compute_instances` splits the GI into compute instances (`1c.3g.71gb`, `2c.3g.40gb`; the GI's own
    profile names a full-width one), which share its memory. None is the default: one full-width CI, as
    `nvidia-smi mig -cgi … -C` creates. An explicit list is kept as written, so a plan can tell "not said"
    from "one full-width CI on purpose" (rule `mig.compute-instances-kept`).
    """

    profile: Name
    start: MigStart | None = None
    replicas: Annotated[Replicas, Field(ge=2)] | None = None  # time-slicing of this instance
    compute_instances: Annotated[list[Name], Field(min_length=1)] | None = None

    @property
    def where(self) -> str:
        """`3g.40gb@4`, or the profile alone while the planner has not chosen a start (a refused plan's layout)."""
        return f"{self.profile}@{self.start}" if self.start is not None else self.profile

    @property
    def split(self) -> bool:
        """True where the GI is split into compute instances other than one full-width CI."""
        return self.compute_instances is not None and self.compute_instances != [self.profile]


class NotInCatalog(StrictModel):
    """A GPU whose product the catalog does not know, kept as its source reported it.

    The GPU's `model` then holds the product name as read (untrusted text, never a catalog name); its
    memory and PCI device id come from here. Nothing model-specific can be checked for it, so the rules
    keep it whole: MIG and vGPU are refused on it (`mig.model-supports-mig`, `vgpu.profile-exists`).
    """

    memory_mib: GpuMemoryMib | None = None  # None where the source gave no frame-buffer total
    pci_device_id: PciDeviceId | None = None


class VGpu(StrictModel):
    vm: Name
    profile: Name


#: The most characters of a health reason ("XID 79: GPU has fallen off the bus", an RMA note): one line of a
#: listing, never a log pasted whole.
MAX_HEALTH_REASON = 500


def _one_line_reason(text: str) -> str:
    """A health reason is shown in tables and journal lines: printable text of one line, never blank."""
    if not text.strip():
        raise ValueError("a health reason says why (e.g. 'XID 79: GPU has fallen off the bus')")
    if any(not ch.isprintable() for ch in text):
        raise ValueError("a health reason is one line of printable text (no control characters)")
    return text


HealthReason = Annotated[str, Field(min_length=1, max_length=MAX_HEALTH_REASON), AfterValidator(_one_line_reason)]


class GpuHealth(StrictModel):
    """A GPU fenced as unhealthy (`set-gpu-health`): the scheduler and the placement rules keep new work off
    it until an admin clears it. A healthy GPU has no `health` at all. `by` and `since` are who fenced it and
    when (the service stamps them from the caller, as it stamps a submitted job)."""

    state: Literal["unhealthy"]
    reason: HealthReason
    by: Name | None = None
    since: Timestamp | None = None


class Gpu(StrictModel):
    index: GpuIndex
    model: Name
    mode: GpuMode = "full"
    mig: list[MigInstance] | None = None
    replicas: Replicas | None = None
    sharing: SharingStrategy | None = None
    vgpus: list[VGpu] | None = None
    vm: Name | None = None  # passthrough holder
    not_in_catalog: NotInCatalog | None = None  # `model` is then a product name the catalog does not know
    # The board's physical slot (nvidia-smi -q "Module ID", NVML nvmlDeviceGetModuleId): Fabric Manager's
    # partitions name GPUs by it, and it need not follow the index (a real HGX H100 has GPU 0 in module 7)
    module_id: ModuleId | None = None
    health: GpuHealth | None = None  # None: healthy; else fenced, and why (set-gpu-health)

    @property
    def unhealthy(self) -> bool:
        return self.health is not None

    @model_validator(mode="after")
    def _fields_match_mode(self) -> Gpu:
        if self.mig is not None and self.mode != "mig":
            raise ValueError(f"'mig' is only allowed with mode: mig (mode is {self.mode})")
        if self.replicas is not None and self.mode != "time-sliced":
            raise ValueError(f"'replicas' is only allowed with mode: time-sliced (mode is {self.mode})")
        if self.mode == "time-sliced" and self.replicas is None:
            raise ValueError("mode: time-sliced needs 'replicas'")
        if self.sharing is not None and self.mode != "time-sliced":
            raise ValueError(f"'sharing' is only allowed with mode: time-sliced (mode is {self.mode})")
        if self.vgpus is not None and self.mode != "vgpu":
            raise ValueError(f"'vgpus' is only allowed with mode: vgpu (mode is {self.mode})")
        if self.vm is not None and self.mode != "passthrough":
            raise ValueError(f"'vm' is only allowed with mode: passthrough (mode is {self.mode})")
        return self

    @model_validator(mode="after")
    def _canonical_mig_profiles(self) -> Gpu:
        """A profile written under one of its catalog aliases (GB200's 1g.24gb) is kept under its canonical
        name (1g.23gb), so every export, rule and comparison sees one spelling."""
        model = get_catalog().model(self.model) if self.mig and self.not_in_catalog is None else None
        if model is None:
            return self
        canonical: list[MigInstance] = []
        for instance in self.mig or ():
            profile = model.mig_profile(instance.profile)
            if profile is None or profile.name == instance.profile:
                canonical.append(instance)
                continue
            alias = instance.profile
            cis = instance.compute_instances
            if cis is not None:  # "2c.3g.95gb" is a compute instance of the same GI
                cis = [ci[: -len(alias)] + profile.name if ci == alias or ci.endswith("." + alias) else ci
                       for ci in cis]
            # a copy: the instance may be a change's own, which must stay as the operator wrote it
            canonical.append(instance.model_copy(update={"profile": profile.name, "compute_instances": cis}))
        self.mig = canonical
        return self


class Rdma(StrictModel):
    nics: NicCount
    gbps: NicGbps
    network: Name


def _unset(value: object) -> bool:
    return value is None


# Finite and positive: NaN, inf and negative speeds or stun times are refused where they are written (file:line).
VmotionGbps = Annotated[float, Field(gt=0, le=MAX_VMOTION_GBPS, allow_inf_nan=False)]
StunSeconds = Annotated[float, Field(gt=0, le=MAX_STUN_S, allow_inf_nan=False)]


class VSphere(StrictModel):
    """An ESXi host's facts. `vmotion_gbps`: the speed of its vMotion link (a vMotion runs at the slower of the
    two hosts' links); `tolerated_stun_s`: the vMotion stun time its VMs tolerate when a VM does not say (the
    vSphere cluster's default: written here, or filled from `vsphere_clusters`). Both are left out of every dump
    while unset, so that a host without them writes and hashes as it did before they existed."""

    version: Annotated[str, Field(pattern=r"^[0-9]+\.[0-9]+(U[0-9]+)?$")]
    vmotion_gbps: VmotionGbps | None = Field(default=None, exclude_if=_unset)
    tolerated_stun_s: StunSeconds | None = Field(default=None, exclude_if=_unset)


class VsphereCluster(StrictModel):
    """A vSphere cluster's defaults, for the hosts labelled `vsphere.cluster: NAME`: expanded onto each host's
    `vsphere` record when the inventory is read (a host's own value wins), as `sharing_pools` are."""

    name: Name
    vmotion_gbps: VmotionGbps | None = None
    tolerated_stun_s: StunSeconds | None = None


class DeviceGroup(StrictModel):
    name: Name
    gpus: list[GpuIndex]


#: vSphere's `runtime.powerState` of a VM, as a bound vCenter reports it
VmPowerState = Literal["poweredOn", "poweredOff", "suspended"]


class Vm(StrictModel):
    name: Name
    hardware_version: Annotated[int, Field(ge=1, le=99)]
    device_group: Name | None = None
    gpus: list[GpuIndex] | None = None  # passthrough GPUs by index
    # what a bound vCenter reports (docs/vsphere.md); None for an inventory file's VM, and then left out of every
    # dump, so a state without a vCenter writes, hashes and prints as before the field existed
    power_state: VmPowerState | None = Field(default=None, exclude_if=_unset)
    # the vMotion stun time this VM tolerates (its host's `tolerated_stun_s` when unset): a vMotion estimated
    # above it is refused (rule vsphere.stun-time)
    tolerated_stun_s: StunSeconds | None = Field(default=None, exclude_if=_unset)


# Driver-reserved memory on a dynamically shared GPU when the inventory does not say: KAI#2212 measured
# ~450 MiB that the driver keeps on a T4 and that KAI's fraction bookkeeping did not count (pods OOM below
# their request); 0.5 GiB rounds that up. Recorded with its source in docs/inventory.md ("Dynamic sharing").
DEFAULT_RESERVED_GIB = 0.5


class DynamicSharing(StrictModel):
    """Fractional jobs may share this node's full-mode GPUs, as Run:ai/KAI fractions do.

    The first fraction makes a free full GPU shared; later fractions fill it by compute share and by memory
    (`gpu_memory_gib`) up to the GPU's memory less `reserved_gib`; a whole-GPU job takes it only once the last
    fraction has left. Time-sliced GPUs (device-plugin replicas) are unaffected.
    """

    fractions: Literal["dynamic"]
    reserved_gib: ReservedGib = DEFAULT_RESERVED_GIB


class SharingPool(StrictModel):
    """A label-selected dynamic-sharing pool: every node whose labels include `selector` gets `sharing`
    (a node's own `sharing` wins). Expanded onto the nodes when the inventory is read."""

    name: Name
    selector: Annotated[dict[str, str], Field(min_length=1)]
    sharing: DynamicSharing


#: The longest down reason kept (the Ready condition's reason and message, from the cluster).
MAX_DOWN_REASON = 512


class Taint(StrictModel):
    """A Kubernetes node taint (`spec.taints[]`), as the cluster reports it: its key, value and effect."""

    key: Name
    value: Annotated[str, Field(max_length=LABEL_VALUE_MAX)] = ""
    effect: TaintEffect


TolerationOperator = Literal["Exists", "Equal"]


class Toleration(StrictModel):
    """A pod's toleration of node taints (`spec.tolerations[]`), as Kubernetes matches it (`tolerates`): `Equal`
    (the default) tolerates a taint of this key and value, `Exists` one of this key whatever its value; an empty key
    with `Exists` tolerates every taint; an unset `effect` matches every effect. `tolerationSeconds` (how long a
    NoExecute taint lets a running pod stay) is not kept: it does not decide where a pod may be placed."""

    key: Annotated[str, Field(max_length=253)] = ""
    operator: TolerationOperator = "Equal"
    value: Annotated[str, Field(max_length=LABEL_VALUE_MAX)] = ""
    effect: TaintEffect | None = None

    @model_validator(mode="after")
    def _as_kubernetes_validates(self) -> Toleration:
        if self.key and qualified_name_problems(self.key):
            raise ValueError(f"key {self.key[:40]!r} is not a Kubernetes qualified name: "
                             f"{qualified_name_problems(self.key)[0]}")
        if self.value and label_value_problems(self.value):
            raise ValueError(f"value {self.value[:40]!r} is not a label value: {label_value_problems(self.value)[0]}")
        if not self.key and self.operator != "Exists":
            raise ValueError("a toleration without a key must have operator: Exists (it tolerates every taint)")
        if self.operator == "Exists" and self.value:
            raise ValueError("operator Exists takes no value")
        return self

    def as_tuple(self) -> TolerationKey:
        return self.key, self.operator, self.value, self.effect


#: A toleration as a hashable tuple (key, operator, value, effect), for the scheduler's memo keys.
TolerationKey = tuple[str, TolerationOperator, str, TaintEffect | None]


def tolerates(toleration: TolerationKey, taint: Taint) -> bool:
    """Kubernetes' `Toleration.ToleratesTaint` (k8s.io/api core/v1 toleration.go): an unset effect matches every
    effect; an empty key (operator Exists) every key; Exists any value, Equal the same value."""
    key, operator, value, effect = toleration
    if effect is not None and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    return operator == "Exists" or value == taint.value


class Node(StrictModel):
    """A host. `platform` is its hardware place, `orchestrator` who schedules pods on it: an OCI
    `BM.GPU.H100.8` OKE worker is `platform: baremetal` + `orchestrator: kubernetes`.

    `platform: kubernetes` is the old spelling of exactly that, still read (inventories, stored states and
    journal entries written before the two were separate) and normalised here, so nothing else sees it.
    """

    name: Name
    platform: Platform
    orchestrator: Orchestrator = "none"
    shape: Name | None = None
    cpus: NodeCpus | None = None
    memory_gib: NodeMemoryGib | None = None
    rdma: Rdma | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    state: NodeState = "ready"
    nvlink: NvlinkKind | None = None
    vsphere: VSphere | None = None
    gpus: list[Gpu] = Field(default_factory=list, max_length=MAX_GPU_INDEX + 1)
    device_groups: list[DeviceGroup] = Field(default_factory=list)
    vms: list[Vm] = Field(default_factory=list)
    sharing: DynamicSharing | None = None  # fractions on full-mode GPUs (Run:ai-style dynamic sharing)
    # What a live cluster reports of the node (docs/kubernetes.md, "What is read"); None where the source says
    # nothing (an inventory file, a node without taints). Left out of every dump while None, so that a state
    # without a cluster writes, hashes and prints as it did before these fields existed.
    down_reason: Annotated[str, Field(min_length=1, max_length=MAX_DOWN_REASON)] | None = Field(
        default=None, exclude_if=_unset)  # why the node is down: its Ready condition's reason and message
    conditions: list[PressureCondition] | None = Field(default=None, exclude_if=_unset)  # those that hold
    taints: list[Taint] | None = Field(default=None, exclude_if=_unset)
    mig_config_state: MigConfigState | None = Field(default=None, exclude_if=_unset)

    @model_validator(mode="before")
    @classmethod
    def _old_kubernetes_platform(cls, value: object) -> object:
        """`platform: kubernetes` (deprecated) → `platform: baremetal` + `orchestrator: kubernetes`."""
        if not isinstance(value, dict) or value.get("platform") != "kubernetes":
            return value
        if value.get("orchestrator", "kubernetes") != "kubernetes":
            raise ValueError(
                f"platform: kubernetes (the old spelling of platform: baremetal + orchestrator: kubernetes) "
                f"contradicts orchestrator: {value['orchestrator']}"
            )
        return {**value, "platform": "baremetal", "orchestrator": "kubernetes"}

    @field_validator("orchestrator")
    @classmethod
    def _kubernetes_runs_on_the_host(cls, orchestrator: Orchestrator, info: ValidationInfo) -> Orchestrator:
        # On vSphere the Kubernetes nodes are the host's VMs, not the ESXi host: the host itself runs no pods
        if orchestrator == "kubernetes" and info.data.get("platform") == "vsphere":
            raise ValueError(
                "orchestrator: kubernetes is not allowed with platform: vsphere: an ESXi host runs no pods "
                "itself; the Kubernetes nodes there are its VMs (their GPUs are the host's passthrough GPUs, "
                "device groups or vGPUs)"
            )
        return orchestrator

    @model_validator(mode="after")
    def _kubernetes_node_name(self, info: ValidationInfo) -> Node:
        if not self.kubernetes or (info.context or {}).get("stored"):
            return self
        problem = kubernetes_node_name_problem(self.name, bool(self.gpus))
        if problem is not None:
            # raised as the `name` field's error, so that the diagnostic points at the name in the file
            error = PydanticCustomError("kubernetes_node_name", "{problem}", {"problem": problem})
            raise ValidationError.from_exception_data(
                type(self).__name__, [InitErrorDetails(type=error, loc=("name",), input=self.name)])
        return self

    @property
    def kubernetes(self) -> bool:
        """Kubernetes schedules pods on this node (device-plugin configs, node labels and pods apply)."""
        return self.orchestrator == "kubernetes"

    @model_validator(mode="after")
    def _shape_defaults(self) -> Node:
        """A known shape fills what the operator left out; what is written always wins."""
        shape = get_catalog().shapes.get(self.shape) if self.shape else None
        if shape is not None:
            if self.cpus is None:
                self.cpus = shape.cpus
            if self.memory_gib is None:
                self.memory_gib = shape.memory_gib
            if self.nvlink is None:
                self.nvlink = shape.nvlink
        return self

    @model_validator(mode="after")
    def _down_reason_of_a_down_node(self) -> Node:
        if self.down_reason is not None and self.state != "down":
            raise ValueError(f"'down_reason' is only allowed with state: down (state is {self.state})")
        return self

    @model_validator(mode="after")
    def _vsphere_fields(self) -> Node:
        if self.platform == "vsphere" and self.vsphere is None:
            raise ValueError("platform: vsphere needs 'vsphere: {version: ...}'")
        if self.platform != "vsphere" and (self.vsphere or self.device_groups or self.vms):
            raise ValueError("'vsphere', 'device_groups' and 'vms' need platform: vsphere")
        return self

    @property
    def nvlink_kind(self) -> NvlinkKind:
        return self.nvlink or "none"

    def gpu(self, index: int) -> Gpu | None:
        # GPUs are almost always listed by index 0..n-1: try that position before scanning
        if 0 <= index < len(self.gpus) and self.gpus[index].index == index:
            return self.gpus[index]
        for gpu in self.gpus:
            if gpu.index == index:
                return gpu
        return None


class Resources(StrictModel):
    gpus: NonNegInt | None = None
    gpu_memory_gib: QuotaMemoryGib | None = None


class Queue(StrictModel):
    name: Name
    quota: Resources = Field(default_factory=Resources)
    limit: Resources | None = None
    over_quota_weight: Weight = 1.0
    priority: Priority = 0


class Request(StrictModel):
    """Exactly one of gpus / mig / fraction / gpu_memory_gib. `gpus` counts GPUs per node of a gang.

    `cpus` and `memory_gib` are what the job needs of its node's CPUs and memory (per node of a gang, like
    `gpus`); they bound placement on nodes whose `cpus` / `memory_gib` are known (rule
    `placement.cpu-memory-fit`)."""

    gpus: PosInt | None = None
    mig: Name | None = None
    fraction: Fraction | None = None
    gpu_memory_gib: GpuMemoryGib | None = None
    model: Name | None = None
    nodes: PosInt = 1
    nvlink: bool = False
    rdma: bool = False
    cpus: CpusRequest | None = None
    memory_gib: NodeMemoryGibRequest | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Request:
        kinds = [k for k in ("gpus", "mig", "fraction", "gpu_memory_gib") if getattr(self, k) is not None]
        if len(kinds) != 1:
            found = ", ".join(kinds) if kinds else "none"
            raise ValueError(f"a request needs exactly one of gpus, mig, fraction, gpu_memory_gib (found {found})")
        if self.nodes > 1 and self.gpus is None:
            raise ValueError("a multi-node gang ('nodes' > 1) requests whole GPUs with 'gpus'")
        return self

    @property
    def kind(self) -> Literal["gpus", "mig", "fraction", "gpu_memory_gib"]:
        if self.gpus is not None:
            return "gpus"
        if self.mig is not None:
            return "mig"
        if self.fraction is not None:
            return "fraction"
        return "gpu_memory_gib"

    @property
    def fractional(self) -> bool:
        """A request for part of one GPU (`fraction` or `gpu_memory_gib`)."""
        return self.fraction is not None or self.gpu_memory_gib is not None


class Slot(StrictModel):
    """One slice a running job holds: a whole GPU, a MIG instance (by its start), or a shared replica."""

    node: Name
    gpu: GpuIndex
    mig_start: MigStart | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_place(cls, value: object) -> object:
        """A slot may be written as a place: `NODE/GPU` or `NODE/GPU/PROFILE@START` (gpuadmin.model.places)."""
        if isinstance(value, str):
            from gpuadmin.model.places import parse_place

            node, gpu, _, start = parse_place(value)
            return {"node": node, "gpu": gpu, "mig_start": start}
        return value


def term_matches(key: str, operator: AffinityOperator, values: Sequence[str], labels: dict[str, str]) -> bool:
    """Kubernetes node affinity semantics for one match expression."""
    value = labels.get(key)
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values  # Kubernetes: NotIn holds where the key is absent
    if operator == "Exists":
        return value is not None
    return value is None


class NodeSelectorRequirement(StrictModel):
    """One match expression of required node affinity, as Kubernetes writes it
    (`nodeSelectorTerms[].matchExpressions[]`): `In`/`NotIn` take `values`, `Exists`/`DoesNotExist` none."""

    key: Name
    operator: AffinityOperator
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_match_operator(self) -> NodeSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs 'values'")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no 'values'")
        return self

    def matches(self, labels: dict[str, str]) -> bool:
        return term_matches(self.key, self.operator, self.values, labels)

    def as_tuple(self) -> tuple[str, AffinityOperator, tuple[str, ...]]:
        return self.key, self.operator, tuple(self.values)

    def describe(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        return f"{self.key} {self.operator} ({', '.join(self.values)})"


class Job(StrictModel):
    """A job. `node_selector` and `node_affinity` (its match expressions all hold: one Kubernetes
    `nodeSelectorTerm`) choose nodes by label; `vm` runs the job inside that vSphere VM, on GPUs the VM holds.
    `owner` and `submitted` are information: the scheduler orders by priority and file order, not by them."""

    name: Name
    queue: Name
    request: Request
    priority: Priority = 0
    preemptible: bool = True
    isolation: Isolation | None = None
    status: JobStatus = "pending"
    placement: list[Slot] = Field(default_factory=list)
    owner: Name | None = None
    submitted: Timestamp | None = None
    node_selector: dict[str, str] | None = None
    node_affinity: list[NodeSelectorRequirement] | None = None
    vm: Name | None = None
    # the Kubernetes scheduler that places it (its pods' `schedulerName`), for a job read from a live cluster; None:
    # gpuadmin's own (a job of an inventory file, or submitted through gpuadmin). gpuadmin binds only its own and
    # `gpuadmin`'s; another scheduler's job is a fact it reads and explains (docs/scheduling.md). Left out of dumps
    # while None, so that states without a cluster write, hash and print as before.
    scheduler: Name | None = Field(default=None, exclude_if=_unset)
    # the node taints the job tolerates (its pods' `spec.tolerations`); the scheduler's taint filter keeps it off
    # a node with a NoSchedule or NoExecute taint none of them tolerates. Left out of dumps while None, as `scheduler`.
    tolerations: list[Toleration] | None = Field(default=None, exclude_if=_unset)

    @model_validator(mode="after")
    def _placement_matches_status(self) -> Job:
        if self.status == "running" and not self.placement:
            raise ValueError("a running job needs its 'placement'")
        if self.status != "running" and self.placement:
            raise ValueError(f"only a running job has a 'placement' (status is {self.status})")
        if self.isolation == "exclusive" and self.request.fractional:
            raise ValueError("isolation: exclusive cannot be combined with a fractional request")
        if self.vm is not None and (self.request.gpus is None or self.request.nodes > 1):
            raise ValueError("a job in a VM ('vm') requests whole GPUs of that VM with 'gpus', on one node")
        return self

    def label_mismatch(self, labels: dict[str, str]) -> str | None:
        """Why a node with these labels does not match the job's selector and affinity; None if it does."""
        for key, value in sorted((self.node_selector or {}).items()):
            if labels.get(key) != value:
                return f"node selector {key}={value}"
        for term in self.node_affinity or ():
            if not term.matches(labels):
                return f"node affinity {term.describe()}"
        return None

    @property
    def shared(self) -> bool:
        """Fractional requests share a GPU; so does any job that asks for `isolation: shared`."""
        if self.isolation is not None:
            return self.isolation == "shared"
        return self.request.fractional


class Inventory(StrictModel):
    version: Literal[1]
    cluster: Name
    queues: list[Queue] = Field(default_factory=list, max_length=MAX_QUEUES)
    sharing_pools: list[SharingPool] = Field(default_factory=list, max_length=MAX_QUEUES)
    vsphere_clusters: list[VsphereCluster] = Field(default_factory=list, max_length=MAX_QUEUES)
    nodes: list[Node] = Field(default_factory=list, max_length=MAX_NODES)
    jobs: list[Job] = Field(default_factory=list, max_length=MAX_JOBS)

    @model_validator(mode="after")
    def _expand_sharing_pools(self) -> Inventory:
        """A pool is a thin layer over `Node.sharing`: it fills the field on the nodes it selects, so the
        engine only ever reads the per-node notion. The first pool that selects a node wins."""
        if not self.sharing_pools:
            return self
        nodes: list[Node] = []
        for node in self.nodes:
            pool = next(
                (p for p in self.sharing_pools if all(node.labels.get(k) == v for k, v in p.selector.items())),
                None,
            )
            if node.sharing is None and pool is not None:
                node = node.model_copy(update={"sharing": pool.sharing})
            nodes.append(node)
        self.nodes = nodes
        return self

    @model_validator(mode="after")
    def _expand_vsphere_clusters(self) -> Inventory:
        """A vSphere cluster's defaults fill the `vsphere` record of each host labelled `vsphere.cluster: NAME`
        where the host leaves them unset, so the engine reads only the per-host fields (a state keeps no
        cluster records, as it keeps no sharing pools)."""
        if not self.vsphere_clusters:
            return self
        by_name = {c.name: c for c in self.vsphere_clusters}
        if len(by_name) < len(self.vsphere_clusters):
            names = [c.name for c in self.vsphere_clusters]
            twice = next(name for i, name in enumerate(names) if name in names[:i])
            raise ValueError(f"vsphere_clusters names {twice!r} twice: one record per vSphere cluster")
        nodes: list[Node] = []
        for node in self.nodes:
            cluster = by_name.get(node.labels.get("vsphere.cluster", ""))
            if node.vsphere is not None and cluster is not None:
                fill = {key: getattr(cluster, key) for key in ("vmotion_gbps", "tolerated_stun_s")
                        if getattr(node.vsphere, key) is None and getattr(cluster, key) is not None}
                if fill:
                    node = node.model_copy(update={"vsphere": node.vsphere.model_copy(update=fill)})
            nodes.append(node)
        self.nodes = nodes
        return self
