"""The console's draft plan (a basket of edits): app state held by the session, outside every widget.

Every edit made in the console (a form, a node-state key, a ready change such as cancelling a job) adds its
change items to the draft, and the review shows the plan of the whole draft: the service plans every item at
once, so changes that only make sense together (detach a VM from its device group and remove its vGPUs) are
checked together, as one change file would be through the CLI. Applying the draft is one journal entry; then
it is empty. Esc on the review keeps the draft to add more; the review's discard key empties it.

Nothing here calls the service or draws anything: the app plans `items()` on the service worker and the
review shows `lines()`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DraftEdit:
    """One edit in the draft: what the operator did (the form's title) and the change items it made."""

    title: str
    items: tuple[dict[str, Any], ...]

    def names(self) -> set[str]:
        """Every name and number the edit's items hold (nodes, VMs, groups, GPUs): what a violation can be about."""
        return set(_strings(list(self.items)))


class Draft:
    """The edits not yet applied, in the order they were made."""

    def __init__(self) -> None:
        self.edits: list[DraftEdit] = []

    @property
    def size(self) -> int:
        """How many change items the draft holds (the header's `DRAFT N`)."""
        return sum(len(edit.items) for edit in self.edits)

    def __bool__(self) -> bool:
        return bool(self.edits)

    def with_edit(self, title: str, items: Sequence[dict[str, Any]]) -> list[DraftEdit]:
        """The draft's edits with one more: what is planned before the edit is kept (an edit the service
        cannot even read is said and never enters the draft)."""
        return [*self.edits, DraftEdit(title, tuple(items))]

    def keep(self, edits: Sequence[DraftEdit]) -> None:
        self.edits = list(edits)

    def remove(self, applied: Sequence[DraftEdit]) -> None:
        """Take out the edits just applied (any made while the apply ran stay)."""
        self.edits = [edit for edit in self.edits if not any(edit is done for done in applied)]

    def clear(self) -> None:
        self.edits = []


def draft_items(edits: Sequence[DraftEdit]) -> list[dict[str, Any]]:
    """Every change item of the edits, in order: one change list, planned at once."""
    return [item for edit in edits for item in edit.items]


def draft_title(edits: Sequence[DraftEdit]) -> str:
    """The review's title: a single edit keeps its own, a larger draft says its size."""
    if len(edits) == 1:
        return edits[0].title
    return f"draft: {len(edits)} edits, {sum(len(e.items) for e in edits)} changes"


def draft_lines(edits: Sequence[DraftEdit], violations: Sequence[dict[str, Any]]) -> list[str]:
    """The draft's edits as the review lists them, each followed by the violations it is blamed for: a refused
    draft says which change refuses."""
    blamed = [refusing(edits, violation) for violation in violations]
    lines = [f"Draft: {len(edits)} edits, one plan, one journal entry (x discards, Esc keeps it):"]
    for number, edit in enumerate(edits):
        hits = [v for v, culprits in zip(violations, blamed, strict=True) if number in culprits]
        lines.append(f"  {number + 1}. {edit.title}" + (f"  REFUSES ({len(hits)} violation(s))" if hits else ""))
        lines += [f"       ✗ [{v.get('rule')}] {v.get('message')}" for v in hits]
    return lines


def refusing(edits: Sequence[DraftEdit], violation: dict[str, Any]) -> set[int]:
    """The edits (their indexes) a violation is blamed on: of those naming what it is about (its node, job or
    queue), the ones naming most of what its message names (a VM, a device group, a GPU index). On a vSphere
    host every edit names the host and the VM; the one attaching the group the message names is the one that
    refuses."""
    target = str(violation.get("target", ""))
    subject = _subject(target)
    said = set(str(violation.get("message", "")).replace("(", " ").replace(")", " ").replace(",", " ").split())
    said |= set(target.split("/"))
    scores = {i: len(edit.names() & said) for i, edit in enumerate(edits) if subject in edit.names()}
    best = max(scores.values(), default=0)
    return {i for i, score in scores.items() if score == best}


def _subject(target: str) -> str:
    """The name a violation's target is about: `node/NAME`, `job/NAME`, `queue/NAME`, or a GPU `NODE/GPU`."""
    kind, _, rest = target.partition("/")
    if kind in ("node", "job", "queue"):
        return rest.split("/", 1)[0]
    return kind  # a GPU's place: the node is its first part


def _strings(value: Any) -> Iterator[str]:
    """Every name and number a change item holds, as text (a GPU index is a number)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, int) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


__all__ = ["Draft", "DraftEdit", "draft_items", "draft_lines", "draft_title", "refusing"]
