"""The console's forms share the inventory's bounded number types (issue 18, point 4): what an operator types
in a form is refused as a change file's numbers are, naming the field, before anything is planned."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpuadmin.model.diagnostics import InputError
from gpuadmin.service import Service
from gpuadmin.tui.screens.form import Field, read_value

JOB = {"op": "submit-job", "job": {"name": "j", "queue": "research", "request": {"gpus": 1}}}


@pytest.mark.parametrize(("typed", "kind"), [("inf", "float"), ("nan", "float"), ("1e999", "float"),
                                             ("-inf", "float")])
def test_a_non_finite_number_typed_in_a_form_is_refused_at_its_field(typed: str, kind: Any) -> None:
    value = read_value(Field("cpus", "CPUs per node", kind, required=False), typed)
    assert not math.isfinite(value)  # the form reads it as typed; the change's bounded type refuses it
    item = {**JOB, "job": {**JOB["job"], "request": {"gpus": 1, "cpus": value}}}
    with pytest.raises(InputError) as refused:
        Service.build_changes([item])
    assert any("job.request.cpus" in d.message and "finite number" in d.message for d in refused.value.diagnostics)


@pytest.mark.parametrize(("item", "field"), [
    ({"op": "set-time-slicing", "node": "n", "gpu": 0, "replicas": 10**6}, "replicas"),
    ({"op": "set-mode", "node": "n", "gpu": 10**20, "mode": "full"}, "gpu"),
    ({"op": "set-quota", "queue": "q", "priority": 2**31}, "priority"),
    ({"op": "set-sharing", "node": "n", "fractions": "dynamic", "reserved_gib": math.inf}, "reserved_gib"),
])
def test_a_number_past_its_bound_in_a_form_is_refused_at_its_field(item: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as refused:
        Service.build_changes([item])
    assert any(d.message.startswith(f"0.{item['op']}.{field}:") for d in refused.value.diagnostics), refused.value
