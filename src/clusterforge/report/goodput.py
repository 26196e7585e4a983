"""Rendering of a goodput report: terminal tables and a histogram of time to train (SVG)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import numpy as np
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from clusterforge.goodput import GoodputReport

__all__ = ["histogram_svg", "print_goodput"]

DAY_S = 86400.0
WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 720, 380, 60, 50, 40, 20


def _summary_table(report: GoodputReport) -> Table:
    exp, lives = report.expected, report.lives
    table = Table(title="goodput of the design's job", show_header=False)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = [
        ("failure-free time to train", f"{report.inputs.work_s / DAY_S:,.1f} days"),
        ("interruptions per day", f"{exp.interruptions_per_day:,.2f}"),
        ("mean time between interruptions", f"{exp.mtbf_h:,.1f} h"),
        ("checkpoint cost (training paused)", f"{exp.checkpoint_s:,.0f} s"),
        ("checkpoint interval (Young/Daly)", f"{exp.checkpoint_interval_s / 60:,.0f} min"),
        ("restart (detect, relaunch, read back)", f"{exp.restart_s / 60:,.1f} min"),
        ("effective training time ratio (ETTR)", f"{exp.ettr:.1%}"),
        ("time to train, expected", f"{exp.wall_s / DAY_S:,.1f} days"),
        (
            "time to train, P50 / P90 (Monte Carlo)",
            f"{report.percentile_days(50):,.1f} / {report.percentile_days(90):,.1f} days",
        ),
        ("failures per life (mean)", f"{lives.failures.mean():,.0f}"),
        (
            "spares / nodes in repair (mean)",
            f"{exp.spares.num_spares} / {exp.spares.mean_in_repair:,.1f}",
        ),
        ("spares for 99% availability", f"{exp.spares.spares_for_99}"),
        ("P(a failure finds no spare)", f"{exp.spares.p_no_spare:.1%}"),
        ("waiting for spares (mean per life)", f"{lives.spare_wait_s.mean() / DAY_S:,.2f} days"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _what_if_table(report: GoodputReport) -> Table:
    table = Table(title="what if")
    for col in ("change", "ETTR", "expected days", "spares for 99%"):
        table.add_column(col, justify="left" if col == "change" else "right")
    for label, exp in report.variants.items():
        table.add_row(
            label, f"{exp.ettr:.1%}", f"{exp.wall_s / DAY_S:,.1f}", str(exp.spares.spares_for_99)
        )
    return table


def print_goodput(report: GoodputReport, console: Console) -> None:
    """The summary, interruptions by class and the what-ifs."""
    console.print(_summary_table(report))
    by_class = Table(title="interruptions per day by component class")
    by_class.add_column("class")
    by_class.add_column("per day", justify="right")
    for name, rate in report.inputs.rates.per_hour.items():
        by_class.add_row(name, f"{rate * 24:.3f}")
    console.print(by_class)
    console.print(_what_if_table(report))


def histogram_svg(report: GoodputReport, bins: int = 30) -> str:
    """Histogram of the simulated time to train, with the expected value marked."""
    days = report.lives.wall_s / DAY_S
    counts, edges = np.histogram(days, bins=bins)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x_lo, x_hi = float(edges[0]), float(edges[-1]) if edges[-1] > edges[0] else edges[0] + 1
    y_hi = max(int(counts.max()), 1)

    def x(v: float) -> float:
        return LEFT + plot_w * (v - x_lo) / (x_hi - x_lo)

    body = [
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="white" stroke="#333"/>'
    ]
    for count, lo, hi in zip(counts, edges[:-1], edges[1:], strict=True):
        h = plot_h * count / y_hi
        body.append(
            f'<rect class="bar" x="{x(lo):.1f}" y="{TOP + plot_h - h:.1f}" '
            f'width="{max(x(hi) - x(lo) - 1, 1):.1f}" height="{h:.1f}" fill="#4c78a8"/>'
        )
    mark = report.expected.wall_s / DAY_S
    if x_lo <= mark <= x_hi:
        body.append(
            f'<line x1="{x(mark):.1f}" x2="{x(mark):.1f}" y1="{TOP}" y2="{TOP + plot_h}" '
            'stroke="#e45756" stroke-width="2"/>'
        )
    for v in np.linspace(x_lo, x_hi, 6):
        body.append(
            f'<text x="{x(float(v)):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{v:,.1f}</text>'
        )
    title = (
        f"time to train over {days.size} simulated lives (days); red: expected "
        f"{mark:,.1f}, P90 {report.percentile_days(90):,.1f}"
    )
    body.append(f'<text x="{LEFT}" y="{TOP - 14}" font-weight="bold">{escape(title)}</text>')
    body.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">days</text>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )
