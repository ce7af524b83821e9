"""`/` filters (substring, key=value, key!=value, in (...), `!`, node labels, errors), sorting (`s`, `S`,
`:sort`) and moving in a table (every RowTable binding)."""

from __future__ import annotations

import pytest

from gpuadmin.service import Service
from gpuadmin.tui.screens.overview import OverviewScreen
from gpuadmin.tui.screens.topology import TopologyScreen
from tests.tui.tuikit import (
    NODES,
    command,
    cursor_row,
    drawing_text,
    errors,
    filter_rows,
    grid,
    header,
    make_app,
    notes,
    press,
    prompt,
    screen_text,
    settle,
    shown,
    status_line,
    wait_for,
)

RUNNING = ["llm-pretrain-70b", "vit-h-pretrain", "fss-loader-bench", "llama3-8b-serve", "reranker-serve",
           "whisper-serve-1", "eval-harness-7b", "eval-70b-fp8", "asr-serve-a30", "nb-alice", "nb-bob", "nb-intern-1"]
PENDING = ["gpt-pretrain-405b", "video-caption-serve", "intern-full-ft-8b", "sd-xl-finetune", "nb-dana"]
SERVE = ["llama3-8b-serve", "reranker-serve", "whisper-serve-1", "asr-serve-a30", "video-caption-serve"]


FILTERS = [
    ("SERVE", SERVE),  # a substring of any cell, in any case
    ("status=pending", PENDING),
    ("status==pending", PENDING),
    ("status!=running", PENDING),
    ("queue in (interns, platform)", ["fss-loader-bench", "nb-intern-1", "intern-full-ft-8b", "sd-xl-finetune"]),
    ("queue notin (research,inference)", ["fss-loader-bench", "nb-intern-1", "intern-full-ft-8b", "sd-xl-finetune"]),
    ("queue=research,status=pending", ["gpt-pretrain-405b", "nb-dana"]),
    ("!status=pending", RUNNING),
    ("!serve", [name for name in RUNNING + PENDING if name not in SERVE]),
    ("! queue in (research)", ["fss-loader-bench", "llama3-8b-serve", "reranker-serve", "whisper-serve-1",
                               "asr-serve-a30", "nb-intern-1", "video-caption-serve", "intern-full-ft-8b",
                               "sd-xl-finetune"]),
    ("no-such-text", []),
]


@pytest.mark.parametrize("half", [0, 1])
async def test_filter_jobs(half: int) -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for text, expected in FILTERS[half::2]:
            await filter_rows(pilot, text)
            assert sorted(shown(app)) == sorted(expected), text
            assert app.screen.filter_text == text
            assert status_line(app).startswith(f" jobs: {len(expected)} of 17  filter /{text}")
            assert header(app).endswith(f"jobs /{text}")
            # `/` again shows the filter to edit, the cursor at its end; an empty one clears it
            await press(pilot, "slash")
            assert prompt(app).value == text and prompt(app).cursor_position == len(text)
            await press(pilot, "ctrl+u", "enter")
            assert app.screen.filter_text == "" and len(shown(app)) == 17
        assert not notes(app)


async def test_filter_nodes_by_label_and_column() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for text, expected in (("pool=mig", ["gpu-h100-07"]),
                               ("pool in (training,shared)", ["gpu-h100-01", "gpu-h100-02", "gpu-h100-09",
                                                              "gpu-h100-11"]),
                               ("pool=training,state!=cordoned", ["gpu-h100-01", "gpu-h100-02"]),
                               ("vsphere.cluster=hgx-train", ["esx-hgx-02"]),
                               ("orchestrator=kubernetes", ["a30-01"]),
                               ("platform=vsphere", ["esx-hgx-02"]),
                               ("state=cordoned", ["gpu-h100-11"]),
                               ("!h100", ["a30-01", "esx-hgx-02"])):
            await filter_rows(pilot, text)
            assert shown(app) == expected, text
        assert not notes(app)


async def test_a_bad_filter_is_an_error_and_keeps_the_table() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "status=pending")
        for text, message in (("colour=red", "unknown selector key 'colour'; known keys: "),
                              ("status=(", "bad selector term 'status=('"),
                              ("queue in ()", "bad selector term 'queue in ()': the set is empty")):
            await filter_rows(pilot, text)
            assert errors(app)[-1].startswith(message)
            assert notes(app)[-1][1] == "filter"
            # the table is as it was: the previous filter still applies, nothing is silently empty
            assert app.screen.filter_text == "status=pending"
            assert sorted(shown(app)) == sorted(PENDING)
        assert len(notes(app)) == 3 and app.is_running


async def test_unknown_key_lists_the_known_ones() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "poll=mig")
        (message,) = errors(app)
        known = message.split("known keys: ")[1].split(", ")
        assert {"name", "state", "pool", "platform", "oci.oraclecloud.com/fault-domain"} <= set(known)
        assert len(shown(app)) == 7


async def test_filter_topology_and_a_bad_one_changes_nothing(state_dir) -> None:
    service = Service(state_dir=state_dir)
    app = make_app(service, view="topology")
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "state=cordoned")
        drawing = drawing_text(app)
        assert drawing.splitlines()[0] == "  - gpu-h100-11  baremetal  cordoned"
        assert "gpu-h100-01" not in drawing
        assert header(app).endswith("topology /state=cordoned")
        await filter_rows(pilot, "colour=red")
        assert errors(app)[0].startswith("unknown selector key 'colour'")
        assert app.screen.filter_text == "state=cordoned"
        assert drawing_text(app) == drawing
        # the state moves (another console applies): the view redraws with its filter, it does not crash
        other = Service(state_dir=state_dir)
        other.submit(other.plan(other.build_changes([{"op": "cordon", "node": "gpu-h100-02"}])), confirmed=True)
        await wait_for(pilot, lambda: "rev 1" in header(app))  # the live watch polls every second
        assert app.is_running and isinstance(app.screen, TopologyScreen)
        lines = drawing_text(app).splitlines()
        assert [line for line in lines if line.startswith("  - ")] == [  # the hosts: the tree's top level
            "  - gpu-h100-02  baremetal  cordoned", "  - gpu-h100-11  baremetal  cordoned"]
        assert "rev 1" in header(app)


