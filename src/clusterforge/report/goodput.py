"""Rendering of a goodput report: terminal tables and a histogram of the time to train (a
picture drawn with matplotlib, :mod:`clusterforge.report.figure_file`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from clusterforge.report.figure_file import COLORS, PictureFormat, draw_picture

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from clusterforge.assess import Expected, GoodputReport

__all__ = ["LOST_CAUSES", "histogram_picture", "interval_label", "lost_rows", "print_goodput",
           "waterfall_picture"]  # fmt: skip

DAY_S = 86400.0
HISTOGRAM_SIZE_IN = (8.0, 4.2)
WATERFALL_SIZE_IN = (8.0, 4.2)


def _summary_table(report: GoodputReport) -> Table:
    exp, lives = report.expected, report.lives
    table = Table(title="goodput of the design's job", show_header=False)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = [
        ("failure-free time to train", f"{report.inputs.work_s / DAY_S:,.1f} days"),
        ("interruptions per day", f"{exp.interruptions_per_day:,.2f}"),
        ("mean time between interruptions", f"{exp.mtbf_h:,.1f} h"),
        ("checkpoint cost (training paused)", f"{exp.checkpoint_s:,.1f} s"),
        (
            "checkpoint interval ("
            + ("set in the spec" if report.inputs.interval_s else "Young/Daly")
            + ")",
            interval_label(exp),
        ),
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
            f"{exp.spares.num_spares} / {exp.spares.mean_in_repair:,.1f}"
            + (f" in each of {exp.spares.num_pools} domains" if exp.spares.num_pools > 1 else ""),
        ),
        ("spares for 99% availability", f"{exp.spares.spares_for_99}"),
        ("P(a failure finds no spare)", f"{exp.spares.p_no_spare:.1%}"),
        ("waiting for spares (mean per life)", f"{lives.spare_wait_s.mean() / DAY_S:,.2f} days"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


# Where the time beyond the failure-free work goes (LostTime's parts, in its order).
LOST_CAUSES = (
    ("failures (work redone)", "failures_s"),
    ("restarts (detect, relaunch, read back)", "restarts_s"),
    ("checkpoints (training paused)", "checkpoints_s"),
    ("waiting for spares", "spare_wait_s"),
)


def interval_label(exp: Expected) -> str:
    """The checkpoint interval in minutes (seconds when under two) and in steps."""
    tau = exp.checkpoint_interval_s
    label = f"{tau / 60:,.0f} min" if tau >= 120 else f"{tau:,.0f} s"
    steps = exp.checkpoint_interval_steps
    if steps is None:
        return label
    return f"{label} ({steps:,.0f} step{'' if round(steps) == 1 else 's'})"


def lost_rows(report: GoodputReport) -> list[tuple[str, float, float]]:
    """(cause, days, share of the lost time) for each cause, then the total."""
    lost = report.expected.lost
    total = lost.total_s
    rows = [
        (name, getattr(lost, field) / DAY_S, getattr(lost, field) / total if total > 0 else 0.0)
        for name, field in LOST_CAUSES
    ]
    return [*rows, ("total lost", total / DAY_S, 1.0 if total > 0 else 0.0)]


def _lost_table(report: GoodputReport) -> Table:
    table = Table(title="lost time by cause (expected)")
    for col in ("cause", "days", "share"):
        table.add_column(col, justify="left" if col == "cause" else "right")
    for name, days, share in lost_rows(report):
        table.add_row(name, f"{days:,.2f}", f"{share:.1%}")
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
    """The summary, interruptions by class, lost time by cause and the what-ifs."""
    console.print(_summary_table(report))
    by_class = Table(title="interruptions per day by component class")
    by_class.add_column("class")
    by_class.add_column("per day", justify="right")
    for name, rate in report.inputs.rates.per_hour.items():
        by_class.add_row(name, f"{rate * 24:.3f}")
    console.print(by_class)
    console.print(_lost_table(report))
    console.print(_what_if_table(report))


def histogram_picture(report: GoodputReport, fmt: PictureFormat = "svg", bins: int = 30) -> bytes:
    """Histogram of the simulated time to train (days) over the Monte Carlo lives, the
    expected value (the closed-form model) and the P90 marked. In the SVG the bars are the
    groups ``bar-<n>`` (n from 1), the markers ``expected`` and ``p90``."""
    days = report.lives.wall_s / DAY_S
    expected_days = report.expected.wall_s / DAY_S
    p90_days = report.percentile_days(90)

    def paint(figure: Figure) -> None:
        ax = figure.add_subplot()
        ax.hist(days, bins=bins, color=COLORS[0], edgecolor="white", linewidth=0.5,
                           label=f"{days.size:,} simulated lives")  # fmt: skip
        for i, bar in enumerate(ax.patches, start=1):  # the bars, and only them
            bar.set_gid(f"bar-{i}")
        marks = (("expected", expected_days, COLORS[3], "-"), ("P90", p90_days, "#333333", "--"))
        for name, value, color, style in marks:
            line = ax.axvline(value, color=color, linestyle=style, linewidth=1.8,
                              label=f"{name}: {value:,.1f} days")  # fmt: skip
            line.set_gid(name.lower())
        ax.set_title(f"time to train over {days.size:,} simulated lives", loc="left")
        ax.set_xlabel("time to train (days)")
        ax.set_ylabel("lives")
        ax.legend(loc="upper right", frameon=False)

    key = (days, bins, expected_days, p90_days)
    return draw_picture(HISTOGRAM_SIZE_IN, fmt, paint, key=key)


def waterfall_picture(report: GoodputReport, fmt: PictureFormat = "svg") -> bytes:
    """Where the days go, as a waterfall: the failure-free time to train, then a step up for
    each cause of lost time (the expected model's breakdown, :data:`LOST_CAUSES`), ending at
    the expected time to train. Each bar is labelled with its days; in the SVG the steps are
    the groups ``step-<n>`` (n from 1, in :data:`LOST_CAUSES` order), the ends ``work`` and
    ``total``."""
    work_days = report.inputs.work_s / DAY_S
    causes = [(name, days) for name, days, _ in lost_rows(report)[:-1]]
    total_days = work_days + sum(days for _, days in causes)
    labels = ["failure-free", *(name.split(" (")[0] for name, _ in causes), "expected"]

    def paint(figure: Figure) -> None:
        ax = figure.add_subplot()
        bars = [("work", 0.0, work_days, COLORS[0])]
        level = work_days
        for i, (_, days) in enumerate(causes, start=1):
            bars.append((f"step-{i}", level, days, COLORS[3]))
            level += days
        bars.append(("total", 0.0, total_days, COLORS[1]))
        for x, (gid, bottom, height, color) in enumerate(bars):
            (bar,) = ax.bar(x, height, bottom=bottom, color=color, width=0.6)
            bar.set_gid(gid)
            text = f"{height:,.1f} d" if gid in ("work", "total") else f"+{height:,.2f} d"
            ax.annotate(text, (x, bottom + height), ha="center", va="bottom", fontsize=8,
                        xytext=(0, 2), textcoords="offset points")  # fmt: skip
        # when the lost days are small against the work, start the axis near the work's top
        # so the steps can be seen (and say so on the axis)
        lost = total_days - work_days
        bottom = max(0.0, work_days - 4 * max(lost, 0.01 * work_days))
        ax.set_ylim(bottom, total_days + 0.12 * (total_days - bottom))
        ax.set_xticks(range(len(labels)), labels, fontsize=8)
        ax.grid(axis="x", visible=False)
        ax.set_title("time to train: failure-free, each cause of lost time, expected", loc="left")
        ax.set_ylabel("days (axis starts above zero)" if bottom > 0 else "days")

    key = (work_days, causes, total_days, labels)
    return draw_picture(WATERFALL_SIZE_IN, fmt, paint, key=key)
