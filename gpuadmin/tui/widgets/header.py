"""The header: cluster, the live badge of a state bound to a cluster (`LIVE`, `RECONNECTING`, ..., and its
kubeconfig context or vCenter user), which state (its directory, or the inventory in memory), revision, role, a
READ-ONLY badge, how many rows are marked, the draft's size (`DRAFT N`), and where you are (breadcrumbs)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from gpuadmin.render.text import safe

WHERE_MIN = 16  # the state's name is never cut to less than this
# the cluster watch's state, as the badge words it (a word each, so it reads without colour)
LIVE_BADGES = {"connecting": "CONNECTING", "live": "LIVE", "reconnecting": "RECONNECTING", "down": "CLUSTER DOWN",
               "unwatched": "NOT WATCHED"}  # a viewer's console, which may not sync; a vCenter without a password


@dataclass(frozen=True)
class LiveBadge:
    """A bound state's link: the watch's state (`gpuadmin.cluster.watch.WatchState`) and the context's name (a
    vCenter's user); `insecure`: a vCenter whose TLS certificate is not verified (`--insecure`), said in words;
    `note`: why it is not watched, where a setting is missing (`no vCenter password: set ...`)."""

    state: str
    context: str
    insecure: bool = False
    note: str = ""


def _tail(text: str, width: int) -> str:
    """`text` cut to `width` cells from the left, an ellipsis saying so: `…/prod/gpu-state`."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


class HeaderBar(Static):
    """One line; every part is a word, so it reads the same without colour."""

    def show(self, *, cluster: str, revision: int, role: str, readonly: bool, persisted: bool,
             crumbs: list[str], where: str = "", marked: int = 0, draft: int = 0,
             live: LiveBadge | None = None, metrics: str = "") -> None:
        """`where` names the state, so consoles on several states tell apart; shortened from the left (the
        end of a path is what tells states apart) to leave the rest of the line its room. `marked`: how many
        rows bulk actions would act on, shown or not, so the count is never out of sight. `draft`: how many changes
        the draft holds (made, not applied yet: `b` reviews them). `live`: the link of a state bound to a cluster.
        `metrics`: the telemetry notice while Prometheus is slow or down (`gpuadmin.tui.metrics_poll`)."""
        line = Text()
        line.append(" gpuadmin ", style="reverse bold")
        line.append(f" {safe(cluster)}", style="bold")
        if live is not None:
            line.append("  ")
            line.append(f" {LIVE_BADGES.get(live.state, live.state.upper())} ",
                        style="reverse bold" if live.state == "live" else "reverse")
            line.append(f" ctx {safe(live.context)}")
            if live.insecure:
                line.append("  ")
                line.append(" TLS NOT VERIFIED ", style="reverse bold")
            if live.note:
                line.append(f"  ({safe(live.note)})")
        rest = Text()
        rest.append(f"  rev {revision}")
        rest.append(f"  role {role}")
        if readonly:
            rest.append("  ")
            rest.append(" READ-ONLY ", style="reverse")
        if draft:
            rest.append("  ")
            rest.append(f" DRAFT {draft} ", style="reverse bold")
        if not persisted:
            rest.append("  (in memory)")
        if marked:
            rest.append(f"  {marked} marked", style="bold")
        if metrics:
            rest.append(f"  {metrics}", style="bold")
        rest.append("  " + " > ".join(safe(c) for c in crumbs), style="bold")
        if where:
            room = (self.size.width or 80) - line.cell_len - rest.cell_len - 2
            line.append(f"  {_tail(safe(where), max(WHERE_MIN, room))}")
        self.update(line + rest)
