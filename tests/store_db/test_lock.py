"""The write lock against a real second process."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
from pathlib import Path

import pytest

from gpuadmin.store import Identity, LockHeld, Store, login_identity

from ._proc import spawn
from .scenario import base_inventory

ME = Identity("tester", 4242, "uid")


def test_a_second_process_holding_the_lock_is_named(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    store = Store.create(state_dir, base_inventory(), actor=ME)
    holder = spawn("hold", state_dir, "gpuadmin apply -f big.yaml")
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockHeld) as info, store.write_lock(ME, "gpuadmin apply"):
            pass
        held = info.value.holder
        assert held is not None and held.pid == holder.pid and held.command == "gpuadmin apply -f big.yaml"
        assert held.actor == login_identity().name
        message = str(info.value)
        assert message.startswith(
            f"state is locked by {held.actor} (pid {holder.pid} on {socket.gethostname()}, gpuadmin apply -f big.yaml"
        )
        assert message.endswith("Z)")
        # a short timeout still gives up while the holder lives
        with pytest.raises(LockHeld), store.write_lock(ME, "again", timeout=0.2):
            pass
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.communicate()
    # the dead holder's info is still in the file, yet it blocks nobody: flock died with the process
    stale = json.loads((state_dir / "lock").read_text())
    assert stale["pid"] == holder.pid
    with store.write_lock(ME, "gpuadmin apply") as mine:
        assert mine.pid == os.getpid()
        assert json.loads((state_dir / "lock").read_text())["pid"] == os.getpid()
    assert (state_dir / "lock").read_text() == ""  # a clean release leaves no holder behind


def test_the_lock_is_not_reentrant_and_is_released(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "s", base_inventory(), actor=ME)
    with (
        store.write_lock(ME, "first"),
        pytest.raises(LockHeld, match=rf"tester \(pid {os.getpid()} on {re.escape(socket.gethostname())}, first,"),
        store.write_lock(ME, "x"),
    ):
        pass
    with store.write_lock(ME, "second"):
        pass


def test_create_takes_the_lock(tmp_path: Path) -> None:
    state_dir = tmp_path / "s"
    state_dir.mkdir()
    from gpuadmin.store.lock import write_lock

    with write_lock(state_dir, ME, "gpuadmin apply"), pytest.raises(LockHeld):
        Store.create(state_dir, base_inventory(), actor=ME)
