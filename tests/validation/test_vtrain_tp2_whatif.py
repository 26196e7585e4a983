"""The vTrain 39.1B TP 2 rows against rows that share each candidate cause
(``benchmarks/vtrain_tp2_whatif.py``; docs/validation.md, "vTrain 39.1B at TP 2"): the rows of
the same parameters per GPU and DP, and of the same PP degree and micro-batch, fit; the TP
all-reduce would have to take several times vTrain's own 2-GPU nccl-tests time; the row of
the sweep with the most memory per GPU fits.
"""

from __future__ import annotations

from functools import cache

import pytest
from benchmarks.vtrain_small_twins import SweepRow, sweep_rows
from benchmarks.vtrain_tp2_whatif import (
    TP_ALLREDUCES_PER_LAYER,
    VTRAIN_AR2_NS,
    dp_twin,
    excess_per_slot_ms,
    memory_gib,
    pp_twin,
    tp2_rows,
    tp_allreduce_bytes,
)

ROW_TOLERANCE = 0.25


@cache
def _rows() -> tuple[SweepRow, ...]:
    return tuple(sweep_rows())


def _misses() -> list[SweepRow]:
    return [r for r in tp2_rows(list(_rows())) if r.error > ROW_TOLERANCE]


def test_excess_counts_the_pipeline_fill_and_drain_slots() -> None:
    row = SweepRow(
        name="hand",
        sweep="hand",
        tp=2,
        pp=4,
        dp=1,
        micro_batch=2,
        micro_batches=5,
        layers=8,
        hidden=1024,
        published_step_s=1.6,
        predicted_step_s=1.0,
    )
    # (5 + 4 - 1) slots x 2 layers per stage = 16 layer slots; 0.6 s / 16 = 37.5 ms
    assert excess_per_slot_ms(row) == pytest.approx(37.5)


def test_three_tp2_rows_miss_and_their_twins_fit() -> None:
    rows = list(_rows())
    misses = _misses()
    assert [r.name for r in misses] == [
        "vtrain-39.1b-tp2-pp8-mb2",
        "vtrain-39.1b-tp2-pp16-mb2",
        "vtrain-39.1b-tp2-pp16-mb3",
    ]
    for row in misses:
        for twin in (dp_twin(row, rows), pp_twin(row, rows)):
            assert twin is not None and twin.tp != 2
            assert abs(twin.error) < ROW_TOLERANCE, twin.name
            assert row.error - twin.error > 0.3, twin.name


def test_the_tp_allreduce_would_need_several_times_vtrain_measured_time() -> None:
    for row in tp2_rows(list(_rows())):
        need_ns = 1e6 * excess_per_slot_ms(row) / TP_ALLREDUCES_PER_LAYER
        assert need_ns > 3 * VTRAIN_AR2_NS[tp_allreduce_bytes(row)], row.name


def test_memory_does_not_order_the_misses() -> None:
    fits = "vtrain-39.1b-tp1-pp16-mb3"
    names = {r.name for r in tp2_rows(list(_rows()))} | {fits}
    memory = memory_gib(names)
    assert abs(next(r for r in _rows() if r.name == fits).error) < ROW_TOLERANCE
    assert all(memory[r.name] < memory[fits] for r in _misses())
