"""Keys are findable: `?` lists the keys of the view on top, grouped (navigate, view, change), the global keys last,
and marks those the role may not use; the footer shows the view's most used keys and `?` as whole words at 80
columns; every binding has a group (gpuadmin/tui/keys.py)."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from gpuadmin.service import Service
from gpuadmin.tui.app import GpuadminApp
from gpuadmin.tui.keys import GROUPS, group_of, is_global
from gpuadmin.tui.screens.help import HelpScreen
from tests.tui.tuikit import CLUSTER, make_app, press, screen_text, settle, static_text


def help_lines(app: GpuadminApp) -> list[str]:
    return static_text(app, "#help-scroll Static").splitlines()


async def open_help(view: str, role: str | None = None, size: tuple[int, int] = (100, 80)) -> list[str]:
    app = make_app(Service(inventory=CLUSTER, role=role) if role else None, view=view)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        return help_lines(app)


def section(lines: list[str], title: str) -> list[str]:
    """The lines under a bold title, up to the next title (a line that does not start with a space)."""
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def entries(lines: list[str]) -> list[tuple[str, str]]:
    """(keys, binding id) of each key line."""
    return [(line.split()[0], line.split()[-1]) for line in lines if line.startswith("  ")]


def test_every_binding_has_a_group() -> None:
    ungrouped = [b.id for b in GpuadminApp.all_bindings() if group_of(b.id or "") not in GROUPS]
    assert ungrouped == []


def test_a_binding_added_later_is_grouped_by_its_prefix() -> None:
    assert [group_of(i) for i in ("table.clear_marks", "table.wide", "view.state", "app.anything", "edit.remedy",
                                  "review.discard", "edit.undo_to")] == [
        "navigate", "navigate", "view", "view", "change", "change", "change"]


async def test_help_on_jobs_lists_the_jobs_keys_not_the_queues() -> None:
    lines = await open_help("jobs")
    text = "\n".join(lines)
    assert lines[0].startswith("Keys in jobs")
    here = section(lines, lines[0])
    change = here[here.index(" change") + 1:]
    assert ("n", "edit.submit_job") in entries(change) and ("x", "edit.cancel_job") in entries(change)
    assert "New job" in text and "New queue" not in text and "Remove queue" not in text and "Cordon" not in text


async def test_help_on_queues_lists_the_queues_keys_not_the_jobs() -> None:
    lines = await open_help("queues")
    text = "\n".join(lines)
    assert lines[0].startswith("Keys in queues")
    assert ("n", "edit.add_queue") in entries(lines) and ("e", "edit.quota") in entries(lines)
    assert "New queue" in text and "New job" not in text and "Cancel job" not in text


async def test_help_is_grouped_and_the_global_keys_come_last() -> None:
    lines = await open_help("jobs")
    here, everywhere = section(lines, lines[0]), section(lines, "In every view")
    assert [line.strip() for line in here if line.startswith(" ") and not line.startswith("  ")] == list(GROUPS)
    assert lines.index("In every view") > lines.index(lines[0])
    for group_title in (" navigate", " view", " change"):
        start = here.index(group_title) + 1
        members = entries(here[start:next((i for i in range(start, len(here)) if not here[i].startswith("  ")),
                                          len(here))])
        assert members and all(group_of(binding_id) == group_title.strip() for _, binding_id in members)
    assert not any(is_global(binding_id) for _, binding_id in entries(here))
    global_ids = {binding_id for _, binding_id in entries(everywhere)}
    assert {"app.help", "app.quit", "app.back", "app.command", "view.jobs", "edit.schedule"} <= global_ids
    assert all(is_global(binding_id) for binding_id in global_ids)


async def test_help_in_one_nodes_screen_has_its_node_keys() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(100, 80)) as pilot:
        await settle(pilot)
        await press(pilot, "enter", "question_mark")
        ids = {binding_id for _, binding_id in entries(help_lines(app))}
        assert help_lines(app)[0].startswith("Keys in node")
        assert {"edit.cordon", "edit.drain", "edit.sharing"} <= ids
        assert not {"edit.add_node", "table.up", "edit.submit_job"} & ids


@pytest.mark.parametrize(("view", "role", "marked", "usable"), [
    ("jobs", "viewer", {"New job (needs operator)", "Cancel job (needs operator)", "Schedule (needs operator)"},
     {"Describe"}),
    ("queues", "operator", {"Edit quota (needs admin)", "New queue (needs admin)"}, {"Schedule", "Describe"}),
])
async def test_keys_the_role_cannot_use_are_marked(view: str, role: str, marked: set[str],
                                                   usable: set[str]) -> None:
    text = "\n".join(await open_help(view, role))
    for words in marked:
        assert words in text
    for words in usable:
        assert f"{words} (needs" not in text and words in text
    assert f"refused to your role, {role}" in text


FOOTER_VIEWS = ["overview", "nodes", "gpus", "topology", "slices", "jobs", "queues", "journal", "node"]


@pytest.mark.parametrize("view", FOOTER_VIEWS)
async def test_the_footer_at_80_columns_cuts_no_word(view: str) -> None:
    app = make_app(view="nodes" if view == "node" else view)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        if view == "node":
            await press(pilot, "enter")
        keys = list(app.screen.query(FooterKey))
        drawn = " ".join(f"{key.key_display} {key.description}" for key in keys)
        line = screen_text(app).splitlines()[-1]
        assert line.rstrip() == drawn, "the footer's line is its whole keys, none cut"
        assert len(line) == 80 and keys[0].description == "help"
        if view not in ("overview", "topology", "journal", "node"):  # the journal of a cluster in memory has no row
            assert {"Open", "Describe"} <= {key.description for key in keys}


async def test_the_footer_shows_the_views_own_changes() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = screen_text(app).splitlines()[-1]
        assert "n New job" in line and "x Cancel job" in line
        await press(pilot, "7")
        line = screen_text(app).splitlines()[-1]
        assert "n New queue" in line and "New job" not in line


async def test_the_footer_takes_more_keys_when_wider() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        narrow = len(app.screen.query(FooterKey))
        await pilot.resize_terminal(160, 30)
        await settle(pilot)
        await pilot.pause(0.1)
        wide = list(app.screen.query(FooterKey))
        assert len(wide) > narrow and "q Quit" in screen_text(app).splitlines()[-1]

