"""No non-finite number is ever stored in a state row (issue 18, point 4).

A queue quota of `.inf` was once stored as `null`: the row no longer validated and every later command on the
state exited 2 until `init --force`. The bounded types refuse such numbers on input; the store refuses a model
that holds one anyway (built with `model_copy`, which skips validation), and writes nothing.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpuadmin.engine.state import View
from gpuadmin.model import Queue, Resources
from gpuadmin.model.diagnostics import InputError
from gpuadmin.store import Identity, JournalEntry, Store

from .scenario import base_inventory

ME = Identity("tester", 4242, "uid")


@pytest.mark.parametrize("update", [
    {"over_quota_weight": math.inf},
    {"over_quota_weight": math.nan},
    {"quota": Resources(gpus=1).model_copy(update={"gpu_memory_gib": -math.inf})},
])
def test_a_non_finite_number_is_refused_and_nothing_is_written(tmp_path: Path, update: dict[str, object]) -> None:
    store = Store.create(tmp_path / "state", base_inventory(), actor=ME)
    state = store.load()
    queue = next(iter(state.queues.values()))
    view = View(state)
    view.put_queue(queue.name, queue.model_copy(update=update))
    with pytest.raises(InputError, match="holds a number that is not finite; nothing was written"):
        store.commit(0, view, JournalEntry.new("set-quota", 0, actor=ME, plan={"changes": []}))
    reread = Store.open(tmp_path / "state").load()
    assert reread.revision == 0
    assert reread.queues == state.queues


def test_text_that_spells_a_non_finite_number_is_stored_as_text(tmp_path: Path) -> None:
    """The exact check behind the cheap one: `Infinity` and `NaN` inside strings are names, not numbers."""
    store = Store.create(tmp_path / "state", base_inventory(), actor=ME)
    state = store.load()
    view = View(state)
    view.put_queue("NaN-Infinity", Queue(name="NaN-Infinity", over_quota_weight=2.5))
    assert store.commit(0, view, JournalEntry.new("add-queue", 0, actor=ME, plan={"changes": []})) == 1
    assert Store.open(tmp_path / "state").load().queues["NaN-Infinity"] == Queue(name="NaN-Infinity",
                                                                                over_quota_weight=2.5)
