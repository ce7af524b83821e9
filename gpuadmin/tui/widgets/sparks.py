"""The last hour's utilisation as Textual sparklines, one line per GPU (and per MIG instance): the node view
and a GPU's describe. The history is read on the service worker (`Service.node_utilisation`); this widget only
draws it. A point Prometheus has no sample for is left out, never drawn as 0: the line says how many minutes
of the hour are known, and a device with none says so instead of drawing an empty (idle-looking) line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.containers import Horizontal, Vertical
from textual.widgets import Sparkline, Static


@dataclass(frozen=True)
class SparkLine:
    label: str  # `GPU 3`, `GPU 3 @4` (a MIG instance by its start)
    values: list[float]  # the known points, oldest first
    note: str  # the last reading and how much of the window is known, or why there is nothing


def spark_lines(history: dict[Any, tuple[tuple[float, float | None], ...]],
                only: Iterable[Any] | None = None) -> list[SparkLine]:
    """One line per device of `history` (keys `(node, index)` and `(node, index, start)`), by index then start;
    `only`: those keys alone."""
    keys = sorted(history if only is None else [k for k in only if k in history],
                  key=lambda k: (k[1], -1 if len(k) < 3 else k[2]))
    out = []
    for key in keys:
        points = history[key]
        values = [v for _, v in points if v is not None]
        label = f"GPU {key[1]}" + (f" @{key[2]}" if len(key) > 2 else "")
        if not values:
            note = f"no samples in {len(points)} min" if points else "no samples"
        else:
            note = f"now {values[-1]:.0f}%" if points[-1][1] is not None else "stale"
            if len(values) < len(points):
                note += f" ({len(values)}/{len(points)} min)"
        out.append(SparkLine(label, values, note))
    return out


class UtilSparks(Vertical):
    """A title, then per device its label, its sparkline and its note; or one line saying why there is none."""

    def show_lines(self, title: str, lines: list[SparkLine]) -> None:
        self.remove_children()
        rows: list[Any] = [Static(Text(title), classes="spark-title")]
        for line in lines:
            spark: Any = (Sparkline(line.values, summary_function=max, classes="spark") if line.values
                          else Static("", classes="spark"))
            rows.append(Horizontal(Static(Text(line.label), classes="spark-label"), spark,
                                   Static(Text(line.note), classes="spark-note"), classes="spark-row"))
        self.mount_all(rows)

    def show_message(self, message: str) -> None:
        self.remove_children()
        self.mount(Static(Text(message), classes="spark-title"))
