"""The design pipeline: one function per stage, composed by :func:`plan`."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design.cabling import LinkClass, design_cabling
from clusterforge.design.compute import ComputeDesign, size_compute
from clusterforge.design.cost import (
    BomLine,
    CostDesign,
    Parts,
    PowerSummary,
    bill_of_materials,
    cost_design,
    power_summary,
)
from clusterforge.design.layout import Density, Layout, Rack, choose_density, lay_out
from clusterforge.design.network import (
    FabricDesign,
    SupportFabric,
    design_compute_fabric,
    design_support_fabrics,
)
from clusterforge.design.rules import Finding, evaluate
from clusterforge.design.storage import StorageDesign, size_storage
from clusterforge.errors import CapacityError, PlanError
from clusterforge.job import JobLayout
from clusterforge.spec import ClusterSpec, WorkloadSpec, job_layout, resolve_node_id

__all__ = ["Design", "break_even_gpus", "plan"]

BREAK_EVEN_MAX_GPUS = 32768


class Design(BaseModel):
    """A complete cluster design. Every number carries its unit in its field name."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    spec: ClusterSpec
    job: JobLayout | None = Field(
        description="The job layout of the spec's workload (None: no workload section)"
    )
    compute: ComputeDesign
    storage: StorageDesign
    fabric: FabricDesign
    support_fabrics: list[SupportFabric]
    layout_density: Density
    racks: list[Rack]
    cabling: list[LinkClass]
    power: PowerSummary
    bom: list[BomLine]
    cost: CostDesign
    findings: list[Finding] = Field(default_factory=list)
    layout: Layout = Field(exclude=True, repr=False)
    catalog: Catalog = Field(exclude=True, repr=False, description="The catalog planned with")

    def require_workload(self, purpose: str) -> tuple[WorkloadSpec, JobLayout]:
        """The workload and its job layout; a clear error when the spec has none."""
        if self.spec.workload is None or self.job is None:
            raise PlanError(
                f"{purpose} needs a workload: the spec has no 'workload' section; add one "
                "(model, tokens_b and the parallel degrees)"
            )
        return self.spec.workload, self.job

    @property
    def num_mgmt_servers(self) -> int:
        return mgmt_servers(self.spec)


def mgmt_servers(spec: ClusterSpec) -> int:
    """Head nodes: 2 scheduler controllers (HA) + 1 monitoring, + 2 UFM for InfiniBand."""
    return 3 + (2 if spec.network.fabric == "infiniband" else 0)


def plan(spec: ClusterSpec, catalog: Catalog | None = None, *, break_even: bool = True) -> Design:
    """Design the cluster described by ``spec`` (pure: no I/O)."""
    catalog = catalog or load_catalog()
    compute = size_compute(spec, catalog)
    storage = size_storage(spec, catalog, compute.num_training_gpus)
    fabric = design_compute_fabric(spec, compute, catalog)
    density = choose_density(spec, compute)
    mgmt = mgmt_servers(spec)
    # The OOB fabric needs a port per PDU, known only once racks are laid out: start from an
    # estimate and re-lay until the support fabrics stop changing (one extra pass in practice).
    pdu_estimate = 2 * (
        math.ceil(compute.num_nodes / density.nodes_per_rack) + fabric.num_switches // 10 + 2
    )
    support = design_support_fabrics(spec, compute, fabric, storage, catalog, pdu_estimate, mgmt)
    layout = lay_out(spec, compute, fabric, support, storage, catalog, density, mgmt)
    for _ in range(3):
        num_pdus = sum(r.circuit.num_whips for r in layout.racks)
        resized = design_support_fabrics(spec, compute, fabric, storage, catalog, num_pdus, mgmt)
        if resized == support:
            break
        support = resized
        layout = lay_out(spec, compute, fabric, support, storage, catalog, density, mgmt)
    cabling = design_cabling(compute, fabric, support, storage, layout, catalog)
    parts = Parts(spec, compute, fabric, support, storage, layout, cabling, catalog, mgmt)
    bom = bill_of_materials(parts)
    power = power_summary(parts)
    cost = cost_design(spec, compute, bom, power)
    if break_even and not cost.build_wins:
        cost = cost.model_copy(update={"break_even_gpus": break_even_gpus(spec, catalog)})
    design = Design(
        spec=spec,
        job=job_layout(spec, catalog),
        compute=compute,
        storage=storage,
        fabric=fabric,
        support_fabrics=support,
        layout_density=density,
        racks=layout.racks,
        cabling=cabling,
        power=power,
        bom=bom,
        cost=cost,
        layout=layout,
        catalog=catalog,
    )
    return design.model_copy(update={"findings": evaluate(design)})


def _build_wins_at(spec: ClusterSpec, catalog: Catalog, num_gpus: int) -> bool:
    """Does building beat renting for the same spec at ``num_gpus``?  The workload is reduced
    to data parallelism so any node multiple is a valid size."""
    workload = spec.workload and spec.workload.model_copy(
        update={
            "tensor_parallel": 1,
            "pipeline_parallel": 1,
            "context_parallel": 1,
            "expert_parallel": 1,
            "data_parallel": None,
            "global_batch": num_gpus,
            "micro_batch": 1,
        }
    )
    sized = spec.model_copy(update={"num_gpus": num_gpus, "workload": workload})
    try:
        return plan(sized, catalog, break_even=False).cost.build_wins
    except CapacityError:
        # The spec's own topology may not grow (a single switch): compare on a fabric that does.
        network = spec.network.model_copy(
            update={
                "topology": "rail-optimized",
                "tiers": None,
                "link_aggregation": False,
            }
        )
        grown = sized.model_copy(update={"network": network})
        return plan(grown, catalog, break_even=False).cost.build_wins


def _wins_or_none(spec: ClusterSpec, catalog: Catalog, num_gpus: int) -> bool:
    try:
        return _build_wins_at(spec, catalog, num_gpus)
    except CapacityError:
        return False  # the fabric cannot grow this far; treat as "not yet"


def break_even_gpus(spec: ClusterSpec, catalog: Catalog | None = None) -> int | None:
    """Smallest GPU count (whole nodes) at which building beats renting, all else equal.

    Doubles the size until building wins, then bisects in whole nodes; None if it never
    wins below 32,768 GPUs.
    """
    catalog = catalog or load_catalog()
    step = catalog.nodes[resolve_node_id(spec)].num_gpus
    low, high = 0, step
    while not _wins_or_none(spec, catalog, high):
        low, high = high, high * 2
        if high > BREAK_EVEN_MAX_GPUS:
            return None
    while high - low > step:
        mid = (low + high) // 2 // step * step
        if mid in (low, high):
            break
        if _wins_or_none(spec, catalog, mid):
            high = mid
        else:
            low = mid
    return high
