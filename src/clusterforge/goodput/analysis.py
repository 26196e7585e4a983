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

from clusterforge.errors import CapacityError, ClusterforgeError
from clusterforge.goodput.checkpoint import checkpoint_cost
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
    "LostTime",
    "WhatIfFacts",
    "arrhenius_factor",
    "expected_goodput",
    "goodput_report",
    "inputs_from_design",
    "life_params",
    "lost_time",
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
    step_s: float = 0.0  # one training step: checkpoints fall between steps (0 = unknown)
    min_interval_s: float = 0.0  # async: the previous write must end before the next starts
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
class LostTime:
    """Expected wall-clock seconds beyond the failure-free work, by cause: they are computed
    from the model's parts so that they add up to ``wall - work``."""

    failures_s: float  # work redone after failures (and checkpoints a failure cut short)
    restarts_s: float  # detection, relaunch, reading the checkpoint back, a spare swapped in
    checkpoints_s: float  # training paused for the checkpoints that completed
    spare_wait_s: float  # waiting for a repaired node when no spare is left

    @property
    def total_s(self) -> float:
        return self.failures_s + self.restarts_s + self.checkpoints_s + self.spare_wait_s

    def as_dict(self) -> dict[str, float]:
        return {
            "failures": self.failures_s,
            "restarts": self.restarts_s,
            "checkpoints": self.checkpoints_s,
            "waiting_for_spares": self.spare_wait_s,
        }


def lost_time(
    inputs: GoodputInputs, *, tau_s: float, running_s: float, spare_wait_s: float
) -> LostTime:
    """Split ``running_s`` (the expected time with failures, before spare waits) into work
    and losses.  Failures come at rate 1/M all the time the job runs, so by Wald's identity
    a life sees ``running / M`` of them on average; each starts a restart that a further
    failure may cut short, lasting E[min(R, Exp(M))] = M·(1 - e^(-R/M)).  Every completed
    segment ends with a checkpoint of ``delta``; what remains is work (and partly written
    checkpoints) that failures threw away."""
    mtbf, restart = inputs.mtbf_s, inputs.restart_s
    checkpoints = inputs.work_s / tau_s * inputs.delta_s if tau_s > 0 else 0.0
    if math.isinf(mtbf):
        restarts = 0.0
    else:
        num_failures = running_s / mtbf
        restarts = num_failures * mtbf * -math.expm1(-restart / mtbf)
    failures = running_s - inputs.work_s - checkpoints - restarts
    return LostTime(failures, restarts, checkpoints, spare_wait_s)


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
    lost: LostTime
    spare_wait_s: float = 0.0  # included in wall_s
    checkpoint_interval_steps: float | None = None  # None when the step time is unknown

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("spares", "lost")}
        out["spares"] = self.spares.as_dict()
        out["lost_s"] = self.lost.as_dict()
        out["wall_days"] = self.wall_s / DAY_S
        return out


def _interval_s(inputs: GoodputInputs) -> float:
    """Seconds of work between checkpoints: the spec's or Daly's optimum, at least the
    async write still in flight, and a whole number of steps (at least one) when the step
    is known, since a checkpoint is taken between two steps."""
    tau = inputs.interval_s or daly_interval_s(inputs.delta_s, inputs.mtbf_s)
    tau = max(tau, inputs.min_interval_s)
    if inputs.step_s > 0 and math.isfinite(tau):
        steps = max(1, round(tau / inputs.step_s), math.ceil(inputs.min_interval_s / inputs.step_s))
        tau = steps * inputs.step_s
    return min(tau, max(inputs.work_s, 1.0, inputs.step_s))


def expected_goodput(inputs: GoodputInputs) -> Expected:
    """ETTR and expected wall time by the complete exponential-failure model (Daly 2006)."""
    mtbf = inputs.mtbf_s
    tau = _interval_s(inputs)
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
    lost = lost_time(inputs, tau_s=tau, running_s=wall, spare_wait_s=spare_wait)
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
        lost=lost,
        spare_wait_s=spare_wait,
        checkpoint_interval_steps=tau / inputs.step_s if inputs.step_s > 0 else None,
    )


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
    """What the design knows beyond the inputs: the checkpoint stall if it were async, the
    read-back time from peers' host memory (in-memory checkpoints), and whether its GPUs
    are air-cooled (liquid cooling is a change only for them)."""

    async_delta_s: float | None = None  # None when the design already checkpoints async
    in_memory_read_s: float | None = None
    air_cooled: bool = True
    write_s: float | None = None  # the part of a checkpoint bandwidth sets (None: all of it)
    write_in_background: bool = False  # async: the write delays the next checkpoint only


# A what-if is shown only when it moves the expected time to train by at least this share:
# the resolution of the figures shown (ETTR to 0.1 %).
MIN_WHAT_IF_CHANGE = 1e-3


