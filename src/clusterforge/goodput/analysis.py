"""Goodput of a design's job: expected values, a Monte Carlo of its life, and what-ifs.

Inputs come from the design: the job's GPUs, nodes and NICs (failure exposure), the
checkpoint size and the designed storage bandwidth (checkpoint and restart cost), the spare
nodes, and the failure-free training time from the performance model.  Everything the
user may want to change lives in the spec's ``reliability`` section.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from clusterforge.errors import CapacityError
from clusterforge.goodput.model import (
    SparePool,
    daly_interval_s,
    expected_spare_wait_s,
    expected_wall_s,
    spare_pool,
)
from clusterforge.goodput.montecarlo import LifeParams, Lives, simulate_lives
from clusterforge.goodput.rates import JobRates, job_rates

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "Expected",
    "GoodputInputs",
    "GoodputReport",
    "WhatIfFacts",
    "arrhenius_factor",
    "expected_goodput",
    "goodput_report",
    "inputs_from_design",
    "life_params",
    "what_if_facts",
    "what_ifs",
]

DAY_S = 86400.0
# Beyond this many interruptions per checkpoint segment, e^((tau+delta)/M) makes the job
# effectively never finish: refuse instead of simulating forever.
MAX_SEGMENT_OVER_MTBF = 20.0


@dataclass(frozen=True)
class GoodputInputs:
    """Everything the goodput model needs, in seconds (traceable to the design)."""

    rates: JobRates  # failures per hour of the job, by class
    work_s: float = 0.0  # failure-free training time
    delta_s: float = 0.0  # training time lost per checkpoint
    relaunch_s: float = 0.0  # detection + requeue, containers, NCCL initialisation
    read_s: float = 0.0  # reading the checkpoint back
    num_spares: int = 0  # in each pool
    repair_s: float = 0.0
    interval_s: float | None = None  # None = Daly's optimum
    swap_s: float = 0.0  # bringing a spare into the job after a hardware failure
    num_spare_pools: int = 1  # in-rack spares: one pool per NVLink domain

    @property
    def restart_s(self) -> float:
        """A restart: relaunch, read the last checkpoint back, and (for the share of
        failures that take a node away) bring a spare in: the mean over failures."""
        return self.relaunch_s + self.read_s + self.p_spare * self.swap_s

    @property
    def mtbf_s(self) -> float:
        return self.rates.mtbf_h * 3600.0

    @property
    def p_spare(self) -> float:
        total = self.rates.total_per_hour
        return 0.0 if total <= 0 else self.rates.spare_per_hour / total


@dataclass(frozen=True)
class Expected:
    """Expected-value results for one set of inputs."""

    interruptions_per_day: float
    mtbf_h: float
    checkpoint_interval_s: float
    checkpoint_s: float
    restart_s: float
    wall_s: float
    ettr: float
    spares: SparePool
    spare_wait_s: float = 0.0  # included in wall_s

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "spares"}
        out["spares"] = self.spares.as_dict()
        out["wall_days"] = self.wall_s / DAY_S
        return out


def expected_goodput(inputs: GoodputInputs) -> Expected:
    """ETTR and expected wall time by the complete exponential-failure model (Daly 2006)."""
    mtbf = inputs.mtbf_s
    tau = inputs.interval_s or daly_interval_s(inputs.delta_s, mtbf)
    tau = min(tau, max(inputs.work_s, 1.0))
    if (
        math.isfinite(mtbf)
        and (tau + inputs.delta_s + inputs.restart_s) / mtbf > MAX_SEGMENT_OVER_MTBF
    ):
        raise CapacityError(
            f"the job is interrupted every {mtbf / 3600:.2g} h on average but one checkpoint "
            f"interval plus its write and a restart take {(tau + inputs.delta_s + inputs.restart_s) / 3600:.2g} h: "
            "it would never finish; make the job smaller, storage faster or restarts quicker"
        )
    wall = expected_wall_s(
        inputs.work_s, tau_s=tau, delta_s=inputs.delta_s, restart_s=inputs.restart_s, mtbf_s=mtbf
    )
    pool = spare_pool(
        num_spares=inputs.num_spares,
        spare_failures_per_h=inputs.rates.spare_per_hour,
        repair_h=inputs.repair_s / 3600.0,
        num_pools=inputs.num_spare_pools,
    )
    # Hardware failures over the running time, each waiting for a spare of its own pool
    # when none is back.  Several pools' waits are added as if none overlapped another's
    # (while the job waits for one domain, the others' repairs go on): an upper bound,
    # close while waits are rare (the Monte Carlo has the overlap).
    spare_per_s = inputs.rates.spare_per_hour / 3600.0
    per_failure_s = expected_spare_wait_s(
        num_spares=inputs.num_spares,
        spare_failures_per_s=spare_per_s / max(inputs.num_spare_pools, 1),
        repair_s=inputs.repair_s,
    )
    spare_wait = spare_per_s * wall * per_failure_s if spare_per_s > 0 else 0.0
    wall += spare_wait
    return Expected(
        interruptions_per_day=inputs.rates.total_per_hour * 24.0,
        mtbf_h=inputs.rates.mtbf_h,
        checkpoint_interval_s=tau,
        checkpoint_s=inputs.delta_s,
        restart_s=inputs.restart_s,
        wall_s=wall,
        ettr=inputs.work_s / wall if wall > 0 else 1.0,
        spares=pool,
        spare_wait_s=spare_wait,
    )


def _work_s(design: Design, days: float | None) -> float:
    """Failure-free training time: ``days`` if given, else tokens / predicted tokens/s."""
    if days is not None:
        return days * DAY_S
    from clusterforge.perf import predict_workload

    workload, _ = design.require_workload("goodput")
    prediction = predict_workload(design)
    return workload.tokens_b * 1e9 / prediction.tokens_per_s


def _checkpoint_s(design: Design) -> float:
    """Training time lost per checkpoint: the whole write (sync) or the copy of each GPU's
    unique shard to host memory (async: the write to storage overlaps training)."""
    rel, storage = design.spec.reliability, design.storage
    if rel.checkpoint == "sync":
        return storage.checkpoint_write_s
    shard_gbyte = storage.checkpoint_tbyte * 1000.0 / design.compute.num_training_gpus
    return shard_gbyte / rel.async_copy_gbyte_per_s


def inputs_from_design(design: Design, *, days: float | None = None) -> GoodputInputs:
    """The goodput inputs of the design's own job (its training nodes, storage, spares)."""
    rel, compute, storage = design.spec.reliability, design.compute, design.storage
    read_s = storage.checkpoint_tbyte * 1000.0 / storage.read_gbyte_per_s
    rates = job_rates(
        num_gpus=compute.num_training_gpus,
        num_nodes=compute.num_training_nodes,
        num_nics=compute.num_training_nodes * design.fabric.nics_per_node,
        scale=rel.failure_rate_scale,
    )
    return GoodputInputs(
        work_s=_work_s(design, days),
        delta_s=_checkpoint_s(design),
        relaunch_s=rel.detection_s + rel.restart_s,
        read_s=read_s,
        rates=rates,
        repair_s=rel.repair_days * DAY_S,
        interval_s=rel.checkpoint_interval_s,
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


# Arrhenius acceleration of thermally activated failures (JEDEC JEP122H, §5: AF =
# exp(Ea/k · (1/T_cool - 1/T_hot))).  Ea = 0.5 eV sits in the 0.3-0.9 eV span JEP122
# gives for silicon and package mechanisms; a 15 K cooler die is a stated assumption for
# direct liquid cooling against air (measure DCGM_FI_DEV_GPU_TEMP on both).
BOLTZMANN_EV_PER_K = 8.617333e-5
ARRHENIUS_EA_EV = 0.5
AIR_DIE_K = 273.15 + 75.0
LIQUID_COOLER_BY_K = 15.0
THERMAL_CLASSES = ("gpu", "hbm")  # the rates were measured on an air-cooled H100 fleet


def arrhenius_factor(*, hot_k: float, cool_k: float, ea_ev: float = ARRHENIUS_EA_EV) -> float:
    """How many times fewer thermally activated failures at ``cool_k`` than at ``hot_k``."""
    return math.exp(ea_ev / BOLTZMANN_EV_PER_K * (1.0 / cool_k - 1.0 / hot_k))


def _scaled(rates: JobRates, factor: float, classes: tuple[str, ...] | None = None) -> JobRates:
    """``rates`` with the classes named (all when None) multiplied by ``factor``."""
    per_hour = {
        k: v * factor if classes is None or k in classes else v for k, v in rates.per_hour.items()
    }
    return JobRates(per_hour, rates.needs_spare)


@dataclass(frozen=True)
class WhatIfFacts:
    """What the design knows beyond the inputs: the checkpoint stall if it were async and
    the read-back time from peers' host memory (in-memory checkpoints)."""

    async_delta_s: float | None = None  # None when the design already checkpoints async
    in_memory_read_s: float | None = None


def what_ifs(inputs: GoodputInputs, facts: WhatIfFacts | None = None) -> dict[str, Expected]:
    """The questions a buyer asks, each one change to the inputs, priced by the expected
    model: more spares, faster storage, async or in-memory checkpoints, quicker relaunch,
    hot spares, a smaller job, liquid cooling, a healthier fleet."""
    facts = facts or WhatIfFacts()
    rates = inputs.rates
    cooler = 1.0 / arrhenius_factor(hot_k=AIR_DIE_K, cool_k=AIR_DIE_K - LIQUID_COOLER_BY_K)
    variants = {
        "as designed": inputs,
        "twice the spares": replace(inputs, num_spares=max(1, 2 * inputs.num_spares)),
        "storage 2x faster": replace(inputs, delta_s=inputs.delta_s / 2, read_s=inputs.read_s / 2),
        "relaunch in half the time": replace(inputs, relaunch_s=inputs.relaunch_s / 2),
        "hot spares in the job's leaf": replace(inputs, swap_s=0.0),
        "half the job (half the GPUs, twice the time)": replace(
            inputs, rates=_scaled(rates, 0.5), work_s=2.0 * inputs.work_s
        ),
        "liquid cooling (GPU 15 K cooler, Arrhenius)": replace(
            inputs, rates=_scaled(rates, cooler, THERMAL_CLASSES)
        ),
        "half the failure rate": replace(inputs, rates=_scaled(rates, 0.5)),
    }
    if facts.async_delta_s is not None:
        variants["async checkpoints"] = replace(inputs, delta_s=facts.async_delta_s)
    if facts.in_memory_read_s is not None:
        variants["in-memory checkpoints (read back from peers)"] = replace(
            inputs, read_s=facts.in_memory_read_s
        )
    return {label: expected_goodput(v) for label, v in variants.items()}


def what_if_facts(design: Design) -> WhatIfFacts:
    """Checkpoint stall if async (the shard's copy to host memory) and the read-back from
    peers' host memory over the NICs (in-memory checkpoints, Wang et al. SOSP 2023)."""
    rel, storage, fabric = design.spec.reliability, design.storage, design.fabric
    gpus_per_node = design.compute.num_training_gpus / max(design.compute.num_training_nodes, 1)
    shard_gbyte = storage.checkpoint_tbyte * 1000.0 / design.compute.num_training_gpus
    async_delta = None if rel.checkpoint == "async" else shard_gbyte / rel.async_copy_gbyte_per_s
    # Each GPU's shard comes back from a peer node's host memory over the node's NICs.
    nic_gbyte_per_gpu = fabric.nics_per_node * fabric.nic_gbit_per_s / 8.0 / gpus_per_node
    in_memory = shard_gbyte / nic_gbyte_per_gpu if nic_gbyte_per_gpu > 0 else None
    return WhatIfFacts(async_delta_s=async_delta, in_memory_read_s=in_memory)


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
    design: Design, *, runs: int = 1000, seed: int = 0, days: float | None = None
) -> GoodputReport:
    """Goodput of the design's job: expected model, ``runs`` simulated lives, what-ifs."""
    inputs = inputs_from_design(design, days=days)
    expected = expected_goodput(inputs)
    lives = simulate_lives(life_params(inputs, expected), runs=runs, seed=seed)
    return GoodputReport(inputs, expected, lives, what_ifs(inputs, what_if_facts(design)))
