"""``clusterforge diagnose`` output: the headline, a row per node, each finding with its
numbers and rule, and how far the job runs from the prediction."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from clusterforge.diagnose import Comparison, DiagnoseResult, Diagnosis, JobReadings
from clusterforge.diagnose.rules import node_mean
from clusterforge.report.json_document import json_document

__all__ = ["diagnose_json", "print_diagnose"]

_STYLE = {
    "compute-bound": "green",
    "inconclusive": "yellow",
    "hung": "bold red",
    "idle": "red",
}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, fmt: str = ".0f") -> str:
    return "-" if value is None else format(value, fmt)


def _headline(d: Diagnosis) -> Text:
    subject = f"job {d.job}" if d.job is not None else "the named hosts"
    num_nodes = len(d.nodes)
    return Text.assemble(
        f"{subject}, last {d.window}, {d.num_gpus} GPUs on {num_nodes} nodes: ",
        (d.verdict, _STYLE.get(d.verdict, "bold yellow")),
    )


def _node_table(d: Diagnosis, readings: JobReadings) -> Table:
    table = Table(title="Nodes (GPU figures: the node's mean)")
    for column in ("node", "verdict", "engine", "tensor", "DRAM", "SM MHz", "W", "CPU", "NIC"):
        table.add_column(column, justify="left" if column in ("node", "verdict") else "right")
    hosts = {n.node: n for n in readings.nodes}
    for node in d.nodes:
        g = node_mean(node.node, [x for x in readings.gpus if x.node == node.node])
        host = hosts.get(node.node)
        table.add_row(
            node.node,
            Text(node.verdict, style=_STYLE.get(node.verdict, "yellow")),
            _pct(g.gr_engine_active),
            _pct(g.tensor_active),
            _pct(g.dram_active),
            _num(g.sm_clock_mhz),
            _num(g.power_w),
            _pct(host.cpu_busy_share if host else None),
            _pct(host.nic_line_share if host else None),
        )
    return table


def _comparison_line(c: Comparison) -> str:
    what = "tokens/s per GPU" if c.basis == "tokens-per-s-per-gpu" else "tensor-active vs HFU"
    direction = "below" if c.shortfall > 0 else "above"
    return (
        f"Against the prediction ({what}): achieved {c.achieved:.4g}, predicted "
        f"{c.predicted:.4g}: {abs(c.shortfall):.0%} {direction} "
        f"(predicted {c.predicted_tokens_per_s:.4g} tokens/s, MFU {c.predicted_mfu:.0%})"
    )


def print_diagnose(result: DiagnoseResult, console: Console) -> None:
    """The headline, the nodes, the findings and the comparison."""
    d = result.diagnosis
    console.print(_headline(d))
    console.print(_node_table(d, result.readings))
    for f in d.findings:
        numbers = ", ".join(f"{k}={v:g}" for k, v in f.evidence.items())
        console.print(
            Text.assemble((f"{f.verdict}", "bold"), f" {f.subject}: {numbers}  [rule: {f.rule}]"),
            highlight=False,
        )
    if not d.findings:
        console.print("No rule tripped: the GPUs are under-used with nothing saturated.")
    if result.comparison is not None:
        console.print(_comparison_line(result.comparison))


def _comparison_dict(c: Comparison | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {**asdict(c), "ratio": c.ratio, "shortfall": c.shortfall}


def diagnose_json(result: DiagnoseResult) -> str:
    """JSON: the verdicts, each finding with its evidence, the readings and the comparison."""
    d = result.diagnosis
    data = {
        "job": d.job,
        "window": d.window,
        "verdict": d.verdict,
        "num_gpus": d.num_gpus,
        "nodes": [{"node": n.node, "verdict": n.verdict} for n in d.nodes],
        "findings": [asdict(f) for f in d.findings],
        "readings": {
            "gpus": [asdict(g) for g in result.readings.gpus],
            "nodes": [asdict(n) for n in result.readings.nodes],
            "tokens_per_s": result.readings.tokens_per_s,
        },
        "comparison": _comparison_dict(result.comparison),
    }
    return json.dumps(json_document("diagnose", data), indent=2)
