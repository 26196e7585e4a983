"""The printed 80 % range comes from calibration and development runs only, per class.

``validation/band.py`` derives it, ``clusterforge/perf/uncertainty.py`` serves it; the
shipped file is checked against today's model in ``test_runs.py``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.uncertainty import OWN_SPREAD_MIN_RUNS, run_class, validation_band
from validation.band import band_of, class_bands, coverage, derive
from validation.runs import Outcome, load_runs, predict_run

DEVELOPMENT = [r for r in load_runs() if r.subset == "development"]
# A handful of cheap development runs of two classes (the band test must not predict held-out).
SAMPLE = [predict_run(r) for r in DEVELOPMENT if r.sweep == "vtrain-3.6b-64gpu"][:14]


def _held(outcome: Outcome, factor: float) -> Outcome:
    """The same prediction as a held-out run whose published value is ``factor`` off."""
    run = replace(outcome.run, subset="heldout", name=outcome.run.name + "-held")
    return Outcome(replace(run, published=run.published * factor), outcome.prediction)


def test_held_out_runs_do_not_move_the_range() -> None:
    assert len(SAMPLE) >= 10
    baseline = derive(SAMPLE)
    wild = [_held(o, factor) for o in SAMPLE for factor in (0.2, 5.0)]
    assert derive(SAMPLE + wild) == baseline
    with pytest.raises(ValueError, match="held-out"):
        band_of(SAMPLE + wild)


def test_the_range_is_the_10th_to_90th_percentile_of_the_signed_error() -> None:
    band = band_of(SAMPLE)
    inside = coverage(SAMPLE, band, {})
    assert 0.7 <= inside <= 0.9  # an 80 % range on the runs it came from (percentile ties)
    wider = {**band, "low_fraction": -0.9, "high_fraction": 9.0}
    assert coverage(SAMPLE, band.__class__(wider), {}) == 1.0


def test_a_class_with_few_runs_is_never_narrower_than_the_pooled_range() -> None:
    pooled = band_of(SAMPLE)
    classes = class_bands(SAMPLE)
    for name, band in classes.items():
        count = sum(o.run_class == name and o.prediction is not None for o in SAMPLE)
        if count < OWN_SPREAD_MIN_RUNS:
            assert band["low_fraction"] <= pooled["low_fraction"], name
            assert band["high_fraction"] >= pooled["high_fraction"], name


def _plan(**changes: object) -> ParallelPlan:
    job = changes.pop("layout", JobLayout(tp=8, pp=4, dp=8))
    return ParallelPlan(job, micro_batch=1, seq_length=4096).with_(**changes)  # type: ignore[arg-type]


def test_run_classes_follow_the_plan() -> None:
    models = load_catalog().models
    dense, moe = models["llama3.1-70b"], models["mixtral-8x7b"]
    assert run_class(dense, _plan()) == "megatron-3d"
    assert run_class(moe, _plan()) == "moe"
    assert run_class(dense, _plan(seq_length=131072)) == "long-context"
    assert run_class(dense, _plan(layout=JobLayout(tp=8, pp=4, dp=8, cp=2))) == "long-context"
    fsdp = JobLayout(dp=64)
    assert run_class(dense, _plan(layout=fsdp, zero_stage=3)) == "fsdp-small"
    assert run_class(dense, _plan(layout=fsdp, zero_stage=3, shard_size=8)) == "hsdp"
    assert run_class(dense, _plan(layout=JobLayout(tp=8, dp=8), zero_stage=3)) == "fsdp-nd"
    big = JobLayout(dp=2048)
    assert run_class(dense, _plan(layout=big, zero_stage=3)) == "zero3-fsdp-scale"
    small = models["gpt3-1.3b"]
    assert run_class(small, _plan(layout=JobLayout(tp=8, dp=8), seq_length=2048)) == "small-gemm"


def test_a_prediction_prints_the_range_of_its_class() -> None:
    outcome = next(o for o in SAMPLE if o.prediction is not None)
    assert outcome.prediction is not None
    assert outcome.prediction.run_class == outcome.run_class
    assert outcome.prediction.band == validation_band(outcome.run_class)
    assert validation_band("no-such-class") == validation_band()
