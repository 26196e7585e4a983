"""The expected training performance of a design's own workload, as plain JSON data.

``plan`` shows it in the terminal and stores it in ``design.json``; it is the performance
model's prediction (:func:`clusterforge.perf.predict_workload`) reduced to the figures a
buyer reads: step time, throughput, MFU/HFU, memory per GPU and days to train.
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.errors import ClusterforgeError

__all__ = ["expected_performance"]

SECONDS_PER_DAY = 86400


def expected_performance(design: Design) -> dict[str, Any]:
    """The prediction for the spec's workload, or why there is none.

    A design is still useful when the workload cannot be predicted (no workload section, or
    a plan that does not fit this model), so the reason is returned instead of raised.
    """
    from clusterforge.perf import predict_workload

    try:
        p = predict_workload(design)
    except ClusterforgeError as exc:
        return {"available": False, "reason": str(exc)}
    tokens = design.require_workload("a prediction")[0].tokens_b * 1e9
    job = p.plan.layout
    plan = f"TP {job.tp} x PP {job.pp} x CP {job.cp} x DP {job.dp}"
    return {
        "available": True,
        "model": p.model_id,
        "plan": plan + (f" (EP {job.ep})" if job.ep > 1 else ""),
        "step_time_s": p.step_time_s,
        "tokens_per_s": p.tokens_per_s,
        "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
        "mfu": p.mfu,
        "hfu": p.hfu,
        "memory_per_gpu_gib": p.memory_per_gpu_gib,
        "fits": p.fits,
        "tokens_to_train": tokens,
        "time_to_train_days": p.time_to_train_s(tokens) / SECONDS_PER_DAY,
        "goodput": expected_goodput_summary(design, p.time_to_train_s(tokens) / SECONDS_PER_DAY),
    }


def expected_goodput_summary(design: Design, ideal_days: float, runs: int = 200) -> dict[str, Any]:
    """Time to train once failures, checkpoints and restarts are counted
    (:mod:`clusterforge.goodput`: the expected model and ``runs`` simulated lives)."""
    from clusterforge.goodput import goodput_report

    try:
        report = goodput_report(design, runs=runs, days=ideal_days)
    except ClusterforgeError as exc:
        return {"available": False, "reason": str(exc)}
    exp = report.expected
    return {
        "available": True,
        "num_gpus": design.compute.num_training_gpus,
        "interruptions_per_day": exp.interruptions_per_day,
        "checkpoint_interval_s": exp.checkpoint_interval_s,
        "checkpoint_s": exp.checkpoint_s,
        "restart_s": exp.restart_s,
        "ettr": exp.ettr,
        "expected_days": exp.wall_s / SECONDS_PER_DAY,
        "p50_days": report.percentile_days(50),
        "p90_days": report.percentile_days(90),
        "spares_for_99_percent": exp.spares.spares_for_99,
    }
