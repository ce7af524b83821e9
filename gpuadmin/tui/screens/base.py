"""What every view shares: the header, the prompt line, the footer of key hints, and its data hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from gpuadmin.errors import GpuadminError
from gpuadmin.tui.session import Session, error_lines
from gpuadmin.tui.widgets.footer import KeyFooter
from gpuadmin.tui.widgets.header import HeaderBar
from gpuadmin.tui.widgets.prompt import Prompt
from gpuadmin.tui.worker import Request

if TYPE_CHECKING:
    from gpuadmin.service import Moved, Service
    from gpuadmin.tui.app import GpuadminApp


class ViewScreen(Screen[None]):
    """A view. Subclasses compose their body, say how to read their data (`read`, on the service worker)
    and how to show it (`show`, on the UI thread), and what is selected, for `d` (describe) and `y` (YAML)."""

    view_name = ""  # the `:` alias that opens it
    title_text = ""
    filter_text = ""  # what `/` filtered this view by ("" for none)
    stale = False  # another apply moved the state while the view was not shown: re-read when it is

    @property
    def gpuadmin(self) -> GpuadminApp:
        from gpuadmin.tui.app import GpuadminApp

        app = self.app
        assert isinstance(app, GpuadminApp)
        return app

    @property
    def session(self) -> Session:
        return self.gpuadmin.session

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield from self.compose_body()
        prompt = Prompt(self.gpuadmin.command_words(), history=self.gpuadmin.prompt_history, id="prompt")
        prompt.display = False
        yield prompt
        working = Static("", id="working")  # long work this view waits for, and that Esc cancels
        working.display = False
        yield working
        yield KeyFooter()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self.gpuadmin.live.add(self)
        self.update_header()
        self.load()

    def on_unmount(self) -> None:
        self.gpuadmin.live.discard(self)

    def on_screen_resume(self) -> None:
        self.update_header()
        if self.stale:
            self.load()

    def crumb(self) -> str:
        return self.title_text or self.view_name

    def update_header(self) -> None:
        session = self.session
        crumbs = [s.crumb() for s in self.app.screen_stack if isinstance(s, ViewScreen)]
        self.query_one(HeaderBar).show(cluster=session.cluster, revision=session.revision, role=session.role,
                                       readonly=session.readonly, persisted=session.persisted,
                                       crumbs=crumbs or [self.crumb()], where=session.place,
                                       marked=self.marked_count(), draft=session.draft.size,
                                       live=session.live_badge(), metrics=self.gpuadmin.metrics.notice())

    def marked_count(self) -> int:
        """How many rows are marked in this view (for the header)."""
        return 0

    def load(self) -> None:
        """(Re)read this view's data on the service worker: a large state never holds up a key. A newer
        read supersedes one still queued or running (its answer is discarded)."""
        self.stale = False
        self.ask_read(self.read)

    def ask_read(self, read: Callable[[Service], Any]) -> None:
        self.session.ask(Request(f"reading {self.view_name}", read, self.show, failed=self._read_failed,
                                 owner=self, key=f"read:{id(self)}"))

    def read(self, service: Service) -> Any:
        """This view's data from the service. Runs on the service worker: it must not touch a widget."""
        raise NotImplementedError

    def show(self, data: Any) -> None:
        """Draw what `read` returned (on the UI thread)."""

    def _read_failed(self, failed: GpuadminError) -> None:
        self.read_failed(error_lines(failed))

    def read_failed(self, message: str) -> None:
        self.notify(message, severity="error", markup=False)

    def working(self, label: str | None) -> None:
        """Show (or, with None, hide) the line saying what long work this view waits for."""
        line = self.query_one("#working", Static)
        line.display = label is not None
        if label is not None:
            line.update(Text(label))  # Text: a name in the label is not markup

    def state_moved(self, _moved: Moved) -> None:
        """Another console or a script applied: reload if shown, else on the next resume."""
        self.readings_moved()

    def readings_moved(self) -> None:
        """What this view shows changed (the state, or telemetry's readings): reload if shown, else on resume."""
        if self.is_current:
            self.update_header()
            self.load()
        else:
            self.stale = True

    def selected(self) -> tuple[str, str] | None:
        """(describe kind, name) of what the cursor is on, if anything."""
        return None

    def apply_filter(self, _text: str) -> None:
        self.notify("this view has no rows to filter", severity="warning")

    def sort_by(self, _column: str) -> bool:
        return False
