"""What every adapter shares: the import result, adapter errors with file:line, MIG profile identification."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pydantic import ValidationError

from gpuadmin.catalog import (
    MIG_RESOURCE_PREFIX,
    GpuModel,
    MigEngines,
    MigProfile,
    mig_device_resource_name,
    mig_profile_name,
)
from gpuadmin.engine.mig import place
from gpuadmin.model import Gpu, MigInstance, Node
from gpuadmin.model.diagnostics import Diagnostic, InputError, dotted
from gpuadmin.model.inventory import Orchestrator, kubernetes_node_name_problem


@dataclass
class ImportResult:
    """One imported node and what the importer had to guess or could not read (one line each)."""

    node: Node
    warnings: list[str] = field(default_factory=list)
    gpu_memory_mib: dict[int, int] = field(
        default_factory=dict
    )  # GPU index → frame buffer the source reported


@dataclass(frozen=True, slots=True)
class PlainDiagnostic(Diagnostic):
    """A diagnostic that prints as its message alone (no file, no path): e.g. "no NVIDIA driver found"."""

    def __str__(self) -> str:
        return self.message


class NoDriverError(InputError):
    """NVML is missing or cannot talk to a driver: one line, exit code 2, never a traceback."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__([PlainDiagnostic(f"no NVIDIA driver found (NVML: {reason})")])


@contextmanager
def held_by_the_models(file: str) -> Iterator[None]:
    """Where a file describes what the models cannot hold (65 GPUs on a node, a GPU index past the hardware,
    a name of 300 characters), an `InputError` naming the file and the first field, not a traceback."""
    try:
        yield
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = dotted(tuple(error["loc"])) if error["loc"] else "the node"
        raise input_error(f"{where}: {error['msg']} (got {str(error.get('input'))[:40]!r})", file) from None


def input_error(
    message: str,
    file: str | None = None,
    line: int | None = None,
    *,
    path: tuple[str | int, ...] = (),
    hint: str | None = None,
    column: int | None = None,
) -> InputError:
    return InputError([Diagnostic(message, path, "schema", file, line, column, hint)])


def node_name_problem(name: str, orchestrator: Orchestrator, has_gpus: bool) -> str | None:
    """Why an imported node cannot be called `name` (what the Node model would refuse), before it is built:
    the importer reports it against its source (`--node`, the file's field), never as a model error."""
    if not 1 <= len(name) <= 253:
        return f"a node name has 1 to 253 characters (this one has {len(name)})"
    return kubernetes_node_name_problem(name, has_gpus) if orchestrator == "kubernetes" else None


def check_given_node_name(name: str, orchestrator: Orchestrator, has_gpus: bool, given_as: str) -> None:
    """`InputError` (exit 2) naming the argument the name came from, when a node cannot be called that."""
    problem = node_name_problem(name, orchestrator, has_gpus)
    if problem is not None:
        raise InputError([PlainDiagnostic(f"{given_as}: {problem}")])


_DNS_BAD = re.compile(r"[^a-z0-9-]+")


def dns_name(name: str, limit: int = 63) -> str:
    """A DNS-1123 label from an inventory name: lower case, other characters as '-', trimmed to `limit`."""
    text = _DNS_BAD.sub("-", name.lower()).strip("-")[:limit].strip("-")
    return text or "x"


def pci_filter_id(device_id: str) -> str:
    """ "0x2330" → "0x233010DE", the device+vendor form mig-parted's `device-filter` uses."""
    return f"0x{device_id.lower().removeprefix('0x').upper()}10DE"


def gfd_products(model: GpuModel) -> list[str]:
    """GFD's `nvidia.com/gpu.product` values of a model: its product names with '-' for spaces."""
    return [p.strip().replace(" ", "-") for p in model.product_names]


