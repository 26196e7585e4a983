"""Charts written as picture files: bus bandwidth against message size (``simulate --plot``)
and building against renting over the ownership period (``plan``'s tco.svg).

Drawn with matplotlib through :func:`~clusterforge.report.figure_file.draw_picture`; each
curve is a line whose SVG group id is ``series-<n>`` (n from 1, in legend order), so tests and
scripts can find it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clusterforge.report.figure_file import PictureFormat, draw_picture
from clusterforge.report.format import money, size_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from clusterforge.design import Design

__all__ = ["Series", "busbw_chart", "size_label", "tco_chart", "tco_curves"]

CHART_SIZE_IN = (8.0, 4.6)
CURVE_STEPS = 48


@dataclass(frozen=True)
class Series:
    """One curve: a design's bus bandwidth (GB/s) at each message size (bytes)."""

    label: str
    size_bytes: Sequence[float]
    busbw_gbyte_per_s: Sequence[float]


def busbw_chart(title: str, series: Sequence[Series], fmt: PictureFormat = "svg") -> bytes:
    """Bus bandwidth (GB/s) against message size on a log2 axis, one line per design, a
    marker at each simulated size."""

    def paint(figure: Figure) -> None:
        from matplotlib.ticker import FuncFormatter, LogLocator

        ax = figure.add_subplot()
        for i, ser in enumerate(series, start=1):
            (line,) = ax.plot(ser.size_bytes, ser.busbw_gbyte_per_s, marker="o", markersize=3,
                              linewidth=1.8, label=ser.label)  # fmt: skip
            line.set_gid(f"series-{i}")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(LogLocator(base=4, numticks=24))  # every power of 4
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v)))
        ax.set_ylim(bottom=0)
        _labels(ax, title, x="message size", y="busbw (GB/s)")

    return draw_picture(CHART_SIZE_IN, fmt, paint, key=(title, series))


def tco_curves(design: Design) -> tuple[list[float], list[float], list[float]]:
    """Cumulative cost over the ownership period, $M: (years, build, rent).

    Building is the capex up front plus the design's opex per year, less the resale value at
    the end; renting is the design's rent total spread evenly over the years. These are the
    design's own cost totals (:class:`~clusterforge.design.cost.tco.CostDesign`) laid over
    time; the report's chart and table read them from here.
    """
    c = design.cost
    years = [c.years * i / CURVE_STEPS for i in range(CURVE_STEPS + 1)]
    build = [(c.capex_usd + c.opex_per_year_usd * t) / 1e6 for t in years]
    rent = [c.rent_total_usd / c.years * t / 1e6 for t in years]
    build[-1] -= c.residual_usd / 1e6
    return years, build, rent


def tco_chart(design: Design, fmt: PictureFormat = "svg") -> bytes:
    """Cumulative cost in $M of building (capex up front, opex per year, resale at the end)
    and of renting (the verdict's offer, named in the legend) over the ownership period; the
    legend carries each total. The curves are :func:`tco_curves`."""
    years, build, rent = tco_curves(design)
    # the resale at the end drawn as a vertical drop, not as a slope from the previous point
    resale_m = design.cost.residual_usd / 1e6
    curves = (
        ("build", [*years, years[-1]], [*build[:-1], build[-1] + resale_m, build[-1]]),
        (f"rent ({design.cost.rent_basis})", years, rent),
    )
    title = (
        f"{design.spec.name}: build vs rent at {design.spec.economics.utilization:.0%} utilization"
    )

    def paint(figure: Figure) -> None:
        ax = figure.add_subplot()
        for i, (name, xs, ys) in enumerate(curves, start=1):
            (line,) = ax.plot(xs, ys, linewidth=1.8, label=f"{name}: {money(ys[-1] * 1e6)}")
            line.set_gid(f"series-{i}")
        ax.set_xlim(0, years[-1])
        ax.set_ylim(bottom=0)
        _labels(ax, title, x="years", y="cumulative cost ($M)")

    return draw_picture(CHART_SIZE_IN, fmt, paint, key=(title, curves))


def _labels(ax: Axes, title: str, *, x: str, y: str) -> None:
    ax.set_title(title, loc="left")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
