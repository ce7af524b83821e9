"""NVIDIA's XID catalog and the health findings XIDs and ECC double-bit errors give rise to.

The meanings and actions follow NVIDIA's XID documentation, "Analyzing Xid Errors with the Xid Catalog"
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), whose resolution buckets are
RESTART_APP, RESET_GPU, RESTART_BM (reboot the node), CONTACT_SUPPORT (hardware: RMA) and IGNORE. An XID whose
catalog action is a reset, a reboot or support, and any double-bit (uncorrectable) ECC error, flags the GPU: the
finding carries the remedy as a `set-gpu-health` change to review, never applied by this module (it is pure).

Checked row by row against NVIDIA's own text as far as it could be read (`CHECKED`: what of each row was
checked, and where): the catalog page's table could be read only as far as XID 13, so XID 13 alone is checked
whole (meaning and action); the meanings of 48, 63, 64, 94, 95 and 79 are checked against NVIDIA's memory-error
and operational-event pages, not their actions. Every other row, and every action but 13's, stays UNCERTAIN
(`uncertain(code)`). Third-party copies of the catalog (not NVIDIA's, so not a source) give other immediate
actions for some rows — IGNORE for 43 and 63, WORKFLOW_XID_45 and WORKFLOW_XID_48 for 45 and 48 — which is why
the actions stay unchecked until read from NVIDIA's spreadsheet itself. Until then an operator reads each finding
as a prompt to look, and the fence is only ever proposed, never applied unreviewed.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuadmin.model.telemetry import DeviceTelemetry

Action = Literal["RESTART_APP", "RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT", "IGNORE"]


@dataclass(frozen=True, slots=True)
class Xid:
    code: int
    meaning: str
    action: Action  # NVIDIA's immediate resolution bucket
    flags: bool  # whether the GPU is fenced as unhealthy for it


def _xid(code: int, meaning: str, action: Action) -> Xid:
    return Xid(code, meaning, action, action in ("RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT"))


CATALOG: dict[int, Xid] = {x.code: x for x in (
    _xid(13, "Graphics Engine Exception (an application fault: illegal address, out-of-range access)",
         "RESTART_APP"),
    _xid(31, "GPU memory page fault (an application's illegal memory access, usually)", "RESTART_APP"),
    _xid(43, "GPU stopped processing (a user application fault; the GPU stays usable)", "RESTART_APP"),
    _xid(45, "Preemptive cleanup, due to previous errors (channels torn down after another error)",
         "RESTART_APP"),
    _xid(48, "Double-bit ECC error (uncorrectable memory error)", "RESET_GPU"),
    _xid(61, "Internal micro-controller breakpoint/warning", "RESET_GPU"),
    _xid(62, "Internal micro-controller halt", "RESET_GPU"),
    _xid(63, "ECC page retirement or row-remapping recording event", "RESET_GPU"),
    _xid(64, "ECC page retirement or row-remapper recording failure", "RESET_GPU"),
    _xid(74, "NVLink error", "RESET_GPU"),
    _xid(79, "GPU has fallen off the bus", "RESTART_BM"),
    _xid(92, "High single-bit ECC error rate", "IGNORE"),
    _xid(94, "Contained ECC error (the affected application must restart)", "RESTART_APP"),
    _xid(95, "Uncontained ECC error (every application on the GPU is affected)", "RESET_GPU"),
    _xid(119, "GSP RPC timeout", "RESET_GPU"),
    _xid(120, "GSP error", "RESET_GPU"),
)}


_CATALOG_PAGE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
_MEMORY_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/user-visible-statistics.html"
_PAGE_RETIREMENT = "https://docs.nvidia.com/deploy/dynamic-page-retirement/visibility.html"
_OPERATIONAL_EVENTS = "https://docs.nvidia.com/deploy/gpu-operational-events/latest/release-notes.html"

# What of a row was checked against NVIDIA's text, and where (an absent row, and the unchecked part of a row
# here, is uncertain). Checked on 2026-12-04 through the session's search of stored NVIDIA pages.
CHECKED: dict[int, str] = {
    13: f"meaning and action: the catalog's row 13 (Graphics Engine Exception; immediate action RESTART_APP), "
        f"{_CATALOG_PAGE}",
    48: f"meaning only: 'an uncorrectable ECC error has occurred', {_MEMORY_ERRORS}; 'a DBE has occurred', "
        f"{_PAGE_RETIREMENT}",
    63: f"meaning only: successful recording of a row-remapping entry to the InfoROM ({_MEMORY_ERRORS}); a page "
        f"successfully retired ({_PAGE_RETIREMENT})",
    64: f"meaning only: a failure recording a row-remapping entry ({_MEMORY_ERRORS}); a page failed retirement "
        f"({_PAGE_RETIREMENT})",
    79: f"meaning only: 'GPU fallen off the bus (Xid 79)', {_OPERATIONAL_EVENTS}",
    94: f"meaning only: 'a contained ECC error has occurred', {_MEMORY_ERRORS}",
    95: f"meaning only: 'an uncontained ECC error has occurred', {_MEMORY_ERRORS}",
}


def uncertain(code: int) -> str | None:
    """What of a catalog row is not checked against NVIDIA's text ("action", "meaning and action"), or None."""
    checked = CHECKED.get(code)
    if checked is None:
        return "meaning and action"
    return "action" if checked.startswith("meaning only") else None


