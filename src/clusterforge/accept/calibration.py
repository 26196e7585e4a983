"""An acceptance report (``clusterforge accept``'s ``report.json``) as calibration figures.

The report holds one ``gemm`` result (TFLOP/s, a large square BF16 GEMM) and one ``memory``
result (GB/s, a device-to-device copy) per node, and the cross-node collective sweep
(``collective``: op, size_bytes, busbw_gbyte_per_s, ranks). Training runs at the pace of its
slowest rank, but a node that failed acceptance is fixed or drained before training, so the
cluster's figure is the median over the nodes that passed (every node when none passed).
The result is the plain mapping :func:`clusterforge.perf.calibration.calibration_from_dict`
reads.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from clusterforge.errors import AcceptError

__all__ = ["calibration_from_report", "is_accept_report"]

# The per-node results that calibrate the model: accept's test name, its unit, the field.
NODE_FIGURES = (("gemm", "TFLOP/s", "gemm_tflops"), ("memory", "GB/s", "hbm_gbyte_per_s"))


def is_accept_report(raw: Mapping[str, Any]) -> bool:
    """True for an acceptance report (it has ``results`` and ``nodes``)."""
    return "results" in raw and "nodes" in raw


def _median_of_nodes(results: list[Any], test: str, unit: str) -> float | None:
    rows = [
        r
        for r in results
        if isinstance(r, Mapping) and r.get("test") == test and r.get("node") != "all"
    ]
    measured = [r for r in rows if isinstance(r.get("measured"), int | float)]
    for r in measured:
        if r.get("unit") != unit:
            raise AcceptError(
                f"acceptance report: results[test={test}, node={r.get('node')}].unit is "
                f"{r.get('unit')!r}, expected {unit!r}; use a report.json written by "
                "clusterforge accept"
            )
    passed = [float(r["measured"]) for r in measured if r.get("verdict") == "pass"]
    values = passed or [float(r["measured"]) for r in measured]
    return statistics.median(values) if values else None


def calibration_from_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """The calibration figures of an acceptance report (raises :class:`AcceptError` naming
    the field when the report cannot be read)."""
    if not is_accept_report(report):
        raise AcceptError(
            "acceptance report: the 'results' and 'nodes' fields are missing; give the "
            "report.json that clusterforge accept writes"
        )
    results, nodes = report["results"], report["nodes"]
    if not isinstance(results, list) or not isinstance(nodes, list) or not nodes:
        raise AcceptError(
            "acceptance report: 'results' must be a list and 'nodes' a non-empty list of "
            "node names; give the report.json that clusterforge accept writes"
        )
    figures: dict[str, Any] = {}
    for test, unit, field in NODE_FIGURES:
        value = _median_of_nodes(results, test, unit)
        if value is not None:
            figures[field] = value
    collectives = []
    for i, row in enumerate(report.get("collective") or []):
        if not isinstance(row, Mapping) or "busbw_gbyte_per_s" not in row:
            continue
        missing = [k for k in ("op", "size_bytes", "ranks") if k not in row]
        if missing:
            raise AcceptError(
                f"acceptance report: collective[{i}] lacks {', '.join(missing)}; give the "
                "report.json that clusterforge accept writes"
            )
        collectives.append(
            {
                "op": row["op"],
                "size_bytes": row["size_bytes"],
                "busbw_gbyte_per_s": row["busbw_gbyte_per_s"],
                "ranks": row["ranks"],
                "num_nodes": len(nodes),
            }
        )
    if collectives:
        figures["collectives"] = collectives
    return figures
