"""Render simulation studies: nccl-tests-shaped tables, bottleneck lines, JSON and a plot.

The table has nccl-tests' columns (size, count, type, time, algbw, busbw) plus the algorithm
and protocol NCCL's tuner would run, so a user can diff it against a real run line by line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID
from rich.table import Table

from clusterforge.assess import (
    DTYPE_BYTES,
    Calibration,
    CollectiveResult,
    Study,
    StudyRequest,
    simulate,
)
from clusterforge.report.files import check_picture_path, write_picture
from clusterforge.report.plots import Series, busbw_chart

__all__ = [
    "bottleneck_lines",
    "human_size",
    "render_studies",
    "run_with_progress",
    "study_json",
    "study_table",
    "vs_table",
    "write_plot",
]


def human_size(size: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


def loss_mode(r: CollectiveResult) -> str:
    """'lossless InfiniBand', 'lossless RoCE (PFC)', 'lossy RoCE', each with ' + DCQCN' where
    the NICs run ECN rate control."""
    name = {"infiniband": "InfiniBand", "roce": "RoCE"}.get(r.fabric, r.fabric)
    rate = " + DCQCN" if r.rate_control else ""
    if not r.lossless:
        return f"lossy {name}{rate}"
    return f"lossless {name}" + (" (PFC)" if r.fabric == "roce" else "") + rate


def study_table(study: Study) -> Table:
    r0 = study.results[0]
    qps = f" x{r0.num_qps} QPs" if r0.routing == "ecmp" else ""
    table = Table(
        title=escape(
            f"{study.name}: {r0.collective}, {r0.num_groups} group(s) of {r0.num_ranks} GPUs, "
            f"{r0.routing}{qps}, {loss_mode(r0)}"
        )
    )
    headers = ("size\n(B)", "count\n(elements)", "type", "algo", "proto", "time\n(us)",
               "algbw\n(GB/s)", "busbw\n(GB/s)")  # fmt: skip
    for col in headers:
        table.add_column(col, justify="right", no_wrap=True)
    for r in study.results:
        table.add_row(
            f"{int(r.size_bytes)}",
            f"{int(r.size_bytes) // DTYPE_BYTES}",
            "float",
            r.algorithm,
            r.protocol,
            f"{r.time_s * 1e6:.1f}",
            f"{r.algbw_gbyte_per_s:.2f}",
            f"{r.busbw_gbyte_per_s:.2f}",
        )
    return table


def bottleneck_lines(r: CollectiveResult) -> list[str]:
    """Summary lines (rich markup; user text escaped) for the largest size."""
    lines = [
        f"# Avg bus bandwidth    : {r.busbw_gbyte_per_s:.2f} GB/s at {human_size(r.size_bytes)}"
    ]
    link = r.limiting_link
    if link is not None:
        lines.append(
            escape(
                f"# Limiting link        : {link.source} -> {link.target} ({link.link_class}, "
                f"{link.capacity_gbyte_per_s:g} GB/s): busy {link.busy_fraction:.0%}, offered "
                f"load {link.offered_load:.0%} of capacity"
            )
        )
    spot = r.hotspot
    if r.congested and spot is not None:
        lines.append(
            escape(
                f"# Most congested link  : {spot.source} -> {spot.target} ({spot.link_class}): "
                f"offered load {spot.offered_load:.0%} of capacity"
            )
        )
    if r.congestion_response == "drop":
        lines.append(
            f"# [red]Congestion (lossy)[/]: offered load reaches {r.max_offered_load:.0%} of a "
            f"link; this {loss_mode(r)} fabric would drop ~{r.drop_fraction:.0%} of the hot link's "
            f"packets (1 - capacity/offered) and go-back-N resends leave "
            f"{r.goodput_share:.1%} of its bytes useful (included in the times above)"
        )
    elif r.congestion_response == "rate":
        lines.append(
            f"# [yellow]Congestion (rate control)[/]: offered load reaches "
            f"{r.max_offered_load:.0%} of a link; ECN marks make the senders cut their rate to "
            f"a fair share of it (DCQCN), nothing is dropped, and the rates' saw-tooth keeps "
            f"{r.goodput_share:.0%} of it busy (included in the times above)"
        )
    elif r.congestion_response == "pause":
        push = "PFC pauses" if r.fabric == "roce" else "credit back-pressure stalls"
        lines.append(
            f"# [yellow]Congestion (lossless)[/]: offered load reaches "
            f"{r.max_offered_load:.0%} of a link; nothing is dropped, but {push} "
            f"{r.num_paused_links} upstream link(s); head-of-line blocking risk for "
            f"{r.hol_victim_share:.0%} of the other flows sharing them"
        )
    return lines


def vs_table(a: Study, b: Study) -> Table:
    title = f"{a.results[0].collective}: A = {a.name} vs B = {b.name} (busbw in GB/s)"
    table = Table(title=escape(title))
    for col in ("size", "A time (us)", "A busbw", "B time (us)", "B busbw", "B / A"):
        table.add_column(col, justify="right", no_wrap=True)
    for x, y in zip(a.results, b.results, strict=True):
        ratio = y.busbw_gbyte_per_s / x.busbw_gbyte_per_s if x.busbw_gbyte_per_s else 0.0
        table.add_row(
            human_size(x.size_bytes),
            f"{x.time_s * 1e6:.1f}",
            f"{x.busbw_gbyte_per_s:.2f}",
            f"{y.time_s * 1e6:.1f}",
            f"{y.busbw_gbyte_per_s:.2f}",
            f"{ratio:.2f}x",
        )
    return table


def study_json(study: Study) -> dict[str, Any]:
    """The results, plus nccl-tests' row (size, count, type, time, algbw, busbw) per size."""
    rows = [
        {
            "size": int(r.size_bytes),
            "count": int(r.size_bytes) // DTYPE_BYTES,
            "type": "float",
            "algorithm": r.algorithm,
            "protocol": r.protocol,
            "time_us": r.time_s * 1e6,
            "algbw": r.algbw_gbyte_per_s,
            "busbw": r.busbw_gbyte_per_s,
        }
        for r in study.results
    ]
    out: dict[str, Any] = {
        "design": study.name,
        "table": rows,
        "results": [r.to_dict() for r in study.results],
    }
    if study.calibrated_busbw:
        out["calibration"] = [
            {
                "size": int(size),
                "simulated_busbw": simulated,
                "calibrated_busbw": calibrated,
                "change": calibrated / simulated - 1.0,
            }
            for size, simulated, calibrated in study.calibrated_busbw
        ]
    return out


