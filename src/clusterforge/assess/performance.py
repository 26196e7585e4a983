"""The training performance a design delivers: the spec's own plan, the best plans found,
and the time to train with failures of a prediction (:mod:`clusterforge.perf` and
:mod:`clusterforge.goodput` asked once, their answers kept typed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusterforge.assess.lifetime import GoodputOutlook, goodput_outlook
from clusterforge.assess.unavailable import Unavailable
from clusterforge.design import Design
from clusterforge.design.rules.finding import Finding
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
    "PlanDoesNotFit",
    "PredictAssessment",
    "expected_performance",
    "memory_finding",
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


@dataclass(frozen=True)
class PlanDoesNotFit(Unavailable):
    """The spec's plan needs more memory per GPU than the GPU has: no time to train, and an
    error finding for the design."""

    finding: Finding


def expected_performance(design: Design) -> ExpectedPerformance | Unavailable:
    """The prediction for the spec's workload, or why there is none (no workload section, a
    plan this model cannot lay out, or one that does not fit the GPU's memory: the design is
    still worth showing)."""
    try:
        prediction = predict_workload(design)
    except ClusterforgeError as exc:
        return Unavailable(str(exc))
    if not prediction.fits:
        finding = memory_finding(design, prediction)
        return PlanDoesNotFit(f"{finding.message}: no time to train", finding)
    tokens = design.require_workload("a prediction")[0].tokens_b * 1e9
    return ExpectedPerformance(prediction, tokens)


def memory_finding(design: Design, prediction: Prediction) -> Finding:
    """The error finding of a plan whose memory per GPU exceeds the GPU's HBM."""
    job, gpu = prediction.plan.layout, design.compute.gpu
    need = prediction.memory_per_gpu_gib
    return Finding(
        id="plan-exceeds-gpu-memory",
        severity="error",
        message=(
            f"the workload's plan (TP {job.tp} x PP {job.pp} x CP {job.cp} x DP {job.dp}) needs "
            f"{need:,.0f} GiB per GPU but {gpu.id} has {gpu.hbm_gib:,.1f} GiB"
        ),
        numbers={"memory_per_gpu_gib": need, "hbm_gib": gpu.hbm_gib},
        fix=(
            "raise workload.tensor_parallel or pipeline_parallel (a plan search lists the plans "
            "that fit), train on more GPUs, or choose a GPU with more memory"
        ),
    )


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
        p
        for p in outcome.predictions
        if p.plan.layout.num_gpus == design.compute.num_training_gpus and p.fits
    ]
    if not own:
        return PredictAssessment(outcome, None)
    best = max(own, key=lambda p: p.tokens_per_s)
    days = best.time_to_train_s(outcome.tokens) / SECONDS_PER_DAY
    goodput = goodput_outlook(design, runs=goodput_runs, days=days, step_s=best.step_time_s)
    return PredictAssessment(outcome, goodput)
