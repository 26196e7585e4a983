"""Small SVG charts without a plotting dependency: busbw against message size."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

__all__ = ["Series", "busbw_chart_svg", "tco_chart_svg"]

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 180, 40, 60
COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2")


@dataclass(frozen=True)
class Series:
    """One curve: a design's bus bandwidth (GB/s) at each message size (bytes)."""

    label: str
    size_bytes: Sequence[float]
    busbw_gbyte_per_s: Sequence[float]


def _size_label(size: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


def _axes(x_lo: float, x_hi: float, y_hi: float) -> list[str]:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    out = [
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="white" stroke="#333"/>'
    ]
    for i in range(6):
        value = y_hi * i / 5
        y = TOP + plot_h - plot_h * i / 5
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{value:.0f}</text>')
    for exp in range(math.ceil(x_lo), math.floor(x_hi) + 1, 2):
        x = LEFT + plot_w * (exp - x_lo) / max(x_hi - x_lo, 1e-9)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#eee"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{_size_label(2.0**exp)}</text>'
        )
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 14}" text-anchor="middle">message size</text>'
    )
    out.append(
        f'<text x="18" y="{TOP + plot_h / 2}" transform="rotate(-90 18 {TOP + plot_h / 2})" text-anchor="middle">busbw (GB/s)</text>'
    )
    return out


def busbw_chart_svg(title: str, series: Sequence[Series]) -> str:
    """Line chart of busbw against log2(message size), one colour per series."""
    sizes = [s for ser in series for s in ser.size_bytes]
    values = [v for ser in series for v in ser.busbw_gbyte_per_s]
    x_lo, x_hi = math.log2(min(sizes)), math.log2(max(sizes))
    y_hi = max(values) * 1.1 or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    body = _axes(x_lo, x_hi, y_hi)
    for i, ser in enumerate(series):
        color = COLORS[i % len(COLORS)]
        points = " ".join(
            f"{LEFT + plot_w * (math.log2(s) - x_lo) / max(x_hi - x_lo, 1e-9):.1f},"
            f"{TOP + plot_h - plot_h * v / y_hi:.1f}"
            for s, v in zip(ser.size_bytes, ser.busbw_gbyte_per_s, strict=True)
        )
        body.append(
            f'<polyline class="series" data-label="{escape(ser.label)}" points="{points}" fill="none" stroke="{color}" stroke-width="2"/>'
        )
        y = TOP + 20 * i + 10
        body.append(
            f'<rect x="{WIDTH - RIGHT + 12}" y="{y - 8}" width="12" height="12" fill="{color}"/>'
        )
        body.append(f'<text x="{WIDTH - RIGHT + 30}" y="{y + 2}">{escape(ser.label)}</text>')
    body.append(f'<text x="{LEFT}" y="{TOP - 14}" font-weight="bold">{escape(title)}</text>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )


def _tco_grid(years: float, y_hi: float) -> list[str]:
    """Frame, horizontal grid with $M labels, year ticks and axis titles of the TCO chart."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    body = [
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="white" stroke="#333"/>'
    ]
    for i in range(6):
        y = TOP + plot_h - plot_h * i / 5
        body.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        body.append(
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{y_hi * i / 5:,.1f}</text>'
        )
    for year in range(math.floor(years) + 1):
        x = LEFT + plot_w * year / years
        body.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{year}</text>')
    body.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 14}" text-anchor="middle">years</text>'
    )
    body.append(
        f'<text x="18" y="{TOP + plot_h / 2}" transform="rotate(-90 18 {TOP + plot_h / 2})" text-anchor="middle">cumulative cost ($M)</text>'
    )
    return body


def tco_chart_svg(
    title: str,
    years: float,
    capex_usd: float,
    opex_per_year_usd: float,
    residual_usd: float,
    rent_per_year_usd: float,
) -> str:
    """Cumulative cost of building (capex up front, opex per year, resale at the end) against
    renting the same used GPU-hours, in $M over the ownership period."""
    steps = 48
    ts = [years * i / steps for i in range(steps + 1)]
    build = [(capex_usd + opex_per_year_usd * t) / 1e6 for t in ts]
    rent = [rent_per_year_usd * t / 1e6 for t in ts]
    # resale at the end of the period: a vertical drop at the last year
    build_ts, build = [*ts, years], [*build, build[-1] - residual_usd / 1e6]
    y_hi = max(*build, *rent) * 1.1 or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def xy(t: float, v: float) -> str:
        return f"{LEFT + plot_w * t / years:.1f},{TOP + plot_h - plot_h * v / y_hi:.1f}"

    body = _tco_grid(years, y_hi)
    for i, (label, times, values) in enumerate((("build", build_ts, build), ("rent", ts, rent))):
        color = COLORS[i]
        points = " ".join(xy(t, v) for t, v in zip(times, values, strict=True))
        body.append(
            f'<polyline class="series" data-label="{label}" points="{points}" fill="none" stroke="{color}" stroke-width="2"/>'
        )
        y = TOP + 20 * i + 10
        body.append(
            f'<rect x="{WIDTH - RIGHT + 12}" y="{y - 8}" width="12" height="12" fill="{color}"/>'
        )
        body.append(
            f'<text x="{WIDTH - RIGHT + 30}" y="{y + 2}">{label}: ${values[-1]:,.1f}M</text>'
        )
    body.append(f'<text x="{LEFT}" y="{TOP - 14}" font-weight="bold">{escape(title)}</text>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )
