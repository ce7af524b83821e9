"""The console app: views as modes (one back stack each), k9s navigation, themes, keymap, the one gate.

Every view is reachable by a `:` alias and by a digit. Enter drills down, Esc goes back (within the
view, then to the view before), `/` filters, `:` commands (with completion and history), `?` lists the keys
of the view on top (grouped by `gpuadmin.tui.keys`), `d`/`y` describe the selection as text or YAML, `q`, `:q`
and ctrl+c quit. Mutating actions are allowed or refused in one place, `check_action`, which asks the service's
permission gate; a refused key is not silent (`on_key` says why: the role, or where the key works).

Every edit adds its changes to the session's draft (`gpuadmin.tui.draft`) and opens the review of the whole
draft: one plan, applied as one journal entry.

The app never calls the service itself: it and its screens send requests to the service worker
(`gpuadmin.tui.worker`) and act on the answers, so no key waits for the engine. Work a user waits for (a
describe, an edit's form, a plan, an apply) shows a "working" line at once on the view that asked; Esc
cancels it (see `cancel_foreground`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textual import events
from textual.actions import parse as parse_action
from textual.app import App
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.widgets import Input

from gpuadmin.errors import Diagnostic, GpuadminError, InputError
from gpuadmin.render.cycle_summary import cycle_summary, summary_text
from gpuadmin.render.plan import step_lines
from gpuadmin.render.text import safe, to_ascii
from gpuadmin.service import (
    Moved,
    PasswordNeeded,
    Plan,
    Remedy,
    Reversal,
    Service,
    Stale,
    confirmation,
    console_of,
    planned_cluster_steps,
)
from gpuadmin.tui.cluster_link import ClusterBatchArrived, ClusterLinkKeeper, ClusterStatusChanged
from gpuadmin.tui.draft import DraftEdit, draft_items, draft_lines, draft_title
from gpuadmin.tui.edits import EDITS, EDITS_BY_ID, Edit, Row
from gpuadmin.tui.keys import KeyRow, is_global, refused_to
from gpuadmin.tui.metrics_poll import METRICS_SECONDS, MetricsPoller
from gpuadmin.tui.screens.base import ViewScreen
from gpuadmin.tui.screens.describe import DescribeScreen
from gpuadmin.tui.screens.form import FormScreen, FormSpec, Items
from gpuadmin.tui.screens.help import HelpScreen
from gpuadmin.tui.screens.listing import TELEMETRY_THINGS, ListingScreen, TableScreen
from gpuadmin.tui.screens.mig_form import MigFormScreen
from gpuadmin.tui.screens.node import NodeScreen
from gpuadmin.tui.screens.overview import Drill, OverviewBody, OverviewScreen
from gpuadmin.tui.screens.password import PasswordScreen
from gpuadmin.tui.screens.progress import ProgressScreen
from gpuadmin.tui.screens.review import PlanReviewScreen
from gpuadmin.tui.screens.telemetry import IdleScreen, TopScreen
from gpuadmin.tui.screens.topology import TopologyScreen
from gpuadmin.tui.session import OpenedState, Session, error_lines, open_state, poll_moved
from gpuadmin.tui.settings import (
    default_theme,
    load_keymap,
    load_settings,
    load_themes,
    save_settings,
    settings_path,
)
from gpuadmin.tui.widgets.boards import BoardsView
from gpuadmin.tui.widgets.prompt import Prompt
from gpuadmin.tui.widgets.table import RowTable
from gpuadmin.tui.worker import Request, ServiceAnswer, ServiceWorker

# view -> (its `:` aliases, its digit key, a line for help)
VIEWS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "overview": (("overview", "home", "o"), "1", "the cluster at a glance"),
    "nodes": (("nodes", "node", "no"), "2", "nodes: GPU mix, use, modes, RDMA, state"),
    "gpus": (("gpus", "gpu"), "3", "every GPU with its layout and holders"),
    "topology": (("topology", "topo", "groups", "nvswitch"), "4", "NVLink domains, device groups, NICs"),
    "slices": (("slices", "slice", "mig"), "5", "every MIG instance, replica and vGPU with its holder"),
    "jobs": (("jobs", "job", "pending"), "6", "jobs: why pending and the remedy; placements"),
    "queues": (("queues", "queue", "quota"), "7", "quota, use and borrowing"),
    "journal": (("journal", "history", "log"), "8", "every change: who, from where, outcome, diff"),
    "top": (("top",), "9", "GPUs and MIG instances by errors, use, heat (telemetry)"),
    "idle": (("idle",), "0", "slices held idle: GPU-hours wasted per queue"),
}
COMMANDS: list[tuple[str, str]] = [
    *((aliases[0] + " [FILTER]", text) for aliases, _, text in VIEWS.values()),
    ("node NAME", "open one node"), ("sort COLUMN", "sort the table (again: reverse)"),
    ("theme [NAME]", "switch theme (no name: list them)"),
    ("state DIR", "switch to another state directory (no DIR: say which this is)"),
    ("help", "this list"), ("q, quit", "quit"),
]
# how often the console asks whether the revision moved: one small query, so an apply elsewhere shows well
# within a second (issue 9: noticed within 1 s), and a quiet state costs nothing else
WATCH_SECONDS = 0.5
# actions that change the cluster: the gate decides, views never do
MUTATING = {"node_state", "reverse", "schedule", "edit", "remedy", "draft"}


@dataclass(frozen=True)
class Marks:
    """The marked rows a bulk action acts on: every one, those the filter hides too (k9s acts on all its
    marks), so the review names each and says which are off screen."""

    table: RowTable
    names: list[str]
    hidden: list[str]
    filter_text: str

    def note(self) -> str:
        text = f"{len(self.names)} marked: {', '.join(safe(n) for n in self.names)}."
        if self.hidden:
            text += (f" {len(self.hidden)} of them hidden by the filter /{safe(self.filter_text)}: "
                     f"{', '.join(safe(n) for n in self.hidden)}.")
        return text + " The marks are cleared once this plan is applied."


def _view_factory(view: str) -> Any:
    if view == "overview":
        return OverviewScreen
    if view == "topology":
        return TopologyScreen
    if view == "top":
        return TopScreen
    if view == "idle":
        return IdleScreen
    return lambda: ListingScreen(view)


class GpuadminApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "gpuadmin"
    ENABLE_COMMAND_PALETTE = False
    MODES: ClassVar[dict[str, Any]] = {view: _view_factory(view) for view in VIEWS}
    BINDINGS: ClassVar[list[BindingType]] = [
        # priority: taken before the key reaches a widget, so what is typed right after `:` lands in the prompt
        Binding("colon", "prompt('command')", "command", priority=True, id="app.command"),
        Binding("slash", "prompt('filter')", "filter", priority=True, id="app.filter"),
        Binding("question_mark", "help", "help", id="app.help"),
        Binding("escape", "go_back", "Back", show=False, id="app.back"),
        Binding("d", "describe('text')", "Describe", id="app.describe"),
        Binding("y", "describe('yaml')", "YAML", show=False, id="app.yaml"),
        Binding("q", "leave", "Quit", id="app.quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="app.quit_now"),
        *(Binding(console_of(op).key, f"node_state('{op}')", console_of(op).label, show=op == "cordon",
                  id=console_of(op).binding) for op in ("cordon", "uncordon", "drain")),
        Binding("ctrl+z", "reverse('undo')", "Undo", id="edit.undo"),
        Binding("ctrl+y", "reverse('redo')", "Redo", id="edit.redo"),
        Binding("U", "reverse('undo_to')", "Undo to here", id="edit.undo_to"),
        Binding("b", "draft", "Draft", show=False, id="edit.draft"),  # the header's DRAFT N says when it holds changes
        Binding("p", "schedule", "Schedule", id="edit.schedule"),
        Binding("R", "remedy", "Remedy", id="edit.remedy"),
        *(Binding(edit.key, f"edit('{edit.id}')", edit.label, id=edit.id) for edit in EDITS),
        *(Binding(key, f"view('{view}')", view, show=False, id=f"view.{view}")
          for view, (_, key, _) in VIEWS.items()),
    ]

    def __init__(self, service: Service, *, theme: str | None = None, view: str = "overview",
                 notice: str | None = None, color: bool = True, ascii_only: bool = False,
                 metrics_seconds: float = METRICS_SECONDS) -> None:
        super().__init__()
        # a terminal whose locale is not UTF-8 (LANG=C) or `--ascii`: ASCII borders (app.tcss, `App.-ascii`), key
        # names, and every other character the console writes as ASCII of the same width (`to_ascii`)
        self.ascii_only = ascii_only
        self.set_class(ascii_only, "-ascii")
        if ascii_only:
            self.driver_class = ascii_driver(self.driver_class)
        self.session = Session(service)
        self.service_worker = self.session.worker = ServiceWorker(service, self)
        self._themes = load_themes()  # InputError (exit 2) on a broken theme file, before anything starts
        for loaded in self._themes.values():
            self.register_theme(loaded)
        self.theme = self._starting_theme(theme, color)
        self._keymap = load_keymap(self.binding_ids())
        self.start_view = view
        self.notice = notice
        self.mode_history: list[str] = []
        self.prompt_history: dict[str, list[str]] = {"command": [], "filter": []}  # shared by every view's prompt
        self.live: set[ViewScreen] = set()
        self._cycle: tuple[Plan, str] | None = None  # a finished scheduling cycle and its summary, for its review
        self._foreground: Request[Any] | None = None  # the long work a user waits for (Esc cancels it)
        self._polling: Request[Any] | None = None  # the live watch's question, while it is out
        self.cluster_link = ClusterLinkKeeper(self, self._state_moved)  # a state bound to a cluster or vCenter
        self.metrics = MetricsPoller(self.session, self.refresh_header, self._telemetry_refreshed, metrics_seconds)

    def _starting_theme(self, asked: str | None, color: bool) -> str:
        """--theme wins; then NO_COLOR's high-contrast theme; then the one `:theme` last saved (settings.yaml);
        then the one picked for the terminal. An unknown name is an InputError (exit 2), naming the settings
        file and its line where that is where it comes from."""
        if asked is not None or not color:
            wanted = asked or "gpuadmin-contrast"
            if wanted not in self.available_themes:
                raise InputError([_unknown_theme(wanted, self.available_themes)])
            return wanted
        saved = load_settings().theme  # InputError (exit 2) on a settings file that does not read
        if saved is None:
            return default_theme()
        if saved not in self.available_themes:
            path = settings_path()
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            line = next((n for n, text in enumerate(lines, 1) if text.startswith("theme:")), None)
            raise InputError([_unknown_theme(saved, self.available_themes).located(str(path), line, None)])
        return saved

    def get_key_display(self, binding: Binding) -> str:
        """Textual's key names (the footer, the help), spelt out in ASCII mode: `enter`, not `⏎`."""
        shown = super().get_key_display(binding)
        if not self.ascii_only or shown.isascii():
            return shown
        return "+".join(part if part.isascii() else ASCII_KEY_NAMES.get(part, to_ascii(part))
                        for part in shown.split("+"))

    # the last resort ---------------------------------------------------------------------------------
    unexpected: Exception | None = None  # what ended the console unhandled, for the CLI to say in one line

    def _handle_exception(self, error: Exception) -> None:
        """Textual's hook for an exception no handler caught (it ends the app). Kept for `gpuadmin tui` to say in
        one line once the terminal is restored, with exit 70 (`cli.main.last_resort`), instead of Textual's
        traceback, which prints the locals — names from the inventory among them — raw to the terminal, and
        exits 1, which means "refused by a rule". Under a test's pilot the exception is still raised."""
        self.unexpected = error
        super()._handle_exception(error)
        self._exit_renderables.clear()

    # start ---------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.service_worker.start()
        self.cluster_link.start()
        self.set_keymap(self._keymap)
        self.switch_mode(self.start_view)
        if self.notice:
            self.notify(self.notice, title="gpuadmin", timeout=12, markup=False)
        self.set_interval(WATCH_SECONDS, self._watch)
        self.metrics.tick()
        self.set_interval(self.metrics.seconds, self.metrics.tick)

    @classmethod
    def binding_owners(cls) -> tuple[type[Any], ...]:
        """Every class whose bindings the keymap may remap: the app, the table, the prompt, the pop-ups."""
        return (cls, RowTable, ListingScreen, TopScreen, OverviewBody, BoardsView, TopologyScreen, Prompt,
                DescribeScreen, HelpScreen, PlanReviewScreen, FormScreen, MigFormScreen, ProgressScreen, PasswordScreen)

    @classmethod
    def all_bindings(cls) -> list[Binding]:
        """Every binding of the console with an id: the app's, the table's, the prompt's, the pop-ups'."""
        return [binding for owner in cls.binding_owners() for binding in owner.BINDINGS
                if isinstance(binding, Binding) and binding.id]

    @classmethod
    def binding_ids(cls) -> set[str]:
        return {binding.id for binding in cls.all_bindings() if binding.id}

    def command_words(self) -> list[str]:
        words = [alias for aliases, _, _ in VIEWS.values() for alias in aliases]
        return [*words, "node ", "sort ", "theme ", "state ", "help", "quit", "q"]

    # the live watch: another console's or a script's apply, noticed within a second ------------------
    def _watch(self) -> None:
        """Ask whether the revision moved, unless the last question is still out (behind long work)."""
        if self._polling is not None:
            return
        revision = self.session.revision
        self._polling = self.session.ask(Request("watching for changes", lambda service: poll_moved(service, revision),
                                                 self._polled, failed=lambda _: self._polled(None)))

    def _polled(self, moved: Moved | None) -> None:
        self._polling = None
        if moved is not None:
            self._state_moved(moved)

    def _state_moved(self, moved: Moved) -> None:
        """The state is at a new revision (an apply elsewhere, a sync from the cluster): every view re-reads."""
        self.session.revision = moved.revision
        for screen in list(self.live):
            screen.state_moved(moved)

    # the watch of a state bound to a cluster or a vCenter (gpuadmin.tui.cluster_link) --------------
    def on_cluster_batch_arrived(self, message: ClusterBatchArrived) -> None:
        self.cluster_link.batch_arrived(message)

    def on_cluster_status_changed(self, message: ClusterStatusChanged) -> None:
        self.cluster_link.status_changed(message)

    def on_password_screen_submitted(self, message: PasswordScreen.Submitted) -> None:
        self.cluster_link.log_in(message.password)

    def on_password_screen_skipped(self, _message: PasswordScreen.Skipped) -> None:
        self.cluster_link.login_skipped()

    def _telemetry_refreshed(self) -> None:
        """New readings (gpuadmin.tui.metrics_poll): the views showing them re-read, the others when shown."""
        for screen in list(self.live):
            if isinstance(screen, (TopScreen, OverviewScreen)) or (  # the overview: its firing alerts
                    isinstance(screen, ListingScreen) and screen.kind in TELEMETRY_THINGS):
                screen.readings_moved()

    def refresh_header(self) -> None:
        # a watch's status may arrive while the console closes, its screens already gone: nothing to draw then
        if self.screen_stack and isinstance(self.screen, ViewScreen):
            self.screen.update_header()

    # the service worker's answers, and the work a user waits for -------------------------------------
    def on_service_answer(self, answer: ServiceAnswer) -> None:
        request = answer.request
        wanted = self.service_worker.answered(request)
        if request is self._foreground:
            self._foreground = None
            if isinstance(request.owner, ViewScreen) and request.owner.is_attached:
                request.owner.working(None)
            # a read the user waited for acts only on the view that asked, if it is still on top (a write's
            # outcome is said wherever the user is)
            wanted = wanted and (not request.cancellable or request.owner is self.screen)
        if answer.crash is not None:
            raise answer.crash
        if request is self._polling and not wanted:  # never cancelled; a closed app drops it anyway
            self._polling = None
        if not wanted:
            self.metrics.dropped(request)
        if not wanted:
            return
        if answer.error is not None:
            request.failed(answer.error)
        else:
            request.then(answer.value)

    def foreground(self, request: Request[Any], hint: str = "Esc cancels") -> None:
        """Send work the user waits for: a "working" line shows on the view at once (the key is answered),
        and the answer acts only if that view is still the one on top. A newer one replaces it."""
        screen = self.screen
        earlier = self._foreground
        if earlier is not None:
            earlier.cancel()
            if earlier.owner is not screen and isinstance(earlier.owner, ViewScreen) and earlier.owner.is_attached:
                earlier.owner.working(None)
        request.owner = screen
        self._foreground = request
        if isinstance(screen, ViewScreen):
            screen.working(f"{request.label}... ({hint})")
            # The worker starts once that line is drawn: begun at once, its work held the interpreter (one GIL
            # for both threads) while the frame that acknowledges the key waited (bench_tui --keys: 270 ms).
            self.call_after_refresh(self.session.ask, request)
            return
        self.session.ask(request)

    def cancel_foreground(self) -> bool:
        """Esc on long work: a read is dropped, or its answer discarded if it has started; a write (an apply)
        is dropped only before it starts — once started it finishes, and its outcome is shown."""
        request = self._foreground
        if request is None:
            return False
        if request.cancel():
            self._foreground = None
            if isinstance(request.owner, ViewScreen):
                request.owner.working(None)
            self.notify(f"cancelled: {request.label}", markup=False)
        else:
            self.notify(f"{request.label}: started, it cannot be stopped half-way; its outcome will show",
                        severity="warning", markup=False)
        return True

    def _failed(self, failed: GpuadminError) -> None:
        self.notify(error_lines(failed), title=failed.label or "", severity="error", markup=False)

    def on_unmount(self) -> None:
        self.cluster_link.stop()
        self.service_worker.stop()

    # the gate --------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MUTATING and self.session.readonly:
            # hidden: a viewer sees no key that would change the cluster (`on_key` says why when one is pressed),
            # but may run the scheduling cycle as a dry run
            return action == "schedule" and isinstance(self.screen, ViewScreen)
        return self.acts_here(action, parameters)

    def acts_here(self, action: str, parameters: tuple[object, ...]) -> bool:
        """Whether a key acts on the screen on top, whatever the role may do: the gate adds the role, and `?`
        lists the keys that act here, marking those the role may not use."""
        if action == "node_state":
            return self._selected_node() is not None
        if action == "reverse":
            return isinstance(self.screen, TableScreen) and self.screen.kind == "journal"
        if action == "schedule":
            return isinstance(self.screen, ViewScreen)
        if action == "edit":
            return self._edit_target(EDITS_BY_ID[str(parameters[0])])[0]
        if action == "remedy":
            return self._pending_job() is not None or self._idle_remedy() is not None
        if action == "draft":  # in every view; on an empty draft it says so
            return isinstance(self.screen, ViewScreen)
        if action == "leave":  # q quits from a view; in a form or a review it is a letter, not a way out
            return isinstance(self.screen, ViewScreen)
        if action == "prompt":  # in a text field `:` and `/` are characters (a filter, a path), in their order
            return not isinstance(self.focused, Input)
        if action == "describe":
            return isinstance(self.screen, ViewScreen) and self.screen.selected() is not None
        return True

    def on_key(self, event: events.Key) -> None:
        """A key no active binding took: if it is a hidden change key, say why it does nothing here."""
        if event.key in self.active_bindings or not isinstance(self.screen, ViewScreen):
            return
        hidden = [binding for _, bindings in self.screen._binding_chain
                  for binding in bindings.key_to_bindings.get(event.key, ())
                  if binding.action.split("(")[0] in MUTATING]
        if not hidden:
            return
        action = hidden[0].action.split("(")[0]
        if self.session.readonly:
            self.notify(self.session.why_readonly(), title="read-only", severity="warning", markup=False)
        elif action == "reverse":
            self.notify("undo and redo work in the journal view (8, or :journal), on its entries",
                        severity="warning", markup=False)

    # navigation ------------------------------------------------------------------------------------
    def action_view(self, view: str) -> None:
        self.open_view(view)

    def open_view(self, view: str, filter_text: str = "") -> None:
        if self.current_mode != view:
            self.mode_history.append(self.current_mode)
            self.switch_mode(view)
        if filter_text:
            self.call_after_refresh(self._filter_current, filter_text)

    def _filter_current(self, text: str) -> None:
        if isinstance(self.screen, ViewScreen):
            self._apply_filter(self.screen, text)

    def action_go_back(self) -> None:
        screen = self.screen
        if self.cancel_foreground():
            return
        if len(self.screen_stack) > 1:
            self.pop_screen()
        elif isinstance(screen, TableScreen) and screen.filter_text:
            self._apply_filter(screen, "")
        elif self.mode_history:
            self.switch_mode(self.mode_history.pop())

    def drill_down(self, kind: str, row: dict[str, Any]) -> None:
        """Enter on a row opens the thing under the cursor: a node's screen; a GPU: its node's screen at that
        GPU; a slice: the job holding it (one job), else its GPU; a queue's jobs; a job's or an entry's
        describe."""
        if kind == "nodes":
            self.open_thing("node", str(row["NAME"]))
        elif kind == "gpus":
            self.open_thing("gpu", f"{row['NODE']}/{row['GPU']}")
        elif kind == "slices":
            holders = str(row.get("HOLDERS") or "-")
            alone = holders not in ("", "-") and "," not in holders and not holders.startswith("vm:")
            self.open_thing(*(("job", holders) if alone else ("gpu", f"{row['NODE']}/{row['GPU']}")))
        elif kind == "queues":
            self.open_view("jobs", f"queue={row['NAME']}")
        elif kind == "jobs":
            self._describe("job", str(row["NAME"]), "text")
        elif kind == "journal":
            self._describe("entry", str(row["ID"]), "text")
        elif kind == "top":
            self.open_thing("gpu", str(row["GPU_NAME"]))
        elif kind == "idle":
            self.open_thing(*(("job", str(row["NAME"])) if row["KIND"] == "job" else ("node", str(row["NODE"]))))

    def open_thing(self, kind: str, name: str) -> None:
        """Open what a cursor is on: a node's screen, a GPU (its node's screen at it: `NODE/INDEX`), a job's
        describe."""
        if kind == "job":
            self._describe("job", name, "text")
        elif kind == "gpu":
            node, _, index = name.rpartition("/")
            self.push_screen(NodeScreen(node, gpu=int(index)))
        else:
            self.push_screen(NodeScreen(name))

    def drill_to(self, target: Drill) -> None:
        """Enter on an overview count: the listing behind it, filtered (the pending jobs of one reason by the
        jobs' REASON column), or one node's screen."""
        if target.node:
            self.push_screen(NodeScreen(target.node))
        else:
            self.open_view(target.view, target.filter)

    def action_prompt(self, mode: str) -> None:
        if isinstance(self.screen, ViewScreen):
            self.screen.query_one(Prompt).open(mode, self.screen.filter_text if mode == "filter" else "")

    def on_prompt_done(self, event: Prompt.Done) -> None:
        screen = self.screen
        if not isinstance(screen, ViewScreen):
            return
        screen.query_one(Prompt).close()
        screen.focus_next()
        if event.value is None:
            return
        if event.mode == "filter":
            self._apply_filter(screen, event.value)
        else:
            self.run_command(event.value)

    def _apply_filter(self, screen: ViewScreen, text: str) -> None:
        try:
            screen.apply_filter(text)
        except InputError as bad:
            self.notify(error_lines(bad), title="filter", severity="error", markup=False)

    def run_command(self, line: str) -> None:
        """A `:` command: a view alias (with an optional filter), node NAME, sort, theme, help, quit."""
        word, _, rest = line.strip().partition(" ")
        word, rest = word.lower(), rest.strip()
        if word in ("q", "q!", "quit", "exit"):
            self.exit(0)
            return
        if word == "node" and rest:  # before the aliases: `node` alone is the nodes view, `node NAME` one node
            self.push_screen(NodeScreen(rest))
            return
        for view, (aliases, _, _) in VIEWS.items():
            if word in aliases:
                self.open_view(view, rest)
                return
        if word == "sort" and isinstance(self.screen, ViewScreen):
            if not self.screen.sort_by(rest):
                self.notify(f"no column {rest!r} to sort by here", severity="warning", markup=False)
        elif word == "theme":
            self._switch_theme(rest)
        elif word == "state":
            self.switch_state(rest)
        elif word in ("help", "?"):
            self.action_help()
        else:
            self.notify(f"unknown command {line!r}; `?` lists them", severity="error", markup=False)

    def switch_state(self, directory: str) -> None:
        """`:state DIR`: the console on another state without a restart (the seed of `:ctx`). It is opened on the
        service worker, which runs on it from then on; a bad DIR is a notification naming the reason, and the
        console stays on the state it shows."""
        if not directory:
            self.notify(f"on {safe(self.session.place)} (cluster {safe(self.session.cluster)}); "
                        "`:state DIR` opens another",
                        markup=False)
            return

        def reopen(service: Service) -> OpenedState:
            opened = open_state(service, directory)
            self.service_worker.service = opened.service  # this thread's next request runs on it
            return opened

        # not cancellable once started: the worker has moved to the new state, and the console must follow
        self.foreground(Request(f"opening state {directory}", reopen, self._state_opened, failed=self._failed,
                                cancellable=False))

    def _state_opened(self, opened: OpenedState) -> None:
        """Show the new state: what belonged to the old one (a node's screen, a review, a scheduling cycle,
        marks) is dropped, every view reads again, the header says where the console is now; the watch of the
        cluster the old state was bound to stops, the new one's starts."""
        self.cluster_link.stop()
        self.session.rebind(opened)
        self.cluster_link.start()
        self._cycle = None
        while len(self.screen_stack) > 1:  # down to the view the mode opened with
            self.pop_screen()
        for screen in list(self.live):
            screen.stale = True
            if isinstance(screen, TableScreen):
                screen.query_one(RowTable).marked.clear()
        if isinstance(self.screen, ViewScreen):
            self.screen.load()
            self.screen.update_header()
        self.notify(f"now on state {safe(self.session.place)}: cluster {safe(opened.cluster)}, "
                    f"revision {opened.revision}, role {self.session.role}", markup=False)

    def _switch_theme(self, name: str) -> None:
        if not name:
            names = ", ".join(sorted(n for n in self.available_themes if n.startswith("gpuadmin")))
            self.notify(f"themes: {names} (and Textual's own); now {self.theme}", markup=False)
        elif name in self.available_themes:
            self.theme = name
            self._save_theme(name)
        else:
            self.notify(str(_unknown_theme(name, self.available_themes)), severity="error", markup=False)

    def _save_theme(self, name: str) -> None:
        """Remember the theme for the next start; a settings file that cannot be read or written is said, and
        the theme still applies to this session."""
        try:
            save_settings(load_settings().model_copy(update={"theme": name}))
        except InputError as bad:
            self.notify(error_lines(bad), title="theme not saved", severity="warning", markup=False)
        except OSError as failed:
            self.notify(f"theme not saved to {safe(settings_path())}: {safe(failed.strerror or failed)}",
                        severity="warning", markup=False)

    def action_help(self) -> None:
        """`?`: the keys that act on the screen on top (grouped), then the global ones."""
        screen = self.screen
        title = screen.view_name if isinstance(screen, ViewScreen) else "this screen"
        # the focused widget's keys and its screen's (a table's moves, the view's reload), then the app's
        own = [row for node in (self.focused or screen).ancestors_with_self if node is not self
               for row in self._key_rows(node.BINDINGS)]
        here = [*own, *self._key_rows(self.BINDINGS, globals_only=False)]
        self.push_screen(HelpScreen(title, here, self._key_rows(self.BINDINGS, globals_only=True),
                                    self.session.role, COMMANDS))

    def _key_rows(self, bindings: list[BindingType], globals_only: bool | None = None) -> list[KeyRow]:
        """`?`'s lines for these bindings (those with an id), keyed as the keymap has them: with `globals_only`
        True the global keys, False the others that act here (an edit: in its views, whatever the cursor is on),
        None every one."""
        rows = []
        for binding in bindings:
            if not isinstance(binding, Binding) or not binding.id:
                continue
            if globals_only is not None and is_global(binding.id) != globals_only:
                continue
            _, action, parameters = parse_action(binding.action)
            if globals_only is False and not self._acts_in_view(action, parameters):
                continue
            needs = refused_to(self.session.role, binding.id) if action in MUTATING else None
            rows.append(KeyRow(self._keymap.get(binding.id, binding.key), binding.description or action,
                               binding.id, needs or ""))
        return rows

    def _acts_in_view(self, action: str, parameters: tuple[object, ...]) -> bool:
        if action == "edit":  # the edits of this view, listed with or without a row under the cursor
            screen = self.screen
            return isinstance(screen, ViewScreen) and screen.view_name in EDITS_BY_ID[str(parameters[0])].views
        if action == "remedy":  # on the jobs view, listed whatever job the cursor is on (it acts on a pending one)
            return isinstance(self.screen, TableScreen) and self.screen.kind == "jobs"
        return self.acts_here(action, parameters)

    def action_describe(self, fmt: str) -> None:
        if isinstance(self.screen, ViewScreen):
            selected = self.screen.selected()
            if selected is not None:
                self._describe(*selected, fmt)

    def _describe(self, kind: str, name: str, fmt: str) -> None:
        def read(service: Service) -> dict[str, Any]:
            return service.describe(kind, name)  # a pending job's carries why it waits (`pending`)

        def show(data: dict[str, Any]) -> None:
            node, _, index = name.rpartition("/")
            gpu = (self.session, node, int(index)) if kind == "gpu" and index.isdigit() else None
            self.push_screen(DescribeScreen(f"{kind} {name}", data, fmt, gpu=gpu))

        self.foreground(Request(f"describing {kind} {name}", read, show, failed=self._failed))

    def action_leave(self) -> None:
        self.exit(0)

    # changes: built here, planned and applied by the service, reviewed on screen --------------------
    def _edit_target(self, edit: Edit) -> tuple[bool, Row | None]:
        """Whether an edit applies on the screen on top, and the row it opens with (one node's screen: its name)."""
        screen = self.screen
        if isinstance(screen, NodeScreen):
            return "node" in edit.views, {"NAME": screen.node}
        if isinstance(screen, TableScreen) and screen.kind in edit.views:
            row = screen.current_row()
            return row is not None or not edit.needs_row, row
        return False, None

    def action_edit(self, edit_id: str) -> None:
        edit = EDITS_BY_ID[edit_id]
        marks = next((m for m in map(self._marks, edit.views) if m is not None), None) if edit.bulk else None
        if marks is not None:
            self._edit_marked(edit, marks)
            return
        row = self._edit_target(edit)[1]  # the gate has checked that it applies

        def open_edit(service: Service) -> FormSpec | Items | dict[str, Any]:
            """The edit's form (its choices read from the service), its ready items, or the MIG form's data."""
            opened = edit.open(self.session, row)  # on the service worker: the opener may ask the service
            if opened == "mig":
                assert row is not None
                return service.mig_form(str(row["NODE"]), int(row["GPU"]))
            assert not isinstance(opened, str)
            return opened

        self.foreground(Request(f"opening {edit.label.lower()}", open_edit,
                                lambda opened: self._opened(edit, opened), failed=self._failed))

    def _edit_marked(self, edit: Edit, marks: Marks) -> None:
        """A bulk edit on marked rows: one change item per target (as the row's own edit builds it), one plan."""
        rows = marks.table.marked_rows()

        def open_each(_service: Service) -> Items:
            opened = [edit.open(self.session, row) for row in rows]  # on the service worker, as one edit's
            return [item for items in opened if isinstance(items, list) for item in items]

        self.foreground(Request(f"opening {edit.label.lower()} on {len(rows)} marked", open_each,
                                lambda items: self.review(f"{edit.label.lower()} {', '.join(marks.names)}", items,
                                                          marks),
                                failed=self._failed))

    def _opened(self, edit: Edit, opened: FormSpec | Items | dict[str, Any]) -> None:
        if isinstance(opened, dict):  # the MIG form's data
            title = f"repartition {opened['node']}/{opened['gpu']}"
            self.push_screen(MigFormScreen(self.session, opened), lambda items: self._reviewed_form(title, items))
        elif isinstance(opened, FormSpec):
            self.push_screen(FormScreen(opened), lambda items: self._reviewed_form(opened.title, items))
        else:
            self.review(f"{edit.label.lower()} {', '.join(str(i.get('name', '')) for i in opened)}", opened)

    def _reviewed_form(self, title: str, items: Items | None) -> None:
        if items:
            self.review(title, items)

    def action_schedule(self) -> None:
        """Plan one scheduling cycle in the background (a progress bar; Esc drops it), then review it."""
        progress = ProgressScreen("scheduling cycle (a plan: nothing is applied yet)")
        self.push_screen(progress, self._schedule_done)

        def done(result: tuple[Plan, str]) -> None:
            if self.screen is progress:
                self._cycle = result
                progress.dismiss(True)

        def failed(error: GpuadminError) -> None:
            self._failed(error)
            if self.screen is progress:
                progress.dismiss(False)

        # owned by the progress screen: Esc dismisses it, and the cycle's answer is discarded
        self.session.ask(Request("scheduling cycle", _summarised_cycle, done, failed=failed, owner=progress))

    def _schedule_done(self, finished: bool | None) -> None:
        cycle = self._cycle
        self._cycle = None
        if not finished or cycle is None:
            self.notify("scheduling cycle cancelled: nothing applied", markup=False)
            return
        plan, summary = cycle
        counts = summary.split("\n", 1)[0]  # the summary's first line; the review opens on the summary
        dry_run = (f"role {self.session.role} may not apply this cycle (`gpuadmin whoami` shows why); "
                   "`gpuadmin schedule --dry-run` shows the same" if self.session.readonly else "")
        self._review_plan(f"scheduling cycle: {counts}", plan, replan=_summarised_cycle, summary=summary,
                          dry_run=dry_run)

    def _pending_job(self) -> str | None:
        """The pending (or preempted) job a remedy would be for: the jobs view's row, or the job described."""
        screen = self.screen
        if isinstance(screen, TableScreen) and screen.kind == "jobs":
            row = screen.current_row()
            return str(row["NAME"]) if row is not None and row["STATUS"] in ("pending", "preempted") else None
        if isinstance(screen, DescribeScreen):  # a pending job's description carries its explanation
            return str(screen.data["pending"]["job"]) if "pending" in screen.data else None
        return None

    def _idle_remedy(self) -> tuple[str, list[dict[str, Any]]] | None:
        """In the idle view: the selected holder's remedy (its title and change ops)."""
        return self.screen.remedy() if isinstance(self.screen, IdleScreen) else None

    def action_remedy(self) -> None:
        """Plan the selected pending job's remedy (explain's checked change ops) into the review; in the idle
        view, the selected idle holder's (preempt, cancel, detach), reviewed like every edit."""
        idle = self._idle_remedy()
        if idle is not None:
            self.review(*idle)
            return
        job = self._pending_job()
        if job is None:
            return

        def planned(remedy: Remedy) -> None:
            found = remedy.explanation
            if remedy.plan is None:
                self.notify(f"{job}: no remedy that planning can check ({found.reason}"
                            + (f"; {found.remedy}" if found.remedy else "") + ")", severity="warning", markup=False)
                return
            self._review_plan(f"remedy for {job}: {found.remedy}", remedy.plan,
                              replan=lambda service: _remedy_plan(service, job))

        self.foreground(Request(f"planning the remedy for {job}", lambda service: service.plan_remedy(job), planned,
                                failed=self._failed))

    def _selected_node(self) -> str | None:
        screen = self.screen
        if isinstance(screen, NodeScreen):
            return screen.node
        if isinstance(screen, TableScreen) and screen.kind == "nodes":
            selected = screen.selected()
            return selected[1] if selected else None
        return None

    def _marks(self, kind: str) -> Marks | None:
        """The marks of the `kind` listing on top, if it has any."""
        screen = self.screen
        if not isinstance(screen, TableScreen) or screen.kind != kind:
            return None
        table = screen.query_one(RowTable)
        names = [str(row.get(table.key)) for row in table.marked_rows()]
        return Marks(table, names, table.hidden_marks(), screen.filter_text) if names else None

    def action_node_state(self, op: str) -> None:
        marks = self._marks("nodes")
        selected = self._selected_node()
        names = marks.names if marks is not None else [selected] if selected is not None else []
        if names:
            self.review(f"{op} {', '.join(names)}", [{"op": op, "node": n} for n in names], marks)

    def action_reverse(self, which: str) -> None:
        """Undo, undo back to the selected entry (`undo --to` its revision), or redo from the journal view,
        reviewed like any plan; where it is not available the service says why."""
        selected = self.screen.selected() if isinstance(self.screen, TableScreen) else None
        if which == "undo_to" and selected is None:
            self.notify("undo to here: select a journal entry first", severity="warning", markup=False)
            return
        entry = int(selected[1]) if selected is not None else 0

        def reverse(service: Service) -> Reversal:
            if which == "undo_to":
                return service.undo_to_entry(entry)
            return service.undo() if which == "undo" else service.redo()

        self.foreground(Request(f"planning the {which}", reverse,
                                lambda reversal: self._review_plan(reversal.description, reversal.plan,
                                                                   reversal.intent,
                                                                   replan=lambda service: reverse(service).plan),
                                failed=self._failed))

    def review(self, title: str, items: list[dict[str, Any]], marks: Marks | None = None) -> None:
        """An edit: its changes join the draft, and the whole draft is reviewed as one plan (a single edit is
        reviewed at once as before; Esc keeps it in the draft to add more)."""
        self._review_draft(self.session.draft.with_edit(title, items), marks)

    def action_draft(self) -> None:
        if not self.session.draft:
            self.notify("the draft is empty: every edit adds its changes to it", markup=False)
            return
        self._review_draft(list(self.session.draft.edits))

    def _review_draft(self, edits: list[DraftEdit], marks: Marks | None = None) -> None:
        """Plan every item of `edits` at once; once planned they are the draft (changes the service cannot read
        are said and never enter it), and the review shows their plan."""
        items = draft_items(edits)
        title = draft_title(edits)

        def plan(service: Service) -> Plan:
            return service.plan(service.build_changes(items))

        def planned(the_plan: Plan) -> None:
            self.session.draft.keep(edits)
            self._draft_changed()
            self._review_plan(title, the_plan, replan=plan, draft=edits, marks=marks)

        self.foreground(Request(f"planning {title}", plan, planned, failed=self._failed))

    def _draft_changed(self) -> None:
        for screen in list(self.live):
            screen.update_header()

    def _discard_draft(self) -> None:
        self.session.draft.clear()
        self._draft_changed()
        self.notify("draft discarded: nothing applied", markup=False)

    def _say_applied(self, result: Any) -> None:
        """`applied: revision N`; on a bound state, what was carried out on the cluster, step by step."""
        if result.steps:
            self.notify("\n".join([f"executed on the cluster: revision {result.revision}",
                                   *(safe(line) for line in step_lines(result.steps))]), markup=False)
        else:
            self.notify(f"applied: revision {result.revision}", markup=False)

    def _review_plan(self, title: str, plan: Plan, intent: dict[str, Any] | None = None, *,
                     replan: Callable[[Service], Replanned] | None = None, note: str = "", summary: str = "",
                     marks: Marks | None = None, draft: list[DraftEdit] | None = None, dry_run: str = "") -> None:
        """Show a plan; on confirmation submit it. A plan whose base revision moved meanwhile is planned
        again on the new state and shown again — never applied blindly. A plan made from marked rows names
        every one of them, and clears the marks once applied (they did their work; kept, the next `c` would
        act on them again unseen). `draft`: the draft's edits this plan is made of (applied: they leave the
        draft)."""

        def decided(answer: bool | str | None) -> None:
            if answer is None:
                if draft is None:
                    self.notify("not applied", markup=False)
                elif self.session.draft:  # not discarded: kept to add more
                    self.notify(f"not applied: kept in the draft ({self.session.draft.size} change(s)); "
                                "b reviews it, x there discards it", markup=False)
                return
            # waits up to `lock_wait` for another writer: shown as work in progress, never as a frozen screen
            self.foreground(Request("applying (waits for the state lock if another writer holds it)",
                                    lambda service: service.submit(plan, confirmed=answer, intent=intent),
                                    applied, failed=self._login_first(refused, lambda: decided(answer),
                                                                      lambda: decided(None)),
                                    cancellable=False),
                            hint="Esc: drop it before it starts")

        def applied(result: Any) -> None:
            if draft is not None:
                self.session.draft.remove(draft)
                self._draft_changed()
            if result is not None:
                self._say_applied(result)
                if marks is not None and marks.table.is_attached:
                    marks.table.clear_marks()
                self._watch()

        def refused(failed: GpuadminError) -> None:
            if not isinstance(failed, Stale):
                self.notify(error_lines(failed), title=failed.label or "error", severity="error", markup=False)
            elif replan is None:
                self.notify(error_lines(failed), title="conflict", severity="error", markup=False)
            else:
                self.foreground(Request("planning again on the new state", lambda service: _replanned(service, replan),
                                        again, failed=self._failed))

        def again(fresh: Replanned) -> None:
            plan, summary = fresh if isinstance(fresh, tuple) else (fresh, "")
            self._review_plan(title, plan, intent, replan=replan, summary=summary, marks=marks, draft=draft,
                              note=f"The state moved to revision {plan.base_revision} since this plan was made: "
                                   "planned again on it. Review it again.")

        def save(typed: str, saved: Callable[[], None]) -> None:
            path = Path(typed).expanduser()

            def done(_: None) -> None:
                self.notify(f"plan saved to {typed} (gpuadmin apply --plan {typed})", markup=False)
                saved()

            self.session.ask(Request("saving the plan", lambda service: service.save_plan(plan, path), done,
                                     failed=lambda failed: self.notify(" ".join(failed.lines()), severity="error",
                                                                       markup=False)))

        notes = "\n".join(text for text in (note, marks.note() if marks is not None else "") if text)
        lines = draft_lines(draft, plan.to_json()["violations"]) if draft is not None and len(draft) > 1 else None
        link = self.session.link
        on_cluster = ([step.to_json() for step in planned_cluster_steps(plan.changes, link.binding)]
                      if link is not None else None)  # a bound state: apply executes there, nobody runs commands
        self.push_screen(PlanReviewScreen(title, plan, confirmation(plan), save, notes, summary, draft=lines,
                                          discard=self._discard_draft if draft is not None else None,
                                          dry_run=dry_run, on_cluster=on_cluster), decided)

    def _login_first(self, refused: Callable[[GpuadminError], None], again: Callable[[], None],
                     without: Callable[[], None]) -> Callable[[GpuadminError], None]:
        """An apply's failure handler: where the bound vCenter's password is wanted (the console went on without
        it; nothing ran on vCenter, nothing was journaled) the login is asked again, then `again` (the apply)
        or `without` (Esc, three refusals); any other failure is `refused`'s."""
        def failed(error: GpuadminError) -> None:
            if not (isinstance(error, PasswordNeeded) and self.cluster_link.ask_login(again, without)):
                refused(error)
        return failed

    # screenshots -----------------------------------------------------------------------------------
    def save_screenshot_headless(self, path: Path, size: tuple[int, int]) -> Path:
        """Render the first screen off-terminal and save it as SVG (the README's screenshot)."""

        async def shoot() -> None:
            async with self.run_test(size=size) as pilot:
                await pilot.pause()
                while not self.service_worker.idle:  # the view's reads (and the reads they start) answered
                    await pilot.pause(0.01)
                await self.workers.wait_for_complete()
                await pilot.pause()
                self.save_screenshot(path.name, str(path.parent.resolve()))

        asyncio.run(shoot())
        return path


