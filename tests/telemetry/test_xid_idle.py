"""Issue 23: XID/ECC health findings and idle allocations (pure functions)."""

from __future__ import annotations

import random
import re

import pytest

from gpuadmin.engine import changes as ch
from gpuadmin.model.telemetry import DeviceTelemetry, Reading
from gpuadmin.render.telemetry import health_cell
from gpuadmin.telemetry.idle import Holding, Sample, idle_holdings, wasted_per_queue
from gpuadmin.telemetry.xid import CATALOG, CHECKED, GpuReading, LastSeen, findings, uncertain, unlisted

# NVSentinel's mapping (distros/kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv @6f8b0fcf),
# every line it marks FATAL (those whose action is RESET_GPU, RESTART_BM or a workflow among them; no line says
# CONTACT_SUPPORT), as read on 2026-12-04: code -> action. gpuadmin's table must hold and flag each.
_UNEXPECTED = (1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28, 29, 30, 33, 34, 35,
               36, 42, 47, 49, 50, 51, 52, 53, 55, 56, 57, 58, 59, 61, 65, 73, 81, 87, 90, 91, 108, 111, 112, 113, 114,
               115, 116, 117, 118, 122, 123, 124, 125, 138, 142)
MAPPING_FATAL_LINES = {
    **{code: "UNEXPECTED_ERR_REPORT_ISSUE" for code in _UNEXPECTED},
    46: "RESET_GPU", 48: "WORKFLOW_XID_48", 54: "CHECK_MECHANICALS", 62: "RESET_GPU", 64: "RESET_GPU",
    74: "WORKFLOW_NVLINK_ERR", 78: "UPDATE_SWFW", 79: "RESTART_BM", 95: "RESET_GPU", 109: "RESET_GPU",
    110: "RESET_GPU", 119: "RESET_GPU", 120: "RESET_GPU", 136: "RESET_GPU", 140: "RESET_GPU", 143: "RESET_GPU",
    **{code: "WORKFLOW_NVLINK5_ERR" for code in range(144, 151)},
    151: "RESTART_VM", 155: "RESET_GPU", 156: "RESET_GPU", 158: "RESET_GPU", 160: "RESTART_BM", 162: "RESET_GPU",
}
FLAGGING = set(MAPPING_FATAL_LINES)


@pytest.mark.parametrize("code", sorted(CATALOG))
def test_every_xid_flags_as_the_catalog_says(code: int) -> None:
    found = findings([GpuReading("n", 0, xids=(code,))])
    assert bool(found) == (code in FLAGGING)
    if found:
        assert found[0].reason.startswith(f"XID {code}: ")
        ch.CHANGE_LIST.validate_python([found[0].remedy])  # the remedy is a valid set-gpu-health change


def test_only_new_xids_and_grown_dbe_counts_flag_and_fenced_gpus_are_not_flagged_again() -> None:
    reading = GpuReading("n", 1, xids=(79,), dbe_volatile=2)
    assert findings([reading], {("n", 1): LastSeen(xids=1, dbe_volatile=2)}) == []
    grown = findings([reading], {("n", 1): LastSeen(xids=1, dbe_volatile=1)})
    assert [f.reason for f in grown] == ["DBE: 1 new volatile double-bit ECC error (2 since driver load)"]
    assert findings([reading], fenced=frozenset({("n", 1)})) == []
    # application errors NVIDIA's k8s-device-plugin skips (13, 31, 43, 45), and 63, whose action is IGNORE
    assert findings([GpuReading("n", 2, xids=(13, 31, 43, 45, 63))]) == []
    assert findings([GpuReading("n", 3, dbe_volatile=None)]) == []  # unknown is not zero


def _reference(holdings: list[Holding], history: dict, now: float, below: float, minutes: float) -> set[str]:
    """Brute force: minute by minute back from now, the holding is idle while every slice's samples in
    (t, now] are all under `below` and each slice has a sample at or before t."""
    out = set()
    for h in holdings:
        t = now - minutes * 60
        ok = all(history.get(k) and min(s.at for s in history[k]) <= t
                 and all(s.util < below for s in history[k] if s.at > t) for k, _ in h.slices)
        if ok:
            out.add(h.name)
    return out


