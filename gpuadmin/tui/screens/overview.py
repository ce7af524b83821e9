"""The overview: the screen an operator opens first, and a way into every listing.

GPUs by mode and by use (free / partly used / full), nodes that are down or draining, pending jobs by
reason, queues over quota. The counts by reason need a scheduling cycle: they appear when the service has
them (computed once per revision, in the background).

Every count is a place to go (k9s's drill-down): ↑/↓ (`j`/`k`) move a cursor over them (`>` and reverse
video), Enter opens the filtered listing behind the one under it — `nodes state=cordoned`, `gpus mode=mig`,
`jobs status=pending`, the pending jobs waiting for one reason (`jobs reason=over-limit`), the jobs of a queue
over quota, one node's screen for a node out of service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static

from gpuadmin.render.selector import equals
from gpuadmin.render.text import safe
from gpuadmin.service import Service
from gpuadmin.tui.draw import use_bar
from gpuadmin.tui.screens.base import ViewScreen


@dataclass(frozen=True)
class Drill:
    """What Enter on one count opens: a view with a filter, or one node's screen."""

    view: str
    filter: str = ""
    node: str = ""


class _Page:
    """The overview's text, with each count a target; the selected one drawn `>` and reversed."""

    def __init__(self, selected: int) -> None:
        self.text = Text()
        self.targets: list[Drill] = []
        self.lines: list[int] = []  # each target's line
        self.selected = selected

    def append(self, text: str, style: str = "") -> None:
        self.text.append(text, style=style)

    def count(self, gap: str, label: str, target: Drill) -> None:
        """A count after `gap` (at least one space, where the cursor's `>` goes)."""
        mine = len(self.targets) == self.selected
        self.lines.append(self.text.plain.count("\n"))
        self.targets.append(target)
        self.text.append(gap[:-1] + (">" if mine else gap[-1]))
        self.text.append(label, style="reverse" if mine else "")


def overview_page(data: dict[str, Any], width: int, selected: int = -1) -> _Page:
    page = _Page(selected)
    page.append(f"{safe(data['cluster'])}", style="bold")
    page.append(f"   revision {data['revision']}   {data['nodes']} nodes   {data['gpus']} GPUs\n\n")
    uses = data["gpus_by_use"]
    page.append("GPUs by use     ", style="bold")
    for i, (name, n) in enumerate(uses.items()):
        page.count("  " if i else " ", f"{name} {n}", Drill("gpus", equals("use", name)))
    page.append("\n                 ")
    page.text.append_text(use_bar({"full": uses["full"], "partly used": uses["partly used"], "free": uses["free"]},
                                  max(10, min(60, width - 20))))
    page.append("\n                 # full  + partly used  . free\n")
    page.append("GPUs by mode    ", style="bold")
    for i, (mode, n) in enumerate(data["gpus_by_mode"].items()):
        page.count("  " if i else " ", f"{mode} {n}", Drill("gpus", equals("mode", mode)))
    page.append("\nGPUs by model   ", style="bold")
    for i, (model, n) in enumerate(data["gpus_by_model"].items()):
        page.count("  " if i else " ", f"{safe(model)} {n}", Drill("gpus", equals("model", model)))
    page.append("\n\nNodes           ", style="bold")
    for i, (state, n) in enumerate(data["nodes_by_state"].items()):
        page.count("  " if i else " ", f"{state} {n}", Drill("nodes", equals("state", state)))
    page.append("\n")
    for item in data["nodes_out_of_service"][:8]:
        page.count("  ", f"! {safe(item['node'])} is {item['state']}", Drill("nodes", node=item["node"]))
        page.append("\n")
    if len(data["nodes_out_of_service"]) > 8:
        page.count("  ", f"... and {len(data['nodes_out_of_service']) - 8} more (:nodes, /state!=ready)",
                   Drill("nodes", "state!=ready"))
        page.append("\n")
    _alerts(page, data.get("alerts"))
    _jobs(page, data)
    return page


