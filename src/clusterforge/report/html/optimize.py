"""The HTML page of an optimize search (``clusterforge report OPTIMIZE_SPEC``): the front's
chart (the picture ``optimize --plot`` draws), its table, the winner and why, the search's
counts and each front point's spec as YAML to copy into ``plan``.

The page is a :class:`~clusterforge.report.html.render.Report` like a design's, rendered by
the same template and stylesheet, so it looks, prints and turns into a PDF the same way.
"""

from __future__ import annotations

from clusterforge.assess.optimize import DesignPoint, OptimizeResult, binding_constraint
from clusterforge.report.html.charts import inline_svg
from clusterforge.report.html.model import Figure, Metric, Section, Table, money, num, pct, table
from clusterforge.report.html.render import Report
from clusterforge.report.optimize import (
    front_picture,
    plan_degrees,
    point_spec_yaml,
    search_summary,
)

__all__ = ["FRONT_HEADERS", "build_front_report"]

FRONT_HEADERS = ("#", "design", "plan", "MFU", "days", "cost", "$/GPU-h", "commitment", "MW",
                 "binding constraint")  # fmt: skip
_NUMERIC = (True, False, False, True, True, True, True, True, True, False)
OBJECTIVES = {"time": "the shortest time to train with failures", "cost": "the lowest cost",
              "cost-per-token": "the lowest cost per token"}  # fmt: skip


def _front_table(result: OptimizeResult) -> Table:
    limits = result.spec.constraints
    rows = list(enumerate(result.front, start=1))

    def cells(row: tuple[int, DesignPoint]) -> list[str]:
        i, p = row
        return [str(i), p.label(), plan_degrees(p), pct(p.mfu), num(p.days, 1),
                money(p.cost_usd), f"${p.usd_per_gpu_hour:,.2f}", money(p.commitment_usd),
                num(p.facility_mw, 2), binding_constraint(p, limits)]  # fmt: skip

    return table(FRONT_HEADERS, rows, cells, caption="the Pareto front, fastest first",
                 numeric=_NUMERIC)  # fmt: skip


def _front_section(result: OptimizeResult) -> Section:
    figures: tuple[Figure, ...] = ()
    if result.feasible:
        figures = (
            Figure(
                inline_svg(front_picture(result, "svg")),
                "cost of the job against its time to train with failures: every feasible "
                "design, and the front as a numbered line",
            ),
        )
    lead = (
        f"{len(result.front)} design(s) on the front of cost against time to train with "
        f"failures, out of {len(result.feasible)} that meet the limits; no design off the "
        "front is both faster and cheaper than one on it."
    )
    return Section("front", "Pareto front", lead, figures=figures,
                   tables=(_front_table(result),), open_tables=True)  # fmt: skip


def _winner_section(result: OptimizeResult) -> Section:
    why = result.reasoning
    objective = OBJECTIVES[result.spec.objective]
    if why is None:
        return Section("winner", "Winner", "No design meets the constraints: widen the search "
                       "or loosen a limit (the refusals are listed under Search).")  # fmt: skip
    w = why.winner
    metrics = (
        Metric("winner", w.label(), plan_degrees(w)),
        Metric("time to train", f"{num(w.days, 1)} days", f"ETTR {pct(w.ettr)}"),
        Metric("cost of the job", money(w.cost_usd), f"${w.usd_per_gpu_hour:,.2f} per GPU-hour"),
    )
    notes = [f"It is limited by {why.limited_by}."]
    if why.runner_up is not None:
        notes += [
            f"The runner-up is {why.runner_up.label()}.",
            f"The runner-up lacks: {why.runner_up_lacks}.",
        ]
    lead = f"Under the objective ({objective}), the winner is {w.label()}."
    return Section("winner", "Winner and why", lead, metrics=metrics, notes=tuple(notes))


def _search_section(result: OptimizeResult) -> Section:
    c = result.counts
    stages = [
        ("design families in the space", c.families),
        ("pruned: the GPU cannot run the precision (FP8)", c.pruned_precision),
        ("pruned: did not fit the site (rack power, cooling, facility MW)", c.pruned_site),
        ("pruned: no plan fits the GPU's memory", c.pruned_memory),
        ("pruned: past the deadline or budget by their bounds", c.pruned_limits),
        ("pruned: dominated by their bounds", c.pruned_dominated),
        ("evaluated", c.evaluated),
        ("designs planned", c.planned),
        ("plan searches", c.predicted),
        ("designs priced", c.designs),
        ("designs that meet the limits", c.feasible),
    ]
    if c.refused_overlap:  # only a job with workload.expert_parallel_overlap has any
        # a count of plans, not of design families: listed with the plan searches
        stages.insert(9, ("plans of the sizes within the limits that Megatron-Core refuses "
                          "under the EP overlap (left out)", c.refused_overlap))  # fmt: skip
    counts = table(("stage", "count"), stages, lambda s: [s[0], num(s[1])],
                   caption="the search's stages", numeric=(False, True))  # fmt: skip
    tables = [counts]
    if result.rejected:
        refused = table(
            ("refused design",),
            result.rejected,
            lambda r: [r],
            caption="designs refused by plan's rules or the site",
        )
        tables.append(refused)
    return Section("search", "Search", search_summary(result) + ".", tables=tuple(tables),
                   open_tables=True)  # fmt: skip


def _specs_section(result: OptimizeResult) -> Section:
    code = tuple(
        (f"front point {i}: {p.label()} (front-{i}.yaml)", point_spec_yaml(p))
        for i, p in enumerate(result.front, start=1)
    )
    lead = (
        "Each front point as a cluster spec: save it as a .yaml file and run "
        "`clusterforge plan` (or `report`) on it."
    )
    return Section("specs", "Specs of the front", lead, code=code)


def build_front_report(result: OptimizeResult) -> Report:
    """The page of one optimize search."""
    spec, why = result.spec, result.reasoning
    limits = spec.constraints
    stated = [
        f"budget {money(limits.budget_usd)}" if limits.budget_usd else "",
        f"deadline {num(limits.deadline_days)} days" if limits.deadline_days else "",
        f"facility {num(limits.facility_mw)} MW" if limits.facility_mw else "",
        f"racks of {num(limits.max_rack_kw)} kW" if limits.max_rack_kw else "",
    ]
    model = spec.job.model if isinstance(spec.job.model, str) else "custom model"
    c = result.counts
    metrics = [
        Metric("objective", spec.objective, OBJECTIVES[spec.objective]),
        Metric("job", model, f"{num(spec.job.tokens_b)} B tokens"),
        Metric("front", f"{len(result.front)} design(s)", f"{c.feasible} of {c.designs} fit"),
    ]
    if why is not None:
        metrics.append(Metric("winner", f"{num(why.winner.days, 1)} days, "
                              f"{money(why.winner.cost_usd)}", why.winner.label()))  # fmt: skip
    return Report(
        title=f"{spec.name}: optimize",
        subtitle="the best clusters for a training job by clusterforge; limits: "
        + (", ".join(s for s in stated if s) or "none stated"),
        metrics=tuple(metrics),
        sections=(
            _front_section(result),
            _winner_section(result),
            _search_section(result),
            _specs_section(result),
        ),
    )