def test_idle_holdings_match_a_brute_force_reference() -> None:
    rng = random.Random(23)
    for _ in range(300):
        now = 10_000.0
        holdings, history = [], {}
        for j in range(4):
            keys = [("n", j * 2 + i, None) for i in range(rng.randint(1, 2))]
            holdings.append(Holding("job", f"j{j}", rng.choice(["a", "b"]), "n", tuple((k, 1.0) for k in keys)))
            for k in keys:
                if rng.random() < 0.9:
                    history[k] = [Sample(now - 60 * m, rng.choice([0.0, 1.0, 3.0, 50.0] if rng.random() < 0.3
                                                                  else [0.0, 2.0]))
                                  for m in range(rng.randint(1, 60))]
        below, minutes = 5.0, float(rng.choice([10, 30, 45]))
        got = {i.holding.name for i in idle_holdings(holdings, history, now, below, minutes)}
        assert got == _reference(holdings, history, now, below, minutes)


def test_gpu_hours_per_queue_and_remedies() -> None:
    now = 7200.0
    flat = [Sample(t, 1.0) for t in range(0, 7201, 600)]
    holdings = [Holding("job", "a", "research", "n", ((("n", 0, None), 1.0), (("n", 1, None), 1.0))),
                Holding("job", "b", "prod", "n", ((("n", 2, 0), 0.5),), preemptible=False),
                Holding("vm", "vm1", None, "esx", ((("esx", 0, None), 1.0),))]
    history = {key: flat for h in holdings for key, _ in h.slices}
    idle = idle_holdings(holdings, history, now)
    assert [i.holding.name for i in idle] == ["a", "vm1", "b"]
    assert wasted_per_queue(idle) == {"-": 2.0, "prod": 1.0, "research": 4.0}
    assert [i.remedy[0]["op"] for i in idle] == ["preempt-job", "detach-vm", "cancel-job"]


_CATALOG_PAGE = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
_MEMORY = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/user-visible-statistics.html"
_RETIREMENT = "https://docs.nvidia.com/deploy/dynamic-page-retirement/visibility.html"
_EVENTS = "https://docs.nvidia.com/deploy/gpu-operational-events/latest/release-notes.html"
_NVSENTINEL = "NVIDIA/NVSentinel distros/kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv"
_NVERROR_H = "NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/nverror.h"
_DEVICE_PLUGIN = "NVIDIA/k8s-device-plugin internal/rm/health.go"
_NVERROR_H_595 = f"{_NVERROR_H} @df1c9a3de2be4b130f4fc7680f7198193d8ac6ad"  # the driver's 595.45.04 names
# Each checked row's NVIDIA sources, as the check of 2026-12-04 read them (docs/telemetry.md's table)
SOURCES = {
    13: (_CATALOG_PAGE, _NVSENTINEL, _DEVICE_PLUGIN), 31: (_NVERROR_H, _DEVICE_PLUGIN, _NVSENTINEL),
    43: (_NVERROR_H, _DEVICE_PLUGIN, _NVSENTINEL), 45: (_NVERROR_H, _DEVICE_PLUGIN, _NVSENTINEL),
    48: (_NVERROR_H, _MEMORY, _RETIREMENT, _NVSENTINEL), 61: (_NVERROR_H, _NVSENTINEL), 62: (_NVERROR_H, _NVSENTINEL),
    63: (_NVERROR_H, _MEMORY, _RETIREMENT, _NVSENTINEL), 64: (_NVERROR_H, _MEMORY, _RETIREMENT, _NVSENTINEL),
    74: (_NVERROR_H, _NVSENTINEL), 79: (_NVERROR_H, _EVENTS, _NVSENTINEL), 92: (_NVERROR_H, _NVSENTINEL),
    94: (_NVERROR_H, _MEMORY, _NVSENTINEL), 95: (_NVERROR_H, _MEMORY, _NVSENTINEL),
    119: (_NVERROR_H, _NVSENTINEL), 120: (_NVERROR_H, _NVSENTINEL),
    # the rows added so that every reset, reboot and FATAL-workflow line of NVSentinel's mapping is in the table
    # (names from nverror.h, 110 and up from its 595.45.04 snapshot; 46 and 109 only from the mapping's mnemonic)
    68: (_NVERROR_H, _DEVICE_PLUGIN, _NVSENTINEL), 46: (_NVSENTINEL,),
    109: (_NVSENTINEL, _DEVICE_PLUGIN, "NVIDIA/k8s-device-plugin#1974"),
    **{code: (_NVERROR_H_595, _NVSENTINEL)
       for code in (108, 110, 122, 123, 124, 125, 136, 138, 140, 142, 143, *range(144, 152), 155, 156, 158, 160, 162)},
    # ...and the other FATAL lines of the mapping (UNEXPECTED_ERR_REPORT_ISSUE, CHECK_MECHANICALS, UPDATE_SWFW)
    **{code: (_NVERROR_H, _NVSENTINEL, _CATALOG_PAGE) for code in range(1, 8)},
    **{code: (_NVERROR_H, _NVSENTINEL) for code in (9, 10, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28, 29,
                                                   30, 33, 34, 35, 36, 42, 47, 49, 50, 51, 52, 53, 54, 55, 56, 57,
                                                   58, 59, 65, 73, 78, 81, 87, 90, 91)},
    **{code: (_NVSENTINEL,) for code in range(111, 119)},
}


