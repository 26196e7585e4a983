"""Rendering of a rehearsal: one row per drill with its verdict, timing and evidence."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from clusterforge.report.json_document import json_document

if TYPE_CHECKING:
    from clusterforge.rehearse.model import RehearseReport

__all__ = ["print_rehearse", "rehearse_json", "seconds"]

COLOURS = {"pass": "green", "fail": "red", "skip": "yellow"}


def seconds(value: float | None) -> str:
    """'2.1 s', or '' when the drill has no such time."""
    return "" if value is None else f"{value:.1f} s"


def _table(report: RehearseReport) -> Table:
    table = Table(title=f"rehearsal of {report.cluster} on {len(report.nodes)} emulated nodes")
    for col in ("drill", "verdict", "took", "detect", "drain", "recover", "evidence"):
        table.add_column(
            col, justify="right" if col in ("took", "detect", "drain", "recover") else "left"
        )
    for d in report.drills:
        table.add_row(
            d.name,
            f"[{COLOURS[d.verdict]}]{d.verdict}[/]",
            seconds(d.duration_s),
            seconds(d.detect_s),
            seconds(d.drain_s),
            seconds(d.recover_s),
            escape("\n".join(d.evidence)),
        )
    return table


def print_rehearse(report: RehearseReport, console: Console) -> None:
    console.print(_table(report))
    if report.kept:
        console.print("[bold]kept running:[/]")
        for key, value in report.reach.items():
            console.print(f"  {key}: {escape(value)}", highlight=False)


def rehearse_json(report: RehearseReport) -> str:
    return json.dumps(json_document("rehearse", report.as_dict()), indent=2)
