"""Every view by its digit and by each `:` alias; Enter drills down, Esc goes back; `:` history and completion;
help lists every binding; themes; the three ways to quit."""

from __future__ import annotations

import itertools

import pytest
from textual.binding import Binding

from gpuadmin.service import Service
from gpuadmin.tui.app import VIEWS, GpuadminApp
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.help import HelpScreen
from gpuadmin.tui.screens.listing import ListingScreen, TableScreen
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.overview import OverviewBody, OverviewScreen
from gpuadmin.tui.screens.telemetry import IdleScreen, TopScreen
from gpuadmin.tui.screens.topology import TopologyScreen
from gpuadmin.tui.widgets.boards import BoardsView
from gpuadmin.tui.widgets.table import RowTable
from tests.tui.tuikit import (
    NODES,
    QUEUES,
    command,
    cursor_row,
    errors,
    grid,
    header,
    make_app,
    notes,
    press,
    prompt,
    screen_text,
    settle,
    shown,
    static_text,
    status_line,
)

SCREEN_TYPES = {"overview": OverviewScreen, "topology": TopologyScreen, "top": TopScreen, "idle": IdleScreen}
TELEMETRY_VIEWS = {"top", "idle"}
# what each view shows first in the test cluster: the first line of its drawing, or its first row's key
FIRST_LINE = {"overview": "tui-lab   revision 0   7 nodes   34 GPUs", "topology": "> - gpu-h100-01  baremetal  ready"}
FIRST_ROW = {"nodes": "gpu-h100-01", "gpus": "gpu-h100-01/0", "slices": "gpu-h100-01/0", "jobs": "llm-pretrain-70b",
             "queues": "research", "journal": "1"}
KEY = {"nodes": "NAME", "gpus": "NAME", "slices": "NAME", "jobs": "NAME", "queues": "NAME", "journal": "NAME"}


def assert_on(app: GpuadminApp, name: str) -> None:
    assert app.current_mode == name
    screen = app.screen
    assert isinstance(screen, SCREEN_TYPES.get(name, ListingScreen))
    if isinstance(screen, TableScreen):
        assert screen.kind == name
    assert f"  {name}" in header(app)


async def test_each_view_opens_by_its_digit(state_dir) -> None:
    app = make_app(Service(state_dir=state_dir))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for name, (_, digit, _) in [*list(VIEWS.items())[1:], *list(VIEWS.items())[:1]]:
            await press(pilot, digit)
            assert_on(app, name)
            if name in FIRST_LINE:
                assert screen_text(app).splitlines()[1].strip() == FIRST_LINE[name]
            elif name in TELEMETRY_VIEWS:  # no Prometheus is set for this state: no rows, and the view says why
                assert not grid(app).rows and "no Prometheus is set" in screen_text(app)
            else:
                table = grid(app)
                assert len(table.shown) == len(table.rows) > 0
                assert cursor_row(app)[KEY[name]] == FIRST_ROW[name]
        assert not notes(app)


# every alias, round robin over the views so that each command really switches
ALIASES = [(name, aliases[i]) for i in range(4) for name, (aliases, _, _) in VIEWS.items() if i < len(aliases)]


@pytest.mark.parametrize("half", [0, 1])
async def test_each_view_opens_by_every_alias(half: int) -> None:
    todo = ALIASES[half::2]
    app = make_app(view="journal" if todo[0][0] != "journal" else "overview")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for name, alias in todo:
            assert app.current_mode != name
            await command(pilot, alias)
            assert_on(app, name)
        # upper case and blanks around are the same command
        name, alias = next((n, a) for n, a in todo if n != app.current_mode)
        await command(pilot, f"  {alias.upper()} ")
        assert_on(app, name)
        assert not notes(app)


def test_the_aliases_cover_every_view_and_never_collide() -> None:
    assert {name for name, _ in ALIASES} == set(VIEWS)
    assert len({alias for _, alias in ALIASES}) == len(ALIASES)
    assert all(a != b for (a, _), (b, _) in itertools.pairwise(ALIASES))


