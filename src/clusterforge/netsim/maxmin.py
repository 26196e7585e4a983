"""Max-min fair rate allocation by progressive filling, and flow completion over time.

The *demand* is the unit that gets one rate: a single flow, or a whole pipelined ring channel
(every edge of a ring moves at the ring's rate).  ``A`` is the sparse link×demand matrix
(:class:`~clusterforge.netsim.incidence.Incidence`): ``A[l, d]`` is how many bytes cross link
``l`` per byte/s of demand ``d`` (path fractions, ring crossings and protocol overhead folded
in).

Progressive filling (Bertsekas & Gallager, *Data Networks*, 2nd ed., max-min fairness in
ch. 6, flow control and max-min fairness): raise every unfrozen demand's rate together until
a link saturates, freeze the demands crossing it, repeat.  Each round is one sparse mat-vec
and one gather over the nonzeros, on the links the phase touches only, so the cost is O(nnz)
per distinct bottleneck level, with no Python loop over flows.
:func:`completion_time` re-runs the allocation when demands finish (a flow-level
simulation), merging completions within 5 % of each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.netsim.incidence import Incidence

__all__ = ["Completion", "completion_time", "max_min_rates"]

_TOLERANCE = 1e-9  # relative slack when testing a link for saturation
# Speed/accuracy knobs: links whose fair-share step is within 5 % of the smallest freeze in
# the same round (their demands lose at most 5 % of rate); demands finishing within 5 % of
# the earliest finish complete in the same event; after 8 events the rest drains at the
# busiest link's pace.
_BATCH = 0.05
_MERGE = 0.05
_MAX_EVENTS = 8


def max_min_rates(a: Incidence, cap: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Max-min fair rates (GB/s) of the ``active`` demands; inactive demands get 0 and
    demands that cross no link get +inf."""
    rate = np.zeros(a.num_demands)
    frozen = ~active
    crosses = a.crosses()
    rate[active & ~crosses] = np.inf
    frozen = frozen | ~crosses
    used = np.zeros(a.num_links)
    level = 0.0
    while not frozen.all():
        grow = (~frozen).astype(float)
        load = a.matvec(grow)
        resid = cap - used
        busy = load > 0
        share = np.full(load.size, np.inf)
        share[busy] = resid[busy] / load[busy]
        step = max(0.0, float(share.min()))
        level += step  # every unfrozen demand runs at this common rate
        rate[~frozen] = level
        used = used + step * load
        near = share <= step + _BATCH * level
        saturated = near | (busy & (cap - used <= _TOLERANCE * cap))
        frozen = frozen | a.crossing(saturated)
    return rate


@dataclass(frozen=True)
class Completion:
    """When the last demand finishes, and the rates while all were running."""

    time_s: float
    steady_rate: np.ndarray
    num_events: int


def completion_time(a: Incidence, cap: np.ndarray, volume: np.ndarray) -> Completion:
    """Time (s) until every demand has moved its ``volume`` (GB), re-allocating max-min
    rates each time a set of demands completes."""
    a, rows = a.on_touched_links()  # links no demand crosses never saturate nor load
    cap = cap[rows]
    remaining = volume.astype(float).copy()
    active = remaining > 0
    steady = np.zeros(remaining.size)
    elapsed, events = 0.0, 0
    while active.any():
        rate = max_min_rates(a, cap, active)
        if events == 0:
            steady = rate
        finite = active & np.isfinite(rate)
        if not finite.any():
            break
        left = np.full(remaining.size, np.inf)
        left[finite] = remaining[finite] / rate[finite]
        first = float(left.min())
        if events + 1 >= _MAX_EVENTS:
            elapsed += _drain_bound_s(a, cap, remaining, rate, finite)
            break
        done = finite & (left <= first * (1 + _MERGE))
        step = float(left[done].max())
        remaining[finite] -= rate[finite] * step
        active = active & ~done & (remaining > 0) & np.isfinite(rate)
        elapsed += step
        events += 1
    return Completion(elapsed, steady, events)


def _drain_bound_s(
    a: Incidence, cap: np.ndarray, remaining: np.ndarray, rate: np.ndarray, finite: np.ndarray
) -> float:
    """Time to drain what is left once the event budget is spent: the busiest link's remaining
    bytes over its capacity.  A lower bound (a work-conserving fabric reaches it when the
    remaining demands share one bottleneck); the time at current rates is the upper bound."""
    left = np.where(finite, remaining, 0.0)
    busy = a.matvec(left) / cap
    return float(busy.max()) if busy.size else 0.0