async def test_overview_has_nothing_to_filter_or_sort() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "anything")
        await command(pilot, "sort name")
        assert notes(app) == [("warning", "", "this view has no rows to filter"),
                              ("warning", "", "no column 'name' to sort by here")]
        assert isinstance(app.screen, OverviewScreen)


async def test_s_sorts_by_each_column_in_turn_and_S_reverses() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "down", "down")
        assert cursor_row(app)["NAME"] == "gpu-h100-07"
        await press(pilot, "s")
        assert (grid(app).sort_column, grid(app).sort_reverse) == ("NAME", False)
        assert shown(app) == sorted(NODES)
        assert cursor_row(app)["NAME"] == "gpu-h100-07"  # the cursor stays on its row
        assert screen_text(app).splitlines()[2].startswith("  NAME^ ")
        assert status_line(app).endswith("sorted by NAME")
        await press(pilot, "S")
        assert shown(app) == sorted(NODES, reverse=True)
        assert screen_text(app).splitlines()[2].startswith("  NAMEv ")
        assert status_line(app).endswith("sorted by NAME (reverse)")
        await press(pilot, "s")  # the next column (the listing's order: NAME PLATFORM STATE GPUS ...), ascending again
        assert (grid(app).sort_column, grid(app).sort_reverse) == ("PLATFORM", False)
        assert shown(app, "PLATFORM") == ["baremetal"] * 6 + ["vsphere"]
        await press(pilot, "s")
        assert (grid(app).sort_column, grid(app).sort_reverse) == ("STATE", False)
        assert shown(app, "STATE") == ["cordoned"] + ["ready"] * 6
        await press(pilot, "s")
        assert grid(app).sort_column == "GPUS"
        assert shown(app, "GPUS") == sorted(shown(app, "GPUS"))  # numbers sort as numbers
        for _ in range(len(grid(app).columns) - 3):
            await press(pilot, "s")
        assert grid(app).sort_column == "NAME"  # round again


async def test_sort_command_by_column_then_reversed() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+w")  # PRIORITY is a wide column: sorted by once it is shown
        await settle(pilot)
        await command(pilot, "sort priority")
        assert (grid(app).sort_column, grid(app).sort_reverse) == ("PRIORITY", False)
        priorities = shown(app, "PRIORITY")
        assert priorities == sorted(priorities) and priorities[-1] == 800
        await command(pilot, "sort priority")  # again: reversed, as `?` says
        assert grid(app).sort_reverse is True
        assert shown(app, "PRIORITY") == sorted(priorities, reverse=True)
        await command(pilot, "sort PRIORITY")
        assert grid(app).sort_reverse is False
        await command(pilot, "sort no-such-column")
        assert notes(app) == [("warning", "", "no column 'no-such-column' to sort by here")]
        assert grid(app).sort_column == "PRIORITY"
        await filter_rows(pilot, "status=pending")  # a filter keeps the order
        assert shown(app) == ["intern-full-ft-8b", "nb-dana", "sd-xl-finetune", "gpt-pretrain-405b",
                              "video-caption-serve"]


async def test_sort_command_takes_dashed_column_names() -> None:
    app = make_app(view="queues")
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "sort used-gpus")
        assert grid(app).sort_column == "USED_GPUS"
        assert shown(app) == ["interns", "platform", "inference", "research"]


async def test_moving_in_a_table() -> None:
    """Every RowTable binding: up/k, down/j, pageup/ctrl+b, pagedown/ctrl+f, home/g, end/G, space."""
    app = make_app(view="slices")
    async with app.run_test(size=(100, 12)) as pilot:
        await settle(pilot)
        table = grid(app)
        total = len(table.shown)

        async def at(*keys: str) -> int:
            await press(pilot, *keys)
            return table.cursor

        assert await at("down") == 1
        assert await at("j", "j") == 3
        assert await at("up") == 2
        assert await at("k", "k", "k") == 0  # never above the first
        page = table.size.height - 2
        assert await at("pagedown") == page
        assert await at("ctrl+f") == 2 * page
        assert await at("pageup") == page
        assert await at("ctrl+b") == 0
        assert await at("end") == total - 1
        assert table.scroll_offset.y > 0  # the cursor row is on screen
        assert cursor_row(app)["NAME"] in screen_text(app) or cursor_row(app)["NODE"] in screen_text(app)
        assert await at("home") == 0 and table.scroll_offset.y == 0
        assert await at("G") == total - 1
        assert await at("down") == total - 1  # never below the last
        assert await at("g") == 0
        await press(pilot, "space", "space")  # marks two rows, moving down
        assert table.cursor == 2
        assert table.marked == {table.rows[table.shown[0]]["NAME"], table.rows[table.shown[1]]["NAME"]}
        assert [line[:2] for line in screen_text(app).splitlines()[3:6]] == ["* ", "* ", "> "]
        await press(pilot, "up", "space")  # unmarks
        assert len(table.marked) == 1


async def test_ctrl_r_reloads_a_listing(state_dir) -> None:
    app = make_app(Service(state_dir=state_dir), view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "view.reload" in {b.binding.id for b in app.active_bindings.values()}
        table = grid(app)
        before = table.rows
        await press(pilot, "ctrl+r")
        assert table.rows is not before and table.rows == before
