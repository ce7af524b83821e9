"""NVIDIA's XID catalog and the health findings XIDs and ECC double-bit errors give rise to.

The meanings and actions follow NVIDIA's XID documentation, "Analyzing Xid Errors with the Xid Catalog"
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), whose immediate resolution buckets are
RESTART_APP, RESET_GPU, RESTART_BM (reboot the node), CONTACT_SUPPORT (hardware: RMA) and IGNORE, and, for some
rows, a named workflow instead of a bucket (WORKFLOW_XID_45, WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR). An XID whose
action is a reset, a reboot or support, or a workflow NVIDIA marks fatal, and any double-bit (uncorrectable) ECC
error, flags the GPU: the finding carries the remedy as a `set-gpu-health` change to review, never applied by
this module (it is pure).

Every row is checked against NVIDIA's own text (`CHECKED`: what of each row was checked, and where): the action
against NVIDIA's XID mapping in NVIDIA/NVSentinel (each XID's mnemonic, the catalog's immediate bucket, and
whether NVIDIA's own health monitor treats it as FATAL), the meaning against the driver's own names and strings
(nverror.h in NVIDIA/open-gpu-kernel-modules), NVIDIA's memory-error and operational-event pages, the catalog
page (row 13, the part the search could read) and NVIDIA's k8s-device-plugin (the XIDs it skips as application
errors). The catalog page's later rows were read only through a third-party stored copy, which agrees with
NVSentinel's mapping on every row here but is not cited as a source. XID 61 alone stays uncertain in its action:
NVSentinel maps it to UNEXPECTED_ERR_REPORT_ISSUE, not one of the buckets (the copy of the catalog says
CONTACT_SUPPORT); either way it flags. `uncertain(code)` says what is not checked.

The table holds every row of NVSentinel's mapping whose action is RESET_GPU, RESTART_BM or CONTACT_SUPPORT, or a
workflow it marks FATAL (tests/telemetry/test_xid_idle.py holds it to the mapping's lines). An XID outside the
table is never flagged and never "ok": `unlisted(device)` gives its code and "not in gpuadmin's table: see NVIDIA's
XID catalog", which the views show as the GPU's health. Not flagged, because what is outside is, in NVIDIA's
mapping, an application error or IGNORE (RESTART_APP, IGNORE: NONFATAL), a FATAL row whose action is no reset
(UNEXPECTED_ERR_REPORT_ISSUE: among them 1-7, which the catalog lists as unused on A100 and later;
CHECK_MECHANICALS, UPDATE_SWFW, RESTART_VM), or a code newer than the mapping read: a fence proposed without
NVIDIA's action would take GPUs out of service for application errors; the operator sees the code and can fence
by hand.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuadmin.model.telemetry import DeviceTelemetry

Action = Literal["RESTART_APP", "RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT", "IGNORE",
                 "WORKFLOW_XID_45", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR"]

_FENCING_BUCKETS: frozenset[Action] = frozenset({"RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT"})
# A workflow names no bucket, so whether it fences is NVIDIA's FATAL/NONFATAL mark for the row in NVSentinel's
# mapping: 48, 74 and the NVLink5 rows (144-150) are FATAL (the catalog on 48: "a GPU reset or node reboot is
# needed to clear this error"); 45 is NONFATAL (it follows another XID, and the k8s-device-plugin skips it as an
# application error).
_WORKFLOW_FENCES: dict[Action, bool] = {"WORKFLOW_XID_45": False, "WORKFLOW_XID_48": True,
                                        "WORKFLOW_NVLINK_ERR": True, "WORKFLOW_NVLINK5_ERR": True}


@dataclass(frozen=True, slots=True)
class Xid:
    code: int
    meaning: str
    action: Action  # NVIDIA's immediate resolution bucket, or the workflow it names instead
    flags: bool  # whether the GPU is fenced as unhealthy for it


def _xid(code: int, meaning: str, action: Action) -> Xid:
    return Xid(code, meaning, action, action in _FENCING_BUCKETS or _WORKFLOW_FENCES.get(action, False))


CATALOG: dict[int, Xid] = {x.code: x for x in (
    _xid(13, "Graphics Engine Exception (an application fault: illegal address, out-of-range access)",
         "RESTART_APP"),
    _xid(31, "GPU memory page fault (an application's illegal memory access, usually)", "RESTART_APP"),
    _xid(43, "GPU stopped processing (a user application fault; the GPU stays usable)", "IGNORE"),
    _xid(45, "Preemptive cleanup, due to previous errors (channels torn down after another error)",
         "WORKFLOW_XID_45"),
    _xid(46, "GPU timeout error", "RESET_GPU"),
    _xid(48, "Double-bit ECC error (uncorrectable memory error)", "WORKFLOW_XID_48"),
    _xid(61, "Internal micro-controller (PMU) breakpoint", "CONTACT_SUPPORT"),
    _xid(62, "Internal micro-controller (PMU) halt", "RESET_GPU"),
    _xid(63, "GPU memory remapping event (a row remapped, or on older GPUs a page retired)", "IGNORE"),
    _xid(64, "GPU memory remapping failure (a row remap, or on older GPUs a page retirement, failed)",
         "RESET_GPU"),
    _xid(68, "Video decoder (NVDEC0) exception (an application's, usually)", "RESTART_APP"),
    _xid(74, "NVLink error", "WORKFLOW_NVLINK_ERR"),
    _xid(79, "GPU has fallen off the bus", "RESTART_BM"),
    _xid(92, "High single-bit ECC error rate (excessive correctable-error interrupts)", "IGNORE"),
    _xid(94, "Contained ECC error (the affected application must restart)", "RESTART_APP"),
    _xid(95, "Uncontained ECC error (every application on the GPU is affected)", "RESET_GPU"),
    _xid(109, "Context switch timeout", "RESET_GPU"),
    _xid(110, "Security fault (SEC_FAULT)", "RESET_GPU"),
    _xid(119, "GSP RPC timeout", "RESET_GPU"),
    _xid(120, "GSP error", "RESET_GPU"),
    _xid(136, "NVLink link training failed", "RESET_GPU"),
    _xid(140, "Uncorrectable ECC error escaped firmware handling", "RESET_GPU"),
    _xid(143, "GPU initialization error", "RESET_GPU"),
    _xid(144, "NVLink SAW error", "WORKFLOW_NVLINK5_ERR"),
    _xid(145, "NVLink RLW error", "WORKFLOW_NVLINK5_ERR"),
    _xid(146, "NVLink TLW error", "WORKFLOW_NVLINK5_ERR"),
    _xid(147, "NVLink TREX error", "WORKFLOW_NVLINK5_ERR"),
    _xid(148, "NVLink NVLPW control error", "WORKFLOW_NVLINK5_ERR"),
    _xid(149, "NVLink NETIR error", "WORKFLOW_NVLINK5_ERR"),
    _xid(150, "NVLink MSE error", "WORKFLOW_NVLINK5_ERR"),
    _xid(155, "NVLink software-defined error", "RESET_GPU"),
    _xid(156, "Resource retirement event", "RESET_GPU"),
    _xid(158, "GPU fatal timeout", "RESET_GPU"),
    _xid(160, "Channel retirement event", "RESTART_BM"),
    _xid(162, "ISINK re-engaged (ISINK_REENGAGED)", "RESET_GPU"),
)}


_CATALOG_PAGE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
_MEMORY_ERRORS = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/user-visible-statistics.html"
_PAGE_RETIREMENT = "https://docs.nvidia.com/deploy/dynamic-page-retirement/visibility.html"
_OPERATIONAL_EVENTS = "https://docs.nvidia.com/deploy/gpu-operational-events/latest/release-notes.html"
# NVIDIA's own repositories, at the commit that was read
_NVSENTINEL = ("NVIDIA/NVSentinel distros/kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv "
               "@6f8b0fcfa8e502bdda78fabf96facef729a9285b")
_NVERROR_H = ("NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/nverror.h "
              "@0b7b8041c2667cf18f353d2dbdfd5f09dbebf264")
# The newer codes (110 and up) are named only in a later nverror.h: the repository's newest snapshot (595.45.04)
_NVERROR_H_595 = ("NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/nverror.h "
                  "@df1c9a3de2be4b130f4fc7680f7198193d8ac6ad")
_DEVICE_PLUGIN = "NVIDIA/k8s-device-plugin internal/rm/health.go @02597b97a66aee924ae59788e8de24955d07f2d0"
_SKIPPED = f"skipped as an application error ('the GPU should still be healthy') in {_DEVICE_PLUGIN}"


def _action(row: str, fatal: bool) -> str:
    return f"action: {row}, {'FATAL' if fatal else 'NONFATAL'}, {_NVSENTINEL}"


# What of a row was checked against NVIDIA's text, and where (an absent row, and the unchecked part of a row
# here, is uncertain). Checked on 2026-12-04 through the session's search of stored NVIDIA pages and repositories.
CHECKED: dict[int, str] = {
    13: f"meaning and action: the catalog's row 13 (Graphics Engine Exception; immediate action RESTART_APP), "
        f"{_CATALOG_PAGE}; {_action('RESTART_APP', False)}; {_SKIPPED}",
    31: f"meaning: ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, 'Access Violation Error (MMU Error 2)', {_NVERROR_H}; "
        f"'GPU memory page fault', {_SKIPPED}; {_action('RESTART_APP', False)}",
    43: f"meaning: ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR, {_NVERROR_H}; 'GPU stopped processing', {_SKIPPED}; "
        f"{_action('IGNORE', False)}",
    45: f"meaning: ROBUST_CHANNEL_PREEMPTIVE_REMOVAL, {_NVERROR_H}; 'Preemptive cleanup, due to previous "
        f"errors', {_SKIPPED}; {_action('WORKFLOW_XID_45', False)}",
    48: f"meaning: ROBUST_CHANNEL_GPU_ECC_DBE, 'ECC Error (DBE Error)', {_NVERROR_H}; 'an uncorrectable ECC "
        f"error has occurred', {_MEMORY_ERRORS}; 'a DBE has occurred', {_PAGE_RETIREMENT}; "
        f"{_action('WORKFLOW_XID_48', True)}",
    61: f"meaning only: PMU_BREAKPOINT, 'PMU Breakpoint (non-fatal)', {_NVERROR_H}; the action is not one of the "
        f"catalog's buckets in NVIDIA's text: UNEXPECTED_ERR_REPORT_ISSUE, FATAL, {_NVSENTINEL}",
    62: f"meaning: PMU_HALT_ERROR, 'PMU Halt Error', {_NVERROR_H}; {_action('RESET_GPU', True)}",
    63: f"meaning: INFOROM_DRAM_RETIREMENT_EVENT / INFOROM_PAGE_RETIREMENT_EVENT, {_NVERROR_H}; successful "
        f"recording of a row-remapping entry to the InfoROM ({_MEMORY_ERRORS}); a page successfully retired "
        f"({_PAGE_RETIREMENT}); {_action('IGNORE', False)}",
    64: f"meaning: INFOROM_DRAM_RETIREMENT_FAILURE / INFOROM_PAGE_RETIREMENT_FAILURE, {_NVERROR_H}; a failure "
        f"recording a row-remapping entry ({_MEMORY_ERRORS}); a page failed retirement ({_PAGE_RETIREMENT}); "
        f"{_action('RESET_GPU', True)}",
    74: f"meaning: NVLINK_ERROR, 'NVLink Error', {_NVERROR_H}; {_action('WORKFLOW_NVLINK_ERR', True)}",
    79: f"meaning: ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS, 'GPU has fallen off the bus', {_NVERROR_H}; "
        f"'GPU fallen off the bus (Xid 79)', {_OPERATIONAL_EVENTS}; {_action('RESTART_BM', True)}",
    92: f"meaning: EXCESSIVE_SBE_INTERRUPTS, 'Excessive SBE interrupts', {_NVERROR_H}; "
        f"{_action('IGNORE', False)}",
    94: f"meaning: ROBUST_CHANNEL_CONTAINED_ERROR, 'Contained error', {_NVERROR_H}; 'a contained ECC error has "
        f"occurred', {_MEMORY_ERRORS}; {_action('RESTART_APP', False)}",
    95: f"meaning: ROBUST_CHANNEL_UNCONTAINED_ERROR, 'Uncontained error', {_NVERROR_H}; 'an uncontained ECC "
        f"error has occurred', {_MEMORY_ERRORS}; {_action('RESET_GPU', True)}",
    119: f"meaning: GSP_RPC_TIMEOUT, {_NVERROR_H}; {_action('RESET_GPU', True)}",
    120: f"meaning: GSP_ERROR, {_NVERROR_H}; {_action('RESET_GPU', True)}",
    68: f"meaning: ROBUST_CHANNEL_NVDEC0_ERROR, 'Video Engine Error (NVDEC0 Error)', {_NVERROR_H}; 'Video "
        f"processor exception', {_SKIPPED}; {_action('RESTART_APP', False)}",
    46: f"meaning: ROBUST_CHANNEL_GPU_TIMEOUT_ERROR, the mnemonic in {_NVSENTINEL} (nverror.h defines no 46); "
        f"{_action('RESET_GPU', True)}",
    # NVIDIA's sources disagree on 109: the mapping (and the catalog) say RESET_GPU/FATAL, the device plugin's
    # hard-coded skip list ('FIXME: formalize the full list') calls it an application error; NVIDIA/k8s-device-
    # plugin#1974 (open) asks the plugin to follow the catalog. The catalog-derived mapping is NVIDIA's per-XID
    # statement, so 109 fences; a wrong fence costs a reviewed change, a missed one puts new work on a GPU whose
    # context switching timed out.
    109: f"meaning: ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR, the mnemonic in {_NVSENTINEL} (nverror.h defines no "
         f"109); 'Context Switch Timeout Error', yet {_SKIPPED} (NVIDIA/k8s-device-plugin#1974 asks to follow the "
         f"catalog); {_action('RESET_GPU', True)}",
    110: f"meaning: SEC_FAULT_ERROR, {_NVERROR_H_595}; {_action('RESET_GPU', True)}",
    136: f"meaning: ALI_TRAINING_FAIL, {_NVERROR_H_595} (the driver logs 'NVLink: Link training failed'); "
         f"{_action('RESET_GPU', True)}",
    140: f"meaning: UNRECOVERABLE_ECC_ERROR_ESCAPE, {_NVERROR_H_595} (the driver logs 'An uncorrectable ECC "
         f"error detected (possible firmware handling failure)'); {_action('RESET_GPU', True)}",
    143: f"meaning: GPU_INIT_ERROR, {_NVERROR_H_595}; {_action('RESET_GPU', True)}",
    144: f"meaning: NVLINK_SAW_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    145: f"meaning: NVLINK_RLW_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    146: f"meaning: NVLINK_TLW_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    147: f"meaning: NVLINK_TREX_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    148: f"meaning: NVLINK_NVLPW_CTRL_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    149: f"meaning: NVLINK_NETIR_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    150: f"meaning: NVLINK_MSE_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    155: f"meaning: NVLINK_SW_DEFINED_ERROR, {_NVERROR_H_595}; {_action('RESET_GPU', True)}",
    156: f"meaning: RESOURCE_RETIREMENT_EVENT, {_NVERROR_H_595}; {_action('RESET_GPU', True)}",
    158: f"meaning: GPU_FATAL_TIMEOUT, {_NVERROR_H_595}; {_action('RESET_GPU', True)}",
    160: f"meaning: CHANNEL_RETIREMENT_EVENT, {_NVERROR_H_595}; {_action('RESTART_BM', True)}",
    162: f"meaning: ISINK_REENGAGED, {_NVERROR_H_595} (the mapping's line names no mnemonic); "
         f"{_action('RESET_GPU', True)}",
}


def uncertain(code: int) -> str | None:
    """What of a catalog row is not checked against NVIDIA's text ("action", "meaning and action"), or None."""
    checked = CHECKED.get(code)
    if checked is None:
        return "meaning and action"
    return "action" if checked.startswith("meaning only") else None


def describe(code: int) -> str:
    """`XID 79: GPU has fallen off the bus`, or a code outside the table said as such (`XID 8: not in gpuadmin's
    table: see NVIDIA's XID catalog`)."""
    found = CATALOG.get(code)
    return f"XID {code}: {found.meaning}" if found is not None else f"XID {code}: {NOT_IN_TABLE}"


NOT_IN_TABLE = "not in gpuadmin's table: see NVIDIA's XID catalog"


def unlisted(device: DeviceTelemetry) -> str | None:
    """What a GPU's last XID says when it is outside the table (`describe`'s words), None for a listed one or
    none: the views show it as the GPU's health instead of `ok`; it is not a finding (see the module)."""
    reading = reading_of(device)
    if reading.xids and reading.xids[-1] not in CATALOG:
        return describe(reading.xids[-1])
    return None


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
