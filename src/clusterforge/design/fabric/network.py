"""Network design: the compute fabric as a buyer sees it (support fabrics: :mod:`.support`).

The compute fabric comes from :func:`clusterforge.design.fabric.sizing.size_fabric`; this module
adds the derived figures (bisection, hops, per-GPU bandwidth, link counts per tier), decides how
spare nodes attach, and names the switch of each role; the three support fabrics of a DGX
SuperPOD (NVIDIA DGX SuperPOD H100 reference architecture,
"Network fabrics": storage on its own leaf/spine, in-band on SN4600C, out-of-band on SN2201;
the switch for each role is a catalog fact, ``Switch.default_roles``).
"""

from __future__ import annotations

import math
from typing import Literal, assert_never

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, computed_field

from clusterforge.catalog import Catalog, Switch
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.sizing import Connectivity, FabricParams, FabricShape, size_fabric
from clusterforge.design.fabric.switches import SwitchRole, default_switch
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec, NetworkSpec, SpareAttach, Topology

__all__ = ["EFA_INSTANCE_GPUS", "FabricDesign", "cabled_nodes", "design_compute_fabric"]

# The GPU of each EC2 instance type of ``network.efa_instance``, as catalog GPU ids: AWS's
# EC2 instance-type pages (https://aws.amazon.com/ec2/instance-types/p4/, .../p5/, .../p6/:
# p4d.24xlarge 8 A100 40 GB, p4de.24xlarge 8 A100 80 GB, p5.48xlarge 8 H100, p5e.48xlarge and
# p5en.48xlarge 8 H200, p6-b200.48xlarge 8 B200); the same GPUs as the awsome-distributed-training
# nccl-tests README's p4de rows (A100 80GB) and aws-ofi-nccl's platform_data_map families.
EFA_INSTANCE_GPUS: dict[str, str] = {
    "p4d.24xlarge": "a100-40gb",
    "p4de.24xlarge": "a100-80gb",
    "p5.48xlarge": "h100-sxm",
    "p5e.48xlarge": "h200-sxm",
    "p5en.48xlarge": "h200-sxm",
    "p6-b200.48xlarge": "b200",
}


