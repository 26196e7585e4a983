"""The design pipeline: one function per stage, composed by :func:`plan`."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design.cabling import LinkClass, design_cabling
from clusterforge.design.compute import ComputeDesign, size_compute
from clusterforge.design.cost import (
    BomLine,
    Parts,
    PowerSummary,
    bill_of_materials,
    power_summary,
)
from clusterforge.design.layout import (
    Density,
    Layout,
    Rack,
    choose_density,
    gpu_rack_whips,
    lay_out,
)
from clusterforge.design.network import (
    FabricDesign,
    SupportFabric,
    design_compute_fabric,
    design_support_fabrics,
)
from clusterforge.design.rules import Finding, evaluate
from clusterforge.design.storage import StorageDesign, size_storage
from clusterforge.design.tco import CostDesign, cost_design
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.spec import ClusterSpec, WorkloadSpec, job_layout

__all__ = ["Design", "management_servers", "plan"]


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
    def num_mgmt_servers(self) -> int:
        return sum(management_servers(self.spec, self.compute).values())


# Management servers by role, after the NVIDIA DGX SuperPOD H100 reference architecture (a
# 4-SU, 127-node build carries 5 management servers and 4 UFM appliances) and the tools' own
# scale guidance. Below SMALL_CLUSTER_NODES one head node runs provisioning, the scheduler
# and monitoring (DGX BasePOD: 2-16 nodes).
SMALL_CLUSTER_NODES = 16
HA_HEAD_NODES = 2  # NVIDIA Base Command Manager high availability: active + passive head
SLURM_CONTROLLERS = 2  # slurmctld primary + backup (Slurm slurm.conf: SlurmctldHost)
NODES_PER_LOGIN_NODE = 512  # planning figure [U]: one login node per 512 compute nodes
NODES_PER_MONITORING_PAIR = 2000  # [U] ~1,500 series per node: ~3M series per Prometheus
UFM_NODES_PER_PAIR = 2000  # [U] one UFM Enterprise HA pair per 2,000 fabric endpoints' nodes


def management_servers(spec: ClusterSpec, compute: ComputeDesign) -> dict[str, int]:
    """Management servers by role for a cluster of ``compute.num_nodes`` nodes.

    * head: Base Command Manager (provisioning, images, monitoring of small clusters); one
      below SMALL_CLUSTER_NODES, an HA pair above.
    * slurm: dedicated controllers (primary + backup) above SMALL_CLUSTER_NODES; smaller
      clusters run slurmctld on the head node.
    * login: one per NODES_PER_LOGIN_NODE nodes above SMALL_CLUSTER_NODES.
    * monitoring: the head nodes monitor up to NODES_PER_MONITORING_PAIR nodes; an HA pair
      of Prometheus servers for each further NODES_PER_MONITORING_PAIR.
    * ufm: InfiniBand only, above SMALL_CLUSTER_NODES (below it the switch's embedded subnet
      manager serves): an HA pair per UFM_NODES_PER_PAIR nodes for the compute fabric and
      another for an InfiniBand storage fabric, as the SuperPOD's 4 UFM appliances.
    """
    nodes = compute.num_nodes
    if nodes <= SMALL_CLUSTER_NODES:
        return {"head": 1}
    ufm_pairs = math.ceil(nodes / UFM_NODES_PER_PAIR) if spec.network.fabric == "infiniband" else 0
    ufm_fabrics = 2 if spec.network.storage_fabric else 1
    return {
        "head": HA_HEAD_NODES,
        "slurm": SLURM_CONTROLLERS,
        "login": math.ceil(nodes / NODES_PER_LOGIN_NODE),
        # The head nodes monitor the first NODES_PER_MONITORING_PAIR nodes.
        "monitoring": 2 * (nodes // NODES_PER_MONITORING_PAIR),
        "ufm": 2 * ufm_pairs * ufm_fabrics,
    }


def plan(spec: ClusterSpec, catalog: Catalog | None = None) -> Design:
    """Design the cluster described by ``spec`` (pure: no I/O): one pass through the stages,
    no re-planning (what a design implies at other sizes is :mod:`clusterforge.assess`)."""
    catalog = catalog or load_catalog()
    compute = size_compute(spec, catalog)
    storage = size_storage(spec, catalog, compute.num_training_gpus)
    fabric = design_compute_fabric(spec, compute, catalog)
    density = choose_density(spec, compute)
    management = management_servers(spec, compute)
    mgmt = sum(management.values())
    # The OOB fabric needs a port per PDU, known only once racks are laid out: start from the
    # GPU racks' own PDUs (exact before placement) and two per other rack, then re-lay until
    # the support fabrics stop changing where the placement reads them.
    other_racks = fabric.num_switches // 10 + 2
    pdu_estimate = int(gpu_rack_whips(spec, compute, fabric, density).sum()) + 2 * other_racks
    support = design_support_fabrics(spec, compute, fabric, storage, catalog, pdu_estimate, mgmt)
    layout = lay_out(spec, compute, fabric, support, storage, catalog, density, mgmt)
    for _ in range(3):
        num_pdus = sum(r.circuit.num_whips for r in layout.racks)
        resized = design_support_fabrics(spec, compute, fabric, storage, catalog, num_pdus, mgmt)
        if resized == support:
            break
        support = resized
        layout = lay_out(
            spec, compute, fabric, support, storage, catalog, density, mgmt, reuse=layout
        )
    cabling = design_cabling(compute, fabric, support, storage, layout, catalog)
    parts = Parts(
        spec=spec,
        compute=compute,
        fabric=fabric,
        support=support,
        storage=storage,
        layout=layout,
        cabling=cabling,
        catalog=catalog,
        management=management,
    )
    bom = bill_of_materials(parts)
    power = power_summary(parts)
    cost = cost_design(
        spec, gpu=compute.gpu, num_training_gpus=compute.num_training_gpus, bom=bom, power=power
    )
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