def mig_profile_of_device_name(model: GpuModel, device: str) -> str | None:
    """The model's MIG profile that the device plugin and GFD call `device` — the part after `nvidia.com/mig-`
    in a resource name or label key, `+` written `.` (`1g.10gb.me` → `1g.10gb+me`, `1g.24gb.me.all` →
    `1g.24gb+me.all`); None where no profile of the model is named so. Matched by naming every catalog
    profile the plugin's way (`mig_device_resource_name`), never by undoing the `.`: `1g.10gb.me` cannot tell
    by itself which dot was a `+`."""
    resource = MIG_RESOURCE_PREFIX + device
    return next((p.name for p in model.mig_profiles if mig_device_resource_name(p.name) == resource), None)


def with_module_ids(gpus: list[Gpu], ids: list[int | None], source: str, warnings: list[str]) -> list[Gpu]:
    """The GPUs with their board slots (nvidia-smi's "Module ID"; None where the source has none, as on PCIe
    cards). Ids repeated across GPUs are all left out with a warning: a board cannot put two GPUs in one slot,
    and which of them is wrong cannot be told."""
    given = [i for i in ids if i is not None]
    if len(set(given)) != len(given):
        warnings.append(f"{source} module ids repeat across GPUs (" + ", ".join(map(str, given)) + "); all left out")
        return gpus
    return [gpu if module is None else gpu.model_copy(update={"module_id": module})
            for gpu, module in zip(gpus, ids, strict=True)]


def gfd_mig_products(model: GpuModel, profile: str) -> list[str]:
    """GFD's product label values of a MIG device (`NVIDIA-H100-80GB-HBM3-MIG-1g.10gb`, as on a real H100
    node: tests/adapters/fixtures/h100-mig-mixed-all-balanced_node-labels.json); under the single strategy
    they are `nvidia.com/gpu.product` (NVIDIA/k8s-device-plugin internal/lm/mig-strategy.go,
    newMigStrategySingleLabeler → resource.go baseLabeler(count, model, "MIG", name), the name being the profile
    with `+` as `.`, internal/resource/nvml-mig-device.go GetName: `…-MIG-1g.10gb.me`)."""
    device = mig_device_resource_name(profile).removeprefix(MIG_RESOURCE_PREFIX)  # `+` as `.`, as GFD names it
    return [f"{product}-MIG-{device}" for product in gfd_products(model)]


class ConsumerRefusal(str):
    """An export warning about something the export's consumer refuses (the device plugin, mig-parted): the
    export still writes what the consumer supports, and `gpuadmin export` exits 1. `check_id` names the
    check (`export.device-plugin.compute-instances`); the text ends with it."""

    check_id: str

    def __new__(cls, check_id: str, message: str) -> ConsumerRefusal:
        refusal = super().__new__(cls, f"{message} ({check_id})")
        refusal.check_id = check_id
        return refusal


# ------------------------------------------------------------------------------------ MIG identification


@dataclass(frozen=True, slots=True)
class MigDeviceFacts:
    """What a source reports of one GPU instance: its memory, its SMs (the sum over its MIG devices, None where
    one of them has no count), whether compute instances split it, and the engine counts its devices share
    (a count is None where the source does not give it)."""

    memory_mib: int
    sms: int | None
    split: bool = False
    engines: MigEngines = field(default_factory=MigEngines)

    def describe(self) -> str:
        sms = f"{self.sms} SMs" if self.sms is not None else "no SM count"
        parts = [sms, f"{self.memory_mib} MiB"]
        known = self.engines.known()
        if known:
            parts.append(" ".join(f"{_ENGINE_LABEL[k]} {v}" for k, v in known.items()))
        return ", ".join(parts)


_ENGINE_LABEL = {"dec": "DEC", "enc": "ENC", "jpg": "JPEG", "ofa": "OFA", "ce": "CE"}


def _memory_part(profile_name: str) -> str:
    """ "1g.24gb+me.all" → "24gb", "2g.48gb-me" → "48gb"."""
    return re.split(r"[+-]", profile_name.split(".", 1)[1], maxsplit=1)[0]