def calibration_table(study: Study) -> Table:
    """Simulated against calibrated bus bandwidth per size (a measured cluster's efficiency)."""
    table = Table(title=f"{study.name}: busbw calibrated from measured collectives")
    for name in ("size (B)", "simulated GB/s", "calibrated GB/s", "change"):
        table.add_column(name, justify="right")
    for size, simulated, calibrated in study.calibrated_busbw:
        table.add_row(
            f"{size:,.0f}",
            f"{simulated:,.2f}",
            f"{calibrated:,.2f}",
            f"{calibrated / simulated - 1:+.1%}",
        )
    return table


def write_plot(path: str | None, studies: list[Study]) -> None:
    """busbw against size for each design, as a picture in the format the file name asks
    (.svg, .png, .pdf), written whole or not at all; the folder must exist: a mistyped path
    is an error, not a new tree."""
    if path is None:
        return
    target = Path(path)
    fmt = check_picture_path(target)
    series = [
        Series(s.name, [x.size_bytes for x in s.results], [x.busbw_gbyte_per_s for x in s.results])
        for s in studies
    ]
    title = f"{studies[0].results[0].collective} bus bandwidth"
    write_picture(target, busbw_chart(title, series, fmt))


def run_with_progress(
    request: StudyRequest, console: Console | None, calibration: Calibration | None = None
) -> list[Study]:
    """:func:`clusterforge.assess.simulate` with a progress bar per design on ``console``
    (None: silent)."""
    if console is None or len(request.sizes) == 1:
        return simulate(request, calibration=calibration)
    with Progress(console=console, transient=True) as progress:
        tasks: dict[str, TaskID] = {}

        def advance(name: str, done: int) -> None:
            if name not in tasks:
                tasks[name] = progress.add_task(f"simulating {name}", total=len(request.sizes))
            progress.update(tasks[name], completed=done)

        return simulate(request, advance, calibration)


def render_studies(studies: list[Study], console: Console) -> None:
    """Each design's table and bottleneck lines, then A vs B when there are two."""
    console.width = max(console.width, 110)  # nccl-tests' columns stay whole when piped
    for study in studies:
        if study.calibrated_busbw:
            console.print(calibration_table(study))
        console.print(study_table(study))
        for line in bottleneck_lines(study.results[-1]):
            console.print(line, highlight=False, soft_wrap=True)
    if len(studies) == 2:
        console.print(vs_table(studies[0], studies[1]))
