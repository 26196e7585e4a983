"""FSDP2's root unit, adopted (``benchmarks/fsdp2_stream_reserve_whatif.py`` compares the
model without it): the adopted terms move only torchtitan rows, upward, and the what-if C
(the reduce-scatter pool) is zero off torchtitan. Development rows only."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks.fsdp2_stream_reserve_whatif import patched, reduce_scatter_pool_gib
from benchmarks.memory_whatif_common import patched_memory

from clusterforge.perf.fsdp2_memory import root_unit_params
from clusterforge.perf.memory import GIB
from validation.memory_rows import load_memory_rows
from validation.runs import best_prediction, run_comm, run_design


def _rows() -> list[Any]:
    return [r for r in load_memory_rows() if r.subset == "development"]


def _gib(row: Any) -> float:
    pred = best_prediction(row.run, run_comm(run_design(row.run)))
    assert pred is not None
    return float(pred.memory.total_gib)


def test_the_adopted_terms_raise_only_the_torchtitan_rows() -> None:
    with patched_memory(patched("before")):
        before = {r.id: _gib(r) for r in _rows()}
    for row in _rows():
        after = _gib(row)
        if row.run.stack.name == "torchtitan":
            assert after > before[row.id], row.id
        else:
            assert after == before[row.id], row.id


def test_the_reduce_scatter_what_if_on_the_8b_fsdp_row() -> None:
    rows = {r.id: r for r in _rows()}
    tt, ds = rows["mem-tt-h100-8b-8gpu-fsdp"], rows["mem-mleng-zero3-h200-8b-8k"]
    pred = best_prediction(tt.run, run_comm(run_design(tt.run)))
    assert pred is not None
    assert root_unit_params(tt.run.arch, pred.plan) == pytest.approx(2 * 128256 * 4096)
    rs = reduce_scatter_pool_gib(tt.run.arch, pred.plan, tt.run.stack)
    assert rs == pytest.approx(4 * 2 * 128256 * 4096 / GIB)
    ds_pred = best_prediction(ds.run, run_comm(run_design(ds.run)))
    assert ds_pred is not None
    assert reduce_scatter_pool_gib(ds.run.arch, ds_pred.plan, ds.run.stack) == 0.0
