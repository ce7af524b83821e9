"""The overview: the screen an operator opens first.

GPUs by mode and by use (free / partly used / full), nodes that are down or draining, pending jobs by
reason, queues over quota. The counts by reason need a scheduling cycle: they appear when the service has
them (computed once per revision, in the background).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuadmin.render.text import safe
from gpuadmin.service import Service
from gpuadmin.tui.draw import use_bar
from gpuadmin.tui.screens.base import ViewScreen

# which view each section opens with Enter, by its first letter key
SECTION_VIEWS = {"gpus": "gpus", "nodes": "nodes", "jobs": "jobs", "queues": "queues"}


def overview_text(data: dict[str, Any], width: int) -> Text:
    out = Text()
    out.append(f"{safe(data['cluster'])}", style="bold")
    out.append(f"   revision {data['revision']}   {data['nodes']} nodes   {data['gpus']} GPUs\n\n")
    uses = data["gpus_by_use"]
    out.append("GPUs by use      ", style="bold")
    out.append("  ".join(f"{name} {n}" for name, n in uses.items()) + "\n")
    out.append("                 ")
    out.append_text(use_bar({"full": uses["full"], "partly used": uses["partly used"], "free": uses["free"]},
                            max(10, min(60, width - 20))))
    out.append("\n                 # full  + partly used  . free\n")
    out.append("GPUs by mode     ", style="bold")
    out.append("  ".join(f"{mode} {n}" for mode, n in data["gpus_by_mode"].items()) + "\n")
    out.append("GPUs by model    ", style="bold")
    out.append("  ".join(f"{safe(model)} {n}" for model, n in data["gpus_by_model"].items()) + "\n\n")
    out.append("Nodes            ", style="bold")
    out.append("  ".join(f"{state} {n}" for state, n in data["nodes_by_state"].items()) + "\n")
    for item in data["nodes_out_of_service"][:8]:
        out.append(f"  ! {safe(item['node'])} is {item['state']}\n")
    if len(data["nodes_out_of_service"]) > 8:
        out.append(f"  ... and {len(data['nodes_out_of_service']) - 8} more (:nodes, /state!=ready)\n")
    out.append("\nJobs             ", style="bold")
    out.append("  ".join(f"{status} {n}" for status, n in data["jobs_by_status"].items()) + "\n")
    by_reason = data["pending_by_reason"]
    if by_reason is None:
        out.append("  pending by reason: computing (a scheduling dry run)...\n")
    else:
        for reason, n in list(by_reason.items())[:8]:
            out.append(f"  {n:>5}  {reason}\n")
    out.append("\nQueues over quota", style="bold")
    if not data["queues_over_quota"]:
        out.append("  none\n")
    else:
        out.append("\n")
        for q in data["queues_over_quota"]:
            out.append(f"  + {safe(q['queue'])}: {q['used_gpus']:g} of {q['quota_gpus']:g} GPU quota, "
                       f"borrowing {q['borrowed_gpus']:g}\n")
    return out


class OverviewScreen(ViewScreen):
    view_name = "overview"

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="overview-scroll"):
            yield Static("loading...", id="overview")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#overview-scroll").focus()

    def read(self, service: Service) -> dict[str, Any]:
        """The counts at once; the pending jobs by reason when the service has them (a dry-run cycle): if
        it has not, `show` asks for them as a second read."""
        return service.overview(reasons=service.reasons_ready())

    def show(self, data: dict[str, Any]) -> None:
        self.query_one("#overview", Static).update(overview_text(data, self.size.width))
        if data["pending_by_reason"] is None:
            self.ask_read(lambda service: service.overview())
