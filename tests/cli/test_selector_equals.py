"""`render.selector.equals` spells the filter of one value (the overview's drill-downs): parsed back by the same
language, it keeps exactly the rows holding that value — plain words, spaces, `=`, `!`, markup and escape bytes."""

from __future__ import annotations

import pytest

from gpuadmin.render.selector import compile_filter, equals

VALUES = ["cordoned", "partly used", "a=b", "!x", "[@click=app.quit]q", "\x1b[31mred", "H100-SXM5-80GB", "x y z"]


@pytest.mark.parametrize("value", VALUES)
def test_equals_keeps_exactly_the_rows_of_its_value(value: str) -> None:
    rows = [{"QUEUE": other} for other in VALUES]
    keep = compile_filter(equals("queue", value), ["QUEUE"])
    assert [row["QUEUE"] for row in rows if keep(row, {})] == [value]
