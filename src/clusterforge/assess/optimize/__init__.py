"""``clusterforge optimize``: from a training job, its limits and a space of clusters to the
Pareto front of cost against time to train with failures, each point a spec ``plan`` runs.

Parts: :mod:`.space` (design families and their written-out specs), :mod:`.bounds` (cheap
lower bounds that prune families unplanned), :mod:`.evaluate` (one family: planned under
``plan``'s rules, its best parallel plan searched, goodput and price of each design),
:mod:`.front` (dominance, the front, binding constraints, the winner's reasons),
:mod:`.engine` (this process, a process pool or a Dask cluster), :mod:`.search` (the walk).
"""

from clusterforge.assess.optimize.engine import (
    DaskEngine,
    Engine,
    PoolEngine,
    SerialEngine,
    default_engine,
)
from clusterforge.assess.optimize.evaluate import DesignPoint, job_usd_per_gpu_hour
from clusterforge.assess.optimize.front import (
    Reasoning,
    binding_constraint,
    dominates,
    objective_value,
    pareto_front,
    slacks,
)
from clusterforge.assess.optimize.search import (
    Comparison,
    OptimizeResult,
    SearchCounts,
    compare,
    is_front,
    optimize,
)
from clusterforge.assess.optimize.space import Family, Variant
from clusterforge.spec.optimize import OptimizeSpec, load_optimize_spec, parse_optimize_spec

__all__ = [
    "Comparison",
    "DaskEngine",
    "DesignPoint",
    "Engine",
    "Family",
    "OptimizeResult",
    "OptimizeSpec",
    "PoolEngine",
    "Reasoning",
    "SearchCounts",
    "SerialEngine",
    "Variant",
    "binding_constraint",
    "compare",
    "default_engine",
    "dominates",
    "is_front",
    "job_usd_per_gpu_hour",
    "load_optimize_spec",
    "objective_value",
    "optimize",
    "pareto_front",
    "parse_optimize_spec",
    "slacks",
]
