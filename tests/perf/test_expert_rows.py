"""Rows per expert under dropless random routing: the busiest rank and the ragged tiles."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan
from clusterforge.perf.expert_rows import (
    busiest_rank_rows,
    expected_max_normal,
    ragged_grouped_gemm_time_s,
    round_tile_mixture,
    row_tile_mixture,
)
from clusterforge.perf.moe import expert_gemms_s, grouped_gemm_time_s
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named

RANDOM = stack_named("megatron-bridge")
MEAN_ROWS = replace(RANDOM, moe_random_routing=False)


def _plan(ep: int, micro_batch: int = 1) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=64, ep=ep),
        global_batch=64 * micro_batch,
        micro_batch=micro_batch,
        seq_length=4096,
        sequence_parallel=False,
        recompute="none",
        zero_stage=1,
    )


def test_expected_maximum_of_standard_normals_matches_its_closed_forms() -> None:
    # E[max of 2] = 1 / sqrt(pi); the maximum of 8 is 1.4236 (Harter's tables).
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1.0 / math.sqrt(math.pi), abs=1e-4)
    assert expected_max_normal(8) == pytest.approx(1.4236, abs=1e-3)
    assert expected_max_normal(64) > expected_max_normal(8)


def test_the_busiest_rank_gets_more_rows_than_the_mean_and_less_so_with_more_tokens(
    models,
) -> None:
    arch = models["gpt-oss-120b"]  # 128 experts, top 4
    mean = 4096 * arch.top_k * 8 / arch.num_experts
    busiest, spread = busiest_rank_rows(arch, _plan(ep=8))
    assert busiest > mean
    assert spread == pytest.approx(math.sqrt(4096 * 8 * (4 / 128) * (124 / 128)))
    excess_small = busiest / mean - 1.0
    busiest_large, _ = busiest_rank_rows(arch, _plan(ep=8, micro_batch=16))
    assert 0.0 < busiest_large / (16 * mean) - 1.0 < excess_small


def test_one_rank_holding_every_expert_has_no_busiest_rank_excess(models) -> None:
    arch = models["qwen3-30b-a3b"]
    plan = _plan(ep=1)
    busiest, _ = busiest_rank_rows(arch, plan)
    assert busiest == pytest.approx(4096 * arch.top_k / arch.num_experts)


def test_counts_spread_around_a_tile_edge_take_half_a_tile_more() -> None:
    mixture = row_tile_mixture(1024.0, 32.0, 128.0)
    assert sum(p for _, p in mixture) == pytest.approx(1.0)
    assert sum(t * p for t, p in mixture) == pytest.approx(8.5, abs=0.01)
    assert row_tile_mixture(1000.0, 0.0, 128.0) == [(8, 1.0)]


def test_random_routing_slows_dropless_expert_gemms_but_not_drop_and_pad(models, h100) -> None:
    arch, plan = models["gpt-oss-120b"], _plan(ep=8)
    perf = gpu_perf(h100, "bf16")
    mean = expert_gemms_s(arch, plan, perf, MEAN_ROWS)
    ragged = expert_gemms_s(arch, plan, perf, RANDOM)
    assert ragged[0] > mean[0] and ragged[1] > mean[1]
    # 1,024 rows per expert on H100: half the experts need a ninth row tile (1/16 more
    # tiles), and the extra tiles of a round of four concurrent GEMMs can open a wave.
    assert 1.0 + 1.0 / 16.0 < ragged[0] / mean[0] < 1.25
    padded = replace(RANDOM, moe_drop_and_pad=True)
    assert expert_gemms_s(arch, plan, perf, padded) == mean


def test_a_round_of_concurrent_experts_sums_independent_tile_counts() -> None:
    # Two experts, each 8 or 9 row tiles with even odds: 16, 17, 18 tiles at 1/4, 1/2, 1/4.
    mixture = dict(round_tile_mixture(1024.0, 32.0, 128.0, 2))
    assert set(mixture) >= {16, 17, 18}
    assert mixture[17] == pytest.approx(0.5, abs=0.02)
    assert mixture[16] == pytest.approx(mixture[18], abs=0.02)


def test_ragged_rounds_without_spread_match_equal_expert_gemms(h100) -> None:
    # With no spread and rows on a tile edge every round holds the same tiles as four equal
    # GEMMs: the two ways of timing a round agree (the weight reads aside).
    perf = gpu_perf(h100, "bf16")
    equal = grouped_gemm_time_s(4096, 5760, 2880, perf, 16)
    ragged = ragged_grouped_gemm_time_s(4096, 0.0, 5760, 2880, perf, 16, 4)
    assert ragged == pytest.approx(equal, rel=0.02)
    assert ragged_grouped_gemm_time_s(4096, 63.0, 5760, 2880, perf, 16, 4) > ragged
