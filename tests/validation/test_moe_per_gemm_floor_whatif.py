"""``benchmarks/moe_per_gemm_floor_whatif.py``: a per-GEMM launch floor at Transformer Engine
pull request 3134's multi-stream figure leaves the gpt-oss rows where they are (their expert
GEMMs are far longer than the floor) and overshoots the 25.09 Qwen3-30B-A3B B200 row, so it
does not separate the 128-expert excess; the what-if restores the model. Calibration and
development rows only."""

from __future__ import annotations

from benchmarks.moe_common_residual import scores
from benchmarks.moe_per_gemm_floor_whatif import (
    BLACKWELL_FLOOR_US,
    HOPPER_BOUND_US,
    floor_for,
    per_gemm_floor,
)

import clusterforge.perf.moe as moe


def test_transcribed_per_gemm_figures() -> None:
    assert abs(BLACKWELL_FLOOR_US - 33.4) < 0.05
    assert abs(HOPPER_BOUND_US - 11.6) < 0.05


def test_floor_misses_gpt_oss_and_overshoots_qwen3_b200() -> None:
    original = moe.grouped_gemm_time_s
    before = scores()
    with per_gemm_floor(floor_for(BLACKWELL_FLOOR_US, HOPPER_BOUND_US)):
        after = scores()
    assert moe.grouped_gemm_time_s is original
    assert scores() == before
    gpt_oss = [n for n in before if "gpt-oss" in n and before[n][1] == "moe"]
    assert len(gpt_oss) >= 15
    assert all(abs(after[n][2] - before[n][2]) < 5e-4 for n in gpt_oss)
    qwen_b200 = "pub-bridge2509-b200-qwen3-30b-a3b"
    assert after[qwen_b200][2] < before[qwen_b200][2] - 0.30
    assert all(after[n][2] == before[n][2] for n in before if before[n][1] != "moe")
