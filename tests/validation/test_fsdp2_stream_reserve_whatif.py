"""FSDP2's per-stream pools (``benchmarks/fsdp2_stream_reserve_whatif.py``): the terms are
zero off torchtitan, and on the torchtitan Llama 3 8B FSDP row the root unit (embedding and
output layer, 2 x 128256 x 4096 parameters) sets them. Development rows only."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks.fsdp2_stream_reserve_whatif import root_params_per_gpu, stream_terms_gib

from clusterforge.perf.memory import GIB
from validation.memory_rows import load_memory_rows
from validation.runs import best_prediction, run_comm, run_design


def _plan(row_id: str) -> tuple[Any, Any]:
    row = next(r for r in load_memory_rows() if r.id == row_id)
    assert row.subset == "development"
    pred = best_prediction(row.run, run_comm(run_design(row.run)))
    assert pred is not None
    return row.run, pred.plan


def test_the_root_unit_sets_the_terms_on_the_8b_fsdp_row() -> None:
    run, plan = _plan("mem-tt-h100-8b-8gpu-fsdp")
    assert root_params_per_gpu(run.arch, plan) == pytest.approx(2 * 128256 * 4096)
    terms = stream_terms_gib(run.arch, plan, run.stack)
    assert terms["root"] == pytest.approx(2 * 2 * 128256 * 4096 / GIB)
    assert 1.0 < terms["copy_in"] < terms["root"]
    assert terms["rs"] == pytest.approx(2 * terms["root"])


def test_the_terms_are_zero_off_fsdp2() -> None:
    run, plan = _plan("mem-mleng-zero3-h200-8b-8k")
    assert set(stream_terms_gib(run.arch, plan, run.stack).values()) == {0.0}
