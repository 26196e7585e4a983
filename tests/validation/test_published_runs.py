"""Published training throughput vs the model: Narayanan 2021 Table 1, Megatron-Core H100.

Each row runs the production path: the row's cluster is designed (``clusterforge.design``)
and its collectives are simulated on that fabric (``clusterforge.netsim``). Each row keeps
its paper's FLOP convention (Narayanan: eq. 3 "achieved TFLOP/s", i.e. with
the recomputed forward -> hardware FLOPs; Megatron-Core: model FLOPs). Tolerances: every
row within 20 %, mean absolute percentage error per table under 10 %. Run with ``-s`` to see
the per-row table:  python -m pytest tests/validation -q -s -k mape
"""

from __future__ import annotations

from functools import cache

import pytest
from published_runs import TABLES, Row, load_rows, predict_published, predicted_tflops

ROW_TOLERANCE = 0.20
MAPE_LIMIT = 0.10
ROWS = [row for table in TABLES for row in load_rows(table)]


@cache
def _predict(row: Row):
    return predict_published(row)


def _error(row: Row) -> float:
    pred = _predict(row)
    return (predicted_tflops(row, pred) - row.published_tflops) / row.published_tflops


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.table}-{r.name}" for r in ROWS])
def test_row_within_tolerance(row) -> None:
    assert abs(_error(row)) < ROW_TOLERANCE


@pytest.mark.parametrize("table", list(TABLES))
def test_table_mape(table: str) -> None:
    rows = load_rows(table)
    print(f"\n{table}: published vs predicted TFLOP/s per GPU ({rows[0].metric})")
    errors = []
    for row in rows:
        pred = _predict(row)
        value = predicted_tflops(row, pred)
        error = (value - row.published_tflops) / row.published_tflops
        errors.append(abs(error))
        plan = pred.plan
        print(
            f"  {row.name:>5}  TP{plan.tp} PP{plan.pp} DP{plan.dp} mb{plan.micro_batch} "
            f"v{plan.vpp}  published {row.published_tflops:6.1f}  predicted {value:6.1f}  "
            f"error {error * 100:+5.1f} %  MFU {pred.mfu * 100:4.1f} %"
        )
    mape = sum(errors) / len(errors)
    print(f"  MAPE {mape * 100:.1f} %  (max {max(errors) * 100:.1f} %)")
    assert mape < MAPE_LIMIT
