"""Child processes for the store tests (run as `python -m tests.store_db.driver COMMAND ...` from the repo).

apply STATE N            commit edit_for(k) for the next N revisions, printing `ok REV` after each
worker STATE WID N       N successful lock+stale-checked commits on a shared state; prints a JSON summary
hold STATE COMMAND       take the write lock, print `held`, and sleep until killed
record STATE             journal one refused attempt as this process; print the entry as JSON
whoami                   print login_identity() as JSON
create STATE JOBS        Store.create a state with that many extra jobs (for kill-during-create)
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from pathlib import Path

from gpuadmin.engine.state import View
from gpuadmin.model import Job, Request, Resources
from gpuadmin.store import JournalEntry, LockHeld, StaleRevision, Store, login_identity
from tests.store_db.scenario import base_inventory, edit_for


def apply(state: Path, count: int) -> None:
    store = Store.open(state)
    me = login_identity()
    current = store.load()
    print("ready", current.revision, flush=True)
    for _ in range(count):
        k = current.revision + 1
        view = edit_for(current, k)
        entry = JournalEntry.new(f"driver apply {k}", current.revision, actor=me, plan={"k": k})
        new = store.commit(current.revision, view, entry)
        current.commit(view)
        assert new == current.revision == k
        print("ok", new, flush=True)


def worker(state: Path, wid: int, count: int) -> None:
    store = Store.open(state)
    me = login_identity()
    rng = random.Random(wid)
    done = stale = locked = attempts = 0
    while done < count:
        attempts += 1
        if attempts > count * 200:
            raise SystemExit(f"worker {wid}: gave up after {attempts} attempts")
        base = store.load()
        view = View(base)
        counter = base.queues["counter"]
        view.put_queue(
            "counter", counter.model_copy(update={"quota": Resources(gpus=(counter.quota.gpus or 0) + 1)})
        )
        name = f"w{wid}-{done}"
        view.put_job(name, Job(name=name, queue="q0", request=Request(gpus=1)))
        command = f"worker {wid} commit {done}"
        time.sleep(rng.random() * 0.002)  # the plan→apply gap in which others may commit
        try:
            with store.write_lock(me, f"worker {wid}"):
                store.commit(base.revision, view, JournalEntry.new(command, base.revision, actor=me))
            done += 1
        except LockHeld as exc:
            locked += 1
            store.record(
                JournalEntry.new(command, base.revision, outcome="lock-held", message=str(exc), actor=me)
            )
        except StaleRevision as exc:
            stale += 1
            store.record(
                JournalEntry.new(command, base.revision, outcome="stale", message=str(exc), actor=me)
            )
    print(json.dumps({"wid": wid, "done": done, "stale": stale, "locked": locked, "attempts": attempts}))


def hold(state: Path, command: str) -> None:
    store = Store.open(state)
    with store.write_lock(login_identity(), command):
        print("held", flush=True)
        time.sleep(3600)


def record(state: Path) -> None:
    store = Store.open(state)
    entry = JournalEntry.new("driver record", store.revision(), verdict="refused", outcome="refused")
    store.record(entry)
    print(json.dumps(dataclasses.asdict(entry)))


def whoami() -> None:
    print(json.dumps(dataclasses.asdict(login_identity())))


def create(state: Path, jobs: int) -> None:
    inv = base_inventory("created")
    extra = [Job(name=f"bulk{i}", queue="q0", request=Request(gpus=1)) for i in range(jobs)]
    inv = inv.model_copy(update={"jobs": inv.jobs + extra})
    print("ready", flush=True)
    Store.create(state, inv).close()
    print("created", flush=True)


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "apply":
        apply(Path(args[0]), int(args[1]))
    elif command == "worker":
        worker(Path(args[0]), int(args[1]), int(args[2]))
    elif command == "hold":
        hold(Path(args[0]), args[1])
    elif command == "record":
        record(Path(args[0]))
    elif command == "whoami":
        whoami()
    elif command == "create":
        create(Path(args[0]), int(args[1]))
    else:
        raise SystemExit(f"unknown driver command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