class FabricDesign(BaseModel):
    """The compute (back-end) fabric with every count a buyer needs.

    Switch and node counts are read from :attr:`connectivity` (their one owner); the spare
    pool's leaves, which stand outside the training fabric, are added to ``num_switches``.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    topology: Topology
    fabric: str
    switch: Switch
    nic_gbit_per_s: float
    gbit_per_s_per_gpu: float
    tiers: int
    radix: int = Field(description="Switch ports at the NIC speed")
    leaf_down_ports: int
    leaf_up_ports: int
    oversubscription: float
    core_oversubscription: float = Field(1.0, description="Spine down:up toward the core (3 tiers)")
    spares: SpareAttach = Field("counted", description="How spare nodes join the fabric")
    num_cold_spares: int = Field(0, description="Spare nodes not cabled to the compute fabric")
    num_spare_pool_leaves: int = Field(0, description="Leaves of the spare pool (spare-pool)")
    num_spare_pool_links: int = Field(0, description="Node links to the spare pool's leaves")
    num_node_links: int
    num_leaf_spine_links: int
    num_spine_core_links: int
    num_local_links: int = 0
    num_global_links: int = 0
    num_ufm_links: int = 0
    ports_used: dict[str, int] = Field(
        description="Switch ports in use per tier (leaf: down + up; spine; core; router)"
    )
    bisection_gbit_per_s: float = Field(description="Worst-case bisection bandwidth, one way")
    max_switch_hops: int = Field(description="Switches on the longest minimal path")
    lossless: bool = Field(True, description="Credit-based (IB) or PFC (RoCE) flow control")
    congestion_control: Literal["dcqcn", "none"] = Field(
        "none", description="NIC rate control on ECN marks (DCQCN) or none"
    )
    notes: tuple[str, ...] = ()
    connectivity: Connectivity = Field(exclude=True, repr=False)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def nics_per_node(self) -> int:
        return self.connectivity.nics_per_node

    @computed_field  # type: ignore[prop-decorator]
    @property
    def num_leaves(self) -> int:
        return self.connectivity.num_leaves

    @computed_field  # type: ignore[prop-decorator]
    @property
    def num_spines(self) -> int:
        return self.connectivity.num_spines

    @computed_field  # type: ignore[prop-decorator]
    @property
    def num_cores(self) -> int:
        return self.connectivity.num_cores

    @computed_field  # type: ignore[prop-decorator]
    @property
    def num_switches(self) -> int:
        return self.connectivity.num_switches + self.num_spare_pool_leaves

    @computed_field  # type: ignore[prop-decorator]
    @property
    def num_groups(self) -> int:
        """Dragonfly groups (0 for other topologies)."""
        return self.connectivity.num_groups

    @computed_field  # type: ignore[prop-decorator]
    @property
    def num_planes(self) -> int:
        return self.connectivity.num_planes

    @computed_field  # type: ignore[prop-decorator]
    @property
    def link_aggregation(self) -> bool:
        return self.connectivity.link_aggregation


def _compute_switch(net: NetworkSpec, catalog: Catalog, *, gbit_per_s: float) -> Switch:
    role: SwitchRole = "compute-infiniband" if net.fabric == "infiniband" else "compute-roce"
    switch = catalog.switches[net.switch] if net.switch else default_switch(catalog, role)
    if net.switch is None and switch.radix_at(gbit_per_s) is None:
        # The role's default cannot run the NICs' speed (XDR 800G ConnectX-8 on an NDR
        # switch): take the switch of that fabric with the lowest price per port that can.
        fits = [s for s in catalog.switches if s.fabric == switch.fabric and s.radix_at(gbit_per_s)]
        switch = min(
            fits, key=lambda s: s.price_usd / (s.radix_at(gbit_per_s) or 1), default=switch
        )
    expected = "infiniband" if net.fabric == "infiniband" else "ethernet"
    if switch.fabric != expected:
        raise CapacityError(
            f"network.switch: {switch.id!r} is an {switch.fabric} switch but network.fabric is "
            f"{net.fabric!r}; pick a matching switch (e.g. {default_switch(catalog, role).id!r})"
        )
    return switch


def design_compute_fabric(
    spec: ClusterSpec, compute: ComputeDesign, catalog: Catalog
) -> FabricDesign:
    """Size the compute fabric; spare nodes join it as ``network.spares`` says."""
    net = spec.network
    nic = catalog.nics[compute.node.compute_nic]
    switch = _compute_switch(net, catalog, gbit_per_s=net.nic_gbit_per_s or nic.port_gbit_per_s)
    if net.link_aggregation and net.topology != "single-switch":
        raise CapacityError(
            "network.link_aggregation: only meaningful with topology: single-switch; remove it"
        )
    _check_efa_instance(net.efa_instance, compute)
    params = FabricParams.from_spec(
        net,
        switch=switch,
        nics_per_node=net.nics_per_node or compute.node.num_compute_nics,
        nic_gbit_per_s=net.nic_gbit_per_s or nic.port_gbit_per_s,
    )
    # In-rack spares stand in their NVLink domain and are cabled like its training trays.
    spares: SpareAttach = "counted" if compute.num_spares_per_nvlink_domain else net.spares
    cabled = cabled_nodes(params, compute, spares)
    shape = size_fabric(params, num_nodes=cabled)
    design = _fabric_design(net, params, shape, compute)
    pool = compute.num_nodes - cabled if spares == "spare-pool" else 0
    pool_links = pool * params.nics_per_node if shape.radix else 0
    return design.model_copy(
        update={
            "spares": spares,
            "num_cold_spares": compute.num_nodes - cabled - pool,
            "num_spare_pool_links": pool_links,
            "num_spare_pool_leaves": math.ceil(pool_links / shape.radix) if pool_links else 0,
        }
    )


def _check_efa_instance(instance: str | None, compute: ComputeDesign) -> None:
    """An EC2 instance type in ``network.efa_instance`` carries the node's GPU."""
    if instance is None or EFA_INSTANCE_GPUS[instance] == compute.gpu.id:
        return
    matching = sorted(i for i, g in EFA_INSTANCE_GPUS.items() if g == compute.gpu.id)
    fix = f"use {' or '.join(matching)}" if matching else "remove it (no EFA instance has it)"
    raise CapacityError(
        f"network.efa_instance: {instance!r} carries {EFA_INSTANCE_GPUS[instance]} GPUs but "
        f"node {compute.node.id!r} has {compute.gpu.id}; {fix}"
    )


def cabled_nodes(params: FabricParams, compute: ComputeDesign, spares: SpareAttach) -> int:
    """Nodes cabled to the training fabric.

    'spare-ports' fills the free leaf ports of the fabric the training nodes need (NVIDIA's
    DGX SuperPOD reference architecture sizes the fabric by whole scalable units and says to
    cable a full SU even when it is partly populated): the largest node count whose fabric
    has as many switches as the training nodes' own, found by bisection (monotone in nodes).
    """
    training, total = compute.num_training_nodes, compute.num_nodes
    match spares:
        case "counted":
            return total
        case "spare-pool":
            return training
        case "spare-ports":
            base = size_fabric(params, num_nodes=training).connectivity.num_switches
            low, high = training, total
            while low < high:
                mid = (low + high + 1) // 2
                if _switches_or_none(params, mid) == base:
                    low = mid
                else:
                    high = mid - 1
            return low
        case _:
            assert_never(spares)


