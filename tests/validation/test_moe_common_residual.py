"""``benchmarks/moe_common_residual.py``: the candidate it tests (each expert GEMM of a round
with its own waves) is rejected by Transformer Engine pull request 2045's measured multi-stream
rates, which the model's batched rounds match; the what-if leaves the model as it found it;
the Mixtral B200 row's miss is its release's, not the expert layer's. Only calibration and
development rows are read."""

from __future__ import annotations

from dataclasses import replace

import pytest
from benchmarks.moe_common_residual import (
    TE_PR2045_MULTISTREAM,
    dense_twins,
    moe_row,
    release,
    spearman,
)

import clusterforge.perf.moe as moe
from clusterforge.catalog import load_catalog
from clusterforge.perf.roofline import gpu_perf
from validation.gemm_rows import microbenchmark_share
from validation.runs import load_runs, predict_run


def _rate_tflops(g: int, m: int, n: int, k: int, streams: int) -> float:
    perf = gpu_perf(load_catalog().gpus["h100-sxm"], "bf16")
    lone = replace(perf, gemm_efficiency=microbenchmark_share("h100-sxm"))
    saved = moe.TE_GROUPED_GEMM_STREAMS
    moe.TE_GROUPED_GEMM_STREAMS = streams
    try:
        return 2.0 * g * m * n * k / moe.grouped_gemm_time_s(m, n, k, lone, g) / 1e12
    finally:
        moe.TE_GROUPED_GEMM_STREAMS = saved


@pytest.mark.parametrize("case", TE_PR2045_MULTISTREAM)
def test_batched_rounds_match_the_measured_multi_stream_rate(
    case: tuple[int, int, int, int, float],
) -> None:
    g, m, n, k, measured = case
    assert 0.85 < measured / _rate_tflops(g, m, n, k, 4) < 1.10
    assert measured / _rate_tflops(g, m, n, k, 1) > 1.25  # serial rounds: far too slow


def test_the_model_keeps_four_streams() -> None:
    assert moe.TE_GROUPED_GEMM_STREAMS == 4


def test_mixtral_b200_miss_is_its_release_s() -> None:
    """The same NeMo 25.02 B200 table's Nemotron-4 15B row ran the same layout (TP 1, DP 64,
    micro-batch 2, FP8) and misses by as much as the Mixtral 8x7B row."""
    runs = {r.name: r for r in load_runs()}
    mixtral = runs["pub-nemofw2502-b200-mixtral-8x7b"]
    dense = runs["pub-nemofw2502-b200-nemotron4-15b"]
    assert mixtral.subset == dense.subset == "development"
    row = moe_row(mixtral)
    assert row is not None
    outcome = predict_run(dense)
    assert outcome.prediction is not None
    assert abs(row.error - (outcome.predicted / dense.published - 1.0)) < 0.02
    pool = dense_twins(list(runs.values()))[("nemo", "dgx-b200")]
    assert len([e for rel, e in pool if rel == release(mixtral.name)]) == 3


def test_spearman_ties_and_constant() -> None:
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert spearman([1.0, 1.0, 2.0], [1.0, 2.0, 3.0]) == pytest.approx(0.8660254, rel=1e-6)
    assert spearman([1.0, 1.0], [1.0, 2.0]) != spearman([1.0, 1.0], [1.0, 2.0])  # nan
