"""4 real processes × 100 commits on one state, through the write lock and the stale check."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from gpuadmin.store import Identity, Store

from ._proc import REPO, child_env, driver_cmd
from .scenario import base_inventory

ME = Identity("tester", 4242, "uid")
WORKERS = 4
COMMITS = 100


def test_no_lost_update_and_every_refusal_names_its_cause(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    Store.create(state_dir, base_inventory(), actor=ME).close()
    procs = [
        subprocess.Popen(
            driver_cmd("worker", state_dir, wid, COMMITS),
            cwd=REPO,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for wid in range(WORKERS)
    ]
    pids = {p.pid for p in procs}
    summaries = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        summaries.append(json.loads(out))
    assert sum(s["done"] for s in summaries) == WORKERS * COMMITS

    with Store.open(state_dir) as store:
        state = store.load()
        # no lost update: the read-modify-write counter saw every commit, and every commit's job is there
        assert state.queues["counter"].quota.gpus == WORKERS * COMMITS
        for wid in range(WORKERS):
            for i in range(COMMITS):
                assert f"w{wid}-{i}" in state.jobs
        assert state.revision == WORKERS * COMMITS
        assert store.verify() == []

        journal = store.journal()
        applied = [e for e in journal if e.outcome == "applied"]
        assert [e.revision for e in applied] == list(
            range(WORKERS * COMMITS + 1)
        )  # strictly increasing by id
        assert all(e.base_revision == (e.revision or 0) - 1 for e in applied[1:])

        refusals = [e for e in journal if e.outcome != "applied"]
        lock_held = [e for e in refusals if e.outcome == "lock-held"]
        stale = [e for e in refusals if e.outcome == "stale"]
        assert len(refusals) == len(lock_held) + len(stale)
        assert len(lock_held) == sum(s["locked"] for s in summaries)
        assert len(stale) == sum(s["stale"] for s in summaries)
        assert refusals, "four processes hammering one state never collided"
        holder = re.compile(r"state is locked by \S+ \(pid (\d+) on \S+, worker \d, since \d\d:\d\d:\d\d(\.\d+)?Z\)")
        for e in lock_held:
            m = holder.fullmatch(e.message)
            assert m, e.message
            assert int(m.group(1)) in pids
        for e in stale:
            m = re.search(r"made on revision (\d+), but the state is now at revision (\d+)", e.message)
            assert m, e.message
            assert int(m.group(1)) == e.base_revision < int(m.group(2))
