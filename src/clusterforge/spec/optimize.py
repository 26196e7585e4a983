"""The optimize spec: a training job, the limits it must meet and the space of clusters to
search (``clusterforge optimize``), parsed and validated once, here.

::

    name: llama3-70b-50m
    job: {model: llama3-70b, tokens_b: 2000, global_batch: 1024}
    constraints: {budget_usd: 50e6, deadline_days: 120, facility_mw: 30, max_rack_kw: 40}
    objective: time
    search: {nodes: [dgx-h100, dgx-b200], num_gpus: {min: 64, max: 4096}}

The job is a :class:`WorkloadSpec` whose parallel degrees are left to the search; the
``facility``, ``economics`` and ``reliability`` sections are those of a cluster spec and are
copied into every design's written-out spec. ``constraints`` name what a design must meet;
a limit that is also a facility field (rack kW, cooling, floor) replaces that field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.errors import SpecError, did_you_mean
from clusterforge.spec.base import MAX_GPUS, Cooling, Section, Topology
from clusterforge.spec.economics import EconomicsSpec, ReliabilitySpec
from clusterforge.spec.error_messages import format_validation_error
from clusterforge.spec.safe_yaml import excerpt, load_yaml_text, read_spec_text
from clusterforge.spec.sections import FacilitySpec
from clusterforge.spec.workload import WorkloadSpec

__all__ = [
    "Alternative",
    "GpuRange",
    "Objective",
    "OptimizeConstraints",
    "OptimizeSpec",
    "Procurement",
    "SearchSpace",
    "load_optimize_spec",
    "parse_optimize_spec",
]

Objective = Literal["time", "cost", "cost-per-token"]
Procurement = Literal["build", "reserved", "on-demand"]
Fabric = Literal["infiniband", "roce"]

# Topologies a search may try: the scalable ones (a single switch or a dragonfly stays a
# choice for ``plan``, where the user names it).
SEARCHED_TOPOLOGIES: tuple[Topology, ...] = ("rail-optimized", "leaf-spine", "fat-tree")


class GpuRange(Section):
    """GPU counts tried: powers of two from ``min`` to ``max`` (rounded to whole nodes)."""

    min: int = Field(8, ge=1, le=MAX_GPUS, description="Fewest training GPUs")
    max: int = Field(4096, ge=1, le=MAX_GPUS, description="Most training GPUs")

    @model_validator(mode="after")
    def _ordered(self) -> GpuRange:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is more than max {self.max}; swap them")
        return self


class SearchSpace(Section):
    """The designs to search; every list is a dimension of the space."""

    nodes: list[str] | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="Catalog node ids (None = every catalog node whose GPU can hold the job)",
    )
    num_gpus: GpuRange | list[int] = Field(
        default_factory=GpuRange,
        description="Training GPU counts: a list, or {min, max} for the powers of two between",
    )
    nic_gbit_per_s: list[float | None] = Field(
        default_factory=lambda: list[float | None]([None]),
        min_length=1,
        max_length=8,
        description="Compute NIC speeds per GPU, Gb/s (None = the node's NIC at full speed); "
        "a speed above a node's NIC is skipped for that node",
    )
    nics_per_node: list[int | None] = Field(
        default_factory=lambda: list[int | None]([None]),
        min_length=1,
        max_length=8,
        description="Compute NICs cabled per node (None = every compute NIC port of the "
        "node); a count above a node's ports is skipped for that node",
    )
    fabrics: list[Fabric] = Field(
        default_factory=lambda: list[Fabric](["infiniband", "roce"]),
        min_length=1,
        description="Fabric kinds: infiniband (Quantum), roce (Spectrum-X Ethernet)",
    )
    topologies: list[Topology] = Field(
        default_factory=lambda: list[Topology](["rail-optimized"]),
        min_length=1,
        max_length=6,
        description="Fabric topologies tried",
    )
    oversubscription: list[float] = Field(
        default_factory=lambda: [1.0],
        min_length=1,
        max_length=8,
        description="Leaf down:up ratios tried (1 = non-blocking)",
    )
    cooling: list[Cooling] | None = Field(
        None,
        min_length=1,
        description="Cooling methods tried one at a time (None = each the facility offers)",
    )
    spare_fractions: list[float] = Field(
        default_factory=lambda: [0.0, 0.05],
        min_length=1,
        max_length=8,
        description="Spare nodes as a share of nodes, tried each",
    )
    procurement: list[Procurement] = Field(
        default_factory=lambda: list[Procurement](["build", "reserved", "on-demand"]),
        min_length=1,
        description="build (buy and run), reserved (1-year contracts), on-demand (list price)",
    )

    def gpu_counts(self) -> list[int]:
        """The GPU counts tried, ascending."""
        if isinstance(self.num_gpus, list):
            return sorted(set(self.num_gpus))
        counts, n = [], 1
        while n <= self.num_gpus.max:
            if n >= self.num_gpus.min:
                counts.append(n)
            n *= 2
        return counts or [self.num_gpus.min]


class OptimizeConstraints(Section):
    """What every design must meet (None: no limit)."""

    budget_usd: float | None = Field(
        None,
        gt=0,
        le=1e12,
        description="Most the job may cost, $: its GPU-hours at the design's price per used "
        "GPU-hour (build: the ownership period's total spread over its used hours)",
    )
    deadline_days: float | None = Field(
        None, gt=0, le=3650, description="Latest expected time to train with failures, days"
    )
    facility_mw: float | None = Field(
        None, gt=0, le=10_000, description="Facility power (IT maximum x PUE), MW"
    )
    max_rack_kw: float | None = Field(
        None, ge=1, le=1000, description="Power per rack, kW (replaces facility.max_rack_kw)"
    )
    cooling_available: list[Cooling] | None = Field(
        None, min_length=1, description="Cooling the site has (replaces the facility's)"
    )
    floor_rating_kn_per_m2: float | None = Field(
        None,
        ge=1,
        le=100,
        description="Floor live load, kN/m2 (replaces the facility's); a design whose heaviest "
        "rack loads the floor more is excluded",
    )


class Alternative(Section):
    """One named design of ``optimize --compare``."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,40}$", description="Label")
    node: str = Field(max_length=64, description="Catalog node id")
    num_gpus: int = Field(gt=0, le=MAX_GPUS, description="Training GPUs")
    nic_gbit_per_s: float | None = Field(
        None, ge=1, le=3200, description="Compute NIC speed per GPU, Gb/s (None = the node's)"
    )
    nics_per_node: int | None = Field(
        None, ge=1, le=32, description="Compute NICs per node (None = all of them)"
    )
    fabric: Fabric = "infiniband"
    topology: Topology = "rail-optimized"
    oversubscription: float = Field(1.0, ge=1.0, le=16.0)
    spare_fraction: float = Field(0.0, ge=0, le=0.5)
    procurement: Procurement = "build"


