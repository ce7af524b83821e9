"""Names are data, never markup and never terminal escapes (fixtures/hostile.yaml): a node, job, queue, VM,
device group, network or cluster named `[@click=app.quit]x`, `[bold]x`, `[/` or holding ESC / OSC / CSI /
C1 / bidi characters shows as the characters it holds, control bytes as visible escapes (`\\x1b`), in every
view, pop-up, filter and notification; clicking on it does nothing; nothing crashes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuadmin.render.text import safe
from gpuadmin.service import Service
from gpuadmin.store import LockHeld, LockHolder, load_inventory
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.help import HelpScreen
from gpuadmin.tui.screens.listing import ListingScreen
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from gpuadmin.tui.session import error_lines
from tests.tui.tuikit import (
    HOSTILE,
    command,
    cursor_row,
    errors,
    filter_rows,
    header,
    make_app,
    notes,
    press,
    screen_text,
    settle,
    shown,
    status_line,
)

CLICK_NODE, OSC_NODE, SLASH_NODE = "[@click=app.quit]x", "\x1b]0;pwned\x07x", "[/"
# any byte that a terminal would act on: C0 (but the line breaks of the screen), DEL, C1, bidi controls
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# what each view must show, as it reads on the screen
SHOWN = {
    "1": [r"[bold]hostile-lab   revision", r"! \x1b]0;pwned\x07x is cordoned"],
    "2": [CLICK_NODE, r"\x1b]0;pwned\x07x", "[/ "],
    "3": ["A100DX-80C>[@click=app.quit]vm", r"A100DX-80C>\x1b[2J\x1b[31mvm", r"\x1b]0;pwne"],
    "4": ["device group 2: [bold]dg [0 1] -> vm [@click=app.quit]vm", r"RDMA: 16 NICs x 200 Gb/s on \x1b[2Jnet",
          r"device group 2: \x1b]0;pwned\x07dg [2 3] -> vm \x1b[2J\x1b[31mvm", "RDMA: 16 NICs x 200 Gb/s on [/;"],
    "5": ["vm:[@click=app.quit]vm", r"\x1b[31mred-job", r"\x1b]0;pwned\x07nb"],
    "6": ["[@click=app.quit]job", r"\x1b[31mred-job", "[bold]pending", r"\x9b31mc1\u202eevil",
          "[@click=app.quit]x/0-1"],
    "7": ["[@click=app.quit]q", r"\x1b[31mred-queue"],
    "8": ["cordon"],
}


def assert_literal(app, *pieces: str) -> str:
    text = screen_text(app)
    assert not RAW.findall(text), f"raw control characters on screen: {RAW.findall(text)}"
    for piece in pieces:
        assert piece in text, f"{piece!r} not on screen"
    return text


async def click_every(pilot, app, needle: str, most: int = 4) -> None:
    """Click where the needle shows (its first `most` lines): if it were markup, `[@click=app.quit]` would quit."""
    lines = [(y, line.find(needle)) for y, line in enumerate(screen_text(app).splitlines()) if needle in line]
    for y, x in lines[:most]:
        await pilot.click(offset=(x + 1, y))
        await settle(pilot)
        assert app.is_running, f"clicking {needle!r} at line {y} quit the app"


def test_the_inventory_loader_keeps_every_byte_of_a_name() -> None:
    """The loader refuses none of these bytes (a Name is any 1-253 characters), so the console must cope."""
    inventory = load_inventory(HOSTILE)
    assert inventory.cluster == "[bold]hostile-lab"
    assert [n.name for n in inventory.nodes] == [CLICK_NODE, OSC_NODE, SLASH_NODE]
    assert "\x9b31mc1\u202eevil" in [j.name for j in inventory.jobs]
    assert inventory.nodes[2].vms[1].name == "\x1b[2J\x1b[31mvm"


@pytest.fixture
def hostile_journaled(hostile_state: Path) -> Path:
    """The hostile state with an applied cordon of `[@click=app.quit]x` in its journal."""
    service = Service(state_dir=hostile_state)
    service.submit(service.plan(service.build_changes([{"op": "cordon", "node": CLICK_NODE}])), confirmed=True)
    return hostile_state


async def test_every_view_shows_the_names_literally_and_clicks_do_nothing(hostile_journaled: Path) -> None:
    app = make_app(Service(state_dir=hostile_journaled))
    async with app.run_test(size=(200, 40), notifications=True) as pilot:
        await settle(pilot)
        for digit, pieces in [*list(SHOWN.items())[1:], *list(SHOWN.items())[:1]]:
            await press(pilot, digit)
            text = assert_literal(app, *pieces)
            assert text.splitlines()[0].startswith(" gpuadmin  [bold]hostile-lab  ")  # then the state's directory
            assert "/hostile-state  rev 1  role admin" in text.splitlines()[0]
            for needle in ("[@click=app.quit]", "[bold]"):
                await click_every(pilot, app, needle)
        assert not notes(app)


async def test_each_hostile_node_opens_and_draws(hostile_state: Path) -> None:
    app = make_app(Service(state_dir=hostile_state), view="nodes")
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot)
        expected = {
            CLICK_NODE: ["[@click=app.quit]x  baremetal  state ready", "RDMA: 16 NICs x 200 Gb/s on [/;",
                         r"\x1b[31mred-job", r"\x1b]0;pwned\x07nb", "[@click=app.quit]job 1 GPU"],
            OSC_NODE: [r"\x1b]0;pwned\x07x  baremetal  state cordoned", r"on \x1b[2Jnet"],
            SLASH_NODE: ["[/  vsphere  state ready", "A100DX-80C > vm [@click=app.quit]vm",
                         r"A100DX-80C > vm \x1b[2J\x1b[31mvm", r"device group 2: \x1b]0;pwned\x07dg [2 3]"],
        }
        for position, (node, pieces) in enumerate(expected.items()):
            await press(pilot, "g", *["down"] * position, "enter")
            assert isinstance(app.screen, NodeScreen) and app.screen.node == node
            assert_literal(app, *pieces)
            await click_every(pilot, app, "[@click=app.quit]")
            await press(pilot, "escape")
            assert isinstance(app.screen, ListingScreen)
        assert not notes(app)


# the rows to describe: every node, job and queue; a GPU of each node (whole, MIG, time-sliced, vGPU)
@pytest.mark.parametrize(("view", "rows"), [("nodes", range(3)), ("jobs", range(6)), ("queues", range(2)),
                                             ("gpus", (2, 3, 4, 8))])
async def test_describe_every_hostile_row_as_text_and_yaml(hostile_state: Path, view: str, rows: range) -> None:
    service = Service(state_dir=hostile_state)
    app = make_app(Service(state_dir=hostile_state), view=view)
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await settle(pilot)
        for position in rows:
            await press(pilot, "g", *["down"] * position)
            row = cursor_row(app)
            await press(pilot, "d")
            screen = app.screen
            assert isinstance(screen, DescribeScreen)
            kind, name = screen.title_text.split(" ", 1)
            assert name == str(row["NAME"])
            assert screen.data["name"] == name and screen.data == {**service.describe(kind, name),
                                                                    **({"pending": screen.data["pending"]}
                                                                       if "pending" in screen.data else {})}
            assert_literal(app, f"text: {kind} {safe(name)}")  # the title: the name, control bytes escaped
            await click_every(pilot, app, "[@click=app.quit]")
            await press(pilot, "y")
            assert_literal(app)
            await press(pilot, "escape")
        assert not notes(app)


async def test_help_over_a_hostile_cluster(hostile_state: Path) -> None:
    app = make_app(Service(state_dir=hostile_state), view="jobs")
    async with app.run_test(size=(120, 80), notifications=True) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert_literal(app, "app.quit", "edit.submit_job")
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen)


async def test_filters_on_hostile_names(hostile_state: Path) -> None:
    app = make_app(Service(state_dir=hostile_state), view="jobs")
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        await settle(pilot)
        await filter_rows(pilot, "[@click=app.quit]job")  # has `=`: a selector, and `[@click` is no key
        assert errors(app) == ["unknown selector key '[@click'; known keys: age, message, name, owner, placement, "
                               "preemptible, priority, queue, reason, remedy, request, status, submitted, vm"]
        assert_literal(app, "unknown selector key '[@click'")
        await click_every(pilot, app, "[@click")
        await filter_rows(pilot, "[@click")  # a substring: names, queues, placements
        assert shown(app) == ["[@click=app.quit]job", "\x1b[31mred-job", "\x1b]0;pwned\x07nb", "[bold]pending",
                              "\x9b31mc1\u202eevil"]
        assert header(app).endswith("jobs /[@click")
        assert status_line(app) == " jobs: 5 of 6  filter /[@click"
        assert_literal(app, "filter /[@click")
        await click_every(pilot, app, "[@click=app.quit]")
        await filter_rows(pilot, "[bold]")
        assert shown(app) == ["[bold]pending"]
        assert_literal(app, "filter /[bold]")
        await filter_rows(pilot, "name=[/")  # a selector value
        assert shown(app) == ["[/"]
        await filter_rows(pilot, "\x1b[31m")  # a control byte in a filter shows escaped
        assert shown(app) == ["\x1b[31mred-job", "[/"]
        assert_literal(app, r"filter /\x1b[31m")
        await press(pilot, "escape", "7")
        await press(pilot, "down", "enter")  # Enter on the queue `\x1b[31mred-queue`: its jobs
        assert app.current_mode == "jobs"
        assert shown(app) == ["\x1b[31mred-job", "[/"]
        assert_literal(app, r"jobs /queue=\x1b[31mred-queue")
        await press(pilot, "slash", "up")  # Up recalls the filter to edit, the ESC as a picture of itself
        assert_literal(app, "queue=\u241b[31mred-queue")
        await press(pilot, "enter")  # and gives it back as it was
        assert shown(app) == ["\x1b[31mred-job", "[/"]
        await filter_rows(pilot, "[/")  # not a markup closing tag
        assert shown(app) == ["[/"]
        assert_literal(app, "jobs: 1 of 6  filter /[/")
        assert len(errors(app)) == 1


async def test_enter_on_a_queue_whose_name_no_selector_can_hold(hostile_state: Path) -> None:
    """`[@click=app.quit]q` holds an `=`: `queue=...` cannot name it. The console says so, literally."""
    app = make_app(Service(state_dir=hostile_state), view="queues")
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        assert app.is_running and app.current_mode == "jobs"
        assert errors(app) == ["bad selector term 'queue=[@click=app.quit]q' (hint: write key=value, key!=value, "
                               "key in (a,b), key or !key)"]
        assert_literal(app, "bad selector term 'queue=[@click=app.quit]q'")
        await click_every(pilot, app, "[@click=app.quit]")


async def test_notifications_show_names_literally(hostile_state: Path) -> None:
    app = make_app(Service(state_dir=hostile_state), view="nodes")
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot)
        await command(pilot, "node [bold]nope")
        await press(pilot, "escape")
        await command(pilot, "theme [@click=app.quit]t")
        await command(pilot, "[@click=app.quit]")
        await command(pilot, "sort [/")
        assert [message for _, _, message in notes(app)] == [
            "node '[bold]nope' not found",
            "unknown theme '[@click=app.quit]t'; gpuadmin's: gpuadmin-ansi, gpuadmin-contrast, gpuadmin-dark, "
            "gpuadmin-light (Textual's own also work)",
            "unknown command '[@click=app.quit]'; `?` lists them",
            "no column '[/' to sort by here",
        ]
        assert_literal(app, "node '[bold]nope' not found", "unknown theme '[@click=app.quit]t'", "no column '[/'")
        await click_every(pilot, app, "[@click=app.quit]")


async def test_plan_review_and_journal_of_a_hostile_node(hostile_state: Path) -> None:
    app = make_app(Service(state_dir=hostile_state), view="nodes")
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot)
        await press(pilot, "c")
        assert isinstance(app.screen, PlanReviewScreen)
        assert_literal(app, "plan: cordon [@click=app.quit]x", "~ node/[@click=app.quit]x")
        await click_every(pilot, app, "[@click=app.quit]")
        await press(pilot, "y")
        assert notes(app)[-1][2] == "applied: revision 1"
        await press(pilot, "down", "r")  # drain the node named with an OSC sequence: its name is asked for
        review = app.screen
        assert isinstance(review, PlanReviewScreen) and review.asked.token == OSC_NODE
        assert_literal(app, r"plan: drain \x1b]0;pwned\x07x", r"Type '\x1b]0;pwned\x07x' to apply")
        await press(pilot, "escape")
        await press(pilot, "8")
        assert_literal(app, "cordon")
        await press(pilot, "G", "d")
        assert isinstance(app.screen, DescribeScreen)
        assert_literal(app, "node/[@click=app.quit]x", "state: ready -> cordoned")
        await click_every(pilot, app, "[@click=app.quit]")
    assert app.return_code is None  # never quit by a click


async def test_forms_over_hostile_names(hostile_state: Path) -> None:
    """The edit forms show the names they offer or start from literally: a VM choice, a device group's name in
    a field's value (its OSC bytes drawn as pictures, ␛ and ␇, one cell each), a MIG form's title."""
    app = make_app(Service(state_dir=hostile_state), view="nodes")
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot)
        await press(pilot, "G", "D")  # device groups of `[/`
        assert_literal(app, "device groups of [/", "[bold]dg:0,1 \u241b]0;pwned\u2407dg:2,3")
        field = app.screen.query_one("#field-groups")
        assert field.value == "[bold]dg:0,1 \x1b]0;pwned\x07dg:2,3"  # the value is kept as it is
        await press(pilot, "escape", "a")  # attach a VM: the VMs and device groups as choices
        await press(pilot, "enter")  # open the VM list
        assert_literal(app, "[@click=app.quit]vm", r"\x1b[2J\x1b[31mvm")
        await click_every(pilot, app, "[@click=app.quit]vm", most=1)  # picks it: a choice, not an action
        await press(pilot, "escape", "escape")
        await press(pilot, "3", "g", "down", "down", "m")  # the MIG form of `[@click=app.quit]x`/2
        assert_literal(app, "repartition MIG: [@click=app.quit]x/2")
        await click_every(pilot, app, "[@click=app.quit]")
        await press(pilot, "escape")
        assert isinstance(app.screen, ListingScreen) and app.is_running
    assert Service(state_dir=hostile_state).revision() == 0


def test_an_error_naming_hostile_text_is_escaped_in_a_notification() -> None:
    """The lock file is anyone's to write: its holder's text reaches a notification escaped, as on stderr."""
    holder = LockHolder(actor="\x1b]52;c;cHduZWQ=\x07mallory", uid=1000, pid=1, host="\x1b[2Jbastion",
                        command="gpuadmin apply \u202eevil\x9b", since="2026-12-03T10:00:00Z")
    shown = error_lines(LockHeld(holder))
    assert not RAW.findall(shown)
    assert shown == (r"conflict: state is locked by \x1b]52;c;cHduZWQ=\x07mallory (pid 1 on \x1b[2Jbastion, "
                     r"gpuadmin apply \u202eevil\x9b, since 10:00:00Z)")
