"""The real `gpuadmin` process on a real state directory: exit codes, stdout/stderr, roles, stale plans, locks."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.clikit import ROOT, SAMPLES, gpuadmin, hold_lock

REPARTITION = ROOT / "docs/examples/repartition.yaml"


def journal(state: Path) -> list[dict[str, object]]:
    result = gpuadmin("--state", state, "get", "journal", "-o", "json")
    assert result.code == 0, result.err
    items: list[dict[str, object]] = json.loads(result.out)["items"]
    return items


def state_bytes(state: Path) -> bytes:
    """The state's logical content (a dump of every table), independent of WAL checkpoints."""
    conn = sqlite3.connect(state / "state.db")
    try:
        return "\n".join(conn.iterdump()).encode()
    finally:
        conn.close()


def test_apply_journal_undo_round_trip(state: Path) -> None:
    before = gpuadmin("--state", state, "get", "gpus", "gpu-h100-12/3", "-o", "json")
    applied = gpuadmin("--state", state, "apply", "-f", REPARTITION, "--yes", "-o", "json")
    assert applied.code == 0, applied.err
    assert json.loads(applied.out)["allowed"] is True
    assert "applied, revision 1" in applied.err
    after = json.loads(gpuadmin("--state", state, "get", "gpus", "gpu-h100-12/3", "-o", "json").out)
    assert after["items"][0]["layout"] == "3g.40gb@4 4g.40gb@0"
    entries = journal(state)
    assert [e["outcome"] for e in entries] == ["applied", "applied"]
    assert entries[-1]["revision"] == 1 and entries[-1]["changes"] == "set-mig"

    undone = gpuadmin("--state", state, "undo", "--yes")
    assert undone.code == 0, undone.err
    again = gpuadmin("--state", state, "get", "gpus", "gpu-h100-12/3", "-o", "json")
    assert json.loads(again.out)["items"] == json.loads(before.out)["items"]
    assert json.loads(again.out)["revision"] == 2


def test_refused_plan_exit_1_and_journaled_without_change(state: Path) -> None:
    before = state_bytes(state)
    refused = gpuadmin("--state", state, "apply", "-f", ROOT / "tests/cli/fixtures/refused.yaml", "--yes")
    assert refused.code == 1
    assert "[mig.layout-fits]" in refused.err and "[mig.placement-start]" in refused.err
    entries = journal(state)
    assert entries[-1]["outcome"] == "refused" and entries[-1]["verdict"] == "refused"
    after = state_bytes(state)
    assert after != before, "the refused attempt is journaled"
    # only the journal table grew: every state table is byte-identical
    strip = [line for line in after.decode().splitlines() if "INTO \"journal\"" not in line]
    keep = [line for line in before.decode().splitlines() if "INTO \"journal\"" not in line]
    assert strip == keep


def test_viewer_refused_before_any_write(state: Path) -> None:
    before = state_bytes(state)
    lock = state / "lock"
    lock_before = lock.read_bytes() if lock.exists() else None
    for args in (["apply", "-f", REPARTITION, "--yes"], ["undo", "--yes"]):
        denied = gpuadmin("--state", state, "--as-role", "viewer", *args)
        assert denied.code == 4, denied.err
        assert "not permitted" in denied.err
    assert state_bytes(state) == before, "a viewer's attempt must not even be journaled"
    assert (lock.read_bytes() if lock.exists() else None) == lock_before
    assert gpuadmin("--state", state, "--as-role", "viewer", "get", "nodes").code == 0
    assert gpuadmin("--state", state, "--as-role", "viewer", "plan", "-f", REPARTITION).code == 0


def test_stale_saved_plan_exit_3(state: Path, tmp_path: Path) -> None:
    saved = tmp_path / "plan.json"
    assert gpuadmin("--state", state, "plan", "-f", REPARTITION, "--save", saved).code == 0
    cordon = tmp_path / "cordon.yaml"
    cordon.write_text("changes: [{op: cordon, node: gpu-h100-12}]\n", encoding="utf-8")
    assert gpuadmin("--state", state, "apply", "-f", cordon, "--yes").code == 0
    stale = gpuadmin("--state", state, "apply", "--plan", saved, "--yes")
    assert stale.code == 3
    assert "stale plan" in stale.err and "revision 0" in stale.err and "revision 1" in stale.err


def test_saved_plan_applies_when_current(state: Path, tmp_path: Path) -> None:
    saved = tmp_path / "plan.json"
    assert gpuadmin("--state", state, "plan", "-f", REPARTITION, "--save", saved).code == 0
    applied = gpuadmin("--state", state, "apply", "--plan", saved, "--yes")
    assert applied.code == 0, applied.err


