"""The expected-value goodput model: checkpoint interval, wall time, ETTR, spares.

Failures arrive as a Poisson process of rate 1/M (M = the job's mean time between
interruptions).  Training runs in segments of ``tau`` seconds of work followed by a
checkpoint of ``delta`` seconds; a failure loses the work since the last checkpoint and
costs a restart of ``R`` seconds (detection, requeue, NCCL initialisation, reading the
checkpoint back), which a further failure can interrupt.  For this process the expected
time to complete one segment is exactly (Daly 2006, the complete model without the
first-order approximation)::

    E[segment] = M · e^(R/M) · (e^((tau + delta)/M) − 1)

and the optimum interval is Daly's higher-order estimate (Daly 2006), which reduces
to Young's sqrt(2·delta·M) (Young 1974) when delta << M.

Spares: a node that fails with a hardware fault leaves for repair for ``repair`` hours and
returns to the spare pool.  Nodes in repair form an M/G/inf queue, so their number is
Poisson with mean ``lambda_hw · repair`` (Palm's theorem); by PASTA, a failure finds every
spare busy with probability P(N >= spares).  In-rack spares of rack-scale NVLink domains
are one such pool per domain: a domain's spares replace only its own trays, so each pool sees
the job's hardware failures divided by the number of domains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "SparePool",
    "daly_interval_s",
    "expected_segment_s",
    "expected_wall_s",
    "spare_pool",
]


def daly_interval_s(delta_s: float, mtbf_s: float) -> float:
    """Optimum seconds of work between checkpoints (Daly 2006, higher-order estimate).

    ``delta_s``: checkpoint cost; ``mtbf_s``: mean time between interruptions. When
    ``delta >= 2M`` checkpointing cannot pay off and Daly's rule is ``tau = M``.
    """
    if math.isinf(mtbf_s):
        return math.inf
    if delta_s <= 0:
        return max(1.0, mtbf_s * 1e-3)  # free checkpoints: as often as is sensible
    if delta_s >= 2.0 * mtbf_s:
        return mtbf_s
    ratio = delta_s / (2.0 * mtbf_s)
    young = math.sqrt(2.0 * delta_s * mtbf_s)
    return young * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - delta_s


def expected_segment_s(tau_s: float, delta_s: float, restart_s: float, mtbf_s: float) -> float:
    """Expected seconds to complete tau of work plus its checkpoint (Daly 2006)."""
    if math.isinf(mtbf_s):
        return tau_s + delta_s
    m = mtbf_s
    return m * math.exp(restart_s / m) * math.expm1((tau_s + delta_s) / m)


def expected_wall_s(
    work_s: float, *, tau_s: float, delta_s: float, restart_s: float, mtbf_s: float
) -> float:
    """Expected wall-clock seconds for ``work_s`` of failure-free training.

    The work is ``work / tau`` segments (a fractional last segment is priced
    pro rata), each ending with a checkpoint.
    """
    if math.isinf(tau_s):
        return work_s if math.isinf(mtbf_s) else expected_segment_s(work_s, 0.0, restart_s, mtbf_s)
    segments = work_s / tau_s
    return segments * expected_segment_s(tau_s, delta_s, restart_s, mtbf_s)


@dataclass(frozen=True)
class SparePool:
    """The spare pool seen as an M/G/inf repair queue (one of ``num_pools`` alike: the
    figures are each pool's)."""

    num_spares: int
    mean_in_repair: float = 0.0
    p_no_spare: float = 0.0
    spares_for_99: int = 0
    num_pools: int = 1

    def as_dict(self) -> dict[str, float | int]:
        return {
            "num_pools": self.num_pools,
            "num_spares": self.num_spares,
            "mean_nodes_in_repair": self.mean_in_repair,
            "p_failure_finds_no_spare": self.p_no_spare,
            "spares_for_99_percent": self.spares_for_99,
        }


def spare_pool(
    *, num_spares: int, spare_failures_per_h: float, repair_h: float, num_pools: int = 1
) -> SparePool:
    """Nodes in repair ~ Poisson(lambda · repair); P(no spare) = P(N >= spares).

    ``num_pools`` equal pools (in-rack spares: one per NVLink domain) split the failures
    evenly: each is this queue with lambda / num_pools and ``num_spares`` of its own.
    The Poisson terms come from their logarithms in numpy (no scipy on the import path
    of every ``plan``)."""
    mean = spare_failures_per_h / max(num_pools, 1) * repair_h
    pmf = _poisson_pmf(mean, max(num_spares, 0))
    p_none = float(pmf[num_spares:].sum()) if num_spares > 0 else 1.0
    cdf = np.cumsum(pmf)
    quantile = int(np.argmax(cdf >= 0.99)) if mean > 0 else 0
    return SparePool(num_spares, mean, min(p_none, 1.0), quantile, max(num_pools, 1))


def _poisson_pmf(mean: float, at_least: int) -> np.ndarray:
    """P(N = k) for k = 0 .. K, N ~ Poisson(mean), with K past ``at_least`` and far
    enough in the tail (12 sd + 30 past both) that the rest is below 1e-30.

    log P(N = k) = k·ln(mean) - mean - ln(k!), with ln(k!) a running sum of ln(j)."""
    size = int(max(mean, at_least) + 12.0 * np.sqrt(max(mean, 1.0)) + 30.0)
    if mean <= 0:
        pmf = np.zeros(size)
        pmf[0] = 1.0
        return pmf
    k = np.arange(size)
    log_factorial = np.concatenate([[0.0], np.cumsum(np.log(k[1:]))])
    out: np.ndarray = np.exp(k * np.log(mean) - mean - log_factorial)
    return out


def expected_spare_wait_s(
    *, num_spares: int, spare_failures_per_s: float, repair_s: float
) -> float:
    """Mean wait for a spare at one hardware failure, seconds.

    The FIFO pool hands failure k the node of failure k - s (s spares), back ``repair``
    after it failed.  Between the two lie s running gaps (Gamma(s, rate λ): the job clock
    stops while it waits, so no failure comes then) and the s waits of failures k-s..k-1,
    so the wait is (R - s·w - Γ)+ with w the mean wait; w is the fixed point of
    w = E[(R' - Γ)+] = R'·P(Γ_s < R') - (s/λ)·P(Γ_(s+1) < R'), R' = R - s·w, where
    P(Γ_k < x) = P(Poisson(λx) >= k).  Without spares it is the whole repair; under heavy
    contention it tends to the fluid limit (R - s/λ)/(s + 1): s failures per repair time.
    Solved by bisection (the right side falls as w grows)."""
    if num_spares <= 0:
        return repair_s
    if spare_failures_per_s <= 0 or repair_s <= 0:
        return 0.0
    low, high = 0.0, repair_s
    for _ in range(60):
        mid = 0.5 * (low + high)
        if _shortfall_s(repair_s - num_spares * mid, num_spares, spare_failures_per_s) > mid:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def _shortfall_s(window_s: float, spares: int, rate_per_s: float) -> float:
    """E[(window - Γ)+] for Γ ~ Gamma(spares, rate): how long the window outlasts the
    running time of ``spares`` failures."""
    if window_s <= 0:
        return 0.0
    pmf = _poisson_pmf(rate_per_s * window_s, spares + 1)
    at_least, at_least_next = float(pmf[spares:].sum()), float(pmf[spares + 1 :].sum())
    return max(0.0, window_s * at_least - spares / rate_per_s * at_least_next)
