"""The result of sizing: :class:`Design`, every stage's output in one frozen record."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from clusterforge.catalog import Catalog
from clusterforge.design.cabling.links import LinkClass
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.cost.bom import BomLine, PowerSummary
from clusterforge.design.cost.tco import CostDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.layout import Density, Layout, Rack
from clusterforge.design.management import management_servers
from clusterforge.design.rules.finding import Finding
from clusterforge.design.storage import StorageDesign
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.spec import ClusterSpec, WorkloadSpec

__all__ = ["Design"]


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

    @field_serializer("job")
    def _job_degrees(self, job: JobLayout | None) -> dict[str, int] | None:
        """The degrees; the interleaving is in the spec (``virtual_pipeline_stages``)."""
        return None if job is None else job.degrees()

    def require_workload(self, purpose: str) -> tuple[WorkloadSpec, JobLayout]:
        """The workload and its job layout; a clear error when the spec has none."""
        if self.spec.workload is None or self.job is None:
            raise PlanError(
                f"{purpose} needs a workload: the spec has no 'workload' section; add one "
                "(model, tokens_b and the parallel degrees)"
            )
        return self.spec.workload, self.job

    @property
    def gpu_power_limit_w(self) -> float | None:
        """The board power limit every GPU runs at (None: its TDP): the planner's proposed cap
        when the rack limit forced one (computed from the spec's limit), else the spec's
        ``gpu_power_limit_w``."""
        cap = self.layout_density.power_cap
        return cap.gpu_power_limit_w if cap is not None else self.compute.gpu_power_limit_w

    @property
    def num_mgmt_servers(self) -> int:
        return sum(management_servers(self.spec, self.compute).values())