def test_each_row_is_checked_with_its_sources_and_only_61s_action_is_uncertain() -> None:
    """Every row names the NVIDIA text it was checked against; all but 61 are checked whole (61: NVIDIA's
    mapping gives no bucket for it), and an absent code is uncertain in both."""
    assert set(CHECKED) == set(CATALOG) == set(SOURCES)
    for code, sources in SOURCES.items():
        for source in sources:
            assert source in CHECKED[code], (code, source)
    assert {c for c in CATALOG if uncertain(c) is None} == set(CATALOG) - {61}
    assert uncertain(61) == "action" and uncertain(999) == "meaning and action"


@pytest.mark.parametrize("code", sorted(set(CATALOG) - {61}))
def test_each_rows_action_and_fence_are_what_nvidias_mapping_says(code: int) -> None:
    """The action recorded from NVSentinel's mapping is the row's action, and FATAL there is a fence here."""
    found = re.search(r"action: (\w+), (FATAL|NONFATAL), NVIDIA/NVSentinel", CHECKED[code])
    assert found is not None, code
    assert (CATALOG[code].action, CATALOG[code].flags) == (found[1], found[2] == "FATAL")


def test_every_fatal_line_of_nvidias_mapping_is_in_the_table_and_flags() -> None:
    """A GPU with an XID NVIDIA's mapping marks FATAL (a reset, a reboot, a workflow, or an unexpected error to
    report) is flagged; one missing from the table would go unflagged on a real cluster."""
    for code, action in MAPPING_FATAL_LINES.items():
        assert code in CATALOG and CATALOG[code].flags, code
        assert f"{action}, FATAL, NVIDIA/NVSentinel" in CHECKED[code], code
        # 61: the table keeps the catalog's CONTACT_SUPPORT (uncertain: the mapping gives no bucket)
        assert CATALOG[code].action == action or code == 61, code
    assert {c for c, x in CATALOG.items() if x.flags} == FLAGGING


def test_a_newly_listed_reset_xid_flags_and_a_non_fatal_one_does_not() -> None:
    found = findings([GpuReading("n", 0, xids=(158,)), GpuReading("n", 1, xids=(68,)),
                      GpuReading("n", 2, xids=(109,)), GpuReading("n", 3, xids=(8,)), GpuReading("n", 4, xids=(58,))])
    assert [(f.gpu, f.reason, f.action) for f in found] == [
        (0, "XID 158: GPU fatal timeout", "RESET_GPU"), (2, "XID 109: Context switch timeout", "RESET_GPU"),
        (4, "XID 58: FB Interface Error (FBPA Error 2)", "UNEXPECTED_ERR_REPORT_ISSUE")]


def test_109_fences_by_nvidias_catalog_mapping_and_records_the_device_plugins_dissent() -> None:
    """NVIDIA's sources disagree on 109 (docs/telemetry.md): the mapping's RESET_GPU/FATAL decides; the device
    plugin's skip and the issue asking it to follow the catalog stay in the row's record."""
    assert CATALOG[109].flags and CATALOG[109].action == "RESET_GPU"
    assert "skipped as an application error" in CHECKED[109] and "#1974" in CHECKED[109]


def _gpu(xid: float | None) -> DeviceTelemetry:
    return DeviceTelemetry("n", 0, xid=Reading(xid, None if xid is not None else "not read"))


def test_an_xid_outside_the_table_is_shown_by_its_code_never_as_ok_and_not_flagged() -> None:
    """XID 8 (NVIDIA's mapping: RESTART_APP, NONFATAL) is not in gpuadmin's table: the GPU's health says so."""
    assert 8 not in CATALOG
    said = unlisted(_gpu(8))
    assert said == "XID 8: not in gpuadmin's table: see NVIDIA's XID catalog"
    assert health_cell(False, said, _gpu(8)) == said
    assert findings([GpuReading("n", 0, xids=(8,))]) == []
    assert unlisted(_gpu(79)) is None and unlisted(_gpu(13)) is None  # listed: a finding or `ok`
    assert unlisted(_gpu(0)) is None and unlisted(_gpu(None)) is None  # none since the driver loaded; unknown
