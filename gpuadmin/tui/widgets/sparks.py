"""The last hour's utilisation as Textual sparklines, one line per GPU (and per MIG instance): the node view
and a GPU's describe. The history is read on the service worker (`Service.node_utilisation`); this widget only
draws it. A point Prometheus has no sample for is left out, never drawn as 0: the line says how many minutes
of the hour are known, and a device with none says so instead of drawing an empty (idle-looking) line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text
from textual.app import RenderResult as WidgetRender
from textual.containers import Horizontal, Vertical
from textual.renderables.sparkline import Sparkline as SparklineRenderable
from textual.widgets import Sparkline, Static


@dataclass(frozen=True)
class SparkLine:
    label: str  # `GPU 3`, `GPU 3 @4` (a MIG instance by its start)
    values: list[float]  # the known points, oldest first
    note: str  # the last reading and how much of the window is known, or why there is nothing


def spark_lines(history: dict[Any, tuple[tuple[float, float | None], ...]], now: float, *,
                window: float = 3600, step: float = 60, only: Iterable[Any] | None = None) -> list[SparkLine]:
    """One line per device of `history` (keys `(node, index)` and `(node, index, start)`; points `(at, util)`
    over the `window` before `now`, `step` apart), by index then start; `only`: those keys alone. Prometheus
    leaves out the points it has no sample for, so a device whose last point is over two steps old is stale."""
    keys = sorted(history if only is None else [k for k in only if k in history],
                  key=lambda k: (k[1], -1 if len(k) < 3 else k[2]))
    expected = int(window // step)
    out = []
    for key in keys:
        points = [(at, v) for at, v in history[key] if v is not None]
        values = [v for _, v in points]
        label = f"GPU {key[1]}" + (f" @{key[2]}" if len(key) > 2 else "")
        if not points:
            note = "no samples"
        elif now - points[-1][0] > 2 * step:
            note = f"stale: last {round((now - points[-1][0]) / 60)} min ago"
        else:
            note = f"now {values[-1]:.0f}%"
        if points and len(points) < expected:
            note += f" ({len(points)}/{expected} min)"
        out.append(SparkLine(label, values, note))
    return out


class _PercentRenderable(SparklineRenderable[float]):
    """Textual's sparkline drawn against a fixed 0-100 % scale, one line high: Textual's own scales each line from
    its minimum to its maximum, which draws a GPU idling between 0 and 2 % as full bars. A bucket at half or more
    takes the sparkline's max colour, a lower one its min colour (theme variables, app.tcss)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = self.width or options.max_width
        for part in self._buckets(list(self.data), num_buckets=width):
            ratio = min(1.0, max(0.0, self.summary_function(part) / 100))
            yield Segment(self.BARS[min(len(self.BARS) - 1, int(ratio * len(self.BARS)))],
                          self.max_color if ratio >= 0.5 else self.min_color)


class UtilSparkline(Sparkline):
    """A `Sparkline` of percentages (`_PercentRenderable`)."""

    def render(self) -> WidgetRender:
        drawn = super().render()
        if not isinstance(drawn, SparklineRenderable):
            return drawn
        low, high = drawn.min_color.color, drawn.max_color.color
        assert low is not None and high is not None  # Style.from_color of a colour
        return _PercentRenderable(list(self.data or ()), width=self.size.width, min_color=low, max_color=high,
                                  summary_function=max)


class UtilSparks(Vertical):
    """A title, then per device its label, its sparkline and its note; or one line saying why there is none.
    Hidden until there is something to say, and where no Prometheus is set (`hide`): a console without
    telemetry shows no empty section."""

    def on_mount(self) -> None:
        self.display = False

    def hide(self) -> None:
        self.remove_children()
        self.display = False

    def show_lines(self, title: str, lines: list[SparkLine]) -> None:
        self.display = True
        self.remove_children()
        rows: list[Any] = [Static(Text(title), classes="spark-title")]
        for line in lines:
            spark: Any = (UtilSparkline(line.values, summary_function=max, classes="spark") if line.values
                          else Static("", classes="spark"))
            rows.append(Horizontal(Static(Text(line.label), classes="spark-label"), spark,
                                   Static(Text(line.note), classes="spark-note"), classes="spark-row"))
        self.mount_all(rows)

    def show_message(self, message: str) -> None:
        self.display = True
        self.remove_children()
        self.mount(Static(Text(message), classes="spark-title"))