async def test_alias_with_a_filter_opens_the_view_filtered() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "jobs status=pending")
        assert_on(app, "jobs")
        assert set(shown(app, "STATUS")) == {"pending"}
        assert "filter /status=pending" in status_line(app)


async def test_enter_on_a_node_opens_it_and_esc_comes_back() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert shown(app) == NODES
        await press(pilot, "down", "down")  # gpu-h100-07, the MIG node
        await press(pilot, "enter")
        node = app.screen
        assert isinstance(node, NodeScreen) and node.node == "gpu-h100-07"
        assert header(app).endswith("nodes > gpu-h100-07")
        drawing = static_text(app, "#node")
        assert drawing.startswith("gpu-h100-07  baremetal  state ready  BM.GPU.H100.8")
        assert "NVSwitch domain: [0 1 2 3]" in drawing
        assert "GPU 0 H100-SXM5-80GB  mig" in drawing
        assert "llama3-8b-serve" in drawing and "reranker-serve" in drawing
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen) and app.screen.kind == "nodes"
        assert cursor_row(app)["NAME"] == "gpu-h100-07"  # the cursor is where it was
        assert header(app).endswith("  nodes")


@pytest.mark.parametrize(("name", "keys", "node"), [("gpus", ("down",) * 8, "gpu-h100-02"),
                                                    ("slices", ("G",), "esx-hgx-02")])
async def test_enter_on_a_gpu_or_a_slice_opens_its_node(name: str, keys: tuple[str, ...], node: str) -> None:
    app = make_app(view=name)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, *keys)
        row = cursor_row(app)
        assert row is not None and row["NODE"] == node
        await press(pilot, "enter")
        assert isinstance(app.screen, NodeScreen) and app.screen.node == node
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen) and app.screen.kind == name


async def test_enter_on_a_queue_lists_its_jobs_and_esc_unwinds() -> None:
    app = make_app(view="queues")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert shown(app) == QUEUES
        await press(pilot, "G")  # interns
        await press(pilot, "enter")
        assert_on(app, "jobs")
        assert app.screen.filter_text == "queue=interns"
        assert shown(app) == ["nb-intern-1", "intern-full-ft-8b"]
        assert set(shown(app, "QUEUE")) == {"interns"}
        assert header(app).endswith("jobs /queue=interns")
        assert not errors(app)
        await press(pilot, "escape")  # clears the filter first
        assert app.screen.filter_text == ""
        assert len(shown(app)) == len(grid(app).rows) == 17
        await press(pilot, "escape")  # then back to the view before
        assert_on(app, "queues")
        await press(pilot, "escape")  # nothing before it: stays
        assert_on(app, "queues")


async def test_enter_on_a_job_describes_it() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "G")  # the last job: nb-dana, pending
        assert cursor_row(app)["NAME"] == "nb-dana"
        await press(pilot, "enter")
        assert isinstance(app.screen, DescribeScreen)
        assert app.screen.title_text == "job nb-dana"
        body = static_text(app, "#describe")
        fields = {line.split(":")[0]: line.split(":", 1)[1].strip() for line in body.splitlines() if ":" in line}
        assert (fields["Name"], fields["Queue"], fields["Status"]) == ("nb-dana", "research", "pending")
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen) and app.screen.kind == "jobs"


async def test_enter_on_a_journal_entry_describes_it(state_dir) -> None:
    app = make_app(Service(state_dir=state_dir), view="journal")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert shown(app, "ID") == [1]
        assert cursor_row(app)["OUTCOME"] == "applied"
        await press(pilot, "enter")
        assert isinstance(app.screen, DescribeScreen)
        assert app.screen.title_text == "entry 1"
        assert app.screen.data["summary"]["id"] == 1
        assert app.screen.data["summary"]["outcome"] == "applied"
        await press(pilot, "q")  # q closes a pop-up, it does not quit
        assert isinstance(app.screen, ListingScreen)
        assert app.is_running


