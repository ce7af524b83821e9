"""What every view shares: the header, the prompt line, the footer of key hints, and its data hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from gpuadmin.errors import GpuadminError
from gpuadmin.tui.session import Session, error_lines
from gpuadmin.tui.widgets.header import HeaderBar
from gpuadmin.tui.widgets.prompt import Prompt

if TYPE_CHECKING:
    from gpuadmin.service import Moved
    from gpuadmin.tui.app import GpuadminApp


class ViewScreen(Screen[None]):
    """A view. Subclasses compose their body, load their data (in a worker where it may take long) and
    say what is selected, for `d` (describe) and `y` (YAML)."""

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
        yield Footer(compact=True, show_command_palette=False)

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
                                       crumbs=crumbs or [self.crumb()])

    def load(self) -> None:
        """(Re)read this view's data, in a worker thread: a large state never holds up a key."""
        self.stale = False
        self.run_worker(self._read_reporting, thread=True, exclusive=True, group="read")

    def _read_reporting(self) -> None:
        try:
            self.read()
        except GpuadminError as failed:
            self.app.call_from_thread(self.read_failed, error_lines(failed))

    def read(self) -> None:
        """Read this view's data from the service (in the worker) and hand it to the screen with
        `self.app.call_from_thread`."""

    def read_failed(self, message: str) -> None:
        self.notify(message, severity="error", markup=False)

    def state_moved(self, moved: Moved) -> None:
        """Another console or a script applied: reload if shown, else on the next resume."""
        if self.is_current:
            self.update_header()
            self.load()
        else:
            self.stale = True

    def selected(self) -> tuple[str, str] | None:
        """(describe kind, name) of what the cursor is on, if anything."""
        return None

    def apply_filter(self, text: str) -> None:
        self.notify("this view has no rows to filter", severity="warning")

    def sort_by(self, column: str) -> bool:
        return False
