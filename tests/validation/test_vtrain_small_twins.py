"""The vTrain 3.6B micro-batch 2 rows against their neighbours (``benchmarks/
vtrain_small_twins.py``; docs/validation.md, "vTrain 3.6B at micro-batch 2: what the twins
show"): the published excess sits only at micro-batch 2 on TP 4 and TP 8, and the TP 4 row is
slower than its TP 8 twin of the same per-GPU work, the one inversion of the sweep.
"""

from __future__ import annotations

from functools import cache

import pytest
from benchmarks.vtrain_small_twins import SMALL_SWEEP, SweepRow, linear_excess, sweep_rows, twins


@cache
def _rows() -> tuple[SweepRow, ...]:
    return tuple(sweep_rows())


def _row(name: str) -> SweepRow:
    return next(r for r in _rows() if r.name == name)


def _hand_row(micro_batch: int, per_layer_ms: float) -> SweepRow:
    """A PP 1 row of one layer and one micro-batch whose step is ``per_layer_ms``."""
    return SweepRow(
        name=f"mb{micro_batch}",
        sweep="hand",
        tp=1,
        pp=1,
        dp=1,
        micro_batch=micro_batch,
        micro_batches=1,
        layers=1,
        hidden=1024,
        published_step_s=per_layer_ms / 1e3,
        predicted_step_s=per_layer_ms / 1e3,
    )


def test_linear_excess_is_zero_on_a_line_and_measures_the_step_off_it() -> None:
    rows = [_hand_row(mb, 1.0 + 2.0 * mb) for mb in (4, 8, 16, 32)] + [_hand_row(2, 8.0)]
    excess = linear_excess(rows)
    assert excess["mb2"] == pytest.approx(8.0 - 5.0)
    assert all(abs(excess[f"mb{mb}"]) < 1e-9 for mb in (4, 8, 16, 32))


def test_only_tp4_and_tp8_at_micro_batch_2_leave_the_line() -> None:
    small = [r for r in _rows() if r.sweep == SMALL_SWEEP and r.pp == 1]
    for tp in sorted({r.tp for r in small}):
        group = [r for r in small if r.tp == tp]
        for name, ms in linear_excess(group).items():
            row = _row(name)
            if row.micro_batch == 2 and tp in (4, 8):
                assert ms > 2.0, name
            elif row.micro_batch <= 32:
                assert abs(ms) < 1.2, name


def test_the_tp4_micro_batch_2_row_is_the_one_twin_slower_than_its_higher_tp_twin() -> None:
    pairs = [(a, b) for a, b in twins(list(_rows())) if b.micro_batch <= 32]
    inverted = [(a.name, b.name) for a, b in pairs if a.published_step_s > b.published_step_s]
    assert inverted == [("vtrain-3.6b-tp4-pp1-mb2", "vtrain-3.6b-tp8-pp1-mb4")]
    # the model keeps every pair in the published order but that one
    for a, b in pairs:
        assert a.predicted_step_s < b.predicted_step_s, (a.name, b.name)


def test_same_gemm_shape_fits_in_the_18b_sweep() -> None:
    miss = _row("vtrain-3.6b-tp4-pp1-mb2")
    same = [r for r in _rows() if r.mlp_gemm[:2] == miss.mlp_gemm[:2] and r is not miss]
    assert {r.sweep for r in same} == {"vtrain-18.4b-256gpu"}
    assert all(abs(r.error) < 0.05 for r in same)
    assert miss.error > 0.3
