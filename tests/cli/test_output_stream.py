"""The streamed JSON and YAML listings are byte for byte what one dump of the whole document gives."""

from __future__ import annotations

import io
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadmin.cli import output

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3), max_leaves=10)
ITEMS = st.lists(st.dictionaries(st.text(min_size=1, max_size=6), VALUES, max_size=4), max_size=4)


@settings(max_examples=150, deadline=None)
@given(items=ITEMS, revision=st.integers(min_value=0))
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