# what planning a reviewed change again gives: its plan, or its plan and its summary (a scheduling cycle)
Replanned = Plan | tuple[Plan, str]


def _replanned(service: Service, replan: Callable[[Service], Replanned]) -> Replanned:
    service.refresh()
    return replan(service)


def _remedy_plan(service: Service, job: str) -> Plan:
    """The remedy planned again on a moved state; one no longer needed is an empty plan (nothing to apply)."""
    remedy = service.plan_remedy(job)
    if remedy.plan is None:
        return service.plan([])
    return remedy.plan


def _summarised_cycle(service: Service) -> tuple[Plan, str]:
    """One scheduling cycle's plan and its summary, both made on the service worker: at 100,000 jobs the
    summary explains every job left pending, work no key may wait for."""
    result = service.schedule()
    return result.plan, summary_text(cycle_summary(result))


# Textual's key symbols (textual.keys.KEY_DISPLAY_ALIASES) as the names an ASCII footer shows
ASCII_KEY_NAMES = {"\u23ce": "enter", "\u2191": "up", "\u2193": "down", "\u2190": "left", "\u2192": "right",
                   "\u232b": "backspace"}


def ascii_driver(base: type[Driver]) -> type[Driver]:
    """`base` (the terminal's driver) writing ASCII only: the last guard of the ASCII mode, for what Textual and
    Rich draw themselves (scrollbars, a cut line's ellipsis, a Select's arrow, a toast's edge)."""

    class AsciiDriver(base):  # type: ignore[valid-type,misc]  # a subclass of the driver Textual picked
        def write(self, data: str) -> None:
            super().write(to_ascii(data))

    return AsciiDriver


def _unknown_theme(name: str, available: dict[str, Any]) -> Diagnostic:
    ours = ", ".join(sorted(n for n in available if n.startswith("gpuadmin")))
    return Diagnostic(f"unknown theme {name!r}; gpuadmin's: {ours} (Textual's own also work)")
