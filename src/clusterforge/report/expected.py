"""An assessment's performance and goodput as plain JSON data.

``plan`` stores it in ``design.json`` (``expected_performance``) and ``predict --json``
attaches the goodput to its best plan: the figures a buyer reads (step time, throughput,
MFU/HFU, memory per GPU, days to train, and the days once failures are counted).
"""

from __future__ import annotations

from typing import Any

from clusterforge.assess import (
    ExpectedPerformance,
    GoodputOutlook,
    ParallelPlan,
    Unavailable,
)

__all__ = ["goodput_json", "parallel_label", "performance_json", "plan_name"]

DAY_S = 86400.0


def parallel_label(plan: ParallelPlan) -> str:
    """``TP 8 x PP 4 x CP 1 x DP 16`` and ``(EP n)`` when experts are sharded."""
    job = plan.layout
    label = f"TP {job.tp} x PP {job.pp} x CP {job.cp} x DP {job.dp}"
    return label + (f" (EP {job.ep})" if job.ep > 1 else "")


def plan_name(plan: ParallelPlan) -> str:
    """A plan as a reader says it: ``TP8 PP4 DP32, micro-batch 2``, with CP, EP and the
    virtual pipeline stages (VPP) only where they are used (above 1)."""
    job = plan.layout
    degrees = [f"TP{job.tp}", f"PP{job.pp}"]
    degrees += [f"{name}{value}" for name, value in (("CP", job.cp), ("EP", job.ep)) if value > 1]
    degrees.append(f"DP{job.dp}")
    vpp = f", VPP {job.vpp}" if job.vpp > 1 else ""
    return f"{' '.join(degrees)}, micro-batch {plan.micro_batch}{vpp}"


def performance_json(
    performance: ExpectedPerformance | Unavailable | None,
    goodput: GoodputOutlook | Unavailable | None,
) -> dict[str, Any]:
    """The prediction for the spec's workload, with its goodput, or why there is none."""
    if not isinstance(performance, ExpectedPerformance):
        reason = performance.reason if performance else "performance was not assessed"
        return {"available": False, "reason": reason}
    p = performance.prediction
    data: dict[str, Any] = {
        "available": True,
        "model": p.model_id,
        "plan": parallel_label(p.plan),
        "step_time_s": p.step_time_s,
        "tokens_per_s": p.tokens_per_s,
        "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
        "mfu": p.mfu,
        "hfu": p.hfu,
        "memory_per_gpu_gib": p.memory_per_gpu_gib,
        "fits": p.fits,
        "tokens_to_train": performance.tokens_to_train,
        "time_to_train_days": performance.time_to_train_days,
    }
    if goodput is not None:
        data["goodput"] = goodput_json(goodput)
    return data


def goodput_json(goodput: GoodputOutlook | Unavailable) -> dict[str, Any]:
    """Time to train once failures, checkpoints and restarts are counted: the expected model
    and the simulated lives' P50 and P90."""
    if isinstance(goodput, Unavailable):
        return {"available": False, "reason": goodput.reason}
    exp = goodput.report.expected
    return {
        "available": True,
        "num_gpus": goodput.num_gpus,
        "interruptions_per_day": exp.interruptions_per_day,
        "checkpoint_interval_s": exp.checkpoint_interval_s,
        "checkpoint_interval_steps": exp.checkpoint_interval_steps,
        "checkpoint_s": exp.checkpoint_s,
        "restart_s": exp.restart_s,
        "ettr": exp.ettr,
        "expected_days": goodput.expected_days,
        "p50_days": goodput.p50_days,
        "p90_days": goodput.p90_days,
        "spares_for_99_percent": exp.spares.spares_for_99,
        "lost_days_by_cause": {k: v / DAY_S for k, v in exp.lost.as_dict().items()},
    }
