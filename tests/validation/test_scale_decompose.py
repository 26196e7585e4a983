"""The part-by-part decomposition of ``benchmarks/scale_decompose.py`` and the Megatron-Core
bucket what-if of ``benchmarks/dp_bucket_whatif.py``: their pure functions, and that the
decomposition reads the predictor's own breakdown of development twins."""

from __future__ import annotations

import math

import pytest
from benchmarks.dp_bucket_whatif import bucket_calls, bucketed_dp_traffic_s
from benchmarks.scale_decompose import (
    PARTS,
    decompose,
    gap_s,
    least_squares_slope,
    needed_multiple,
    part_share,
    raw_dp_s,
)
from benchmarks.scale_trend import twin_groups

from clusterforge.perf import exposure
from clusterforge.perf.step import Breakdown
from validation.runs import predict_run, run_comm, run_design


def test_least_squares_slope() -> None:
    assert least_squares_slope([(3.0, 1.0), (5.0, 2.0)]) == pytest.approx(0.5)
    assert least_squares_slope([(0.0, 0.0), (1.0, 1.0), (2.0, 0.5)]) == pytest.approx(0.25)
    assert math.isnan(least_squares_slope([(2.0, 1.0), (2.0, 3.0)]))


def test_part_share_and_gap() -> None:
    b = Breakdown(8.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.25, 0.25)
    assert sum(part_share(b, p) for p in PARTS) == pytest.approx(1.0)
    assert part_share(b, "dp_comm_s") == pytest.approx(0.1)
    # 10 % optimistic on a 2 s step: the published step is 2.2 s
    assert gap_s(2.0, 0.10) == pytest.approx(0.2)


def test_needed_multiple() -> None:
    assert needed_multiple(30.0, 10.0) == pytest.approx(4.0)
    assert needed_multiple(0.0, 10.0) == pytest.approx(1.0)
    assert needed_multiple(30.0, 0.0) == math.inf
    assert needed_multiple(30.0, -1.0) == math.inf


def test_decomposition_reads_the_breakdown_of_the_twins() -> None:
    group = next(g for g in twin_groups() if "llama31_cp" in g.file)
    parts = decompose(group)
    assert set(parts.part_ms) == set(PARTS)
    # the parts' slopes add up to the predicted step's slope
    step_ms = least_squares_slope(
        [
            (math.log2(r.base.layout.num_gpus), 1e3 * predict_run(r).prediction.step_time_s)  # type: ignore[union-attr]
            for r in group.runs
        ]
    )
    assert sum(parts.part_ms.values()) == pytest.approx(step_ms)
    assert parts.part_ms["dp_comm_s"] > 0.0 and parts.raw_ms > 0.0
    assert all(raw_dp_s(r) >= predict_run(r).prediction.breakdown.dp_comm_s / 2 for r in group.runs)  # type: ignore[union-attr]


def test_bucket_calls() -> None:
    assert bucket_calls(1e6, 4e7) == 1
    assert bucket_calls(4e7, 4e7) == 1
    assert bucket_calls(4.54e9, 4e7) == 114
    # interleaved: only the first of 5 chunks is bucketed, the other 4 are one call each
    assert bucket_calls(4.54e9, 4e7, 5) == 23 + 4


def test_bucketed_traffic_is_one_call_per_bucket_on_megatron_ddp_only() -> None:
    # Named runs: a Megatron DDP run without interleaving (one bucketed chunk) and an FSDP one.
    runs = {r.name: r for g in twin_groups() for r in g.runs}
    nemo = runs["pub-dgxc2502-h100-llama31-8b-fp8-64gpu"]
    fsdp = runs["pub-paxml-h100-gpt3-5b-bf16-64gpu"]
    for run, same in ((nemo, False), (fsdp, True)):
        pred = predict_run(run).prediction
        assert pred is not None
        comm = run_comm(run_design(run))
        args = (pred.plan, 4.54e9, comm, run.stack, "dpcp")
        one = exposure._dp_traffic_s(*args)  # type: ignore[arg-type]
        many = bucketed_dp_traffic_s(*args)  # type: ignore[arg-type]
        if same:
            assert many == one
        else:
            assert many[0] > one[0]
        # a stage smaller than one bucket is one call either way
        small = (pred.plan, 1e6, comm, run.stack, "dpcp")
        assert bucketed_dp_traffic_s(*small) == pytest.approx(exposure._dp_traffic_s(*small))  # type: ignore[arg-type]
