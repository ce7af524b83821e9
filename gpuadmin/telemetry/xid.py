"""NVIDIA's XID catalog and the health findings XIDs and ECC double-bit errors give rise to.

The meanings and actions follow NVIDIA's XID documentation, "Analyzing Xid Errors with the Xid Catalog"
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), whose immediate resolution buckets are
RESTART_APP, RESET_GPU, RESTART_BM (reboot the node), CONTACT_SUPPORT (hardware: RMA) and IGNORE, and, for some
rows, a named workflow instead of a bucket (WORKFLOW_XID_45, WORKFLOW_XID_48, WORKFLOW_NVLINK_ERR, ...). An XID
whose action is a reset, a reboot or support, or that NVIDIA's mapping marks FATAL, and any double-bit
(uncorrectable) ECC error, flags the GPU: the finding carries the remedy as a `set-gpu-health` change to review,
never applied by this module (it is pure).

Every row is checked against NVIDIA's own text (`CHECKED`: what of each row was checked, and where): the action
against NVIDIA's XID mapping in NVIDIA/NVSentinel (each XID's mnemonic, the catalog's immediate bucket, and
whether NVIDIA's own health monitor treats it as FATAL), the meaning against the driver's own names and strings
(nverror.h in NVIDIA/open-gpu-kernel-modules), NVIDIA's memory-error and operational-event pages, the catalog
page (rows 1-8 and 13, the parts the search could read) and NVIDIA's k8s-device-plugin (the XIDs it skips as
application errors). The catalog page's later rows were read only through a third-party stored copy, which agrees
with NVSentinel's mapping on every row of the first check (13-120) but 61, is not cited as a source, and was not
compared row by row for the rows added since. XID 61 alone stays uncertain in its action:
NVSentinel maps it to UNEXPECTED_ERR_REPORT_ISSUE, not one of the buckets (the copy of the catalog says
CONTACT_SUPPORT); either way it flags. `uncertain(code)` says what is not checked.

The table holds every line of NVSentinel's mapping that NVIDIA marks FATAL, or whose action is RESET_GPU,
RESTART_BM or CONTACT_SUPPORT or a FATAL workflow (tests/telemetry/test_xid_idle.py holds it to the mapping's
lines): each flags. That includes the lines whose action is UNEXPECTED_ERR_REPORT_ISSUE (for 1-7 the catalog's
own rows say CONTACT_SUPPORT, and list them as unused on A100 and later), CHECK_MECHANICALS, UPDATE_SWFW and
RESTART_VM. Besides, it lists a few NONFATAL rows (13, 31, 43, 45, 63, 68, 92, 94) so that they are named.

An XID outside the table is never flagged and never "ok": `unlisted(device)` gives its code and "not in gpuadmin's
table: see NVIDIA's XID catalog", which the views show as the GPU's health. Not flagged, because what is outside
is, in NVIDIA's mapping, NONFATAL (RESTART_APP, IGNORE, CHECK_UVM, or 154's "follow the guidance of another
XID"), or a code newer than the mapping read: a fence proposed without NVIDIA's word would take GPUs out of
service for application errors; the operator sees the code and can fence by hand.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuadmin.model.telemetry import DeviceTelemetry

Action = Literal["RESTART_APP", "RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT", "IGNORE",
                 "WORKFLOW_XID_45", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR",
                 "UNEXPECTED_ERR_REPORT_ISSUE", "CHECK_MECHANICALS", "UPDATE_SWFW", "RESTART_VM"]

_FENCING_BUCKETS: frozenset[Action] = frozenset({"RESET_GPU", "RESTART_BM", "CONTACT_SUPPORT"})
# A workflow, or an action of NVSentinel's that is not one of the catalog's buckets, names no bucket, so whether
# it fences is NVIDIA's FATAL/NONFATAL mark for its lines in NVSentinel's mapping: 48, 74 and the NVLink5 rows
# (144-150) are FATAL (the catalog on 48: "a GPU reset or node reboot is needed to clear this error"), as is every
# line of UNEXPECTED_ERR_REPORT_ISSUE, CHECK_MECHANICALS (54), UPDATE_SWFW (78) and RESTART_VM (151); 45 is
# NONFATAL (it follows another XID, and the k8s-device-plugin skips it as an application error).
_OTHER_ACTION_FENCES: dict[Action, bool] = {
    "WORKFLOW_XID_45": False, "WORKFLOW_XID_48": True, "WORKFLOW_NVLINK_ERR": True, "WORKFLOW_NVLINK5_ERR": True,
    "UNEXPECTED_ERR_REPORT_ISSUE": True, "CHECK_MECHANICALS": True, "UPDATE_SWFW": True, "RESTART_VM": True}


@dataclass(frozen=True, slots=True)
class Xid:
    code: int
    meaning: str
    action: Action  # NVIDIA's immediate resolution bucket, or the workflow it names instead
    flags: bool  # whether the GPU is fenced as unhealthy for it


def _xid(code: int, meaning: str, action: Action) -> Xid:
    return Xid(code, meaning, action, action in _FENCING_BUCKETS or _OTHER_ACTION_FENCES.get(action, False))


CATALOG: dict[int, Xid] = {x.code: x for x in (
    _xid(1, "DMA Engine Error (FIFO Error 1)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(2, "DMA Engine Error (FIFO Error 2)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(3, "DMA Engine Error (FIFO Error 3)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(4, "DMA Engine Error (FIFO Error 4)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(5, "DMA Engine Error (FIFO Error 5)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(6, "DMA Engine Error (FIFO Error 6)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(7, "DMA Engine Error (FIFO Error 7)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(9, "Graphics Engine Error (GR Error 1)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(10, "Graphics Engine Error (GR Error 2)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(12, "Graphics Engine Error (GR Error 4)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(13, "Graphics Engine Exception (an application fault: illegal address, out-of-range access)",
         "RESTART_APP"),
    _xid(15, "Display Engine Error (CRTC Error 1)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(16, "Display Engine Error (CRTC Error 2)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(17, "Display Engine Error (CRTC Error 3)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(18, "Bus Interface Error (BIF Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(19, "Client Reported Error", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(20, "Video Engine Error (MPEG Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(21, "Video Engine Error (ME Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(22, "Video Engine Error (VP Error 1)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(23, "Error Reporting Enabled", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(24, "Graphics Engine Error (GR Error 6)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(26, "DMA Engine Error (FIFO Error 9)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(27, "Video Engine Error (VP Error 2)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(28, "Video Engine Error (VP2 Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(29, "Video Engine Error (BSP Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(30, "Access Violation Error (MMU Error 1)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(31, "GPU memory page fault (an application's illegal memory access, usually)", "RESTART_APP"),
    _xid(33, "Security Engine Error (SEC Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(34, "Video Engine Error (MSVLD Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(35, "Video Engine Error (MSPDEC Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(36, "Video Engine Error (MSPPP Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(42, "Video Engine Error (VIC Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(43, "GPU stopped processing (a user application fault; the GPU stays usable)", "IGNORE"),
    _xid(45, "Preemptive cleanup, due to previous errors (channels torn down after another error)",
         "WORKFLOW_XID_45"),
    _xid(46, "GPU timeout error", "RESET_GPU"),
    _xid(47, "Video Engine Error (MSENC/NVENC0 Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(48, "Double-bit ECC error (uncorrectable memory error)", "WORKFLOW_XID_48"),
    _xid(49, "Power State Locked", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(50, "Power State Event (RC Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(51, "Power State Event (Stress Test Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(52, "Power State Event (Thermal Event 1)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(53, "Power State Event (Thermal Event 2)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(54, "Power State Event (Power Event)", "CHECK_MECHANICALS"),
    _xid(55, "Power State Event (Thermal Event 3)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(56, "Display Engine Error (EVO Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(57, "FB Interface Error (FBPA Error 1)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(58, "FB Interface Error (FBPA Error 2)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(59, "PMU error", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(61, "Internal micro-controller (PMU) breakpoint", "CONTACT_SUPPORT"),
    _xid(62, "Internal micro-controller (PMU) halt", "RESET_GPU"),
    _xid(63, "GPU memory remapping event (a row remapped, or on older GPUs a page retired)", "IGNORE"),
    _xid(64, "GPU memory remapping failure (a row remap, or on older GPUs a page retirement, failed)",
         "RESET_GPU"),
    _xid(65, "Video Engine Error (NVENC1 Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(68, "Video decoder (NVDEC0) exception (an application's, usually)", "RESTART_APP"),
    _xid(73, "Video Engine Error (NVENC2 Error)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(74, "NVLink error", "WORKFLOW_NVLINK_ERR"),
    _xid(78, "vGPU device cannot be started", "UPDATE_SWFW"),
    _xid(79, "GPU has fallen off the bus", "RESTART_BM"),
    _xid(81, "VGA Subsystem Error", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(87, "NvTelemetry Driver Reoprt", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(90, "FB Interface Error (FBPA Error 3)", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(91, "Reserved Xid", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(92, "High single-bit ECC error rate (excessive correctable-error interrupts)", "IGNORE"),
    _xid(94, "Contained ECC error (the affected application must restart)", "RESTART_APP"),
    _xid(95, "Uncontained ECC error (every application on the GPU is affected)", "RESET_GPU"),
    _xid(108, "NVLINK_REMOTE_TRANSLATION_ERROR", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(109, "Context switch timeout", "RESET_GPU"),
    _xid(110, "Security fault (SEC_FAULT)", "RESET_GPU"),
    _xid(111, "BUNDLE_ERROR_EVENT", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(112, "DISP_SUPERVISOR_ERROR", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(113, "DP_LT_FAILURE", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(114, "HEAD_RG_UNDERFLOW", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(115, "CORE_CHANNEL_REGS", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(116, "WINDOW_CHANNEL_REGS", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(117, "CURSOR_CHANNEL_REGS", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(118, "HEAD_REGS", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(119, "GSP RPC timeout", "RESET_GPU"),
    _xid(120, "GSP error", "RESET_GPU"),
    _xid(122, "SPI_PMU_RPC_READ_FAIL", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(123, "SPI_PMU_RPC_WRITE_FAIL", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(124, "SPI_PMU_RPC_ERASE_FAIL", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(125, "INFOROM_FS_ERROR", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(136, "NVLink link training failed", "RESET_GPU"),
    _xid(138, "ROBUST_CHANNEL_DLA_ERROR", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(140, "Uncorrectable ECC error escaped firmware handling", "RESET_GPU"),
    _xid(142, "ROBUST_CHANNEL_NVENC3_ERROR", "UNEXPECTED_ERR_REPORT_ISSUE"),
    _xid(143, "GPU initialization error", "RESET_GPU"),
    _xid(144, "NVLink SAW error", "WORKFLOW_NVLINK5_ERR"),
    _xid(145, "NVLink RLW error", "WORKFLOW_NVLINK5_ERR"),
    _xid(146, "NVLink TLW error", "WORKFLOW_NVLINK5_ERR"),
    _xid(147, "NVLink TREX error", "WORKFLOW_NVLINK5_ERR"),
    _xid(148, "NVLink NVLPW control error", "WORKFLOW_NVLINK5_ERR"),
    _xid(149, "NVLink NETIR error", "WORKFLOW_NVLINK5_ERR"),
    _xid(150, "NVLink MSE error", "WORKFLOW_NVLINK5_ERR"),
    _xid(151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "RESTART_VM"),
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
    1: f"meaning: 'DMA Engine Error (FIFO Error 1)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD); the catalog's row: 'Unused', on none of A100, H100, B100, GB200, "
        f"immediate action CONTACT_SUPPORT, {_CATALOG_PAGE}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    2: f"meaning: 'DMA Engine Error (FIFO Error 2)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD); the catalog's row: 'Unused', on none of A100, H100, B100, GB200, "
        f"immediate action CONTACT_SUPPORT, {_CATALOG_PAGE}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    3: f"meaning: 'DMA Engine Error (FIFO Error 3)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD); the catalog's row: 'Unused', on none of A100, H100, B100, GB200, "
        f"immediate action CONTACT_SUPPORT, {_CATALOG_PAGE}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    4: f"meaning: 'DMA Engine Error (FIFO Error 4)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY); the catalog's row: 'Unused', on none of A100, H100, B100, GB200, "
        f"immediate action CONTACT_SUPPORT, {_CATALOG_PAGE}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    5: f"meaning: 'DMA Engine Error (FIFO Error 5)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW); the catalog's row: 'Unused', on none of A100, H100, B100, "
        f"GB200, immediate action CONTACT_SUPPORT, {_CATALOG_PAGE}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    6: f"meaning: 'DMA Engine Error (FIFO Error 6)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR); the catalog's row: 'Unused', on none of A100, H100, B100, GB200, "
        f"immediate action CONTACT_SUPPORT, {_CATALOG_PAGE}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    7: f"meaning: 'DMA Engine Error (FIFO Error 7)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR); the catalog's row: 'Unused', on none of A100, H100, B100, GB200, "
        f"immediate action CONTACT_SUPPORT, {_CATALOG_PAGE}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    9: f"meaning: 'Graphics Engine Error (GR Error 1)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_GR_ERROR_INSTANCE); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    10: f"meaning: 'Graphics Engine Error (GR Error 2)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    12: f"meaning: 'Graphics Engine Error (GR Error 4)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_GR_ERROR_SW_METHOD); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    13: f"meaning and action: the catalog's row 13 (Graphics Engine Exception; immediate action RESTART_APP), "
        f"{_CATALOG_PAGE}; {_action('RESTART_APP', False)}; {_SKIPPED}",
    15: f"meaning: 'Display Engine Error (CRTC Error 1)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_SCANLINE_TIMEOUT); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    16: f"meaning: 'Display Engine Error (CRTC Error 2)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    17: f"meaning: 'Display Engine Error (CRTC Error 3)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_PARAMETER_ERROR); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    18: f"meaning: 'Bus Interface Error (BIF Error)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    19: f"meaning: 'Client Reported Error', ROBUST_CHANNEL_DISP_MISSED_NOTIFIER, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    20: f"meaning: 'Video Engine Error (MPEG Error)', ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    21: f"meaning: 'Video Engine Error (ME Error)', ROBUST_CHANNEL_ME_ERROR_SW_METHOD, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    22: f"meaning: 'Video Engine Error (VP Error 1)', ROBUST_CHANNEL_VP_ERROR_SW_METHOD, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    23: f"meaning: 'Error Reporting Enabled', ROBUST_CHANNEL_RC_LOGGING_ENABLED, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    24: f"meaning: 'Graphics Engine Error (GR Error 6)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    26: f"meaning: 'DMA Engine Error (FIFO Error 9)', {_NVERROR_H} (the mapping's mnemonic: "
        f"ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    27: f"meaning: 'Video Engine Error (VP Error 2)', ROBUST_CHANNEL_VP_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    28: f"meaning: 'Video Engine Error (VP2 Error)', ROBUST_CHANNEL_VP2_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    29: f"meaning: 'Video Engine Error (BSP Error)', ROBUST_CHANNEL_BSP_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    30: f"meaning: 'Access Violation Error (MMU Error 1)', ROBUST_CHANNEL_BAD_ADDR_ACCESS, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    31: f"meaning: ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, 'Access Violation Error (MMU Error 2)', {_NVERROR_H}; "
        f"'GPU memory page fault', {_SKIPPED}; {_action('RESTART_APP', False)}",
    33: f"meaning: 'Security Engine Error (SEC Error)', ROBUST_CHANNEL_SEC_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    34: f"meaning: 'Video Engine Error (MSVLD Error)', ROBUST_CHANNEL_MSVLD_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    35: f"meaning: 'Video Engine Error (MSPDEC Error)', ROBUST_CHANNEL_MSPDEC_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    36: f"meaning: 'Video Engine Error (MSPPP Error)', ROBUST_CHANNEL_MSPPP_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    42: f"meaning: 'Video Engine Error (VIC Error)', ROBUST_CHANNEL_VIC_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    43: f"meaning: ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR, {_NVERROR_H}; 'GPU stopped processing', {_SKIPPED}; "
        f"{_action('IGNORE', False)}",
    45: f"meaning: ROBUST_CHANNEL_PREEMPTIVE_REMOVAL, {_NVERROR_H}; 'Preemptive cleanup, due to previous "
        f"errors', {_SKIPPED}; {_action('WORKFLOW_XID_45', False)}",
    46: f"meaning: ROBUST_CHANNEL_GPU_TIMEOUT_ERROR, the mnemonic in {_NVSENTINEL} (nverror.h defines no 46); "
        f"{_action('RESET_GPU', True)}",
    47: f"meaning: 'Video Engine Error (MSENC/NVENC0 Error)', ROBUST_CHANNEL_NVENC0_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    48: f"meaning: ROBUST_CHANNEL_GPU_ECC_DBE, 'ECC Error (DBE Error)', {_NVERROR_H}; 'an uncorrectable ECC "
        f"error has occurred', {_MEMORY_ERRORS}; 'a DBE has occurred', {_PAGE_RETIREMENT}; "
        f"{_action('WORKFLOW_XID_48', True)}",
    49: f"meaning: 'Power State Locked', {_NVERROR_H} (the mapping's mnemonic: "
        f"SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    50: f"meaning: 'Power State Event (RC Error)', {_NVERROR_H} (the mapping's mnemonic: "
        f"SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    51: f"meaning: 'Power State Event (Stress Test Error)', {_NVERROR_H} (the mapping's mnemonic: "
        f"SILENT_RUNNING_STRESS_TEST_FAILURE); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    52: f"meaning: 'Power State Event (Thermal Event 1)', {_NVERROR_H} (the mapping's mnemonic: "
        f"SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    53: f"meaning: 'Power State Event (Thermal Event 2)', {_NVERROR_H} (the mapping's mnemonic: "
        f"SILENT_RUNNING_TEMP_REDUCED_CLOCKING); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    54: f"meaning: 'Power State Event (Power Event)', {_NVERROR_H} (the mapping's mnemonic: "
        f"SILENT_RUNNING_PWR_REDUCED_CLOCKING); {_action('CHECK_MECHANICALS', True)}",
    55: f"meaning: 'Power State Event (Thermal Event 3)', {_NVERROR_H} (the mapping's mnemonic: "
        f"SILENT_RUNNING_TEMPERATURE_READ_ERROR); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    56: f"meaning: 'Display Engine Error (EVO Error)', {_NVERROR_H} (the mapping's mnemonic: "
        f"DISPLAY_CHANNEL_EXCEPTION); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    57: f"meaning: 'FB Interface Error (FBPA Error 1)', {_NVERROR_H} (the mapping's mnemonic: "
        f"FB_LINK_TRAINING_FAILURE_ERROR); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    58: f"meaning: 'FB Interface Error (FBPA Error 2)', {_NVERROR_H} (the mapping's mnemonic: FB_MEMORY_ERROR); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    59: f"meaning: 'PMU error', PMU_ERROR, {_NVERROR_H}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    61: f"meaning only: PMU_BREAKPOINT, 'PMU Breakpoint (non-fatal)', {_NVERROR_H}; the action is not one of the "
        f"catalog's buckets in NVIDIA's text: UNEXPECTED_ERR_REPORT_ISSUE, FATAL, {_NVSENTINEL}",
    62: f"meaning: PMU_HALT_ERROR, 'PMU Halt Error', {_NVERROR_H}; {_action('RESET_GPU', True)}",
    63: f"meaning: INFOROM_DRAM_RETIREMENT_EVENT / INFOROM_PAGE_RETIREMENT_EVENT, {_NVERROR_H}; successful "
        f"recording of a row-remapping entry to the InfoROM ({_MEMORY_ERRORS}); a page successfully retired "
        f"({_PAGE_RETIREMENT}); {_action('IGNORE', False)}",
    64: f"meaning: INFOROM_DRAM_RETIREMENT_FAILURE / INFOROM_PAGE_RETIREMENT_FAILURE, {_NVERROR_H}; a failure "
        f"recording a row-remapping entry ({_MEMORY_ERRORS}); a page failed retirement ({_PAGE_RETIREMENT}); "
        f"{_action('RESET_GPU', True)}",
    65: f"meaning: 'Video Engine Error (NVENC1 Error)', ROBUST_CHANNEL_NVENC1_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    68: f"meaning: ROBUST_CHANNEL_NVDEC0_ERROR, 'Video Engine Error (NVDEC0 Error)', {_NVERROR_H}; 'Video "
        f"processor exception', {_SKIPPED}; {_action('RESTART_APP', False)}",
    73: f"meaning: 'Video Engine Error (NVENC2 Error)', ROBUST_CHANNEL_NVENC2_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    74: f"meaning: NVLINK_ERROR, 'NVLink Error', {_NVERROR_H}; {_action('WORKFLOW_NVLINK_ERR', True)}",
    78: f"meaning: 'vGPU device cannot be started', VGPU_START_ERROR, {_NVERROR_H}; {_action('UPDATE_SWFW', True)}",
    79: f"meaning: ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS, 'GPU has fallen off the bus', {_NVERROR_H}; "
        f"'GPU fallen off the bus (Xid 79)', {_OPERATIONAL_EVENTS}; {_action('RESTART_BM', True)}",
    81: f"meaning: 'VGA Subsystem Error', ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    87: f"meaning: 'NvTelemetry Driver Reoprt', NVTELEMETRY_DRIVER_REPORT, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    90: f"meaning: 'FB Interface Error (FBPA Error 3)', LTC_ERROR, {_NVERROR_H}; "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    91: f"meaning: 'Reserved Xid', RESERVED_XID, {_NVERROR_H}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    92: f"meaning: EXCESSIVE_SBE_INTERRUPTS, 'Excessive SBE interrupts', {_NVERROR_H}; "
        f"{_action('IGNORE', False)}",
    94: f"meaning: ROBUST_CHANNEL_CONTAINED_ERROR, 'Contained error', {_NVERROR_H}; 'a contained ECC error has "
        f"occurred', {_MEMORY_ERRORS}; {_action('RESTART_APP', False)}",
    95: f"meaning: ROBUST_CHANNEL_UNCONTAINED_ERROR, 'Uncontained error', {_NVERROR_H}; 'an uncontained ECC "
        f"error has occurred', {_MEMORY_ERRORS}; {_action('RESET_GPU', True)}",
    108: f"meaning: NVLINK_REMOTE_TRANSLATION_ERROR, {_NVERROR_H_595} (the mapping's mnemonic: "
        f"DESTINATION_FLA_TRANSLATION_ERROR); {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    # NVIDIA's sources disagree on 109: the mapping says RESET_GPU/FATAL (NVIDIA/k8s-device-plugin#1974 quotes the
    # catalog's immediate action for it as RESET_GPU too), the device plugin's hard-coded skip list ('FIXME:
    # formalize the full list') calls it an application error, and #1974 (open) asks the plugin to follow the
    # catalog. The mapping is NVIDIA's per-XID statement, so 109 fences: a wrong fence costs a reviewed change, a
    # missed one puts new work on a GPU whose context switching timed out.
    109: f"meaning: ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR, the mnemonic in {_NVSENTINEL} (nverror.h defines no "
         f"109); 'Context Switch Timeout Error', yet {_SKIPPED} (NVIDIA/k8s-device-plugin#1974 asks to follow the "
         f"catalog); {_action('RESET_GPU', True)}",
    110: f"meaning: SEC_FAULT_ERROR, {_NVERROR_H_595}; {_action('RESET_GPU', True)}",
    111: f"meaning: BUNDLE_ERROR_EVENT, the mnemonic in {_NVSENTINEL} (nverror.h defines no 111); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    112: f"meaning: DISP_SUPERVISOR_ERROR, the mnemonic in {_NVSENTINEL} (nverror.h defines no 112); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    113: f"meaning: DP_LT_FAILURE, the mnemonic in {_NVSENTINEL} (nverror.h defines no 113); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    114: f"meaning: HEAD_RG_UNDERFLOW, the mnemonic in {_NVSENTINEL} (nverror.h defines no 114); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    115: f"meaning: CORE_CHANNEL_REGS, the mnemonic in {_NVSENTINEL} (nverror.h defines no 115); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    116: f"meaning: WINDOW_CHANNEL_REGS, the mnemonic in {_NVSENTINEL} (nverror.h defines no 116); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    117: f"meaning: CURSOR_CHANNEL_REGS, the mnemonic in {_NVSENTINEL} (nverror.h defines no 117); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    118: f"meaning: HEAD_REGS, the mnemonic in {_NVSENTINEL} (nverror.h defines no 118); "
        f"{_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    119: f"meaning: GSP_RPC_TIMEOUT, {_NVERROR_H}; {_action('RESET_GPU', True)}",
    120: f"meaning: GSP_ERROR, {_NVERROR_H}; {_action('RESET_GPU', True)}",
    122: f"meaning: SPI_PMU_RPC_READ_FAIL, {_NVERROR_H_595}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    123: f"meaning: SPI_PMU_RPC_WRITE_FAIL, {_NVERROR_H_595}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    124: f"meaning: SPI_PMU_RPC_ERASE_FAIL, {_NVERROR_H_595}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    125: f"meaning: INFOROM_FS_ERROR, {_NVERROR_H_595}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    136: f"meaning: ALI_TRAINING_FAIL, {_NVERROR_H_595} (the driver logs 'NVLink: Link training failed'); "
         f"{_action('RESET_GPU', True)}",
    138: f"meaning: ROBUST_CHANNEL_DLA_ERROR, {_NVERROR_H_595}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    140: f"meaning: UNRECOVERABLE_ECC_ERROR_ESCAPE, {_NVERROR_H_595} (the driver logs 'An uncorrectable ECC "
         f"error detected (possible firmware handling failure)'); {_action('RESET_GPU', True)}",
    142: f"meaning: ROBUST_CHANNEL_NVENC3_ERROR, {_NVERROR_H_595}; {_action('UNEXPECTED_ERR_REPORT_ISSUE', True)}",
    143: f"meaning: GPU_INIT_ERROR, {_NVERROR_H_595}; {_action('RESET_GPU', True)}",
    144: f"meaning: NVLINK_SAW_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    145: f"meaning: NVLINK_RLW_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    146: f"meaning: NVLINK_TLW_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    147: f"meaning: NVLINK_TREX_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    148: f"meaning: NVLINK_NVLPW_CTRL_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    149: f"meaning: NVLINK_NETIR_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    150: f"meaning: NVLINK_MSE_ERROR, {_NVERROR_H_595}; {_action('WORKFLOW_NVLINK5_ERR', True)}",
    151: f"meaning: ROBUST_CHANNEL_KEY_ROTATION_ERROR, {_NVERROR_H_595}; {_action('RESTART_VM', True)}",
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
    if found is None:
        return f"XID {code}: not in gpuadmin's table: see NVIDIA's XID catalog"
    return f"XID {code}: {found.meaning}"


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
