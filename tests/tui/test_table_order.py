"""RowTable's order: numbers, then text (any case), then none; the fast path for uniform columns agrees."""

from __future__ import annotations

from gpuadmin.tui.widgets.table import _order


def test_sorting_orders_numbers_then_text_then_none_whatever_the_column_holds() -> None:
    mixed = [{"A": "b"}, {"A": None}, {"A": "a"}, {"A": "-"}, {"A": 3}, {"A": "C"}]
    assert [mixed[i]["A"] for i in _order(mixed, None, "A", False)] == [3, "a", "b", "C", None, "-"]
    text = [{"A": "b"}, {"A": "-"}, {"A": "A"}]
    assert [text[i]["A"] for i in _order(text, None, "A", False)] == ["A", "b", "-"]
    numbers = [{"A": 10}, {"A": 2}, {"A": 7}]
    assert [numbers[i]["A"] for i in _order(numbers, None, "A", True)] == [10, 7, 2]