async def test_esc_walks_back_through_views_filter_and_node() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "2")
        await press(pilot, "enter")
        assert isinstance(app.screen, NodeScreen)
        await press(pilot, "6")
        await command(pilot, "queues")
        await press(pilot, "6")
        await press(pilot, "slash", *"pending", "enter")
        assert app.screen.filter_text == "pending"
        trail = []
        for _ in range(7):
            await press(pilot, "escape")
            screen = app.screen
            trail.append(type(screen).__name__ + (f":{screen.kind}" if isinstance(screen, ListingScreen) else "")
                         + (f"/{screen.filter_text}" if getattr(screen, "filter_text", "") else ""))
        assert trail == ["ListingScreen:jobs", "ListingScreen:queues", "ListingScreen:jobs",
                         "NodeScreen", "ListingScreen:nodes", "OverviewScreen", "OverviewScreen"]


async def test_esc_in_the_prompt_cancels_it() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"status=pending")
        assert prompt(app).display and prompt(app).value == "status=pending"
        assert prompt(app).has_focus
        await press(pilot, "escape")
        assert not prompt(app).display
        assert app.screen.filter_text == ""
        assert len(shown(app)) == 17
        assert grid(app).has_focus  # keys go to the table again
        await press(pilot, "colon", *"nodes")
        await press(pilot, "escape")
        assert app.current_mode == "jobs"


async def test_node_command_opens_a_node() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "node esx-hgx-02")
        assert isinstance(app.screen, NodeScreen) and app.screen.node == "esx-hgx-02"
        drawing = static_text(app, "#node")
        assert "device group 4: dg-a [0 1 2 3] -> vm train-vm-02" in drawing
        assert "device group 2: dg-c [6 7] (free)" in drawing
        assert "A100DX-80C > vm train-vm-03" in drawing


async def test_node_command_on_an_unknown_node_says_so() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "node no-such-node")
        assert errors(app) == ["node 'no-such-node' not found"]
        assert isinstance(app.screen, NodeScreen)
        assert static_text(app, "#node") == "node 'no-such-node' not found"  # not "loading..." for ever
        await press(pilot, "escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_unknown_command_is_an_error_notification() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await command(pilot, "frobnicate now")
        assert errors(app) == ["unknown command 'frobnicate now'; `?` lists them"]
        assert app.current_mode == "nodes" and len(shown(app)) == 7


async def test_command_history_walks_up_and_down() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for line in ("jobs", "nodes", "queues", "queues"):
            await command(pilot, line)
        await press(pilot, "slash", *"research", "enter")  # a filter: its own history
        await press(pilot, "colon")
        field = prompt(app)
        assert field.value == ""
        walked = []
        for key in ("up", "up", "up", "up", "down", "down", "down", "down"):
            await press(pilot, key)
            walked.append(field.value)
        assert walked == ["queues", "nodes", "jobs", "jobs", "nodes", "queues", "", ""]
        await press(pilot, "up", "up", "enter")  # runs the recalled command
        assert app.current_mode == "nodes"
        await press(pilot, "slash", "up")
        assert prompt(app).value == "research"


async def test_tab_completes_a_command() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        field = prompt(app)
        for typed, completed in (("top", "topology"), ("qu", "queues"), ("jo", "jobs"), ("jou", "journal"),
                                 ("th", "theme "), ("sl", "slices")):
            await press(pilot, "colon", *typed, "tab")
            assert field.value == completed
            await press(pilot, "escape")
        await press(pilot, "colon", *"zzz", "tab")
        assert field.value == "zzz"  # nothing to complete: left as typed
        await press(pilot, "escape")
        await press(pilot, "colon", *"qu", "tab", "enter")
        assert app.current_mode == "queues"
        await press(pilot, "slash", *"re", "tab")
        assert prompt(app).value == "re"  # a filter is not completed


async def test_help_lists_the_views_keys_with_their_ids() -> None:
    """`?` lists the keys of the view on top and the global ones (tests/tui/test_keys.py: which, grouped); over
    the views, every binding of the app, the tables and the listings is found; the pop-ups' own keys show in
    their footers and in docs/tui.md."""
    app = make_app(view="nodes")
    found: set[str] = set()
    async with app.run_test(size=(100, 80)) as pilot:
        await settle(pilot)
        for digit in "12345678":
            await press(pilot, "escape", digit, "question_mark")
            assert isinstance(app.screen, HelpScreen)
            shown_text = str(app.screen.query_one("#help-scroll Static").render())
            for row in app.screen.rows:
                assert row.binding_id in shown_text
            found |= {row.binding_id for row in app.screen.rows}
            await press(pilot, "escape")
        for words in (":nodes [FILTER]", ":sort COLUMN", ":theme [NAME]", "key in (a,b)", "!..."):
            assert words in shown_text
        await press(pilot, "2", "question_mark")
        await press(pilot, "question_mark")
        assert isinstance(app.screen, ListingScreen)
        await command(pilot, "help")
        assert isinstance(app.screen, HelpScreen)
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen)
    views_keys = {b.id for owner in (GpuadminApp, RowTable, ListingScreen, OverviewBody, BoardsView, TopologyScreen)
                  for b in owner.BINDINGS
                  if isinstance(b, Binding) and b.id}
    assert found == views_keys


