"""The header: cluster, revision, role, a READ-ONLY badge, the draft's size, and where you are (breadcrumbs)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from gpuadmin.render.text import safe


class HeaderBar(Static):
    """One line; every part is a word, so it reads the same without colour."""

    def show(self, *, cluster: str, revision: int, role: str, readonly: bool, persisted: bool,
             crumbs: list[str], draft: int = 0) -> None:
        line = Text()
        line.append(" gpuadmin ", style="reverse bold")
        line.append(f" {safe(cluster)}", style="bold")
        line.append(f"  rev {revision}")
        line.append(f"  role {role}")
        if readonly:
            line.append("  ")
            line.append(" READ-ONLY ", style="reverse")
        if draft:  # changes made and not applied yet: `b` reviews them
            line.append("  ")
            line.append(f" DRAFT {draft} ", style="reverse bold")
        if not persisted:
            line.append("  (in memory)")
        line.append("  " + " > ".join(safe(c) for c in crumbs), style="bold")
        self.update(line)
