"""Terminal and JSON views of a node health check (``clusterforge check``).

Every cell is a :class:`rich.text.Text`, never markup: node names, subjects and error
messages may carry text such as ``[/]``.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table
from rich.text import Text

from clusterforge.ops.checks import CheckResult
from clusterforge.ops.oneshot import CheckOutcome
from clusterforge.ops.runner import Report
from clusterforge.report.json_document import json_document

__all__ = ["check_json", "print_alert", "print_check"]

STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "unknown": "magenta"}

Row = tuple[str, str, str, str, str]


def _rows(results: tuple[CheckResult, ...], verbose: bool) -> list[Row]:
    """One row per check id when all pass; one per non-passing subject otherwise."""
    rows: list[Row] = []
    for check_id in dict.fromkeys(r.check for r in results):
        group = [r for r in results if r.check == check_id]
        shown = group if verbose else [r for r in group if r.status != "pass"]
        if not shown:
            first, single = group[0], len(group) == 1
            subject = first.subject if single else f"{len(group)} subjects"
            observed = first.observed if single else "all pass"
            rows.append((check_id, "pass", subject, observed, first.expected))
        rows.extend((check_id, r.status, r.subject, r.observed, r.expected) for r in shown)
    return rows


def _table(report: Report, verbose: bool) -> Table:
    where = f" ({report.facts.describe()})" if report.facts else ""
    table = Table(title=Text(f"clusterforge check: {report.node}{where}"))
    for column in ("check", "status", "subject", "observed", "expected"):
        table.add_column(column, overflow="fold")
    for check_id, status, *rest in _rows(report.results, verbose):
        table.add_row(Text(check_id), Text(status, style=STATUS_STYLE[status]), *map(Text, rest))
    return table


def _line(label: str, text: str, style: str = "bold") -> Text:
    return Text(label, style=style) + Text(text)


def print_check(outcome: CheckOutcome, console: Console, *, verbose: bool = False) -> None:
    """The results table, the remedies, unreadable sources, notes, verdict and action."""
    report, decision = outcome.report, outcome.decision
    console.print(_table(report, verbose))
    remedies = {
        r.check: r.remedy for r in report.results if r.status in ("fail", "warn") and r.remedy
    }
    for check_id, remedy in remedies.items():
        console.print(_line(f"{check_id}: ", remedy), highlight=False)
    for error in report.errors:
        console.print(_line("could not read: ", error, "magenta"), highlight=False)
    for note in report.notes:
        console.print(_line("note: ", note, ""), highlight=False)
    verdict = Text(f"node {report.node}: ") + Text(report.status, STATUS_STYLE[report.status])
    console.print(verdict + Text(f" in {report.duration_s:.1f} s"), highlight=False)
    if decision is not None:
        console.print(_line(f"action: {decision.kind}: ", decision.detail, ""), highlight=False)


def print_alert(outcome: CheckOutcome, console: Console) -> None:
    """One line on stderr when the operator must look (breaker held, scheduler failed)."""
    if outcome.alert and outcome.decision is not None:
        console.print(_line("ALERT: ", outcome.decision.detail, "bold red"), highlight=False)


def check_json(outcome: CheckOutcome) -> str:
    """The report with its readings, and the action taken, as indented JSON."""
    data = outcome.report.to_dict()
    decision = outcome.decision
    data["action"] = (
        None if decision is None else {"kind": decision.kind, "detail": decision.detail}
    )
    return json.dumps(json_document("check", data), indent=1)
