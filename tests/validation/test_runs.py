"""Published runs vs the model: every run that ran must fit, and the error stays bounded.

Each run is predicted on a design of its cluster with the fabric simulated (see ``runs.py``).
Guards (looser than the goals, which are MAPE <= 10 % and |median signed error| <= 3 % on
the held-out set): each set's MAPE <= 10 % and |median signed error| <= 6 %, every run within
25 % except the known gaps listed below (each with its reason), every run that ran predicted
to fit. ``benchmarks/validate_predict.py`` prints the
figures, including Spearman rank correlation. ``python benchmarks/validate_predict.py`` prints the per-run table.
"""

from __future__ import annotations

import statistics

import pytest
from runs import Run, load_runs, predict_run

RUNS = load_runs()
ROW_TOLERANCE = 0.25
MAPE_LIMIT = 0.10
# The held-out median is +3.6 % (it was +5.2 % before the LLM Foundry rows ran MPT's Triton
# flash attention and xentropy loss); this guard catches regressions from there.
MEDIAN_LIMIT = 0.06
# Runs the model is known to miss by more than the row tolerance, and why. They stay in the
# set (and in its MAPE and median); the test fails if one of them starts to pass.
KNOWN_GAPS = {
    "bridge2509-gb200-llama3.1-405b-fsdp": (
        "FSDP over 64 GPUs in two NVL72 racks: the simulated all-gather crosses racks at about "
        "90 GB/s per GPU, where NCCL spreads the rack-to-rack hop over many NICs"
    ),
}


def _row_cases() -> list[object]:
    return [
        pytest.param(
            r,
            id=r.name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[r.name])]
            if r.name in KNOWN_GAPS
            else [],
        )
        for r in RUNS
    ]


def test_every_run_says_its_set_and_source() -> None:
    assert {r.subset for r in RUNS} == {"calibration", "heldout"}
    assert all(r.source for r in RUNS)
    assert len({r.name for r in RUNS}) == len(RUNS)


@pytest.mark.parametrize("run", _row_cases())
def test_run_that_ran_is_predicted_to_fit_and_within_tolerance(run: Run) -> None:
    outcome = predict_run(run)
    assert outcome.prediction is not None, f"{run.name} ran but no allowed plan fits"
    assert abs(outcome.error) < ROW_TOLERANCE


@pytest.mark.parametrize("subset", ["calibration", "heldout"])
def test_set_mape_and_median_signed_error(subset: str) -> None:
    errors = [predict_run(r).error for r in RUNS if r.subset == subset]
    assert statistics.fmean(abs(e) for e in errors) <= MAPE_LIMIT
    assert abs(statistics.median(errors)) <= MEDIAN_LIMIT
