"""The design pipeline: one function per stage, composed by :func:`plan`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.design.compute import ComputeDesign, size_compute
from clusterforge.design.network import (
    FabricDesign,
    SupportFabric,
    design_compute_fabric,
    design_support_fabrics,
)
from clusterforge.design.storage import StorageDesign, size_storage
from clusterforge.spec import ClusterSpec

__all__ = ["Design", "plan"]


class Design(BaseModel):
    """A complete cluster design. Every number carries its unit in its field name."""

    model_config = ConfigDict(frozen=True)
    spec: ClusterSpec
    compute: ComputeDesign
    storage: StorageDesign
    fabric: FabricDesign
    support_fabrics: list[SupportFabric]


def plan(spec: ClusterSpec, catalog: Catalog | None = None) -> Design:
    """Design the cluster described by ``spec``."""
    catalog = catalog or load_catalog()
    compute = size_compute(spec, catalog)
    storage = size_storage(spec, catalog, compute.num_training_gpus)
    fabric = design_compute_fabric(spec, compute, catalog)
    support = design_support_fabrics(spec, compute, fabric, storage, catalog, 0, 2)
    return Design(
        spec=spec, compute=compute, storage=storage, fabric=fabric, support_fabrics=support
    )
