"""The weak-scaling twins of ``benchmarks/scale_trend.py`` and the slowest-GPU what-if of
``benchmarks/slowest_gpu_whatif.py``: development rows only, and the order statistic they use."""

from __future__ import annotations

import math

import pytest
from benchmarks.scale_trend import pooled_slope, twin_groups
from benchmarks.slowest_gpu_whatif import expected_max_normal, slowest_gpu_error

from validation.runs import predict_run


def test_twins_are_development_runs_at_two_or_more_gpu_counts() -> None:
    groups = twin_groups()
    assert len(groups) >= 20
    for group in groups:
        assert all(r.subset == "development" for r in group.runs)
        assert len({r.base.layout.num_gpus for r in group.runs}) >= 2
        assert len({(r.file, r.arch.id, r.stack) for r in group.runs}) == 1


def test_expected_largest_normal_draw() -> None:
    # E[max of 2] = 1 / sqrt(pi); 1.4236 for 8 draws (David and Nagaraja, Order Statistics).
    assert expected_max_normal(1) == 0.0
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-6)
    assert expected_max_normal(8) == pytest.approx(1.4236, abs=1e-3)


def test_no_spread_leaves_every_twin_as_predicted() -> None:
    for group in twin_groups():
        for run in group.runs:
            assert slowest_gpu_error(run, 0.0) == pytest.approx(predict_run(run).error)
            assert slowest_gpu_error(run, 0.02) < predict_run(run).error


def test_a_slope_is_per_doubling() -> None:
    groups = twin_groups()
    slope, runs, rising = pooled_slope(groups, lambda r: math.log2(r.base.layout.num_gpus))
    assert slope == pytest.approx(1.0)
    assert runs == sum(len(g.runs) for g in groups) and rising == len(groups)
