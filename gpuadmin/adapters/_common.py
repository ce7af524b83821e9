"""What every adapter shares: the import result, adapter errors with file:line, MIG profile derivation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pydantic import ValidationError

from gpuadmin.catalog import MIG_RESOURCE_PREFIX, GpuModel, mig_device_resource_name, mig_profile_name
from gpuadmin.engine.mig import place
from gpuadmin.model import MigInstance, Node
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


# ---------------------------------------------------------------------------------------- MIG derivation


def mig_slice_options(model: GpuModel, memory_mib: int, total_mib: int) -> set[int]:
    """Compute-slice counts of the model's profiles whose memory part matches a MIG device of `memory_mib`."""
    gb_name = mig_profile_name(1, memory_mib, total_mib).split(".", 1)[1]
    return {
        p.compute_slices
        for p in model.mig_profiles
        if p.name.split("+", 1)[0].split(".", 1)[1] == gb_name and "-" not in p.name
    }


def derive_mig_profile(
    model: GpuModel,
    sms: int | None,
    memory_mib: int,
    total_mib: int,
    media: bool = False,
    sms_per_slice: float | None = None,
) -> str | None:
    """The catalog profile of a MIG device seen as (SM count, memory): naming rule + profile table.

    The memory part comes from the naming rule of gpu-facts §1.6 (`mig_profile_name`) on the GPU's own
    total; the compute slices are those of the catalog profile of that memory size whose SM count is
    nearest to the one seen (exact where the catalog has it); where the catalog has no SM counts for the
    model, `sms_per_slice` (measured on the GPU's unambiguous MIG devices) sizes the device. Media
    extensions (`+me`) are taken when
    the device shows them (an OFA engine) and the model has such a profile. None when no profile fits.
    """
    gb_name = mig_profile_name(1, memory_mib, total_mib).split(".", 1)[1]
    same_memory = [
        p
        for p in model.mig_profiles
        if p.name.split("+", 1)[0].split(".", 1)[1] == gb_name and "-" not in p.name
    ]
    if not same_memory:
        return None
    by_slices: dict[int, list[int | None]] = {}
    for p in same_memory:
        by_slices.setdefault(p.compute_slices, []).append(p.sms)
    if len(by_slices) == 1 or sms is None:
        slices = min(by_slices) if sms is None else next(iter(by_slices))
    else:
        known = [(abs(s - sms), g) for g, values in by_slices.items() for s in values if s is not None]
        if known:
            slices = min(known)[1]
        else:  # no SM counts in the catalog: scale by the SMs per slice seen, else the full MIG width
            full = max((p.sms for p in model.mig_profiles if p.sms), default=model.sms or 0)
            if sms_per_slice:
                estimate = round(sms / sms_per_slice)
            else:
                estimate = round(sms * model.compute_slices / full) if full else min(by_slices)
            slices = min(by_slices, key=lambda g: (abs(g - estimate), g))
    name = mig_profile_name(slices, memory_mib, total_mib)
    if media and model.mig_profile(name + "+me") is not None:
        name += "+me"
    return name if model.mig_profile(name) is not None else None


def place_instances(
    model: GpuModel, profiles: list[str], starts: list[int | None] | None = None
) -> list[MigInstance] | None:
    """MIG instances for `profiles`: given starts kept, the others chosen by `engine.mig.place`."""
    wanted = list(zip(profiles, starts or [None] * len(profiles), strict=True))
    placed = place(model, wanted)
    if placed is None:
        return None
    return [MigInstance(profile=p, start=s) for p, s in sorted(placed, key=lambda ps: (ps[1], ps[0]))]
