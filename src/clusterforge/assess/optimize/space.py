"""The space an optimize search walks: design families and the specs they write out.

A *family* (:class:`Family`) fixes everything the training step's speed depends on: the node
(so the GPU), the training GPU count, the fabric kind, NIC speed, topology and
oversubscription. Its *variants* (:class:`Variant`: cooling and spares) change what is built
and its goodput, not the plan search's answer; procurement (build, reserved, on-demand)
changes only the price. So a family is searched once and its variants planned on top.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from clusterforge.catalog import Catalog, Node
from clusterforge.errors import PlanError, SpecError
from clusterforge.job import JobLayout
from clusterforge.spec import ClusterSpec, Cooling, Topology, WorkloadSpec
from clusterforge.spec.optimize import Alternative, OptimizeSpec, Procurement

__all__ = ["Family", "Variant", "alternative_family", "cluster_spec", "families", "variants"]


@dataclass(frozen=True)
class Family:
    """Designs that share one plan search (see the module docstring)."""

    node: str
    num_gpus: int
    fabric: str
    nic_gbit_per_s: float | None
    topology: Topology
    oversubscription: float
    nics_per_node: int | None = None

    def order(self) -> tuple[str, int, str, float, str, float, int]:
        """A total order (the node's own NIC speed and count sort first, as 0)."""
        nic, nics = self.nic_gbit_per_s or 0.0, self.nics_per_node or 0
        return (self.node, self.num_gpus, self.fabric, nic, self.topology, self.oversubscription,
                nics)  # fmt: skip

    def label(self) -> str:
        nic = "full" if self.nic_gbit_per_s is None else f"{self.nic_gbit_per_s:g}G"
        if self.nics_per_node is not None:
            nic = f"{self.nics_per_node} NICs {nic}"
        over = "" if self.oversubscription == 1 else f" {self.oversubscription:g}:1"
        return f"{self.num_gpus} x {self.node} {self.fabric} {nic} {self.topology}{over}"


@dataclass(frozen=True)
class Variant:
    """What a family's designs differ by besides price: the cooling method (None: the ones
    the facility offers, chosen per rack) and the spare share of nodes."""

    cooling: Cooling | None
    spare_fraction: float


def _node_runs(node: Node, catalog: Catalog, family: Family) -> bool:
    """Whether the node holds the family's GPU count in whole nodes and its compute NIC runs
    the fabric kind at the speed, with as many ports as the family cables."""
    nic = catalog.nics[node.compute_nic]
    kind = "infiniband" if family.fabric == "infiniband" else "ethernet"
    speed, count = family.nic_gbit_per_s, family.nics_per_node
    fast_enough = speed is None or speed <= nic.port_gbit_per_s
    enough_ports = count is None or count <= node.num_compute_nics * nic.num_ports
    whole = family.num_gpus % node.num_gpus == 0
    return whole and kind in nic.fabrics and fast_enough and enough_ports


def families(spec: OptimizeSpec, catalog: Catalog) -> list[Family]:
    """Every family of the search space the catalog can build, in a fixed order."""
    space = spec.search
    found = []
    for node_id in space.nodes or catalog.nodes.ids():
        node = catalog.nodes[node_id]
        for n, fabric, nic, topology, over, nics in itertools.product(
            space.gpu_counts(),
            space.fabrics,
            space.nic_gbit_per_s,
            space.topologies,
            space.oversubscription,
            space.nics_per_node,
        ):
            family = Family(node_id, n, fabric, nic, topology, over, nics)
            if _node_runs(node, catalog, family):
                found.append(family)
    return sorted(set(found), key=Family.order)


def variants(spec: OptimizeSpec) -> list[Variant]:
    """The cooling and spare variants every family is planned in."""
    coolings: list[Cooling | None] = [None]
    if spec.search.cooling is not None:
        coolings = list(spec.search.cooling)
    return [Variant(c, s) for c in coolings for s in sorted(set(spec.search.spare_fractions))]


def alternative_family(alt: Alternative) -> tuple[Family, Variant, Procurement]:
    """A named alternative of ``--compare`` as a family, variant and procurement."""
    family = Family(
        alt.node,
        alt.num_gpus,
        alt.fabric,
        alt.nic_gbit_per_s,
        alt.topology,
        alt.oversubscription,
        alt.nics_per_node,
    )
    return family, Variant(None, alt.spare_fraction), alt.procurement


def hardware_workload(job: WorkloadSpec, family: Family, catalog: Catalog) -> WorkloadSpec:
    """The job with a valid layout for planning the hardware (the layout does not change what
    is built; the plan search then chooses the real one): the first of TP in powers of two
    and PP up to 64 that divides the GPUs, splits the batch and suits the model."""
    arch = job.model if not isinstance(job.model, str) else catalog.models[job.model]
    for tp, pp in itertools.product((1, 2, 4, 8, 16, 32, 64), range(1, 65)):
        try:
            layout = JobLayout.for_gpus(family.num_gpus, tp=tp, pp=pp)
            layout.check_batch(job.global_batch, 1)
            layout.check_model(arch, job.seq_length or arch.seq_length)
            layout.split_layers(arch.num_layers, None)
        except PlanError:
            continue
        return job.model_copy(
            update={
                "tensor_parallel": tp,
                "pipeline_parallel": pp,
                "context_parallel": 1,
                "expert_parallel": 1,
                "data_parallel": None,
                "virtual_pipeline_stages": 1,
                "micro_batch": 1,
                "pipeline_layers": None,
            }
        )
    raise SpecError(
        f"job: no layout of {family.num_gpus} GPUs splits global_batch {job.global_batch}; "
        "use a global batch with more powers of two, or other GPU counts"
    )


def cluster_spec(
    spec: OptimizeSpec,
    family: Family,
    variant: Variant,
    workload: WorkloadSpec,
    procurement: Procurement = "build",
) -> ClusterSpec:
    """The cluster spec of one design, ``clusterforge plan`` ready."""
    site = spec.site()
    if variant.cooling is not None:
        site = site.model_copy(update={"cooling_available": [variant.cooling]})
    economics = spec.economics
    if procurement != "build":
        economics = economics.model_copy(update={"rent_basis": procurement})
    network: dict[str, object] = {
        "fabric": family.fabric,
        "topology": family.topology,
        "oversubscription": family.oversubscription,
    }
    if family.nic_gbit_per_s is not None:
        network["nic_gbit_per_s"] = family.nic_gbit_per_s
    if family.nics_per_node is not None:
        network["nics_per_node"] = family.nics_per_node
    return ClusterSpec.model_validate(
        {
            "name": spec.name,
            "num_gpus": family.num_gpus,
            "node": family.node,
            "spare_fraction": variant.spare_fraction,
            "network": network,
            "facility": site,
            "workload": workload,
            "economics": economics,
            "reliability": spec.reliability,
        }
    )