def describe(code: int) -> str:
    """`XID 79: GPU has fallen off the bus`, or an unknown code said as such."""
    found = CATALOG.get(code)
    return f"XID {code}: {found.meaning}" if found is not None else f"XID {code}: not in gpuadmin's catalog"


@dataclass(frozen=True, slots=True)
class GpuReading:
    """What a source (Prometheus/DCGM, NVML) read of one GPU, as health needs it: the XIDs seen (in order)
    and the double-bit ECC error count (volatile: since the last driver load), None where unknown."""

    node: str
    gpu: int
    xids: tuple[int, ...] = ()
    dbe_volatile: int | None = None


@dataclass(frozen=True, slots=True)
class LastSeen:
    """What an earlier pass saw of a GPU: the XIDs already judged and the DBE count then."""

    xids: int = 0  # how many of the reading's XIDs were already seen
    dbe_volatile: int = 0


@dataclass(frozen=True, slots=True)
class Finding:
    node: str
    gpu: int
    reason: str  # what fences it, one line: "XID 79: GPU has fallen off the bus"
    action: str  # NVIDIA's action, or the ECC one
    remedy: dict[str, Any]  # the set-gpu-health change to review

    def fence_command(self, options: tuple[str, ...] = ()) -> str:
        """The command that fences the GPU for this finding, quoted for a POSIX shell, to paste and review
        (`gpuadmin gpu-health gpu-h100-05/3 unhealthy --reason 'XID 79: GPU has fallen off the bus'`): the
        set-gpu-health verb, which shows the plan and asks before applying it. `options`: gpuadmin's own
        (`--state DIR`), put before the verb."""
        return shlex.join(("gpuadmin", *options, "gpu-health", f"{self.node}/{self.gpu}", "unhealthy",
                           "--reason", self.reason))

    @property
    def command(self) -> str:
        return self.fence_command()

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "gpu": self.gpu, "reason": self.reason, "action": self.action,
                "remedy": self.remedy, "command": self.command}


def _remedy(node: str, gpu: int, reason: str) -> dict[str, Any]:
    return {"op": "set-gpu-health", "node": node, "gpu": gpu, "health": "unhealthy", "reason": reason}


def reading_of(device: DeviceTelemetry) -> GpuReading:
    """What health judges of a GPU's telemetry: its last XID (DCGM_FI_DEV_XID_ERRORS, 0: none since the driver
    loaded) and its volatile double-bit ECC count; an unknown reading is left unknown, never zero."""
    xid = device.xid.value
    dbe = device.ecc_dbe_volatile.value
    return GpuReading(device.node, device.gpu, xids=(int(xid),) if xid else (),
                      dbe_volatile=int(dbe) if dbe is not None else None)


def findings(readings: Iterable[GpuReading], seen: Mapping[tuple[str, int], LastSeen] | None = None,
             fenced: frozenset[tuple[str, int]] = frozenset()) -> list[Finding]:
    """The GPUs new readings flag: a new XID whose action is a reset, a reboot or support, or a DBE count
    that grew. A GPU already fenced is not flagged again; one finding per GPU (its first cause)."""
    out: list[Finding] = []
    for reading in readings:
        key = (reading.node, reading.gpu)
        if key in fenced:
            continue
        last = (seen or {}).get(key, LastSeen())
        found = _xid_finding(reading, last) or _dbe_finding(reading, last)
        if found is not None:
            out.append(found)
    return out


def _xid_finding(reading: GpuReading, last: LastSeen) -> Finding | None:
    for code in reading.xids[last.xids:]:
        xid = CATALOG.get(code)
        if xid is not None and xid.flags:
            reason = describe(code)
            return Finding(reading.node, reading.gpu, reason, xid.action,
                           _remedy(reading.node, reading.gpu, reason))
    return None


def _dbe_finding(reading: GpuReading, last: LastSeen) -> Finding | None:
    count = reading.dbe_volatile
    if count is None or count <= last.dbe_volatile:
        return None
    new = count - last.dbe_volatile
    reason = f"DBE: {new} new volatile double-bit ECC error{'s' if new != 1 else ''} ({count} since driver load)"
    return Finding(reading.node, reading.gpu, reason, "RESET_GPU", _remedy(reading.node, reading.gpu, reason))
