"""``benchmarks/moe_layer_breakdown.py`` splits a development MoE row's layer into the parts
the model prices; the parts add up to the layer the step is built from, and the expert GEMMs
match a hand count of their FLOPs at the GPU's GEMM rate. Only development rows are read."""

from __future__ import annotations

import pytest
from benchmarks.moe_layer_breakdown import edp_raw_s, layer_split

from clusterforge.perf.compute import layer_times
from clusterforge.perf.expert_rows import busiest_rank_rows
from clusterforge.perf.roofline import gpu_perf
from validation.runs import Run, load_runs, predict_run, run_design

GB300_ROW = "bridge2604-gb300-gpt-oss-120b"  # TP1 PP1 EP64 DP64, micro-batch 4 x 4,096
B300_ROW = "bridge2604-b300-gpt-oss-120b"  # TP1 PP1 EP8 DP64, micro-batch 4 x 4,096


def _row(name: str) -> Run:
    (run,) = [r for r in load_runs() if r.name == name and r.subset == "development"]
    return run


@pytest.mark.parametrize("name", [GB300_ROW, B300_ROW])
def test_parts_add_up_to_the_layer(name: str) -> None:
    run = _row(name)
    pred = predict_run(run).prediction
    assert pred is not None
    perf = gpu_perf(run_design(run).compute.gpu, pred.plan.precision)
    times = layer_times(run.arch, pred.plan, perf, run.stack)
    split = layer_split(run, pred)
    compute_ms = split.total_ms - split.ep_ms
    assert compute_ms == pytest.approx((times.total_s) * 1e3, rel=1e-9)
    assert split.experts[0] < split.gemm[0] and split.experts[1] < split.gemm[1]


def test_gb300_expert_gemms_match_a_hand_count() -> None:
    """gpt-oss-120b (hidden 2,880, expert FFN 2,880 gated, top-4) at micro-batch 4 x 4,096:
    16,384 tokens x 4 copies go through fc1 (2,880 -> 5,760) and fc2 (2,880 -> 2,880), so
    the forward is 2 x 65,536 x (2,880 x 5,760 + 2,880 x 2,880) = 3.26 TFLOP; at GB300's
    GEMM rate (1,950 TFLOP/s x 0.70 = 1,365) that is 2.39 ms. Two local experts of 32,768
    rows each: large tiles. Under the run's random balanced routing the busiest of the 64
    ranks gets ~0.9 % more rows (perf/expert_rows.py), so the model's grouped-GEMM time is
    within 3 % of the hand count at that rank's rows."""
    run = _row(GB300_ROW)
    pred = predict_run(run).prediction
    assert pred is not None
    perf = gpu_perf(run_design(run).compute.gpu, pred.plan.precision)
    flops = 2.0 * 16_384 * 4 * (2_880 * 5_760 + 2_880 * 2_880)
    assert flops == pytest.approx(3.26e12, rel=1e-3)
    hand_ms = flops / (perf.matmul_tflops * 1e12 * perf.gemm_efficiency) * 1e3
    assert hand_ms == pytest.approx(2.39, abs=0.01)
    busiest, _ = busiest_rank_rows(run.arch, pred.plan)
    assert busiest / 32_768 == pytest.approx(1.009, abs=0.002)
    busiest_ms = hand_ms * busiest / 32_768
    assert layer_split(run, pred).experts[0] == pytest.approx(busiest_ms, rel=0.03)


def test_expert_data_parallel_traffic_only_where_experts_repeat() -> None:
    """EP 64 over DP 64 keeps one copy of each expert (no expert-data-parallel traffic);
    EP 8 over DP 64 keeps eight, reduced and gathered over InfiniBand each step."""
    gb300, b300 = _row(GB300_ROW), _row(B300_ROW)
    gb300_pred, b300_pred = predict_run(gb300).prediction, predict_run(b300).prediction
    assert gb300_pred is not None and b300_pred is not None
    assert edp_raw_s(gb300, gb300_pred) == 0.0
    assert edp_raw_s(b300, b300_pred) > b300_pred.breakdown.dp_comm_s > 0.0
