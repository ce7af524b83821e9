"""What every view shares: the header, the prompt line, the footer of key hints, and its data hooks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from gpuadmin.tui.widgets.header import HeaderBar
from gpuadmin.tui.widgets.prompt import Prompt

if TYPE_CHECKING:
    from gpuadmin.service import Moved
    from gpuadmin.tui.app import GpuadminApp
    from gpuadmin.tui.session import Session


class ViewScreen(Screen[None]):
    """A view. Subclasses compose their body, load their data (in a worker where it may take long) and
    say what is selected, for `d` (describe) and `y` (YAML)."""

    view_name = ""  # the `:` alias that opens it
    title_text = ""

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

    stale = False

    def crumb(self) -> str:
        return self.title_text or self.view_name

    def update_header(self) -> None:
        console = self.session
        crumbs = [s.crumb() for s in self.app.screen_stack if isinstance(s, ViewScreen)]
        self.query_one(HeaderBar).show(cluster=console.cluster, revision=console.revision, role=console.role,
                                       readonly=console.readonly, persisted=console.persisted,
                                       crumbs=crumbs or [self.crumb()])

    def load(self) -> None:
        """(Re)read this view's data from the service."""

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
