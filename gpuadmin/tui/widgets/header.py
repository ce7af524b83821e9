"""The header: cluster, which state (its directory, or the inventory in memory), revision, role, a READ-ONLY
badge, how many rows are marked, the draft's size (`DRAFT N`), and where you are (breadcrumbs)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gpuadmin.render.text import safe

WHERE_MIN = 16  # the state's name is never cut to less than this


def _tail(text: str, width: int) -> str:
    """`text` cut to `width` cells from the left, an ellipsis saying so: `…/prod/gpu-state`."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


class HeaderBar(Static):
    """One line; every part is a word, so it reads the same without colour."""

    def show(self, *, cluster: str, revision: int, role: str, readonly: bool, persisted: bool,
             crumbs: list[str], where: str = "", marked: int = 0, draft: int = 0) -> None:
        """`where` names the state, so consoles on several states tell apart; shortened from the left (the
        end of a path is what tells states apart) to leave the rest of the line its room. `marked`: how many
        rows bulk actions would act on, shown or not, so the count is never out of sight. `draft`: how many changes
        the draft holds (made, not applied yet: `b` reviews them)."""
        line = Text()
        line.append(" gpuadmin ", style="reverse bold")
        line.append(f" {safe(cluster)}", style="bold")
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
        rest.append("  " + " > ".join(safe(c) for c in crumbs), style="bold")
        if where:
            room = (self.size.width or 80) - line.cell_len - rest.cell_len - 2
            line.append(f"  {_tail(safe(where), max(WHERE_MIN, room))}")
        self.update(line + rest)
