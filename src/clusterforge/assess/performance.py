"""The training performance a design delivers: the spec's own plan, the best plans found,
and the time to train with failures of a prediction (:mod:`clusterforge.perf` and
:mod:`clusterforge.goodput` asked once, their answers kept typed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusterforge.assess.lifetime import GoodputOutlook, goodput_outlook
from clusterforge.assess.unavailable import Unavailable
from clusterforge.design import Design
from clusterforge.errors import ClusterforgeError
from clusterforge.perf import (
    Prediction,
    PredictOutcome,
    PredictRequest,
    predict_workload,
    run_predict,
)

__all__ = [
    "SECONDS_PER_DAY",
    "ExpectedPerformance",
    "PredictAssessment",
    "expected_performance",
    "predict",
    "top_plans",
]

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class ExpectedPerformance:
    """The prediction of the spec's own workload and plan, and the tokens it must train."""

    prediction: Prediction
    tokens_to_train: float

    @property
    def time_to_train_days(self) -> float:
        """Failure-free days to train ``tokens_to_train`` at the predicted rate."""
        return self.prediction.time_to_train_s(self.tokens_to_train) / SECONDS_PER_DAY


@dataclass(frozen=True)
class PredictAssessment:
    """What ``predict`` shows: the predictions, and the time to train with failures of the
    fastest one that runs on the design's own training GPUs (None: none does)."""

    outcome: PredictOutcome
    goodput: GoodputOutlook | Unavailable | None


def expected_performance(design: Design) -> ExpectedPerformance | Unavailable:
    """The prediction for the spec's workload, or why there is none (no workload section, or
    a plan that does not fit this model: the design is still worth showing)."""
    try:
        prediction = predict_workload(design)
    except ClusterforgeError as exc:
        return Unavailable(str(exc))
    tokens = design.require_workload("a prediction")[0].tokens_b * 1e9
    return ExpectedPerformance(prediction, tokens)


def top_plans(design: Design, top: int) -> tuple[Prediction, ...]:
    """The ``top`` fitting plans by throughput (the performance model's plan search)."""
    if top <= 0:
        return ()
    return tuple(run_predict(design, PredictRequest(search=True, top=top)).predictions)


def predict(
    design: Design,
    request: PredictRequest,
    progress: Callable[[int, int], None] | None = None,
    *,
    goodput_runs: int = 200,
) -> PredictAssessment:
    """Predict (or search) as ``request`` asks, then the goodput of the best prediction on
    the design's own training GPUs (the job its spares and failure exposure are for)."""
    outcome = run_predict(design, request, progress)
    own = [
        p for p in outcome.predictions if p.plan.layout.num_gpus == design.compute.num_training_gpus
    ]
    if not own:
        return PredictAssessment(outcome, None)
    best = max(own, key=lambda p: p.tokens_per_s)
    days = best.time_to_train_s(outcome.tokens) / SECONDS_PER_DAY
    return PredictAssessment(outcome, goodput_outlook(design, runs=goodput_runs, days=days))