def what_ifs(inputs: GoodputInputs, facts: WhatIfFacts | None = None) -> dict[str, Expected]:
    """The questions a buyer asks, each one change to the inputs, priced by the expected
    model: more spares, faster storage, async or in-memory checkpoints, quicker relaunch,
    hot spares, a smaller job, liquid cooling, a healthier fleet.  Only the changes that
    apply to this design are asked (no liquid cooling for liquid-cooled GPUs, no async for
    async checkpoints), and only those that change the answer are kept; "as designed"
    comes first."""
    facts = facts or WhatIfFacts()
    base = expected_goodput(inputs)
    out = {"as designed": base}
    for label, variant in _variants(inputs, facts).items():
        result = expected_goodput(variant)
        if _differs(result, base):
            out[label] = result
    return out


def _variants(inputs: GoodputInputs, facts: WhatIfFacts) -> dict[str, GoodputInputs]:
    """Each applicable change to ``inputs``, by label."""
    rates = inputs.rates
    spares = (
        ("twice the spares", 2 * inputs.num_spares)
        if inputs.num_spares > 0
        else ("one spare node", 1)
    )
    variants = {
        spares[0]: replace(inputs, num_spares=spares[1]),
        "storage 2x faster": _faster_storage(inputs, facts),
        "relaunch in half the time": replace(inputs, relaunch_s=inputs.relaunch_s / 2),
        "hot spares in the job's leaf": replace(inputs, swap_s=0.0),
        "half the job (half the GPUs, twice the time)": replace(
            inputs, rates=_scaled(rates, 0.5), work_s=2.0 * inputs.work_s
        ),
        "half the failure rate": replace(inputs, rates=_scaled(rates, 0.5)),
    }
    if facts.air_cooled:
        cooler = 1.0 / arrhenius_factor(hot_k=AIR_DIE_K, cool_k=AIR_DIE_K - LIQUID_COOLER_BY_K)
        variants["liquid cooling (GPU 15 K cooler, Arrhenius)"] = replace(
            inputs, rates=_scaled(rates, cooler, THERMAL_CLASSES)
        )
    if facts.async_delta_s is not None:
        # The write goes on in the background: the next checkpoint waits for it.
        variants["async checkpoints"] = replace(
            inputs, delta_s=facts.async_delta_s, min_interval_s=inputs.delta_s
        )
    if facts.in_memory_read_s is not None and facts.in_memory_read_s < inputs.read_s:
        variants["in-memory checkpoints (read back from peers)"] = replace(
            inputs, read_s=facts.in_memory_read_s
        )
    return variants


def _faster_storage(inputs: GoodputInputs, facts: WhatIfFacts) -> GoodputInputs:
    """Storage twice as fast: half the write and the read-back; the coordination floor of
    each checkpoint stays."""
    write = inputs.delta_s if facts.write_s is None else facts.write_s
    faster = replace(inputs, read_s=inputs.read_s / 2)
    if facts.write_in_background:
        return replace(faster, min_interval_s=max(0.0, inputs.min_interval_s - write / 2))
    return replace(faster, delta_s=inputs.delta_s - write / 2)


def _differs(variant: Expected, base: Expected) -> bool:
    """Whether a what-if changes what is shown: the expected time or the spares needed."""
    moved = abs(variant.wall_s - base.wall_s) >= MIN_WHAT_IF_CHANGE * base.wall_s
    return moved or variant.spares.spares_for_99 != base.spares.spares_for_99


def what_if_facts(design: Design) -> WhatIfFacts:
    """Checkpoint stall if async (the shard's copy to host memory), the read-back from
    peers' host memory over the NICs (in-memory checkpoints, Wang et al. SOSP 2023), and
    the GPUs' cooling."""
    rel, storage, fabric = design.spec.reliability, design.storage, design.fabric
    gpus_per_node = design.compute.num_training_gpus / max(design.compute.num_training_nodes, 1)
    shard_gbyte = storage.checkpoint_tbyte * 1000.0 / design.compute.num_training_gpus
    async_delta = None if rel.checkpoint == "async" else shard_gbyte / rel.async_copy_gbyte_per_s
    # Each GPU's shard comes back from a peer node's host memory over the node's NICs.
    nic_gbyte_per_gpu = fabric.nics_per_node * fabric.nic_gbit_per_s / 8.0 / gpus_per_node
    in_memory = shard_gbyte / nic_gbyte_per_gpu if nic_gbyte_per_gpu > 0 else None
    return WhatIfFacts(
        async_delta_s=async_delta,
        in_memory_read_s=in_memory,
        air_cooled=design.compute.node.cooling == "air",
        write_s=checkpoint_cost(design).write_s,
        write_in_background=rel.checkpoint == "async",
    )


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
