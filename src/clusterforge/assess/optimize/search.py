"""The optimize search: from a job, its limits and a space of clusters to the Pareto front of
cost against time to train with failures, and the winner under the objective.

The space is walked as families (:mod:`.space`), never enumerated blindly:

0. a family whose GPU cannot run the job's precision (FP8 without FP8 tensor cores, MXFP8 or
   NVFP4 before Blackwell, :func:`~clusterforge.perf.roofline.check_precision`) is refused
   with that reason;
1. one free-communication plan search per node model and GPU count bounds the time of every
   family at that size and drops those no plan of which fits the GPU's memory (:mod:`.bounds`);
2. a family whose nodes the site cannot hold (the rack cap, the cooling, the facility's MW:
   the first, cheap stages of ``plan``), or whose bounds break the deadline or the budget,
   is pruned unplanned;
3. the rest are evaluated in waves, best bound first; before each wave a family whose
   bounds (fastest, cheapest) are already dominated by a design found is pruned unplanned;
4. a family is searched once for its best plan; its cooling and spare variants are planned
   on top and its procurements only priced (:mod:`.evaluate`).

Waves are fixed-size and pruning happens only between them, so the answer is the same on
this process, a process pool or a Dask cluster (:mod:`.engine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from clusterforge.assess.optimize.bounds import (
    Bound,
    compute_bound_s,
    overlap_refusals,
    peak_bound_s,
    price_floor_usd_per_gpu_hour,
)
from clusterforge.assess.optimize.engine import Engine, SerialEngine
from clusterforge.assess.optimize.evaluate import DAY_S, DesignPoint, FamilyResult, evaluate_family
from clusterforge.assess.optimize.front import (
    Reasoning,
    dominates,
    pareto_front,
    reasoning,
    violations,
)
from clusterforge.assess.optimize.space import (
    Family,
    alternative_family,
    cluster_spec,
    families,
    variants,
)
from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design.compute import size_compute
from clusterforge.design.facility.layout import choose_density
from clusterforge.errors import CapacityError, PlanError, SpecError
from clusterforge.perf import resolve_model, workload_stack
from clusterforge.perf.blockscale import check_block_scaled_stack
from clusterforge.perf.ep_overlap_rules import check_ep_overlap_model
from clusterforge.perf.roofline import check_precision
from clusterforge.spec.optimize import OptimizeSpec

__all__ = [
    "Comparison",
    "OptimizeResult",
    "SearchCounts",
    "compare",
    "is_front",
    "optimize",
]

WAVE = 8  # families evaluated between two pruning decisions


@dataclass(frozen=True)
class SearchCounts:
    """How much of the space each stage saw."""

    families: int
    pruned_precision: int
    pruned_memory: int
    pruned_site: int
    pruned_limits: int
    pruned_dominated: int
    evaluated: int
    planned: int
    predicted: int
    designs: int
    feasible: int
    # plans the plan searches of the sizes within the limits leave out: Megatron-Core refuses
    # them under job.expert_parallel_overlap (clusterforge.perf.ep_overlap_rules)
    refused_overlap: int = 0


@dataclass(frozen=True)
class OptimizeResult:
    """The front, every feasible design, the winner's reasoning and the search's counts."""

    spec: OptimizeSpec
    front: tuple[DesignPoint, ...]
    feasible: tuple[DesignPoint, ...]
    reasoning: Reasoning | None
    counts: SearchCounts
    rejected: tuple[str, ...]


def _days(spec: OptimizeSpec, step_s: float, catalog: Catalog) -> float:
    """Failure-free days of the job at ``step_s`` per step."""
    arch = resolve_model(spec.job, catalog)
    tokens_per_step = spec.job.global_batch * (spec.job.seq_length or arch.seq_length)
    return spec.job.tokens_b * 1e9 / tokens_per_step * step_s / DAY_S


def _bound_at(spec: OptimizeSpec, node: str, num_gpus: int) -> float | None:
    """Failure-free days of the fastest plan with free communication (None: none fits)."""
    catalog = load_catalog()
    step_s = compute_bound_s(spec.job, node, num_gpus, catalog)
    return None if step_s is None else _days(spec, step_s, catalog)


def _precision_refusal(spec: OptimizeSpec, family: Family, catalog: Catalog) -> str | None:
    """Why ``family``'s GPU cannot run the job's precision, or None when it can."""
    try:
        check_precision(catalog.gpus[catalog.nodes[family.node].gpu], spec.job.precision)
        check_block_scaled_stack(spec.job.stack, spec.job.precision)
    except PlanError as exc:
        return f"{family.label()}: {exc}"
    return None


def _site_refusal(spec: OptimizeSpec, family: Family, catalog: Catalog) -> str | None:
    """Why no variant of ``family`` fits the site, found without planning it: the stages of
    ``plan`` that size the nodes and the rack density raise it (a node or rack-scale system
    over the rack cap, cooling the site lacks), or its nodes alone draw more than the
    facility's MW; None when some variant may fit."""
    limit_mw, site = spec.constraints.facility_mw, spec.site()
    node = catalog.nodes[family.node]
    if limit_mw is not None and not site.allow_power_capping:
        nodes_mw = family.num_gpus / node.num_gpus * node.max_kw * site.pue / 1000.0
        if nodes_mw > limit_mw:
            return (
                f"{family.label()}: its nodes alone draw {nodes_mw:,.2f} MW with PUE, more than "
                f"constraints.facility_mw {limit_mw:g}"
            )
    start = spec.job.model_copy(update={"tensor_parallel": 1, "pipeline_parallel": 1})
    reasons = []
    for variant in variants(spec):
        cluster = cluster_spec(spec, family, variant, start)
        try:
            choose_density(cluster, size_compute(cluster, catalog))
        except CapacityError as exc:
            reasons.append(f"{family.label()}: {exc}")
            continue
        return None
    return reasons[0]


