"""Goodput of a design's job: its inputs from the design, expected values
(:mod:`.expected`), a Monte Carlo of its life (:mod:`.montecarlo`) and what-ifs
(:mod:`.whatif`), in one report.

Inputs come from the design: the job's GPUs, nodes and NICs (failure exposure), the
checkpoint size and the designed storage bandwidth (checkpoint and restart cost), the spare
nodes, and the failure-free training time from the performance model.  Everything the
user may want to change lives in the spec's ``reliability`` section.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from clusterforge.errors import CapacityError, ClusterforgeError
from clusterforge.goodput.checkpoint import checkpoint_cost
from clusterforge.goodput.expected import DAY_S, Expected, GoodputInputs, expected_goodput
from clusterforge.goodput.montecarlo import LifeParams, Lives, simulate_lives
from clusterforge.goodput.rates import job_rates
from clusterforge.goodput.whatif import what_if_facts, what_ifs

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = ["GoodputReport", "goodput_report", "inputs_from_design", "life_params"]


def _work_and_step_s(design: Design, days: float | None) -> tuple[float, float]:
    """Failure-free training time (``days`` if given, else tokens / predicted tokens/s) and
    the predicted step time (0 when unknown).  Without ``days``, a plan that does not fit
    the GPU's memory has no time to train: refused, naming the memory it needs."""
    from clusterforge.perf import predict_workload

    if days is not None:
        return days * DAY_S, _step_s_if_known(design)
    workload, _ = design.require_workload("goodput")
    prediction = predict_workload(design)
    if not prediction.fits:
        gpu = design.compute.gpu
        raise CapacityError(
            f"the workload's plan needs {prediction.memory_per_gpu_gib:,.0f} GiB per GPU but "
            f"{gpu.id} has {gpu.hbm_gib:,.1f} GiB, so it has no time to train; raise "
            "workload.tensor_parallel or pipeline_parallel, use more GPUs or a GPU with more "
            "memory"
        )
    return workload.tokens_b * 1e9 / prediction.tokens_per_s, prediction.step_time_s


def _step_s_if_known(design: Design) -> float:
    """The predicted step of a workload whose plan fits; 0 when there is none."""
    from clusterforge.perf import predict_workload

    if design.spec.workload is None:
        return 0.0
    try:
        prediction = predict_workload(design)
    except ClusterforgeError:
        return 0.0
    return prediction.step_time_s if prediction.fits else 0.0


def inputs_from_design(
    design: Design, *, days: float | None = None, step_s: float | None = None
) -> GoodputInputs:
    """The goodput inputs of the design's own job (its training nodes, storage, spares).

    ``days``: failure-free days to train and ``step_s``: seconds per step, when the caller
    already has them; otherwise the performance model predicts them."""
    rel, compute = design.spec.reliability, design.compute
    if days is not None and step_s is not None:
        work_s = days * DAY_S
    else:
        work_s, step_s = _work_and_step_s(design, days)
    checkpoint = checkpoint_cost(design)
    rates = job_rates(
        num_gpus=compute.num_training_gpus,
        num_nodes=compute.num_training_nodes,
        num_nics=compute.num_training_nodes * design.fabric.nics_per_node,
        scale=rel.failure_rate_scale,
    )
    return GoodputInputs(
        work_s=work_s,
        delta_s=checkpoint.stall_s,
        relaunch_s=rel.detection_s + rel.restart_s,
        read_s=checkpoint.read_s,
        rates=rates,
        repair_s=rel.repair_days * DAY_S,
        interval_s=rel.checkpoint_interval_s,
        step_s=step_s,
        min_interval_s=checkpoint.background_s,
        **_spare_inputs(design),
    )


def _spare_inputs(design: Design) -> dict[str, Any]:
    """Spares per pool, pools and swap time.

    Whole spare nodes are one pool brought in after ``spare_swap_s``.  In-rack spares are one
    pool per NVLink domain, already up inside the domain, so the job's restart is the swap.
    Whole spare racks of a rack-scale system count as whole domains: a tray outside a
    domain cannot stand in for one inside it (CoreWeave's GB200 NVL72 instances: a node is
    replaced within its rack, never from another), so the job leaves the failed domain for
    a spare rack, and that rack is back in the pool only when the failed tray is."""
    compute, swap_s = design.compute, design.spec.reliability.spare_swap_s
    if compute.num_spares_per_nvlink_domain:
        return {
            "num_spares": compute.num_spares_per_nvlink_domain,
            "num_spare_pools": len(compute.rack_scale_blocks()),
            "swap_s": 0.0,
        }
    if compute.node.rack_scale_nodes:
        return {
            "num_spares": compute.num_spare_nodes // compute.node.rack_scale_nodes,
            "swap_s": swap_s,
        }
    return {"num_spares": compute.num_spare_nodes, "swap_s": swap_s}


@dataclass(frozen=True)
class GoodputReport:
    """Expected values, the Monte Carlo's distribution and the what-ifs of one design."""

    inputs: GoodputInputs
    expected: Expected
    lives: Lives
    variants: dict[str, Expected]

    def percentile_days(self, q: float) -> float:
        return float(np.percentile(self.lives.wall_s, q)) / DAY_S

    def as_dict(self) -> dict[str, Any]:
        lives = self.lives
        return {
            "ideal_days": self.inputs.work_s / DAY_S,
            "expected": self.expected.as_dict(),
            "interruptions_per_day_by_class": {
                k: v * 24.0 for k, v in self.inputs.rates.per_hour.items()
            },
            "monte_carlo": {
                "runs": int(lives.wall_s.size),
                "mean_days": float(lives.wall_s.mean()) / DAY_S,
                "p50_days": self.percentile_days(50),
                "p90_days": self.percentile_days(90),
                "mean_failures": float(lives.failures.mean()),
                "mean_spare_wait_days": float(lives.spare_wait_s.mean()) / DAY_S,
                "p90_peak_nodes_in_repair": float(np.percentile(lives.peak_in_repair, 90)),
            },
            "what_if": {k: v.as_dict() for k, v in self.variants.items()},
        }


def life_params(inputs: GoodputInputs, expected: Expected) -> LifeParams:
    """The Monte Carlo's inputs for ``inputs``, checkpointing at the expected model's interval."""
    return LifeParams(
        work_s=inputs.work_s,
        tau_s=expected.checkpoint_interval_s,
        delta_s=inputs.delta_s,
        restart_s=inputs.restart_s,
        mtbf_s=inputs.mtbf_s,
        p_spare=inputs.p_spare,
        num_spares=inputs.num_spares,
        repair_s=inputs.repair_s,
        num_spare_pools=inputs.num_spare_pools,
    )


def goodput_report(
    design: Design,
    *,
    runs: int = 1000,
    seed: int = 0,
    days: float | None = None,
    step_s: float | None = None,
) -> GoodputReport:
    """Goodput of the design's job: expected model, ``runs`` simulated lives, what-ifs
    (``days``, ``step_s``: the failure-free time and step, when the caller has them)."""
    inputs = inputs_from_design(design, days=days, step_s=step_s)
    expected = expected_goodput(inputs)
    lives = simulate_lives(life_params(inputs, expected), runs=runs, seed=seed)
    return GoodputReport(inputs, expected, lives, what_ifs(inputs, what_if_facts(design)))
