"""Rendering of an optimize search: the front as a terminal table, as JSON (with a version
key), each point's spec as YAML ``clusterforge plan`` reads, and a chart of the front."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml
from rich.console import Console
from rich.table import Table

from clusterforge.assess import EP_OVERLAP_RULES
from clusterforge.assess.optimize import (
    Comparison,
    DesignPoint,
    OptimizeResult,
    Reasoning,
    binding_constraint,
    slacks,
)
from clusterforge.report.figure_file import COLORS, PictureFormat, draw_picture

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from clusterforge.spec.optimize import OptimizeConstraints

__all__ = [
    "OPTIMIZE_JSON_VERSION",
    "comparison_json",
    "front_data",
    "front_json",
    "front_picture",
    "plan_degrees",
    "point_spec_yaml",
    "print_comparison",
    "print_front",
    "search_summary",
]

OPTIMIZE_JSON_VERSION = 1
FRONT_SIZE_IN = (8.0, 4.8)
REFUSALS_SHOWN = 3  # refusal reasons printed when no design meets the constraints


def point_spec_yaml(point: DesignPoint) -> str:
    """The design's cluster spec as YAML (``clusterforge plan`` reads it back)."""
    data = point.spec_data()
    return yaml.safe_dump(data, sort_keys=False)


def _point_dict(point: DesignPoint, limits: OptimizeConstraints) -> dict[str, Any]:
    return {
        "design": point.label(),
        "node": point.family.node,
        "gpu": point.gpu,
        "num_gpus": point.family.num_gpus,
        "num_nodes": point.num_nodes,
        "fabric": point.family.fabric,
        "nic_gbit_per_s": point.family.nic_gbit_per_s,
        "nics_per_node": point.family.nics_per_node,
        "topology": point.family.topology,
        "oversubscription": point.family.oversubscription,
        "cooling": list(point.cooling),
        "spare_fraction": point.variant.spare_fraction,
        "procurement": point.procurement,
        "plan": point.plan,
        "mfu": point.mfu,
        "tokens_per_s": point.tokens_per_s,
        "step_time_s": point.step_time_s,
        "memory_per_gpu_gib": point.memory_per_gpu_gib,
        "failure_free_days": point.failure_free_days,
        "time_to_train_days": point.days,
        "ettr": point.ettr,
        "usd_per_gpu_hour": point.usd_per_gpu_hour,
        "cost_usd": point.cost_usd,
        "usd_per_million_tokens": point.usd_per_mtoken,
        "commitment_usd": point.commitment_usd,
        "facility_mw": point.facility_mw,
        "max_rack_kw": point.max_rack_kw,
        "floor_kn_per_m2": point.floor_kn_per_m2,
        "slack": slacks(point, limits),
        "binding_constraint": binding_constraint(point, limits),
        "spec": point.spec_data(),
    }


def _reasoning_dict(why: Reasoning | None) -> dict[str, Any] | None:
    if why is None:
        return None
    return {
        "winner": why.winner.label(),
        "runner_up": None if why.runner_up is None else why.runner_up.label(),
        "limited_by": why.limited_by,
        "runner_up_lacks": why.runner_up_lacks,
    }


def front_data(result: OptimizeResult) -> dict[str, Any]:
    """The front, the winner's reasoning and the search's counts as plain data."""
    limits = result.spec.constraints
    return {
        "version": OPTIMIZE_JSON_VERSION,
        "name": result.spec.name,
        "objective": result.spec.objective,
        "front": [_point_dict(p, limits) for p in result.front],
        "winner": _reasoning_dict(result.reasoning),
        "search": vars(result.counts),
    }


def front_json(result: OptimizeResult) -> str:
    """The front, the winner's reasoning and the search's counts as JSON."""
    return json.dumps(front_data(result), indent=2) + "\n"


def plan_degrees(point: DesignPoint) -> str:
    """The point's parallel plan as its degrees: 'TP8 PP2 DP32'."""
    return f"TP{point.plan['tp']} PP{point.plan['pp']} DP{point.plan['dp']}"


def search_summary(result: OptimizeResult) -> str:
    """How many families each stage of the search pruned, and how many it planned."""
    c = result.counts
    return (
        f"searched {c.families} families: {c.pruned_precision} cannot run the precision, "
        f"{c.pruned_site} did not fit the site, "
        f"{c.pruned_memory} did not fit memory, "
        f"{c.pruned_limits} were past the deadline or budget, {c.pruned_dominated} were "
        f"dominated by their bounds; {c.evaluated} evaluated ({c.planned} designs planned, "
        f"{c.predicted} plan searches), {c.feasible} of {c.designs} designs meet the limits"
        + (
            f"; {c.refused_overlap} plans of the sizes within the limits left out of their plan "
            f"searches, which Megatron-Core refuses under job.expert_parallel_overlap "
            f"({EP_OVERLAP_RULES})"
            if c.refused_overlap
            else ""
        )
    )