async def test_help_shows_the_keys_of_the_users_keymap(neutral_environment) -> None:
    (neutral_environment / "gpuadmin").mkdir()
    (neutral_environment / "gpuadmin" / "keymap.yaml").write_text('app.quit: "x"\nview.jobs: "J"\n')
    app = make_app()
    async with app.run_test(size=(100, 60)) as pilot:
        await settle(pilot)
        await press(pilot, "J")
        assert app.current_mode == "jobs"
        await press(pilot, "question_mark")
        rows = {row.binding_id: row.keys for row in app.screen.rows}
        assert rows["app.quit"] == "x" and rows["view.jobs"] == "J"
        await press(pilot, "escape", "q")
        assert app.is_running  # q is not quit any more
        await pilot.press("x")
        await pilot.pause()
        assert not app.is_running


async def test_theme_command_switches_and_refuses_unknown() -> None:
    app = make_app(view="nodes")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.theme == "gpuadmin-dark"
        for name in ("gpuadmin-ansi", "gpuadmin-light", "gpuadmin-contrast", "textual-dark"):
            await command(pilot, f"theme {name}")
            assert app.theme == name
        await command(pilot, "theme no-such-theme")
        assert app.theme == "textual-dark"
        message = errors(app)[-1]
        assert message.startswith("unknown theme 'no-such-theme'; gpuadmin's: ")
        assert "gpuadmin-ansi, gpuadmin-contrast, gpuadmin-dark, gpuadmin-light" in message
        await command(pilot, "theme")
        assert notes(app)[-1][2] == ("themes: gpuadmin-ansi, gpuadmin-contrast, gpuadmin-dark, gpuadmin-light "
                                     "(and Textual's own); now textual-dark")


def test_an_unknown_theme_at_start_is_an_input_error() -> None:
    from gpuadmin.errors import InputError

    with pytest.raises(InputError, match="unknown theme 'nope'"):
        make_app(theme="nope")


@pytest.mark.parametrize("keys", [("q",), ("ctrl+c",), ("colon", "q", "enter"), ("colon", *"quit", "enter")])
async def test_quit(keys: tuple[str, ...]) -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


async def test_ctrl_c_quits_even_from_the_prompt_and_a_pop_up() -> None:
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "d")
        assert isinstance(app.screen, DescribeScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    app = make_app(view="jobs")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"q")
        assert prompt(app).value == "q" and app.is_running  # q typed into the prompt is text, not quit
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