class OptimizeSpec(Section):
    """A training job, its limits, the objective and the space of clusters to search."""

    name: str = Field("optimize", pattern=r"^[a-z0-9][a-z0-9-]{0,40}$", description="Name")
    job: WorkloadSpec = Field(description="Model, tokens, batch, precision (degrees searched)")
    constraints: OptimizeConstraints = OptimizeConstraints()
    objective: Objective = Field("time", description="time, cost or cost-per-token")
    search: SearchSpace = SearchSpace()
    facility: FacilitySpec = FacilitySpec()
    economics: EconomicsSpec = EconomicsSpec()
    reliability: ReliabilitySpec = ReliabilitySpec()
    compare: list[Alternative] = Field(
        default_factory=list, max_length=16, description="Designs for --compare"
    )

    def site(self) -> FacilitySpec:
        """The facility with the constraints' limits in place of its own."""
        c, changes = self.constraints, dict[str, object]()
        if c.max_rack_kw is not None:
            changes["max_rack_kw"] = c.max_rack_kw
        if c.cooling_available is not None:
            changes["cooling_available"] = c.cooling_available
        if c.floor_rating_kn_per_m2 is not None:
            changes["floor_rating_kn_per_m2"] = c.floor_rating_kn_per_m2
        return self.facility.model_copy(update=changes)


def parse_optimize_spec(
    data: Any, source: str = "optimize spec", catalog: Catalog | None = None
) -> OptimizeSpec:
    """Validate a parsed YAML mapping into an :class:`OptimizeSpec` (catalog ids too)."""
    if not isinstance(data, dict):
        raise SpecError(f"{source}: the optimize spec must be a YAML mapping of fields")
    try:
        spec = OptimizeSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, source, OptimizeSpec)) from None
    catalog = catalog or load_catalog()
    nodes = catalog.nodes.ids()
    named = [*(spec.search.nodes or []), *(a.node for a in spec.compare)]
    for node in named:
        if node not in nodes:
            raise SpecError(
                f"{source}: search.nodes / compare: unknown node {excerpt(node)}"
                f"{did_you_mean(node[:64], nodes)}; choose one of: {', '.join(nodes)}"
            )
    model = spec.job.model
    if isinstance(model, str) and model not in catalog.models.ids():
        raise SpecError(
            f"{source}: job.model: unknown model {excerpt(model)}"
            f"{did_you_mean(model[:64], catalog.models.ids())}"
        )
    return spec


def load_optimize_spec(path: str | Path, catalog: Catalog | None = None) -> OptimizeSpec:
    """Read and validate an optimize spec file (the limits of :mod:`.safe_yaml` apply)."""
    path = Path(path)
    source = excerpt(str(path), 120).strip("'\"")
    data = load_yaml_text(read_spec_text(path), source)
    return parse_optimize_spec(data, source=source, catalog=catalog)
