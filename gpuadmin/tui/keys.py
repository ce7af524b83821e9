"""Where each key of the console belongs, in one place: its group in `?` (change, view, navigate), whether it is
global (the same in every view: `?` lists those last), the least role that may use it, and its place in the footer.

A binding's group comes from its id: a few ids are named below, every other one takes its prefix's group
(`table.*` navigate; `view.*`, `app.*` view; `edit.*`, `review.*` change), so a binding added later is grouped
without a change here. tests/tui/test_keys.py holds every binding of the console to a group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from gpuadmin.service import OPS, Role

# their order in `?`: what the view lets you do first (k9s's help: the resource's actions, then general, then
# navigation), so an 80x24 screen opens on the view's changes, not on the arrow keys every table has
GROUPS = ("change", "view", "navigate")
GROUP_BY_PREFIX: dict[str, str] = {
    "table": "navigate", "prompt": "navigate", "overview": "navigate", "boards": "navigate", "topology": "navigate",
    "view": "view", "top": "view", "app": "view", "describe": "view", "help": "view",
    "edit": "change", "review": "change", "form": "change", "mig": "change", "progress": "change",
    "password": "view",  # the vCenter login: whether the console watches the vCenter
}
GROUP_BY_ID: dict[str, str] = {
    "app.back": "navigate",  # Esc walks back through drill-downs and views
    "table.sort": "view", "table.sort_reverse": "view",  # the order of the rows, not a move
}
# the keys that do the same in every view (`?` lists them after the view's own); every `view.*` digit is one
GLOBAL_IDS = frozenset({"app.command", "app.help", "app.back", "app.quit", "app.quit_now", "edit.schedule"})
# the `view.*` ids that act on the view on top, not a switch to one
VIEW_OWN_IDS = frozenset({"view.reload", "view.wide"})
# The footer's order: these first, then the view's changes, then the other keys the view shows, these last.
# Whole keys are drawn while they fit the width; `?` is first so it always does.
FOOTER_FIRST = ("app.help", "table.open", "overview.open", "topology.open", "app.describe", "app.filter")
FOOTER_LAST = ("edit.schedule", "table.sort", "app.command", "app.quit")
ROLE_ORDER: tuple[str, ...] = get_args(Role)  # viewer < operator < admin
# the least role of a change key: its op's (the registry's record); any other change needs an operator
ROLE_BY_BINDING: dict[str, str] = {
    binding: spec.role for spec in OPS.values() if (binding := getattr(spec.console, "binding", ""))
}


def group_of(binding_id: str) -> str | None:
    """The binding's group in `?`; None for an id whose prefix has none (the keys test fails on it)."""
    return GROUP_BY_ID.get(binding_id) or GROUP_BY_PREFIX.get(binding_id.partition(".")[0])


def is_global(binding_id: str) -> bool:
    return binding_id in GLOBAL_IDS or (binding_id.startswith("view.") and binding_id not in VIEW_OWN_IDS)


def footer_rank(binding_id: str) -> int:
    """Lower is shown first in the footer."""
    if binding_id in FOOTER_FIRST:
        return FOOTER_FIRST.index(binding_id)
    if binding_id in FOOTER_LAST:
        return 100 + FOOTER_LAST.index(binding_id)
    group = group_of(binding_id)
    return 10 + (("change", "view", "navigate").index(group) if group else 3)


def role_needed(binding_id: str) -> str:
    """The least role a changing key needs (its op's record; an undo, a redo or a scheduling cycle: operator)."""
    return ROLE_BY_BINDING.get(binding_id, "operator")


def refused_to(role: str, binding_id: str) -> str | None:
    """The role a changing key needs when `role` is below it, else None."""
    need = role_needed(binding_id)
    return need if role in ROLE_ORDER and ROLE_ORDER.index(role) < ROLE_ORDER.index(need) else None


@dataclass(frozen=True)
class KeyRow:
    """One line of `?`: the keys (as the keymap has them), what they do, the binding id, and whether the role
    on this console may use them (`needs`: the role it lacks, "" when it may)."""

    keys: str
    description: str
    binding_id: str
    needs: str = ""

    @property
    def group(self) -> str:
        return group_of(self.binding_id) or "other"


def grouped(rows: list[KeyRow]) -> list[tuple[str, list[KeyRow]]]:
    """Rows by group, in GROUPS order (an ungrouped id last, under "other"), each group in binding order."""
    order = [*GROUPS, "other"]
    return [(group, members) for group in order if (members := [r for r in rows if r.group == group])]


__all__ = ["GROUPS", "KeyRow", "footer_rank", "group_of", "grouped", "is_global", "refused_to", "role_needed"]
