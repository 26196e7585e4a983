"""Rendering of an acceptance report: verdict table, nccl-tests-shaped sweep, localization."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from clusterforge.accept import AcceptReport

__all__ = ["nccl_tests_table", "print_accept"]

COLOURS = {"pass": "green", "fail": "red", "skip": "yellow", "info": "cyan"}


def _verdict_table(report: AcceptReport) -> Table:
    table = Table(title=f"acceptance on {len(report.nodes)} nodes")
    for col in ("test", "node", "measured", "expected (source)", "verdict"):
        table.add_column(col, justify="right" if col == "measured" else "left")
    for r in report.results:
        measured = "" if r.measured is None else f"{r.measured:,.4g} {r.unit}"
        expected = "\n".join(
            f"{'>=' if t.at_least else '<='} {t.value:,.4g} {t.unit} ({t.source})"
            for t in r.targets
        )
        verdict = f"[{COLOURS[r.verdict]}]{r.verdict}[/]"
        if r.evidence:
            verdict += f"\n{escape(r.evidence)}"
        node = f"{r.node}\n{escape(r.port)}" if r.port else r.node
        table.add_row(r.test, node, measured, escape(expected), verdict)
    return table


def nccl_tests_table(rows: list[dict[str, object]]) -> str:
    """The sweep in nccl-tests' columns (out-of-place), one block per collective."""
    lines = []
    for op in dict.fromkeys(str(r["op"]) for r in rows):
        lines.append(f"# {op}")
        lines.append(
            f"#{'size':>12} {'count':>12} {'type':>6} {'time':>10} {'algbw':>8} {'busbw':>8}"
        )
        lines.append(
            f"#{'(B)':>12} {'(elements)':>12} {'':>6} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}"
        )
        for r in (r for r in rows if r["op"] == op):
            lines.append(
                f" {r['size_bytes']:>12} {r['count']:>12} {r['type']:>6} {float(r['time_us']):>10.1f}"  # type: ignore[arg-type]
                f" {float(r['algbw_gbyte_per_s']):>8.2f} {float(r['busbw_gbyte_per_s']):>8.2f}"  # type: ignore[arg-type]
            )
    return "\n".join(lines)


def print_accept(report: AcceptReport, console: Console) -> None:
    console.print(_verdict_table(report))
    if report.collective_rows:
        console.print(nccl_tests_table(report.collective_rows), markup=False, highlight=False)
    loc = report.localization
    if loc is not None:
        console.print("[bold]localization[/] (busbw of each group, GB/s):")
        for group, value in loc.evidence:
            console.print(f"  {escape(', '.join(group))}: {value:,.3f}")
        console.print(
            f"  slowest node: [red]{escape(loc.culprit)}[/]"
            if loc.culprit
            else "  no single node stood out"
        )
    if report.failed_nodes:
        console.print(f"[red]failed nodes:[/] {escape(', '.join(report.failed_nodes))}")
