"""The design pipeline: one function per stage, composed by :func:`plan`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design.cabling.links import design_cabling
from clusterforge.design.compute import size_compute
from clusterforge.design.cost.bom import (
    Parts,
    bill_of_materials,
    power_summary,
)
from clusterforge.design.cost.tco import cost_design
from clusterforge.design.fabric.network import design_compute_fabric
from clusterforge.design.fabric.support import design_support_fabrics
from clusterforge.design.facility.layout import choose_density, gpu_rack_whips, lay_out
from clusterforge.design.management import management_servers
from clusterforge.design.result import Design
from clusterforge.design.rules import evaluate
from clusterforge.design.storage import size_storage
from clusterforge.spec import ClusterSpec, job_layout

if TYPE_CHECKING:
    from clusterforge.design.compute import ComputeDesign
    from clusterforge.design.fabric.network import FabricDesign
    from clusterforge.design.fabric.support import SupportFabric
    from clusterforge.design.facility.racks import Density, Layout
    from clusterforge.design.storage import StorageDesign

__all__ = ["Design", "management_servers", "plan"]


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
    support, layout = _support_and_layout(spec, compute, fabric, storage, catalog, density, mgmt)
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


def _support_and_layout(
    spec: ClusterSpec,
    compute: ComputeDesign,
    fabric: FabricDesign,
    storage: StorageDesign,
    catalog: Catalog,
    density: Density,
    num_mgmt_servers: int,
) -> tuple[list[SupportFabric], Layout]:
    """The support fabrics and the rack layout, which depend on each other.

    The OOB fabric needs a port per PDU, known only once racks are laid out: start from the
    GPU racks' own PDUs (exact before placement) and two per other rack, then re-lay until
    the support fabrics stop changing where the placement reads them."""
    mgmt = num_mgmt_servers
    other_racks = fabric.num_switches // 10 + 2
    pdu_estimate = (
        int(gpu_rack_whips(spec, compute, fabric, density, catalog).sum()) + 2 * other_racks
    )
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
    return support, layout
