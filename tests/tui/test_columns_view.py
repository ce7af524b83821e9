"""Each view keeps its most telling columns (typed priorities), shows the listing's wide ones under ctrl+w, and
speaks the CLI's vocabulary: the same column names, the same filter keys, REASON as the why-pending code."""

from __future__ import annotations

import pytest

from gpuadmin.render.rows import JOURNAL, LISTINGS
from gpuadmin.service import Service
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.listing import GPU_MARK, QUOTA_BAR, console_columns
from tests.tui.tuikit import ROOT, filter_rows, grid, make_app, screen_text, settle, shown, status_line

OCI = ROOT / "sample-inventories" / "oci-h100.yaml"
SIZES = [(80, 24), (160, 48)]


def _header(text: str, first: str) -> list[str]:
    """The table's column names, as drawn."""
    line = next(line for line in text.splitlines() if line.strip().startswith(first + " "))
    return line.split()


def _row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if f" {name} " in line)


@pytest.mark.parametrize("size", SIZES)
async def test_gpus_view_keeps_use_and_holders(size: tuple[int, int]) -> None:
    app = make_app(Service(inventory=OCI), view="gpus")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        text = screen_text(app)
    columns = _header(text, "NODE")
    assert {"GPU", "MODE", "USE", "HOLDERS"} <= set(columns), columns
    assert "llm-pretrain-70b" in _row(text, "gpu-h100-01"), "the holder is drawn"


@pytest.mark.parametrize("size", SIZES)
async def test_jobs_view_keeps_queue_request_and_the_reason_code(size: tuple[int, int]) -> None:
    app = make_app(Service(inventory=OCI), view="jobs")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        text = screen_text(app)
        reasons = dict(zip(shown(app), shown(app, "REASON"), strict=True))
    columns = _header(text, "NAME")
    assert columns[:3] == ["NAME", "QUEUE", "STATUS"] and {"REQUEST", "REASON"} <= set(columns), columns
    assert "MESSAGE" not in columns, "the words are the wide column"
    # the codes, whole: a short column no width cuts
    assert reasons["gpt-pretrain-405b"] == "over-limit" and reasons["vllm-405b-eval"] == "node-cordoned"
    assert reasons["eval-405b-shard"] == "profile-not-carved" and reasons["llm-pretrain-70b"] == "-"
    if size == (160, 48):  # room for where running jobs run, and for a waiting one's remedy after its code
        assert {"PLACEMENT", "AGE", "REMEDY"} <= set(columns), columns
        assert "over-limit wait for its queue" in " ".join(_row(text, "gpt-pretrain-405b").split())
    else:  # text beyond row 20 scrolls off at 24 lines: the first pending rows are the ones drawn at 160x48
        assert "running" in _row(text, "llm-pretrain-70b") and "research" in _row(text, "llm-pretrain-70b")


async def test_pending_reason_codes_show_whole_at_80() -> None:
    app = make_app(Service(inventory=OCI), view="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "status=pending")
        text = screen_text(app)
    for name, code in (("gpt-pretrain-405b", "over-limit"), ("video-caption-serve", "profile-not-carved"),
                       ("vllm-405b-eval", "node-cordoned")):
        assert _row(text, name).split()[-1] == code, _row(text, name)


async def test_ctrl_w_shows_the_wide_columns_and_back() -> None:
    app = make_app(Service(inventory=OCI), view="jobs")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        before = grid(app).columns
        await pilot.press("ctrl+w")
        await settle(pilot)
        wide = grid(app).columns
        text = screen_text(app)
        wide_status = status_line(app)
        await pilot.press("ctrl+w")
        await settle(pilot)
        after = grid(app).columns
    assert before == LISTINGS["jobs"].columns and after == before
    assert wide == (*LISTINGS["jobs"].columns, *LISTINGS["jobs"].wide)
    assert "MESSAGE" in _header(text, "NAME"), "at 160 the wide MESSAGE has room after the table's columns"
    assert "0/12 nodes fit" in _row(text, "gpt-pretrain-405b") and "wide" in wide_status


async def test_nodes_view_wide_brings_models() -> None:
    app = make_app(Service(inventory=OCI), view="nodes")
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot)
        narrow = _header(screen_text(app), "NAME")
        await pilot.press("ctrl+w")
        await settle(pilot)
        wide = _header(screen_text(app), "NAME")
    assert "MODELS" not in narrow and "MODELS" in wide
    assert {"FREE", "PARTLY_USED", "FULL"} <= set(narrow) and "USED" not in narrow, "the CLI's words"


async def test_filter_by_reason_code() -> None:
    service = Service(inventory=OCI)
    expected = [r["NAME"] for r in service.get("jobs", selector="reason=over-limit").rows]
    assert expected, "the sample has jobs over their queue's limit"
    app = make_app(service, view="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "reason=over-limit")
        names = shown(app)
        await filter_rows(pilot, "REASON in (node-cordoned, profile-not-carved)")
        others = set(shown(app, "REASON"))
    assert names == expected
    assert others == {"node-cordoned", "profile-not-carved"}


async def test_a_cut_message_keeps_its_remedy_in_describe() -> None:
    """A table cuts a long MESSAGE at any width; `d` on the job gives the whole explanation, remedy included."""
    app = make_app(Service(inventory=OCI), view="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "reason=profile-not-carved")
        await pilot.press("ctrl+w")
        await settle(pilot)
        message = grid(app).current_row()
        cut = _row(screen_text(app), "video-caption-serve")
        await pilot.press("d")
        await settle(pilot)
        described = app.screen
    assert message is not None and message["NAME"] == "video-caption-serve"
    remedy = "repartition gpu-h100-07/0 to 2g.20gb@0, 1g.10gb@2, 1g.10gb+me@3, 3g.40gb@4 (no running job affected)"
    assert message["MESSAGE"].endswith("remedy: " + remedy) and remedy not in cut, "cut in the table at 80"
    assert isinstance(described, DescribeScreen)
    assert described.data["pending"]["reason"] == "profile-not-carved" and described.data["pending"]["remedy"] == remedy


@pytest.mark.parametrize("kind", [*LISTINGS, "journal"])
def test_the_console_shows_the_listings_columns(kind: str) -> None:
    """One vocabulary: the console's columns are the listing's (the CLI's table, then `-o wide`), in its order;
    the queues' quota bar and the GPUs' alert/health marker are the additions."""
    listing = JOURNAL if kind == "journal" else LISTINGS[kind]
    extra = [QUOTA_BAR.name] if kind == "queues" else [GPU_MARK.name] if kind == "gpus" else []
    narrow = [c.name for c in console_columns(kind)]
    wide = [c.name for c in console_columns(kind, wide=True)]
    assert [n for n in narrow if n not in extra] == list(listing.columns)
    assert [n for n in wide if n not in extra] == [c.name for c in listing.fields if not c.hidden]
    assert [c.priority for c in console_columns(kind) if c.name not in extra] == \
        [listing.column(n).priority for n in listing.columns]