def _agrees(profile: MigProfile, facts: MigDeviceFacts) -> bool:
    """Every fact known on both sides is equal: SMs (-lgip's or the device's figure; compute instances that
    split a GI together have at most its SMs) and each engine count."""
    readings = [s for s in (profile.sms, profile.device_sms) if s is not None]
    if facts.sms is not None and readings:
        if facts.split and facts.sms > max(readings):
            return False
        if not facts.split and facts.sms not in readings:
            return False
    for kind, seen in facts.engines.known().items():
        expected = profile.engines.count(kind)
        if expected is not None and expected != seen:
            return False
    return True


def _profile_facts(profile: MigProfile) -> str:
    sms = "/".join(str(s) for s in (profile.sms, profile.device_sms) if s is not None) or "?"
    known = profile.engines.known()
    engines = " ".join(f"{_ENGINE_LABEL[k]} {v}" for k, v in known.items())
    return f"{profile.name} ({sms} SMs{', ' + engines if engines else ''})"


@dataclass(frozen=True, slots=True)
class MigIdentification:
    """The catalog profile of a GPU instance, or why there is none: `problem` says what was seen and which
    profiles it was compared with; `warning` says what the source could not tell (plain vs `+gfx`)."""

    profile: str | None
    problem: str | None = None
    warning: str | None = None


def identify_mig_profile(model: GpuModel, facts: MigDeviceFacts, total_mib: int) -> MigIdentification:
    """The catalog profile of a GPU instance from what nvidia-smi / NVML report of it — never a nearest guess.

    The memory part of the name follows from the device's memory by NVLIB's naming rule (gpu-facts §1.6, on
    the GPU's own total); of the model's profiles with that memory part, the one whose SM count (-lgip's or
    the device's, `MigProfile.device_sms`) and engine counts (DEC/ENC/JPEG/OFA/CE) agree with every fact the
    source gives is the profile. None, with a `problem`, when no profile or more than one agrees — except
    that `+gfx` (graphics APIs) shows in no count: a plain profile and its `+gfx` twin read as the plain one,
    with a `warning`.
    """
    gb = _memory_part(mig_profile_name(1, facts.memory_mib, total_mib))
    same_memory = [p for p in model.mig_profiles if _memory_part(p.name) == gb]
    if not same_memory:
        names = ", ".join(p.name for p in model.mig_profiles)
        return MigIdentification(
            None, f"{facts.describe()}: no {model.name} MIG profile has {gb} of memory (profiles: {names})"
        )
    found = [p for p in same_memory if _agrees(p, facts)]
    compared = "; ".join(_profile_facts(p) for p in same_memory)
    if not found:
        return MigIdentification(
            None, f"{facts.describe()} match no {model.name} MIG profile of {gb} ({compared})"
        )
    if len(found) == 1:
        return MigIdentification(found[0].name)
    plain = [p for p in found if "+gfx" not in p.name]
    if len(plain) == 1 and all(p.name.replace("+gfx", "") == plain[0].name for p in found):
        twins = ", ".join(p.name for p in found if p is not plain[0])
        return MigIdentification(
            plain[0].name,
            warning=f"{plain[0].name} and {twins} report the same memory, SMs and engines; read as "
            f"{plain[0].name} (graphics support, +gfx, is not in the file)",
        )
    names = ", ".join(p.name for p in found)
    return MigIdentification(
        None,
        f"{facts.describe()} fit several {model.name} MIG profiles ({names}) and nothing in the source "
        f"tells them apart ({compared})",
    )


def place_instances(
    model: GpuModel, profiles: list[str], starts: list[int | None] | None = None
) -> list[MigInstance] | None:
    """MIG instances for `profiles`: given starts kept, the others chosen by `engine.mig.place`."""
    wanted = list(zip(profiles, starts or [None] * len(profiles), strict=True))
    placed = place(model, wanted)
    if placed is None:
        return None
    return [MigInstance(profile=p, start=s) for p, s in sorted(placed, key=lambda ps: (ps[1], ps[0]))]