def _alerts(page: _Page, alerts: dict[str, Any] | None) -> None:
    """Prometheus's firing alerts about GPUs (the last telemetry refresh): how many, and the worst, which
    opens its node (the GPUs view marks each GPU with one: `!`); nothing where no Prometheus is set. Names and
    labels are the alert's: plain text, escaped."""
    if alerts is None or alerts["state"] == "unset":
        return
    page.append("\nGPU alerts      ", style="bold")
    if not alerts["count"]:
        page.append(" none firing\n")
        return
    page.append(f" {alerts['count']} firing")
    worst = alerts["worst"]
    where = (f"{worst['node']}/{worst['gpu']}" if worst["placed"]
             else f"{worst['node'] or '?'}/{worst['gpu_label'] or worst['uuid'] or '?'}, not a GPU of the state")
    label = safe(f"! worst: {worst['name']}" + (f" ({worst['severity']})" if worst["severity"] else "")
                 + f" on {where}")
    if worst["placed"]:
        page.count("  ", label, Drill("nodes", node=worst["node"]))
    else:
        page.append(f"  {label}")
    page.append("\n")


def _jobs(page: _Page, data: dict[str, Any]) -> None:
    page.append("\nJobs            ", style="bold")
    for i, (status, n) in enumerate(data["jobs_by_status"].items()):
        page.count("  " if i else " ", f"{status} {n}", Drill("jobs", equals("status", status)))
    page.append("\n")
    by_reason = data["pending_by_reason"]
    if by_reason is None:
        page.append("  pending by reason: computing (a scheduling dry run)...\n")
    else:
        for reason, n in list(by_reason.items())[:8]:
            page.count("  ", f"{n:>5}  {reason}", Drill("jobs", equals("reason", reason)))
            page.append("\n")
    page.append("\nQueues over quota", style="bold")
    if not data["queues_over_quota"]:
        page.append("  none\n")
        return
    page.append("\n")
    for q in data["queues_over_quota"]:
        page.count("  ", f"+ {safe(q['queue'])}: {q['used_gpus']:g} of {q['quota_gpus']:g} GPU quota, "
                         f"borrowing {q['borrowed_gpus']:g}", Drill("jobs", equals("queue", q["queue"])))
        page.append("\n")


class OverviewBody(Static, can_focus=True):
    """The overview's text, with a cursor over its counts."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Up", show=False, id="overview.up"),
        Binding("down,j", "move(1)", "Down", show=False, id="overview.down"),
        Binding("enter", "open", "Open", id="overview.open"),
    ]

    def action_move(self, step: int) -> None:
        screen = self.screen
        if isinstance(screen, OverviewScreen):
            screen.move(step)

    def action_open(self) -> None:
        screen = self.screen
        if isinstance(screen, OverviewScreen):
            screen.open_selected()


class OverviewScreen(ViewScreen):
    view_name = "overview"

    def __init__(self) -> None:
        super().__init__()
        self._data: dict[str, Any] | None = None
        self._page: _Page | None = None
        self.cursor = 0

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="overview-scroll"):
            yield OverviewBody("loading...", id="overview")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(OverviewBody).focus()

    def read(self, service: Service) -> dict[str, Any]:
        """The counts at once; the pending jobs by reason when the service has them (a dry-run cycle): if
        it has not, `show` asks for them as a second read."""
        return {**service.overview(reasons=service.reasons_ready()), "alerts": service.alerts_summary()}

    def show(self, data: dict[str, Any]) -> None:
        self._data = data
        self._draw()
        if data["pending_by_reason"] is None:
            self.ask_read(lambda service: {**service.overview(), "alerts": service.alerts_summary()})

    def _draw(self) -> None:
        if self._data is None:
            return
        page = overview_page(self._data, self.size.width, self.cursor)
        if page.targets and self.cursor >= len(page.targets):  # a live update took counts away
            self.cursor = len(page.targets) - 1
            page = overview_page(self._data, self.size.width, self.cursor)
        self._page = page
        self.query_one(OverviewBody).update(page.text)
        if page.targets:
            self.query_one("#overview-scroll", VerticalScroll).scroll_to_region(
                Region(0, page.lines[self.cursor], 1, 1), animate=False, immediate=True)

    def move(self, step: int) -> None:
        if self._page is not None and self._page.targets:
            self.cursor = max(0, min(len(self._page.targets) - 1, self.cursor + step))
            self._draw()

    @property
    def selected_target(self) -> Drill | None:
        page = self._page
        return page.targets[self.cursor] if page is not None and page.targets else None

    def open_selected(self) -> None:
        target = self.selected_target
        if target is not None:
            self.gpuadmin.drill_to(target)