def _family_bound(spec: OptimizeSpec, family: Family, days: float, catalog: Catalog) -> Bound:
    price = min(
        price_floor_usd_per_gpu_hour(p, family.node, family.num_gpus, catalog, spec)
        for p in spec.search.procurement
    )
    return Bound(days, price * family.num_gpus * days * 24.0)


def _beyond_limits(spec: OptimizeSpec, bound: Bound) -> bool:
    c = spec.constraints
    late = c.deadline_days is not None and bound.days > c.deadline_days
    dear = c.budget_usd is not None and bound.cost_usd > c.budget_usd
    return late or dear


def _dominated(bound: Bound, found: Sequence[DesignPoint]) -> bool:
    return any(p.days <= bound.days and p.cost_usd <= bound.cost_usd for p in found)


def _sort_key(spec: OptimizeSpec, family: Family, bound: Bound) -> tuple[object, ...]:
    """Best bound under the objective first; the family's own order breaks ties."""
    if spec.objective == "time":
        return (bound.days, bound.cost_usd, *family.order())
    return (bound.cost_usd, bound.days, *family.order())


@dataclass(frozen=True)
class _Pruned:
    """Families of one batch dropped by the free-communication bound, by reason."""

    no_fit: int = 0
    late: int = 0
    dominated: int = 0


def _take_batch(
    queue: list[Family], peak: dict[Family, Bound], front: Sequence[DesignPoint], size: int
) -> tuple[list[Family], int]:
    """Up to ``size`` families off the head of ``queue`` (consumed) whose peak bounds
    the front does not dominate, and how many it skipped as dominated."""
    batch: list[Family] = []
    skipped = 0
    while queue and len(batch) < size:
        family = queue.pop(0)
        if _dominated(peak[family], front):
            skipped += 1
        else:
            batch.append(family)
    return batch, skipped


def _refine(
    spec: OptimizeSpec,
    batch: list[Family],
    days_at: dict[tuple[str, int], float | None],
    front: Sequence[DesignPoint],
    engine: Engine,
    catalog: Catalog,
) -> tuple[list[Family], _Pruned]:
    """The families of ``batch`` worth planning under the free-communication bound, searched
    once per node and size (``days_at`` keeps them across batches)."""
    sizes = sorted({(f.node, f.num_gpus) for f in batch} - days_at.keys())
    found = engine.map(_bound_at, [(spec, *size) for size in sizes])
    days_at.update(zip(sizes, found, strict=True))
    wave: list[Family] = []
    no_fit = late = dominated = 0
    for family in batch:
        days = days_at[(family.node, family.num_gpus)]
        if days is None:
            no_fit += 1
            continue
        bound = _family_bound(spec, family, days, catalog)
        if _beyond_limits(spec, bound):
            late += 1
        elif _dominated(bound, front):
            dominated += 1
        else:
            wave.append(family)
    return wave, _Pruned(no_fit, late, dominated)


def _searchable(spec: OptimizeSpec, catalog: Catalog) -> list[Family]:
    """The families of ``spec``'s space; a :class:`SpecError` when it holds none."""
    space = families(spec, catalog)
    if not space:
        raise SpecError(
            "search: no catalog node runs the listed fabrics at the listed NIC speeds and GPU "
            "counts (a count must be a whole number of nodes); widen search.nodes, "
            "search.fabrics, search.nic_gbit_per_s or search.num_gpus"
        )
    return space


def _peak_bounds(spec: OptimizeSpec, space: list[Family], catalog: Catalog) -> dict[Family, Bound]:
    """Each family's bound at its GPUs' peak, found without a plan search: the queue's order
    and its first pruning against the limits."""
    return {
        f: _family_bound(
            spec,
            f,
            _days(spec, peak_bound_s(spec.job, f.node, f.num_gpus, catalog), catalog),
            catalog,
        )
        for f in space
    }


@dataclass(frozen=True)
class _Waves:
    """What the waves evaluated and kept, and what they pruned unplanned."""

    results: list[FamilyResult]
    feasible: list[DesignPoint]
    front: list[DesignPoint]
    pruned: _Pruned


