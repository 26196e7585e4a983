"""Charts of the HTML report: matplotlib figures inlined as SVG.

The report draws with the same renderer and house style as the picture files ``plan``,
``simulate --plot`` and ``goodput --plot`` write (:mod:`clusterforge.report.figure_file`);
where a file and a report section show the same figure, the section inlines that very
picture (:func:`inline_svg`). Inline SVG needs no script and no library in the page: the page
paints as soon as it is parsed, scales to the page width and prints as vectors.

Each function takes plain series and returns an HTML fragment (an ``svg`` element).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from clusterforge.report.figure_file import COLORS, draw_picture, svg_fragment

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "bar_chart",
    "inline_svg",
    "line_chart",
]

SIZE_IN = (9.0, 4.2)
# the house colours, then three more (Tableau 10's) for charts of up to ten series
PALETTE = (*COLORS, "#eeca3b", "#ff9da6", "#9d755d")
_IDS = re.compile(r'(\bid="|href="#|url\(#)')


def inline_svg(svg: bytes) -> str:
    """A chart's SVG as an element to place in an HTML page
    (:func:`~clusterforge.report.figure_file.svg_fragment`), every id prefixed with a hash
    of the picture: charts share their group names (``series-1``), and a page holds many."""
    prefix = "c" + hashlib.sha1(svg).hexdigest()[:8] + "-"
    return _IDS.sub(lambda m: m.group(1) + prefix, svg_fragment(svg.decode("utf-8")))


def _draw(paint: Callable[[Figure], None], *, key: tuple[object, ...], bottom: float = 0.12) -> str:
    """A chart of :data:`SIZE_IN` with fixed margins (room on the right for the legend):
    matplotlib's constrained layout would measure every text first, half the drawing time,
    and the report redraws its charts on each change in the planner. ``key`` is every
    argument of the chart function (its name first): a chart drawn before is not redrawn."""

    def framed(figure: Figure) -> None:
        paint(figure)
        figure.subplots_adjust(left=0.08, right=0.8, top=0.9, bottom=bottom)

    picture = draw_picture(SIZE_IN, "svg", framed, constrained=False, key=(*key, bottom))
    return inline_svg(picture)


def _labels(ax: Axes, title: str, *, x: str, y: str, legend: bool) -> None:
    ax.set_title(title, loc="left")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def line_chart(
    title: str,
    *,
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    x_title: str,
    y_title: str,
    markers: bool = True,
) -> str:
    """Lines, one per (label, xs, ys); ``markers`` marks each point. Each line is the SVG
    group ``series-<n>`` (n from 1, in legend order)."""

    def paint(figure: Figure) -> None:
        ax = figure.add_subplot()
        for i, (label, xs, ys) in enumerate(series, start=1):
            (line,) = ax.plot(list(xs), list(ys), marker="o" if markers else None, markersize=3,
                              linewidth=1.8, label=label)  # fmt: skip
            line.set_gid(f"series-{i}")
        ax.set_ylim(bottom=0)
        _labels(ax, title, x=x_title, y=y_title, legend=True)

    return _draw(paint, key=("line_chart", title, series, x_title, y_title, markers))


def bar_chart(
    title: str,
    *,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    y_title: str,
    limit: tuple[str, float] | None = None,
    stacked: bool = False,
    highlight: int | None = None,
) -> str:
    """Bars, one colour per (name, values), side by side or ``stacked``; ``limit`` as
    (label, value) draws a dashed line across the bars (a circuit's capacity); the category
    at index ``highlight`` is outlined and its name set in bold (the SVG group
    ``highlight``). Long category names are turned; beyond 40 categories the names are left
    to the table."""
    import numpy as np

    num_cats, num_series = len(labels), max(1, len(series))
    x = np.arange(num_cats)
    width = 0.8 if stacked else 0.8 / num_series

    def paint(figure: Figure) -> None:
        ax = figure.add_subplot()
        bottom = np.zeros(num_cats)
        for i, (name, values) in enumerate(series):
            ys = np.asarray(values, dtype=float)
            offset = 0.0 if stacked else (i - (num_series - 1) / 2) * width
            ax.bar(x + offset, ys, width, bottom=bottom if stacked else None, label=name,
                   color=PALETTE[i % len(PALETTE)])  # fmt: skip
            if stacked:
                bottom = bottom + ys
        if limit is not None:
            ax.axhline(limit[1], color=COLORS[3], linestyle="--", linewidth=1.5, label=limit[0])
        _category_axis(ax, labels)
        if highlight is not None:
            _outline(ax, highlight)
        ax.set_ylim(bottom=0)
        ax.grid(axis="x", visible=False)
        _labels(ax, title, x="", y=y_title, legend=len(series) > 1 or limit is not None)

    key = ("bar_chart", title, labels, series, y_title, limit, stacked, highlight)
    return _draw(paint, key=key, bottom=_bottom_margin(labels))


def _outline(ax: Axes, index: int) -> None:
    """A box around the bars of category ``index`` and its tick label in bold."""
    from matplotlib.patches import Rectangle

    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    top = max((p.get_y() + p.get_height() for p in bars), default=0.0)
    box = Rectangle((index - 0.45, 0), 0.9, top * 1.04, fill=False, edgecolor="#222222",
                    linewidth=1.6, linestyle="-", zorder=3)  # fmt: skip
    box.set_gid("highlight")
    ax.add_patch(box)
    ticks = ax.get_xticklabels()
    if index < len(ticks):
        ticks[index].set_fontweight("bold")


def _turned(labels: Sequence[str]) -> bool:
    longest = max((len(line) for s in labels for line in s.split("\n")), default=0)
    return longest * len(labels) > 90


def _bottom_margin(labels: Sequence[str]) -> float:
    """Room under the axes for the category names: more when turned or on two lines."""
    if len(labels) > 40:
        return 0.12
    lines = max((s.count("\n") + 1 for s in labels), default=1)
    longest = max((len(line) for s in labels for line in s.split("\n")), default=0)
    if _turned(labels):
        return min(0.45, 0.1 + 0.012 * longest + 0.04 * (lines - 1))
    return 0.1 + 0.04 * lines


def _category_axis(ax: Axes, labels: Sequence[str]) -> None:
    if len(labels) > 40:
        ax.set_xticks([])
        ax.set_xlabel(f"{len(labels)} bars, in the table's order")
        return
    turned = _turned(labels)
    ax.set_xticks(range(len(labels)), list(labels), rotation=30 if turned else 0,
                  ha="right" if turned else "center", fontsize=8)  # fmt: skip
