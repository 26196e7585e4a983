"""The combined 1F1B schedule's candidates under VP (``benchmarks/moe_combined_1f1b_vpp_whatif.py``,
docs/validation.md): the per-expert FP8 launch count, that switching the adopted B off and
adding C moves the PP 2 row with the EP overlap only, and that the patches leave the model as
shipped once the run is over."""

from __future__ import annotations

import pytest
from benchmarks.moe_combined_1f1b_vpp_whatif import (
    FP8_FORWARD_LAUNCHES_PER_EXPERT,
    FP8_LAUNCHES_PER_EXPERT,
    fp8_launch_s,
    patched,
)

import clusterforge.perf.exposure as exposure_module
from clusterforge.perf.host import HOST_OP_S
from validation.runs import Run, best_prediction, load_runs, run_comm, run_design

ROW = "bridge2602-h100-qwen3-30b-a3b-pp2"
NO_OVERLAP_ROW = "pub-bridge2509-h100-qwen3-30b-a3b"


def _run(name: str) -> Run:
    return next(r for r in load_runs() if r.name == name)


def _step_s(run: Run) -> float:
    pred = best_prediction(run, run_comm(run_design(run)))
    assert pred is not None
    return pred.step_time_s


def test_launch_counts():
    """Forward: fc1 and fc2, three quantise launches and one GEMM each; backward: three
    quantise launches and two GEMMs each; 16 local experts at one eager op per launch."""
    assert FP8_FORWARD_LAUNCHES_PER_EXPERT == 8
    assert FP8_LAUNCHES_PER_EXPERT == 18
    assert fp8_launch_s(16) == pytest.approx(16 * 18 * HOST_OP_S["x86"])


def test_candidates_move_the_overlap_row_only():
    """Without the adopted B the PP 2 row with the EP overlap is shorter, with C longer; the
    same layout's token-drop run without the overlap is untouched; the modules are restored
    afterwards."""
    row, other = _run(ROW), _run(NO_OVERLAP_ROW)
    shipped_s, other_s = _step_s(row), _step_s(other)
    with patched(True, True, ""):
        assert _step_s(row) == pytest.approx(shipped_s)
    with patched(True, False, ""):
        assert _step_s(row) < shipped_s
        assert _step_s(other) == pytest.approx(other_s)
    with patched(True, True, "idle"):
        assert _step_s(row) > shipped_s
        assert _step_s(other) == pytest.approx(other_s)
    assert _step_s(row) == pytest.approx(shipped_s)
    restored = exposure_module.combined_schedule_sends_exposed
    assert restored.__name__ == "combined_schedule_sends_exposed"
