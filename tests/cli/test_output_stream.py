"""The streamed JSON and YAML listings are byte for byte what one dump of the whole document gives; both formats
escape what a terminal would act on and read back to the values they were given."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuadmin.cli import output

# JSON output refuses nan and ±inf (test_json_output_never_prints_a_non_finite_number)
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3), max_leaves=10)
ITEMS = st.lists(st.dictionaries(st.text(min_size=1, max_size=6), VALUES, max_size=4), max_size=4)


@settings(max_examples=150, deadline=None)
@given(items=ITEMS, revision=st.integers(min_value=0))
@example(items=[{"\n": None}, {}], revision=0)  # a key written `|+` leaves the YAML document open to its end
def test_streamed_listings_equal_whole_dumps(items: list[dict[str, Any]], revision: int) -> None:
    head = {"kind": "job-list", "revision": revision}
    whole, streamed = io.StringIO(), io.StringIO()
    output.as_json({**head, "items": items}, whole)
    output.json_list(head, "items", iter(items), streamed)
    assert streamed.getvalue() == whole.getvalue()
    whole, streamed = io.StringIO(), io.StringIO()
    output.as_yaml({**head, "items": items}, whole)
    output.yaml_list(head, "items", iter(items), streamed)
    assert streamed.getvalue() == whole.getvalue()


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, {"quota_gib": math.inf}, {math.inf: 1}, [math.nan]])
def test_json_output_never_prints_a_non_finite_number(value: Any) -> None:
    for write in (output.as_json, lambda data, out: output.json_list({}, "items", [data], out)):
        out = io.StringIO()
        with pytest.raises(ValueError, match="not JSON compliant"):
            write(value, out)
        assert "Infinity" not in out.getvalue() and "NaN" not in out.getvalue()
