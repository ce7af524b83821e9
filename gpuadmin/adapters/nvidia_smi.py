"""`nvidia-smi -q -x` → a Node (DTD v11–v13).

What is read, per `<gpu>` element, in document order (= nvidia-smi index order): the model (by
`<product_name>` through the catalog, else by `<pci><pci_device_id>` — either one is enough, so a scrubbed
one does not stop the other), the frame-buffer total (units parsed: KiB/MiB/GiB), MIG mode current/pending,
and the MIG devices. The XML never names a MIG profile (DTD v11–v13 have no profile id): each GPU instance
is identified by what its devices report — memory (the naming rule gives the name's memory part), SM count
and the engine counts of `device_attributes/shared` (DEC/ENC/JPEG/OFA/CE) — against the catalog profile
table (`_common.identify_mig_profile`), never by a nearest guess; a GI that matches no profile, or several
that nothing tells apart, is an error naming the GPU and the MIG device. MIG devices that share a
`<gpu_instance_id>` are the compute instances of one GI, each named `<C>c.<GI profile>` from its SM count.
The XML holds no placement either, so starts are chosen with `engine.mig.place`. `N/A`, `None`, missing
elements and an `attached_gpus` count that disagrees with the `<gpu>` elements become warnings (the elements
are trusted).

A product the catalog does not know is imported whole, with the product name, frame-buffer total and PCI
device id of the file, marked `not_in_catalog` (a warning says what cannot be checked for it: MIG, vGPU);
nothing else about the import fails.

The parser is expat with the dangerous parts of XML refused: a DOCTYPE naming an external DTD (as real
nvidia-smi output does) is accepted but never fetched; an internal DTD subset, any entity declaration and
any external entity reference are errors (no billion laughs, no XXE).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from gpuadmin.adapters._common import (
    ImportResult,
    MigDeviceFacts,
    check_given_node_name,
    held_by_the_models,
    identify_mig_profile,
    input_error,
    place_instances,
    with_module_ids,
)
from gpuadmin.catalog import GpuModel, MigEngines, get_catalog, normalize_pci_device_id
from gpuadmin.engine.mig import compute_instance_problems
from gpuadmin.model import Gpu, Node, NotInCatalog
from gpuadmin.model.inventory import (
    MAX_GPU_INDEX,
    MAX_GPU_MEMORY_GIB,
    NvlinkKind,
    Orchestrator,
    Platform,
    decimal_at_most,
)

MAX_BYTES = 64 * 1024 * 1024
KNOWN_DTD_VERSIONS = (11, 12, 13)

_UNITS = {"b": 1 / (1 << 20), "kib": 1 / 1024, "kb": 1 / 1024, "mib": 1, "mb": 1, "gib": 1024, "gb": 1024}
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")
_DTD = re.compile(r"nvsmi_device_v(\d+)\.dtd")


class _Unsafe(Exception):
    pass


@dataclass
class _Parsed:
    root: ET.Element
    lines: dict[int, int] = field(default_factory=dict)  # id(element) → 1-based line
    dtd_version: int | None = None

    def line(self, element: ET.Element | None) -> int | None:
        return self.lines.get(id(element)) if element is not None else None


def _parse_xml(data: bytes, file: str) -> _Parsed:
    """Expat → ElementTree elements with their line numbers; DTD subsets and entities refused."""
    parser = expat.ParserCreate()
    builder = ET.TreeBuilder()
    lines: dict[int, int] = {}
    dtd: list[int] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = builder.start(tag, attrs)
        lines[id(element)] = parser.CurrentLineNumber

    def doctype(_name: str, sysid: str | None, _pubid: str | None, has_internal_subset: int) -> None:
        if has_internal_subset:
            raise _Unsafe("a DOCTYPE with an internal DTD subset is not accepted")
        found = _DTD.search(sysid or "")
        if found:
            dtd.append(int(found.group(1)))

    def entity(*_: object) -> None:
        raise _Unsafe("entity declarations are not accepted")

    def external(*_: object) -> int:
        raise _Unsafe("external entity references are not accepted")

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.ExternalEntityRefHandler = external
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except _Unsafe as unsafe:
        raise input_error(f"refused unsafe XML: {unsafe}", file, parser.CurrentLineNumber) from None
    except expat.ExpatError as bad:
        raise input_error(
            f"not XML: {expat.ErrorString(bad.code)}", file, bad.lineno, column=bad.offset + 1
        ) from None
    root = builder.close()
    return _Parsed(root, lines, dtd[0] if dtd else None)


def _text(element: ET.Element | None) -> str | None:
    """Stripped text, with nvidia-smi's placeholders (`N/A`, `None`, `[N/A]`, empty) as None."""
    if element is None or element.text is None:
        return None
    text = element.text.strip()
    if text in ("", "N/A", "None", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error"):
        return None
    return text


def parse_mib(text: str | None) -> int | None:
    """ "81559 MiB" → 81559, "80 GiB" → 81920, "N/A" / None / garbage → None."""
    if text is None:
        return None
    match = _QUANTITY.match(text)
    if match is None:
        return None
    unit = match.group(2).lower() or "mib"
    factor = _UNITS.get(unit)
    if factor is None:
        return None
    mib = float(match.group(1)) * factor
    # a total past any GPU's (or infinite: 400 digits) is no reading at all, like N/A
    return round(mib) if mib <= MAX_GPU_MEMORY_GIB * 1024 else None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def _model(gpu: ET.Element, index: int, warnings: list[str]) -> GpuModel | None:
    """The catalog model by product name, else by PCI device id — either alone is enough, so a scrubbed or
    odd one of the two does not stop the other; None where neither is known."""
    catalog = get_catalog()
    product = _text(gpu.find("product_name"))
    pci_id = _text(gpu.find("pci/pci_device_id"))
    by_name = catalog.model_by_product_name(product) if product else None
    by_pci = catalog.model_by_pci_id(pci_id) if pci_id else None
    if by_name is not None and by_pci is not None and by_name is not by_pci:
        warnings.append(
            f"GPU {index}: product name {product!r} is a {by_name.name} but PCI device id "
            f"{pci_id} is a {by_pci.name}; using the product name"
        )
    return by_name or by_pci


def _pci_id(gpu: ET.Element) -> str | None:
    """The `0xDDDD` device id of `<pci_device_id>` (`233010DE`), None where absent or scrubbed to zeros."""
    found = normalize_pci_device_id(_text(gpu.find("pci/pci_device_id")) or "")
    return None if found in (None, "0x0000") else found


def _not_in_catalog(
    element: ET.Element, index: int, total: int | None, current_mig: str | None, warnings: list[str]
) -> Gpu:
    """A GPU the catalog does not know: whole, with the product name, memory and PCI id the file gives."""
    product = _text(element.find("product_name"))
    pci = _pci_id(element)
    name = product or (f"PCI device {pci}" if pci else f"unidentified GPU {index}")
    what = f"{product!r}" if product else "a GPU without a product name"
    what += f" (PCI device id {pci})" if pci else " (no PCI device id)"
    memory = f"{total} MiB" if total is not None else "no frame-buffer total"
    warnings.append(
        f"GPU {index}: {what} is not in the catalog: imported whole with {memory}, marked not_in_catalog; "
        "its MIG and vGPU support cannot be checked, so MIG and vGPU changes on it are refused"
    )
    if current_mig == "Enabled":
        warnings.append(
            f"GPU {index}: MIG is enabled on it in the file, but without catalog facts its MIG devices cannot "
            "be read; imported in mode full"
        )
    return Gpu(
        index=index,
        model=name,
        mode="full",
        not_in_catalog=NotInCatalog(memory_mib=total, pci_device_id=pci),
    )


def _compute_instances(
    model: GpuModel, profile: str, sm_values: list[int | None], measured_per_slice: float | None = None
) -> list[str] | None:
    """The CI profiles of a GI's MIG devices from their SM counts: C slices ≈ SMs / (the GI's SMs per compute
    slice). None for the default (one full-width CI) or where the SM counts are missing."""
    gi = model.mig_profile(profile)
    if gi is None or any(s is None for s in sm_values):
        return None
    counts = [s for s in sm_values if s is not None]
    # without an SM figure for the GI: the SMs per slice measured on the GPU, else assume its CIs fill it
    if gi.sms is not None:
        per_slice = gi.sms / gi.compute_slices
    else:
        per_slice = measured_per_slice or sum(counts) / gi.compute_slices
    if per_slice <= 0:
        return None
    names = []
    for sms in counts:
        slices = min(range(1, gi.compute_slices + 1), key=lambda c: (abs(c * per_slice - sms), c))
        names.append(gi.name if slices == gi.compute_slices else f"{slices}c.{gi.name}")
    return None if names == [gi.name] else names


_ENGINE_ELEMENTS = {
    "dec": "decoder_count",
    "enc": "encoder_count",
    "jpg": "jpg_count",
    "ofa": "ofa_count",
    "ce": "copy_engine_count",
}


def _engines(device: ET.Element) -> MigEngines:
    """The engine counts a MIG device shares with its GPU instance (`device_attributes/shared`)."""
    counts = {k: _int(_text(device.find(f"device_attributes/shared/{e}"))) for k, e in _ENGINE_ELEMENTS.items()}
    return MigEngines(**counts)


def _mig_devices(
    gpu: ET.Element,
    model: GpuModel,
    total_mib: int,
    parsed: _Parsed,
    index: int,
    file: str,
    warnings: list[str],
) -> list[tuple[str, list[str] | None]]:
    """(profile, compute instances) of the GPU instances, one per distinct `gpu_instance_id`; the MIG
    devices that share a GI id are its compute instances. Each GI is identified by what its devices report
    (`_common.identify_mig_profile`); one that cannot be is an error naming it."""
    container = gpu.find("mig_devices")
    devices = container.findall("mig_device") if container is not None else []
    by_gi: dict[str, list[ET.Element]] = {}
    for n, device in enumerate(devices):
        gi = _text(device.find("gpu_instance_id")) or f"#{n}"
        by_gi.setdefault(gi, []).append(device)
    identified: list[tuple[str, list[ET.Element], list[int | None]]] = []
    for gi, members in by_gi.items():
        first = members[0]
        where = ", ".join(_text(d.find("index")) or "?" for d in members)
        label = f"MIG device {where} (GPU instance {gi})" if len(members) == 1 else (
            f"MIG devices {where} (GPU instance {gi})"
        )
        memory = parse_mib(_text(first.find("fb_memory_usage/total")))
        sm_values = [_int(_text(d.find("device_attributes/shared/multiprocessor_count"))) for d in members]
        sms = None if any(s is None for s in sm_values) else sum(s for s in sm_values if s is not None)
        if memory is None:
            raise input_error(
                f"GPU {index}: {label} has no frame-buffer total",
                file,
                parsed.line(first),
                path=("nvidia_smi_log", "gpu", index, "mig_devices"),
            )
        if sms is None:
            warnings.append(
                f"GPU {index}: {label} has no SM count; the profile is identified by its memory and engines"
            )
        facts = MigDeviceFacts(memory, sms, split=len(members) > 1, engines=_engines(first))
        found = identify_mig_profile(model, facts, total_mib)
        if found.profile is None:
            raise input_error(
                f"GPU {index}: {label} cannot be identified: {found.problem}",
                file,
                parsed.line(first),
                path=("nvidia_smi_log", "gpu", index, "mig_devices"),
                hint="the catalog's MIG table for the model (gpuadmin/catalog/data/mig.yaml) lists what each "
                "profile reports; `gpuadmin describe catalog` shows it",
            )
        if found.warning is not None:
            warnings.append(f"GPU {index}: {label}: {found.warning}")
        identified.append((found.profile, members, sm_values))
    # SMs per compute slice on this GPU, from its unsplit GIs: what sizes compute instances where the catalog
    # has no SM count for their GI's profile
    samples = []
    for profile, members, sm_values in identified:
        gi_profile = model.mig_profile(profile)
        if len(members) == 1 and sm_values[0] is not None and gi_profile is not None:
            samples.append(sm_values[0] / gi_profile.compute_slices)
    per_slice = sum(samples) / len(samples) if samples else None
    out: list[tuple[str, list[str] | None]] = []
    for (profile, members, sm_values), gi in zip(identified, by_gi, strict=True):
        first = members[0]
        cis = _compute_instances(model, profile, sm_values, per_slice)
        if len(members) > 1 and cis is None:
            warnings.append(
                f"GPU {index}: GPU instance {gi} holds {len(members)} compute instances without SM counts; "
                "they cannot be told apart and are imported as one"
            )
        if cis is not None:
            problems = compute_instance_problems(model, profile, cis)
            if problems:
                raise input_error(
                    f"GPU {index}: the compute instances of GPU instance {gi} ({profile}) do not add up: "
                    + "; ".join(problems),
                    file,
                    parsed.line(first),
                    path=("nvidia_smi_log", "gpu", index, "mig_devices"),
                )
            warnings.append(
                f"GPU {index}: GPU instance {gi} ({profile}) holds compute instances {', '.join(cis)}"
            )
        out.append((profile, cis))
    return out


def _gpu(
    element: ET.Element, index: int, parsed: _Parsed, file: str, warnings: list[str], memory: dict[int, int]
) -> Gpu:
    model = _model(element, index, warnings)
    total = parse_mib(_text(element.find("fb_memory_usage/total")))
    if total is not None:
        memory[index] = total
    current = _text(element.find("mig_mode/current_mig"))
    if model is None:
        return _not_in_catalog(element, index, total, current, warnings)
    if total is None:
        warnings.append(f"GPU {index}: no frame-buffer total; using the catalog's {model.memory_mib} MiB")
        total = model.memory_mib
    elif total != model.memory_mib:
        warnings.append(
            f"GPU {index}: frame buffer is {total} MiB, the catalog says {model.memory_mib} MiB "
            f"for {model.name}"
        )
    pending = _text(element.find("mig_mode/pending_mig"))
    if current is not None and pending is not None and current != pending:
        warnings.append(
            f"GPU {index}: MIG mode is {current.lower()} with {pending.lower()} pending "
            "(takes effect after a GPU reset); importing the current mode"
        )
    if current != "Enabled":
        container = element.find("mig_devices")
        if container is not None and container.findall("mig_device"):
            warnings.append(
                f"GPU {index}: MIG devices listed while MIG mode is {current or 'unknown'}; ignored"
            )
        return Gpu(index=index, model=model.name, mode="full")
    if not model.mig_capable:
        raise input_error(
            f"GPU {index}: MIG is enabled on a {model.name}, which the catalog lists as not MIG-capable",
            file,
            parsed.line(element.find("mig_mode")),
        )
    found = _mig_devices(element, model, total, parsed, index, file, warnings)
    if not found:
        warnings.append(f"GPU {index}: MIG is enabled but no MIG devices exist (no GPU instances)")
        return Gpu(index=index, model=model.name, mode="mig", mig=[])
    profiles = [p for p, _ in found]
    placed = place_instances(model, profiles)
    if placed is None:
        raise input_error(
            f"GPU {index}: MIG devices {', '.join(profiles)} have no valid placement on {model.name}",
            file,
            parsed.line(element.find("mig_devices")),
        )
    # place_instances sorts by start: give each placed GI the CIs of one GI of its profile, in file order
    pending_cis: dict[str, list[list[str] | None]] = {}
    for profile, cis in found:
        pending_cis.setdefault(profile, []).append(cis)
    instances = [
        i.model_copy(update={"compute_instances": pending_cis[i.profile].pop(0)}) for i in placed
    ]
    warnings.append(
        f"GPU {index}: MIG placements are not in the XML; chose starts "
        + ", ".join(f"{i.profile}@{i.start}" for i in instances)
    )
    return Gpu(index=index, model=model.name, mode="mig", mig=instances)


def _module_ids(elements: list[ET.Element], warnings: list[str]) -> list[int | None]:
    """Each GPU's board slot (`<platformInfo><module_id>`, from 1; absent on PCIe cards and older drivers); a
    value that is no slot number is left out with a warning."""
    ids: list[int | None] = []
    for index, element in enumerate(elements):
        text = _text(element.find("platformInfo/module_id"))
        value = decimal_at_most(text, MAX_GPU_INDEX + 1) if text is not None else None
        if text is not None and not value:
            warnings.append(f"GPU {index}: module id {text!r} is not a slot number from 1; left out")
            value = None
        ids.append(value)
    return ids


def _nvlink(gpus: list[ET.Element]) -> NvlinkKind | None:
    """NVSwitch where every GPU reports a trained NVLink fabric (v13 `<fabric><state>Completed`)."""
    states = [(_text(g.find("fabric/state")), _text(g.find("fabric/status"))) for g in gpus]
    if len(gpus) > 1 and all(s == "Completed" and st == "Success" for s, st in states):
        return "nvswitch"
    return None


def parse_nvidia_smi(
    data: bytes | str,
    node_name: str,
    *,
    platform: Platform = "baremetal",
    orchestrator: Orchestrator = "none",
    file: str = "<nvidia-smi>",
) -> ImportResult:
    """`nvidia-smi -q -x` output as a Node named `node_name`; `InputError` with file:line on bad input."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_BYTES:
        raise input_error(f"file is larger than {MAX_BYTES} bytes", file)
    parsed = _parse_xml(raw, file)
    root = parsed.root
    if root.tag != "nvidia_smi_log":
        raise input_error(
            f"not nvidia-smi XML: the root element is <{root.tag}>, not <nvidia_smi_log>",
            file,
            parsed.line(root),
            hint="produce it with `nvidia-smi -q -x`",
        )
    warnings: list[str] = []
    if parsed.dtd_version is not None and parsed.dtd_version not in KNOWN_DTD_VERSIONS:
        warnings.append(
            f"DTD version v{parsed.dtd_version} is outside the versions read here "
            f"(v{KNOWN_DTD_VERSIONS[0]}–v{KNOWN_DTD_VERSIONS[-1]}); reading it anyway"
        )
    elements = root.findall("gpu")
    attached = _int(_text(root.find("attached_gpus")))
    if attached is not None and attached != len(elements):
        warnings.append(
            f"attached_gpus says {attached} but the file holds {len(elements)} <gpu> elements; "
            "importing the elements"
        )
    memory: dict[int, int] = {}
    gpus = [_gpu(element, index, parsed, file, warnings, memory) for index, element in enumerate(elements)]
    gpus = with_module_ids(gpus, _module_ids(elements, warnings), "the XML's", warnings)
    check_given_node_name(node_name, orchestrator, bool(gpus), "--node")
    node = Node(name=node_name, platform=platform, orchestrator=orchestrator, gpus=gpus, nvlink=_nvlink(elements))
    return ImportResult(node, warnings, memory)


def import_nvidia_smi(
    path: str | Path, node_name: str, platform: Platform = "baremetal", orchestrator: Orchestrator = "none"
) -> ImportResult:
    """Read an `nvidia-smi -q -x` file (see `parse_nvidia_smi`)."""
    file = str(path)
    try:
        size = Path(path).stat().st_size
        if size > MAX_BYTES:
            raise input_error(f"file is larger than {MAX_BYTES} bytes", file)
        data = Path(path).read_bytes()
    except OSError as exc:
        raise input_error(f"cannot read: {exc.strerror or exc}", file) from None
    with held_by_the_models(file):
        return parse_nvidia_smi(data, node_name, platform=platform, orchestrator=orchestrator, file=file)
