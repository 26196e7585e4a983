"""Out-of-sample check: held-out published runs (``heldout_runs.toml``) vs the model.

No constant of the model was chosen with these rows. Each row keeps its source's FLOP
convention (Llama 3: model FLOPs; BLOOM: hardware FLOPs with the recomputed forward).
Tolerance: every row within 20 %; the mean absolute percentage error is printed. Run with
``-s`` to see the per-row table:  python -m pytest tests/validation -q -s -k heldout_mape
"""

from __future__ import annotations

from functools import cache

import pytest
from heldout_runs import HeldoutRow, load_heldout, predict_heldout, predicted_tflops

ROW_TOLERANCE = 0.20
MAPE_LIMIT = 0.20
ROWS = load_heldout()


@cache
def _predict(row: HeldoutRow):
    return predict_heldout(row)


def _error(row: HeldoutRow) -> float:
    value = predicted_tflops(row, _predict(row))
    return (value - row.published_tflops) / row.published_tflops


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_heldout_row_within_tolerance(row: HeldoutRow) -> None:
    assert abs(_error(row)) < ROW_TOLERANCE


def test_heldout_mape() -> None:
    print("\nheld-out runs: published vs predicted TFLOP/s per GPU")
    errors = []
    for row in ROWS:
        pred = _predict(row)
        value = predicted_tflops(row, pred)
        error = _error(row)
        errors.append(abs(error))
        p = pred.plan
        print(
            f"  {row.name:>24}  TP{p.tp} CP{p.cp} PP{p.pp} DP{p.dp} mb{p.micro_batch} v{p.vpp} "
            f"{p.recompute:>9}  published {row.published_tflops:6.1f}  predicted {value:6.1f}  "
            f"error {error * 100:+5.1f} %  MFU {pred.mfu * 100:4.1f} %  "
            f"({row.metric.split('_')[0]})"
        )
    mape = sum(errors) / len(errors)
    print(f"  MAPE {mape * 100:.1f} %  (max {max(errors) * 100:.1f} %)")
    assert mape < MAPE_LIMIT