def _switches_or_none(params: FabricParams, num_nodes: int) -> int | None:
    """Switches of the fabric for ``num_nodes`` nodes, None when no fabric of ``params``
    joins them (a single switch or a fixed tier count that is full): spares that do not fit
    stay cold, whatever the topology, instead of refusing the design."""
    try:
        return size_fabric(params, num_nodes=num_nodes).connectivity.num_switches
    except CapacityError:
        return None


def _fabric_design(
    net: NetworkSpec, params: FabricParams, shape: FabricShape, compute: ComputeDesign
) -> FabricDesign:
    c = shape.connectivity
    _, _, n, tier = c.switch_links()
    speed = params.nic_gbit_per_s
    has_fabric = shape.radix > 0
    return FabricDesign(
        topology=net.topology,
        fabric=net.fabric,
        switch=params.switch,
        nic_gbit_per_s=speed,
        gbit_per_s_per_gpu=c.nics_per_node * speed / compute.gpus_per_node if has_fabric else 0.0,
        tiers=shape.tiers,
        radix=shape.radix,
        leaf_down_ports=shape.leaf_down_ports,
        leaf_up_ports=shape.leaf_up_ports,
        oversubscription=shape.oversubscription,
        core_oversubscription=net.core_oversubscription if shape.tiers == 3 else 1.0,
        num_node_links=c.num_nodes * c.nics_per_node if has_fabric else 0,
        num_leaf_spine_links=int(n[tier == 0].sum()),
        num_spine_core_links=int(n[tier == 1].sum()),
        num_local_links=int(n[tier == 2].sum()),
        num_global_links=int(n[tier == 3].sum()),
        num_ufm_links=4 if c.reserved_slots else 0,
        ports_used=_ports_used(c) if has_fabric else {},
        bisection_gbit_per_s=_bisection_gbit_per_s(shape, speed) if has_fabric else 0.0,
        max_switch_hops=_max_switch_hops(shape) if has_fabric else 0,
        lossless=net.lossless if net.lossless is not None else net.fabric == "infiniband",
        congestion_control=net.congestion_control
        if net.congestion_control is not None
        else ("dcqcn" if net.fabric == "roce" else "none"),
        notes=shape.notes,
        connectivity=c,
    )


def _ports_used(c: Connectivity) -> dict[str, int]:
    """Ports in use on each tier: every node NIC plus both ends of every switch link."""
    a, b, n, _ = c.switch_links()
    _, _, leaf = c.node_links()
    per_switch = np.bincount(leaf, minlength=c.num_switches).astype(np.int64)
    per_switch += np.bincount(
        np.concatenate([a, b]), weights=np.concatenate([n, n]), minlength=c.num_switches
    ).astype(np.int64)
    leaf_name = "router" if c.kind == "dragonfly" else "leaf"
    tiers = {
        leaf_name: per_switch[: c.num_leaves].sum(),
        "spine": per_switch[c.num_leaves : c.num_leaves + c.num_spines].sum(),
        "core": per_switch[c.num_leaves + c.num_spines :].sum(),
    }
    return {k: int(v) for k, v in tiers.items() if v}


def _bisection_gbit_per_s(shape: FabricShape, speed: float) -> float:
    """One-way bandwidth across the worst bisection: N·B/(2r) for a Clos of N endpoints at B
    with oversubscription r (Al-Fares et al. 2008 §2).

    Each tier caps it at half its up-link capacity; a dragonfly at the global links that
    cross between the two halves of the groups, ``(g/2)²·m·B``; rail-only fabrics have no
    path between rails (cross-rail traffic must hop over NVLink), so only same-rail halves
    are counted.
    """
    c = shape.connectivity
    endpoints = c.num_nodes * c.nics_per_node
    half_endpoints = endpoints * speed / 2
    if c.kind == "dragonfly":
        half = c.num_groups // 2
        cross = half * (c.num_groups - half) * c.links_per_group_pair * speed
        return min(half_endpoints, cross) if c.num_groups > 1 else half_endpoints
    if c.kind == "single-switch":
        return half_endpoints
    _, _, n, tier = c.switch_links()
    caps = [half_endpoints]
    for t in (0, 1):
        if (tier == t).any():
            caps.append(float(n[tier == t].sum()) * speed / 2)
    return min(caps)


def _max_switch_hops(shape: FabricShape) -> int:
    """Switches on the longest minimal path: 1, 3 or 5 for a 1/2/3-tier Clos, 4 for a
    dragonfly (local, global, local), rail-only as a Clos per rail."""
    c = shape.connectivity
    if c.kind == "dragonfly":
        return 4 if c.num_groups > 1 else 2
    return 2 * shape.tiers - 1
