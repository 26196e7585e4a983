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
    plan = f"TP {p.plan.tp} x PP {p.plan.pp} x CP {p.plan.cp} x DP {p.plan.dp}"
    return {
        "available": True,
        "model": p.model_id,
        "plan": plan + (f" (EP {p.plan.ep})" if p.plan.ep > 1 else ""),
        "step_time_s": p.step_time_s,
        "tokens_per_s": p.tokens_per_s,
        "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
        "mfu": p.mfu,
        "hfu": p.hfu,
        "memory_per_gpu_gib": p.memory_per_gpu_gib,
        "fits": p.fits,
        "tokens_to_train": tokens,
        "time_to_train_days": p.time_to_train_s(tokens) / SECONDS_PER_DAY,
    }
