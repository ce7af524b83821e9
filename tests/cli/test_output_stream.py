"""The streamed JSON and YAML listings are byte for byte what one dump of the whole document gives; both formats
escape what a terminal would act on and read back to the values they were given."""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any

import pytest
import yaml
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


ODD_SCALARS = SCALARS | st.floats() | st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
ODD_KEYS = st.text(max_size=4) | st.integers() | st.floats() | st.booleans() | st.none()
ODD_VALUES = st.recursive(ODD_SCALARS, lambda inner: st.lists(inner, max_size=3)
                          | st.lists(inner, max_size=2).map(tuple)
                          | st.dictionaries(ODD_KEYS, inner, max_size=3), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(value=ODD_VALUES, pad=st.sampled_from(["", "  ", "    "]))
def test_indented_json_is_json_dumps_indented(value: Any, pad: str) -> None:
    # keys of every kind json accepts, tuples, text with quotes, controls and non-ASCII; nan and ±inf, which
    # JSON output refuses as json.dumps(allow_nan=False) does, never printing `Infinity` or `NaN`
    try:
        expected = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False).replace("\n", "\n" + pad)
    except ValueError as refused:
        with pytest.raises(ValueError) as ours:
            output.indented_json(value, pad)
        assert str(ours.value) == str(refused)
        return
    assert output.indented_json(value, pad) == expected


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, {"quota_gib": math.inf}, {math.inf: 1}, [math.nan]])
def test_json_output_never_prints_a_non_finite_number(value: Any) -> None:
    for write in (output.as_json, lambda data, out: output.json_list({}, "items", [data], out)):
        out = io.StringIO()
        with pytest.raises(ValueError, match="not JSON compliant"):
            write(value, out)
        assert "Infinity" not in out.getvalue() and "NaN" not in out.getvalue()


def test_indented_json_refuses_what_json_refuses() -> None:
    for value in ({(1, 2): 3}, {"a": {1, 2}}, [object()]):
        with pytest.raises(TypeError) as ours:
            output.indented_json(value)
        with pytest.raises(TypeError) as theirs:
            json.dumps(value, indent=2)
        assert str(ours.value) == str(theirs.value)


# Text a terminal would act on: C0 (ESC of CSI/OSC sequences), DEL, C1 (U+009B is CSI), line separators, bidi.
UNSAFE_CHARS = st.sampled_from(["\x1b", "\x07", "\x00", "\t", "\r", "\n", "\x7f", "\x85", "\x9b", "\u061c", "\u200e",
                                "\u200f", "\u2028", "\u2029", "\u202a", "\u202e", "\u2066", "\u2069"])
HOSTILE_TEXT = st.lists(UNSAFE_CHARS | st.characters(codec="utf-8"), max_size=10).map("".join)
HOSTILE_VALUES = st.recursive(st.none() | st.integers() | HOSTILE_TEXT, lambda inner: st.lists(inner, max_size=3)
                              | st.dictionaries(HOSTILE_TEXT, inner, max_size=3), max_leaves=10)
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@settings(max_examples=300, deadline=None)
@given(value=HOSTILE_VALUES)
@example(value={"\x1b]52;c;cHduZWQ=\x07": ["\x9b31m\u202eevil", "a\nb\u2066c"]})
def test_json_and_yaml_escape_what_a_terminal_would_act_on_and_read_back(value: Any) -> None:
    """docs/cli.md: names in `-o json` / `-o yaml` carry no raw control, C1 or bidi character, and the document
    still reads back to the very value (JSON `\\u001b`, YAML's own escapes)."""
    for write, read in ((output.as_json, json.loads), (output.as_yaml, yaml.safe_load)):
        out = io.StringIO()
        write(value, out)
        assert not RAW.findall(out.getvalue()), out.getvalue()
        assert read(out.getvalue()) == value
    documents = io.StringIO()
    output.yaml_documents([value, value], documents)
    assert not RAW.findall(documents.getvalue())
    assert list(yaml.safe_load_all(documents.getvalue())) == [value, value]
