"""The typed column model in the CLI: widths in terminal cells, numbers to the right, narrow terminals giving up
the lowest-priority columns first, and `-o name` held equal to the names of the full rows."""

from __future__ import annotations

import io

import pytest

from gpuadmin.cli.output import NAMES_PER_WRITE, cells, fit, names, table
from gpuadmin.render.columns import Column, Kind, number, text
from gpuadmin.render.rows import LISTINGS
from gpuadmin.render.text import safe
from gpuadmin.service import Service
from tests.cli.clikit import SAMPLES


def test_wide_characters_keep_the_columns_aligned() -> None:
    # CJK names and emoji take two terminal cells each: measured with len() the next column starts early
    rows = [{"NAME": "训练-任务-一", "QUEUE": "research"}, {"NAME": "job-🚀🚀", "QUEUE": "inference"},
            {"NAME": "plain-name", "QUEUE": "platform"}, {"NAME": "é-combining-e\u0301", "QUEUE": "interns"}]
    out = io.StringIO()
    table(rows, [text("NAME"), text("QUEUE")], out=out)
    lines = out.getvalue().splitlines()
    starts = {cells(line[: line.index(q)]) for line, q in zip(lines, ["QUEUE", "research", "inference",
                                                                          "platform", "interns"], strict=True)}
    assert starts == {len("é-combining-e") + 2}, out.getvalue()


def test_cells_count_as_a_terminal_draws() -> None:
    assert cells("gpu-h100-07/0/3g.40gb@4") == 23 and cells("训") == 2 and cells("e\u0301") == 1
    assert cells("\x1b") == 1, "a control wcwidth cannot measure (none reaches a cell unescaped) counts one"


def test_ascii_cells_measure_as_wcwidth_does() -> None:
    """The table's fast path measures ASCII text by its length: equal to wcwidth for every character a cell can
    hold (`safe` escapes the controls), and a whole table so measured equals one measured by `cells` alone."""
    printable = "".join(chr(c) for c in range(0x20, 0x7F))
    assert all(cells(ch) == 1 for ch in printable) and cells(printable) == len(printable)
    rows = [{"NAME": safe(f"job-{i}\x1b[2J"), "QUEUE": "research" * (i % 3), "GPUS": i} for i in range(40)]
    rows.append({"NAME": "训练", "QUEUE": "ü", "GPUS": None})
    out = io.StringIO()
    table(rows, [text("NAME"), text("QUEUE"), number("GPUS")], out=out)
    widths = [max(cells(c), *(cells(str(r[c] if r[c] is not None else "-")) for r in rows))
              for c in ("NAME", "QUEUE", "GPUS")]
    assert widths == [13, 16, 4]
    assert out.getvalue().splitlines()[0] == "NAME".ljust(13) + "  " + "QUEUE".ljust(16) + "  GPUS"


def test_a_wide_character_is_never_cut_in_half() -> None:
    out = io.StringIO()
    table([{"NAME": "a", "LONG": "训练训练训练训练训练训练"}], [text("NAME"), text("LONG")], out=out, width=16)
    body = out.getvalue().splitlines()[1]
    # 10 cells for LONG: four characters (8 cells) and `…`; a fifth would straddle the edge
    assert body == "a     训练训练…" and cells(body) <= 16, body


def test_numbers_align_right_and_text_left() -> None:
    out = io.StringIO()
    table([{"NAME": "a", "GPUS": 8}, {"NAME": "bbbbbb", "GPUS": 16}], [text("NAME"), number("GPUS")], out=out)
    assert out.getvalue().splitlines() == ["NAME    GPUS", "a          8", "bbbbbb    16"]


def test_the_lowest_priority_column_gives_way_first() -> None:
    columns = [text("NAME"), Column("AGE", Kind.DURATION, priority=-1), text("REASON")]
    assert fit([10, 3, 40], columns, 20) == [8, 0, 8], "AGE dropped, REASON kept"
    plain = [text("NAME"), text("AGE"), text("REASON")]
    assert fit([10, 3, 40], plain, 20) == [8, 3, 0], "equal priorities: the rightmost gives way"


@pytest.mark.parametrize("kind", [k for k, listing in LISTINGS.items() if listing.names is not None])
@pytest.mark.parametrize("sample", ["oci-h100.yaml", "vsphere-hgx.yaml"])
def test_names_without_rows_equal_the_rows_names(kind: str, sample: str) -> None:
    """The `-o name` fast path (no rows made) against the reference: the key column of the full rows."""
    service = Service(inventory=SAMPLES / sample)
    listing = LISTINGS[kind]
    assert listing.names is not None and listing.rows is not None
    view = service.view()
    assert list(listing.names(view)) == [str(r[listing.key]) for r in listing.rows(view)]


def test_names_written_in_batches_are_the_lines_one_by_one() -> None:
    values = [f"job-{i}" for i in range(2 * NAMES_PER_WRITE + 3)] + ["evil\x1b]0;x\x07"]
    out = io.StringIO()
    names("job", values, out=out)
    assert out.getvalue() == "".join(f"job/{safe(v)}\n" for v in values)
    empty = io.StringIO()
    names("job", [], out=empty)
    assert empty.getvalue() == ""