def _run_waves(
    spec: OptimizeSpec,
    queue: list[Family],
    peak: dict[Family, Bound],
    engine: Engine,
    catalog: Catalog,
    wave_size: int,
) -> _Waves:
    """Evaluate ``queue`` (consumed) in waves of ``wave_size`` families, pruning between
    waves against the front found so far."""
    tried = (tuple(variants(spec)), tuple(spec.search.procurement))
    days_at: dict[tuple[str, int], float | None] = {}
    results: list[FamilyResult] = []
    feasible: list[DesignPoint] = []
    front: list[DesignPoint] = []
    dominated = no_fit = late = 0
    while queue:
        batch, skipped = _take_batch(queue, peak, front, wave_size)
        wave, pruned = _refine(spec, batch, days_at, front, engine, catalog)
        no_fit, late = no_fit + pruned.no_fit, late + pruned.late
        dominated += skipped + pruned.dominated
        done = engine.map(evaluate_family, [(spec, f, *tried) for f in wave])
        results.extend(done)
        feasible.extend(p for r in done for p in r.points if not violations(p, spec.constraints))
        front = pareto_front(feasible)
    return _Waves(results, feasible, front, _Pruned(no_fit, late, dominated))


def _counts(
    num_families: int, num_capable: int, num_sited: int, num_within: int, waves: _Waves
) -> SearchCounts:
    """The search's counts from the families' numbers before each pruning stage."""
    results = waves.results
    return SearchCounts(
        families=num_families,
        pruned_precision=num_families - num_capable,
        pruned_memory=waves.pruned.no_fit,
        pruned_site=num_capable - num_sited,
        pruned_limits=num_sited - num_within + waves.pruned.late,
        pruned_dominated=waves.pruned.dominated,
        evaluated=len(results),
        planned=sum(r.num_planned for r in results),
        predicted=sum(r.num_predicted for r in results),
        designs=sum(len(r.points) for r in results),
        feasible=len(waves.feasible),
    )


def optimize(
    spec: OptimizeSpec,
    engine: Engine | None = None,
    *,
    catalog: Catalog | None = None,
    wave_size: int = WAVE,
) -> OptimizeResult:
    """Search ``spec``'s space for the front of cost against time to train (module);
    ``wave_size`` families are evaluated between two pruning decisions."""
    engine = engine or SerialEngine()
    catalog = catalog or load_catalog()
    # the EP overlap on a dense model: no plan of any family runs it
    check_ep_overlap_model(resolve_model(spec.job, catalog), workload_stack(spec.job))
    space = _searchable(spec, catalog)
    peak = _peak_bounds(spec, space, catalog)
    unable = {f: _precision_refusal(spec, f, catalog) for f in space}
    capable = [f for f in space if unable[f] is None]
    refusals = {f: _site_refusal(spec, f, catalog) for f in capable}
    sited = [f for f in capable if refusals[f] is None]
    within = [f for f in sited if not _beyond_limits(spec, peak[f])]
    queue = sorted(within, key=lambda f: _sort_key(spec, f, peak[f]))
    waves = _run_waves(spec, queue, peak, engine, catalog, wave_size)
    site = [reason for reason in [*unable.values(), *refusals.values()] if reason is not None]
    rejected = tuple(site + [reason for r in waves.results for reason in r.rejected])
    counts = _counts(len(space), len(capable), len(sited), len(within), waves)
    sizes = sorted({(f.node, f.num_gpus) for f in within})
    return OptimizeResult(
        spec,
        tuple(waves.front),
        tuple(waves.feasible),
        reasoning(waves.feasible, spec.objective, spec.constraints),
        replace(counts, refused_overlap=overlap_refusals(spec.job, sizes, catalog)),
        rejected,
    )


@dataclass(frozen=True)
class Comparison:
    """Named alternatives assessed side by side, and which wins under the objective."""

    spec: OptimizeSpec
    points: tuple[tuple[str, DesignPoint | None, str], ...]  # name, design, why not
    reasoning: Reasoning | None


def compare(spec: OptimizeSpec, engine: Engine | None = None) -> Comparison:
    """Assess each of ``spec.compare``; the winner is the best under the objective among
    those that meet the limits (an equal budget: the spec's ``constraints.budget_usd``)."""
    if len(spec.compare) < 2:
        raise SpecError(
            "compare: name at least two alternatives (name, node, num_gpus, nic_gbit_per_s, "
            "...) to compare"
        )
    engine = engine or SerialEngine()
    calls = []
    for alt in spec.compare:
        family, variant, procurement = alternative_family(alt)
        calls.append((spec, family, (variant,), (procurement,)))
    done: list[FamilyResult] = engine.map(evaluate_family, calls)
    rows: list[tuple[str, DesignPoint | None, str]] = []
    for alt, result in zip(spec.compare, done, strict=True):
        if not result.points:
            rows.append((alt.name, None, "; ".join(result.rejected) or "no design"))
            continue
        point = result.points[0]
        broken = violations(point, spec.constraints)
        rows.append((alt.name, point, f"over {', '.join(broken)}" if broken else ""))
    ok = [p for _, p, why in rows if p is not None and not why]
    return Comparison(spec, tuple(rows), reasoning(ok, spec.objective, spec.constraints))


def is_front(points: Sequence[DesignPoint]) -> bool:
    """No point of ``points`` dominates another (a check the tests use)."""
    return not any(dominates(a, b) for a in points for b in points if a is not b)
