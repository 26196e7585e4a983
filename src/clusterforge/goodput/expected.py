"""A job's goodput inputs and their expected values: the checkpoint interval, the wall time
with failures, restarts, checkpoints and spare waits (the closed forms of :mod:`.model`), and
the lost time by cause."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from clusterforge.errors import CapacityError
from clusterforge.goodput.model import (
    SparePool,
    daly_interval_s,
    expected_spare_wait_s,
    expected_wall_s,
    spare_pool,
)
from clusterforge.goodput.rates import JobRates

__all__ = [
    "DAY_S",
    "Expected",
    "GoodputInputs",
    "LostTime",
    "expected_goodput",
    "lost_time",
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