def test_lock_held_exit_3_names_holder(state: Path) -> None:
    holder = hold_lock(state, "gpuadmin apply -f big.yaml", 30)
    try:
        blocked = gpuadmin("--state", state, "apply", "-f", REPARTITION, "--yes")
        assert blocked.code == 3
        assert f"pid {holder.pid}" in blocked.err and "gpuadmin apply -f big.yaml" in blocked.err
        assert journal(state)[-1]["outcome"] == "lock-held"
    finally:
        holder.kill()
        holder.wait()


def test_stdout_is_data_only(state: Path) -> None:
    result = gpuadmin("--state", state, "get", "nodes", "-o", "json")
    assert result.err == ""
    assert len(json.loads(result.out)["items"]) == 12


def test_missing_state_is_exit_2(tmp_path: Path) -> None:
    result = gpuadmin("--state", tmp_path / "absent", "get", "nodes")
    assert result.code == 2 and "init" in result.err


def test_apply_needs_yes_without_a_terminal(state: Path) -> None:
    result = gpuadmin("--state", state, "apply", "-f", REPARTITION, stdin="")
    assert result.code == 2 and "--yes" in result.err


def test_usage_errors_are_exit_2() -> None:
    assert gpuadmin("get", "bogus").code == 2
    assert gpuadmin("--inventory", SAMPLES / "oci-h100.yaml", "--state", "/tmp/x", "get", "nodes").code == 2


def test_untrusted_names_are_never_markup_or_escapes(tmp_path: Path) -> None:
    inventory = tmp_path / "evil.yaml"
    inventory.write_text(
        'version: 1\ncluster: "c"\nnodes:\n'
        '  - {name: "[@click=app.quit]x", platform: baremetal, gpus: [{index: 0, model: A10}]}\n'
        '  - {name: "\\e[31mred\\e[0m", platform: baremetal, gpus: [{index: 0, model: A10}]}\n',
        encoding="utf-8")
    result = gpuadmin("--inventory", inventory, "get", "nodes")
    assert result.code == 0, result.err
    assert "[@click=app.quit]x" in result.out
    assert "\x1b" not in result.out and "\\x1b[31mred\\x1b[0m" in result.out


def test_validate_all_samples_ok() -> None:
    result = gpuadmin("validate", *sorted(SAMPLES.glob("*.yaml")))
    assert result.code == 0, result.err
    assert result.out.count(": ok (inventory)") == 3


def test_validate_change_file_and_rule_violation(tmp_path: Path) -> None:
    assert gpuadmin("validate", REPARTITION).out.strip().endswith("ok (changes)")
    bad = tmp_path / "overlap.yaml"
    text = (SAMPLES / "oci-h100.yaml").read_text(encoding="utf-8")
    bad.write_text(text.replace("{profile: 3g.40gb, start: 4}", "{profile: 3g.40gb, start: 2}", 1),
                   encoding="utf-8")
    assert bad.read_text(encoding="utf-8") != text
    result = gpuadmin("validate", bad)
    assert result.code == 1
    assert "[mig.placement-start]" in result.err


def test_concurrent_appliers_lose_with_exit_3(state: Path) -> None:
    """4 processes × 100 applies on one state, through the CLI's own code path (`run`) in each process."""
    worker = ROOT / "tests/cli/apply_worker.py"
    procs = [subprocess.Popen([sys.executable, str(worker), str(state), str(i), "100"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for i in range(4)]
    start = time.monotonic()
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        results.append(json.loads(out))
    assert time.monotonic() - start < 300
    won = sum(r["won"] for r in results)
    assert all(r["bad_losses"] == [] for r in results), [r["bad_losses"] for r in results]
    entries = journal(state)
    applied = [e for e in entries if e["outcome"] == "applied"]
    revisions = [e["revision"] for e in applied]
    assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions), "revisions strictly increase"
    assert len(applied) == won + 1  # + the entry that created the state
    # no lost update: every winner's job is in the final state
    names = set(gpuadmin("--state", state, "get", "jobs", "-o", "name").out.split())
    for r in results:
        for job in r["jobs"]:
            assert f"job/{job}" in names


def test_undo_of_a_cancel_puts_the_job_back_in_its_place(state: Path, tmp_path: Path) -> None:
    """FIFO order survives undo, in the store as in memory, even after earlier removals left gaps."""
    order = gpuadmin("--state", state, "get", "jobs", "-o", "name").out.split()
    first, middle = order[0].removeprefix("job/"), order[5].removeprefix("job/")
    for name in (first, middle):
        cancel = tmp_path / f"cancel-{name}.yaml"
        cancel.write_text(f"changes: [{{op: cancel-job, name: {name}}}]\n", encoding="utf-8")
        assert gpuadmin("--state", state, "apply", "-f", cancel, "--yes").code == 0
    assert gpuadmin("--state", state, "undo", "--yes").code == 0  # restores `middle` only
    after = gpuadmin("--state", state, "get", "jobs", "-o", "name").out.split()
    assert after == [j for j in order if j != f"job/{first}"]
