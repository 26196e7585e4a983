"""Build versus rent beyond the design's own size: the break-even cluster size.

The design prices one cluster (:mod:`clusterforge.design.cost.tco`). Whether a larger or smaller
cluster of the same kind would flip the verdict takes more designs, so it is asked here,
by the commands that show it (``plan``, ``report``, ``serve``), and never by ``plan()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design import Design, plan
from clusterforge.design.cost.tco import CostDesign
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec, resolve_node_id

__all__ = [
    "BREAK_EVEN_MAX_GPUS",
    "BREAK_EVEN_PLANS",
    "Economics",
    "at_size",
    "break_even_gpus",
    "economics",
]

BREAK_EVEN_MAX_GPUS = 32768
BREAK_EVEN_REFERENCE_GPUS = 2048
BREAK_EVEN_PLANS = 5  # refinement plans after the two fitted points


@dataclass(frozen=True)
class Economics:
    """The design's total cost of ownership and, when renting wins at its size and the
    search was asked for, the smallest size at which building would win."""

    cost: CostDesign
    break_even_gpus: int | None = None
    break_even_searched: bool = False


def economics(design: Design, *, break_even: bool = True) -> Economics:
    """The design's TCO; the break-even size is searched only when renting wins."""
    if not break_even or design.cost.build_wins:
        return Economics(design.cost)
    size = break_even_gpus(design.spec, design.catalog, design.cost)
    return Economics(design.cost, size, break_even_searched=True)


def at_size(spec: ClusterSpec, num_gpus: int) -> ClusterSpec:
    """The same spec at ``num_gpus``, its workload reduced to data parallelism (every model
    parallel degree, the interleaved schedule and any stage split reset) so that any whole
    number of nodes is a valid size."""
    workload = spec.workload and spec.workload.data_parallel_at(num_gpus)
    return spec.model_copy(update={"num_gpus": num_gpus, "workload": workload})


def _gap_usd(spec: ClusterSpec, catalog: Catalog, num_gpus: int) -> float | None:
    """Build total minus rent total at ``num_gpus`` (negative: building wins); None when no
    fabric of the spec's kind, nor a rail-optimized one, reaches that size."""
    sized = at_size(spec, num_gpus)
    try:
        cost = plan(sized, catalog).cost
    except CapacityError:
        # The spec's own topology may not grow (a single switch): compare on one that does.
        network = spec.network.model_copy(
            update={"topology": "rail-optimized", "tiers": None, "link_aggregation": False}
        )
        try:
            cost = plan(sized.model_copy(update={"network": network}), catalog).cost
        except CapacityError:
            return None
    return cost.build_total_usd - cost.rent_total_usd


def break_even_gpus(
    spec: ClusterSpec, catalog: Catalog | None = None, cost: CostDesign | None = None
) -> int | None:
    """Smallest GPU count (whole nodes) at which building beats renting, all else equal.

    Building costs about F + v·N for N GPUs (F: staff, management servers, the smallest
    fabric; v: a node's share of hardware, power, racks and fabric) and renting r·N, so the
    gap build − rent is close to linear in N and crosses zero at N* = F / (r − v). The gap
    is planned at the spec's size (``cost``, when the caller has it) and at a second size
    (one node when the spec's size already wins, else a larger reference), then N* is refined
    by regula falsi on planned designs: at most 2 + BREAK_EVEN_PLANS plans in all, none above
    BREAK_EVEN_MAX_GPUS. Returns the smallest planned size where building won, or None when
    the gap does not shrink with size or no planned size up to the cap wins.
    """
    catalog = catalog or load_catalog()
    step = catalog.nodes[resolve_node_id(spec, catalog)].num_gpus
    points: dict[int, float] = {}
    if cost is not None:
        points[spec.num_gpus] = cost.build_total_usd - cost.rent_total_usd
    elif (gap := _gap_usd(spec, catalog, spec.num_gpus)) is not None:
        points[spec.num_gpus] = gap
    if not points:
        return None
    second = _second_size(spec.num_gpus, step, wins=points[spec.num_gpus] < 0)
    if second not in points and (gap := _gap_usd(spec, catalog, second)) is not None:
        points[second] = gap
    for _ in range(BREAK_EVEN_PLANS):
        guess = _next_guess(points, step)
        if guess is None or guess in points:
            break
        gap = _gap_usd(spec, catalog, guess)
        if gap is None:
            break
        points[guess] = gap
    winners = [n for n, gap in points.items() if gap < 0]
    return min(winners) if winners else None


def _second_size(num_gpus: int, step: int, *, wins: bool) -> int:
    """The second size of the linear fit: one node when the spec's size already wins (the
    crossing lies below), else 2,048 GPUs for small specs and half the spec above."""
    if wins:
        return step
    if num_gpus < BREAK_EVEN_REFERENCE_GPUS // 2:
        return BREAK_EVEN_REFERENCE_GPUS // step * step
    return max(step, num_gpus // 2 // step * step)


def _next_guess(points: dict[int, float], step: int) -> int | None:
    """Where the line through the two points nearest the sign change crosses zero, rounded up
    to whole nodes; None when bracketed to one node, when the gap does not shrink with size,
    or when the crossing lies beyond the cap."""
    losers = sorted(n for n, gap in points.items() if gap >= 0)
    winners = sorted(n for n, gap in points.items() if gap < 0)
    if losers and winners:
        a, b = losers[-1], winners[0]
        if b - a <= step:
            return None
    elif len(losers) >= 2:
        a, b = losers[-2], losers[-1]
    elif len(winners) >= 2:
        a, b = winners[0], winners[1]
    else:
        return None
    slope = (points[b] - points[a]) / (b - a)
    if slope >= 0:
        return None
    crossing = a - points[a] / slope
    guess = max(step, math.ceil(crossing / step) * step)
    if losers and winners:
        guess = min(max(guess, a + step), b - step)
    return guess if guess <= BREAK_EVEN_MAX_GPUS else None
