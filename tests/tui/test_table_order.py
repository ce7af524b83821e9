"""RowTable's order: numbers, then text (any case), then none; the fast path for uniform columns agrees."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from gpuadmin.tui.widgets.table import BACKGROUND_ROWS, RowTable, _order, _sort_key


def test_sorting_orders_numbers_then_text_then_none_whatever_the_column_holds() -> None:
    mixed = [{"A": "b"}, {"A": None}, {"A": "a"}, {"A": "-"}, {"A": 3}, {"A": "C"}]
    assert [mixed[i]["A"] for i in _order(mixed, None, "A", False)] == [3, "a", "b", "C", None, "-"]
    text = [{"A": "b"}, {"A": "-"}, {"A": "A"}]
    assert [text[i]["A"] for i in _order(text, None, "A", False)] == ["A", "b", "-"]
    numbers = [{"A": 10}, {"A": 2}, {"A": 7}]
    assert [numbers[i]["A"] for i in _order(numbers, None, "A", True)] == [10, 7, 2]


def test_cached_and_ranked_keys_give_the_order_of_a_plain_stable_sort() -> None:
    # a few queues over many rows (keyed by ranks), unique names (keyed by text), numbers, a mixed column;
    # ties must keep the rows' order in both directions, as sorted(..., reverse=True) does
    rows = [{"Q": ["b", "A", "a", "c", "-"][i % 5] if i % 7 else "B", "N": f"job-{(i * 37) % 101:03d}",
             "P": (i * 13) % 9, "M": [1, 2.5, "x", None, True][i % 5]} for i in range(101)]
    cache: dict[str, list[Any]] = {}
    for column in ("Q", "N", "P", "M"):
        for reverse in (False, True, False):
            plain = sorted(range(len(rows)), key=lambda i, c=column: _sort_key(rows[i][c]), reverse=reverse)
            if column != "M":  # a column of one type keys on its values, not on `_sort_key` tuples
                assert _order(rows, None, column, reverse) == plain
            assert _order(rows, None, column, reverse, cache) == _order(rows, None, column, reverse)
    assert set(cache) == {"Q", "N", "P", "M"}
    assert all(type(k) is int for k in cache["Q"]), "few distinct values: keyed by rank"
    assert all(type(k) is str for k in cache["N"]), "all distinct: keyed by the text itself"


def test_a_filtered_sort_reuses_the_keys_of_all_rows() -> None:
    rows = [{"A": v} for v in ["b", "a", "c", "a", "b", "c"] * 3]
    cache: dict[str, list[Any]] = {}
    everything = _order(rows, None, "A", False, cache)
    kept = _order(rows, lambda row: row["A"] != "b", "A", True, cache)
    assert [rows[i]["A"] for i in everything] == ["a"] * 6 + ["b"] * 6 + ["c"] * 6
    assert [rows[i]["A"] for i in kept] == ["c"] * 6 + ["a"] * 6
    assert kept == [2, 5, 8, 11, 14, 17, 1, 3, 7, 9, 13, 15], "ties stay in row order"


class _OneTable(App[None]):
    def compose(self) -> ComposeResult:
        yield RowTable(key="N")


async def test_new_rows_are_sorted_by_their_own_keys_not_the_cached_ones() -> None:
    count = BACKGROUND_ROWS + 1  # sorted in the worker thread, as a large listing is
    app = _OneTable()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(RowTable)
        for values in ([i % 3 for i in range(count)], [-(i % 5) for i in range(count)]):
            rows = [{"N": f"r{i}", "V": v} for i, v in enumerate(values)]
            table.set_rows(["N", "V"], rows)
            await app.workers.wait_for_complete()
            for reverse in (False, True):
                table.sort_by("V", reverse)
                await app.workers.wait_for_complete()
                await pilot.pause()
                assert [table.rows[i]["V"] for i in table.shown] == sorted(values, reverse=reverse)
