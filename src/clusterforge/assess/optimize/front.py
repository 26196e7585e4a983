"""The Pareto front of cost against time to train, the constraints each design meets, the
one that binds it, and the winner under the objective with the reasons it wins."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clusterforge.assess.optimize.evaluate import DesignPoint
from clusterforge.spec.optimize import Objective, OptimizeConstraints

__all__ = [
    "Reasoning",
    "binding_constraint",
    "dominates",
    "objective_value",
    "pareto_front",
    "reasoning",
    "slacks",
    "violations",
]


NEAR = 0.005  # differences under half a percent are not given as reasons
BINDS = 0.10  # a limit with less room than this binds the design


def dominates(a: DesignPoint, b: DesignPoint) -> bool:
    """``a`` is no slower and no costlier than ``b``, and better in one of the two."""
    no_worse = a.cost_usd <= b.cost_usd and a.days <= b.days
    return no_worse and (a.cost_usd < b.cost_usd or a.days < b.days)


def pareto_front(points: Iterable[DesignPoint]) -> list[DesignPoint]:
    """The points no other point dominates, fastest first (an exact tie keeps the first)."""
    ordered = sorted(points, key=lambda p: (p.days, p.cost_usd))
    front: list[DesignPoint] = []
    for point in ordered:  # sorted by time: a point joins when it is cheaper than all before
        if not front or point.cost_usd < front[-1].cost_usd:
            front.append(point)
    return front


def objective_value(point: DesignPoint, objective: Objective) -> float:
    """The quantity the objective minimises: days, $ or $ per million tokens."""
    match objective:
        case "time":
            return point.days
        case "cost":
            return point.cost_usd
        case "cost-per-token":
            return point.usd_per_mtoken


def slacks(point: DesignPoint, limits: OptimizeConstraints) -> dict[str, float]:
    """Each stated limit's share left unused by the design (0: at the limit, < 0: over)."""
    found: dict[str, float] = {}
    if limits.budget_usd is not None:
        found["budget"] = 1.0 - point.cost_usd / limits.budget_usd
    if limits.deadline_days is not None:
        found["deadline"] = 1.0 - point.days / limits.deadline_days
    if limits.facility_mw is not None:
        found["facility MW"] = 1.0 - point.facility_mw / limits.facility_mw
    if limits.max_rack_kw is not None:
        found["rack kW"] = 1.0 - point.max_rack_kw / limits.max_rack_kw
    if limits.floor_rating_kn_per_m2 is not None:
        found["floor"] = 1.0 - point.floor_kn_per_m2 / limits.floor_rating_kn_per_m2
    found["GPU memory"] = 1.0 - point.memory_per_gpu_gib / point.hbm_gib
    return found


def violations(point: DesignPoint, limits: OptimizeConstraints) -> list[str]:
    """The limits the design exceeds (cooling is enforced when it is planned; the floor, a
    warning for ``plan``, is a limit here when the constraints state it)."""
    return [name for name, left in slacks(point, limits).items() if left < 0]


def binding_constraint(point: DesignPoint, limits: OptimizeConstraints) -> str:
    """The limit with the least room left."""
    left = slacks(point, limits)
    return min(left, key=lambda name: left[name])


@dataclass(frozen=True)
class Reasoning:
    """Why the winner wins: what limits it and what the runner-up lacks."""

    winner: DesignPoint
    runner_up: DesignPoint | None
    limited_by: str
    runner_up_lacks: str


def _lacks(winner: DesignPoint, other: DesignPoint, objective: Objective) -> str:
    """What ``other`` lacks against ``winner``, in the terms that decide the objective."""
    reasons = []
    if objective == "time":
        if other.tokens_per_s < winner.tokens_per_s * (1 - NEAR):
            reasons.append(
                f"{1 - other.tokens_per_s / winner.tokens_per_s:.0%} less throughput "
                f"({other.family.num_gpus} GPUs at MFU {other.mfu:.0%} against "
                f"{winner.family.num_gpus} at {winner.mfu:.0%})"
            )
        if other.ettr < winner.ettr - NEAR:
            reasons.append(f"lower ETTR ({other.ettr:.1%} against {winner.ettr:.1%})")
    else:
        if other.usd_per_gpu_hour > winner.usd_per_gpu_hour * (1 + NEAR):
            reasons.append(
                f"a dearer GPU-hour (${other.usd_per_gpu_hour:.2f} against "
                f"${winner.usd_per_gpu_hour:.2f}, {other.procurement})"
            )
        gpu_hours = (other.family.num_gpus * other.days, winner.family.num_gpus * winner.days)
        if gpu_hours[0] > gpu_hours[1] * (1 + NEAR):
            reasons.append(f"{gpu_hours[0] / gpu_hours[1] - 1:.0%} more GPU-hours for the job")
    if objective == "time" and other.cost_usd > winner.cost_usd * (1 + NEAR):
        reasons.append(f"costs {other.cost_usd / winner.cost_usd - 1:.0%} more")
    if objective != "time" and other.days > winner.days * (1 + NEAR):
        reasons.append(f"takes {other.days / winner.days - 1:.0%} longer")
    return "; ".join(reasons) or (
        f"a near tie: {other.days / winner.days - 1:+.2%} time, "
        f"{other.cost_usd / winner.cost_usd - 1:+.2%} cost"
    )


def reasoning(
    points: Sequence[DesignPoint], objective: Objective, limits: OptimizeConstraints
) -> Reasoning | None:
    """The best point under ``objective`` (ties: the cheaper, then the faster), the
    runner-up of another family (else the next point), and why the winner is ahead."""
    if not points:
        return None
    ranked = sorted(
        points, key=lambda p: (objective_value(p, objective), p.cost_usd, p.days, p.label())
    )
    winner = ranked[0]
    others = [p for p in ranked[1:] if p.family != winner.family] or ranked[1:]
    runner = others[0] if others else None
    limit = binding_constraint(winner, limits)
    left = slacks(winner, limits)[limit]
    bound = (
        f"{limit} ({left:.0%} left)"
        if left < BINDS
        else (f"no limit binds (the closest: {limit}, {left:.0%} left)")
    )
    overhead = winner.largest_overhead.removesuffix("_s").replace("_", " ")
    limited = f"{bound}; its step loses most to {overhead}, at MFU {winner.mfu:.0%}"
    lacks = "" if runner is None else _lacks(winner, runner, objective)
    return Reasoning(winner, runner, limited, lacks)