def comparison_json(comparison: Comparison) -> str:
    """Each alternative, why any is out, and the winner's reasoning as JSON."""
    limits = comparison.spec.constraints
    rows = [
        {"name": name, "excluded": why or None, **(_point_dict(p, limits) if p else {})}
        for name, p, why in comparison.points
    ]
    data = {
        "version": OPTIMIZE_JSON_VERSION,
        "objective": comparison.spec.objective,
        "alternatives": rows,
        "winner": _reasoning_dict(comparison.reasoning),
    }
    return json.dumps(data, indent=2) + "\n"


def _table(title: str, rows: list[tuple[str, DesignPoint]], limits: OptimizeConstraints) -> Table:
    table = Table(title=title)
    columns = ("#", "design", "plan", "MFU", "days", "cost $M", "$/GPU-h", "commit $M", "MW",
               "binding")  # fmt: skip
    for col in columns:
        table.add_column(col, justify="left" if col in ("design", "plan", "binding") else "right")
    for name, p in rows:
        table.add_row(
            name,
            p.label(),
            plan_degrees(p),
            f"{p.mfu:.0%}",
            f"{p.days:,.1f}",
            f"{p.cost_usd / 1e6:,.2f}",
            f"{p.usd_per_gpu_hour:,.2f}",
            f"{p.commitment_usd / 1e6:,.2f}",
            f"{p.facility_mw:,.2f}",
            binding_constraint(p, limits),
        )
    return table


def _print_reasoning(why: Reasoning | None, objective: str, console: Console) -> None:
    if why is None:
        console.print("no design meets the constraints", style="bold red")
        return
    console.print(f"winner ({objective}): [bold]{why.winner.label()}[/bold]", highlight=False)
    console.print(f"  limited by: {why.limited_by}", highlight=False)
    if why.runner_up is not None:
        console.print(f"  runner-up: {why.runner_up.label()}", highlight=False)
        console.print(f"  the runner-up lacks: {why.runner_up_lacks}", highlight=False)


def print_front(result: OptimizeResult, console: Console) -> None:
    """The front as a table, the winner and why, and the search's counts."""
    rows = [(str(i), p) for i, p in enumerate(result.front, start=1)]
    limits = result.spec.constraints
    console.print(_table("Pareto front: cost against time to train (with failures)", rows, limits))
    _print_reasoning(result.reasoning, result.spec.objective, console)
    if result.reasoning is None:  # nothing to show: say why the families were refused
        for reason in result.rejected[:REFUSALS_SHOWN]:
            console.print(f"  refused: {reason}", highlight=False)
    console.print(search_summary(result), highlight=False)


def print_comparison(comparison: Comparison, console: Console) -> None:
    """Each alternative side by side and which wins, by how much and why."""
    limits = comparison.spec.constraints
    rows = [(name, p) for name, p, _ in comparison.points if p is not None]
    console.print(_table("alternatives", rows, limits))
    for name, p, excluded in comparison.points:
        if p is None or excluded:
            console.print(f"{name}: excluded ({excluded})", highlight=False)
    why = comparison.reasoning
    _print_reasoning(why, comparison.spec.objective, console)
    if why is not None and why.runner_up is not None:
        w, r = why.winner, why.runner_up
        console.print(
            f"  by {r.days / w.days - 1:+.0%} time and {r.cost_usd / w.cost_usd - 1:+.0%} cost "
            "for the runner-up",
            highlight=False,
        )


def front_picture(result: OptimizeResult, fmt: PictureFormat = "svg") -> bytes:
    """Every feasible design (grey) and the front (line, numbered as in the table): cost of
    the job against its time to train with failures. In the SVG the front's markers are the
    group ``front``."""
    # the painter reads only these: each point's time to train and cost
    feasible = tuple((p.days, p.cost_usd / 1e6) for p in result.feasible)
    front = tuple((p.days, p.cost_usd / 1e6) for p in result.front)
    title = f"{result.spec.name}: cost against time to train"

    def paint(figure: Figure) -> None:
        ax = figure.add_subplot()
        ax.scatter([d for d, _ in feasible], [c for _, c in feasible], s=10, color=COLORS[6],
                   label="feasible designs")  # fmt: skip
        line = ax.plot(
            [d for d, _ in front], [c for _, c in front],
            marker="o", color=COLORS[0], label="Pareto front",
        )  # fmt: skip
        line[0].set_gid("front")
        for i, (days, cost_m) in enumerate(front, start=1):
            ax.annotate(str(i), (days, cost_m), textcoords="offset points",
                        xytext=(4, 4), fontsize=8)  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("time to train with failures, days")
        ax.set_ylabel("cost of the job, $M")
        ax.set_title(title)
        ax.legend()

    return draw_picture(FRONT_SIZE_IN, fmt, paint, key=(feasible, front, title))
