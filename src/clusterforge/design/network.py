"""Network design: the compute fabric and the storage, in-band and out-of-band fabrics.

The compute fabric comes from :func:`clusterforge.design.fabric.size_fabric`; this module adds
the derived figures (bisection, hops, per-GPU bandwidth, link counts per tier) and sizes the
three support fabrics of a DGX SuperPOD (NVIDIA DGX SuperPOD H100 reference architecture,
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
from clusterforge.design.fabric import Connectivity, FabricParams, FabricShape, size_fabric
from clusterforge.design.storage import StorageDesign
from clusterforge.errors import CapacityError, CatalogError
from clusterforge.spec import ClusterSpec, NetworkSpec, SpareAttach, Topology

SwitchRole = Literal["compute-infiniband", "compute-roce", "in-band", "out-of-band"]

__all__ = [
    "FabricDesign",
    "SupportFabric",
    "cabled_nodes",
    "default_switch",
    "design_compute_fabric",
    "design_support_fabrics",
]


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


class SupportFabric(BaseModel):
    """A storage, in-band or out-of-band fabric: two tiers of one switch model."""

    model_config = ConfigDict(frozen=True)
    name: str
    switch: Switch
    port_gbit_per_s: float
    num_endpoint_ports: int
    num_leaves: int
    num_spines: int
    num_uplinks: int

    @property
    def num_switches(self) -> int:
        return self.num_leaves + self.num_spines

    @property
    def ports_per_leaf(self) -> int:
        """Endpoint ports each leaf serves (half its radix once there are spines)."""
        radix = self.switch.radix_at(self.port_gbit_per_s) or max(
            m.num_ports for m in self.switch.port_modes
        )
        return radix // 2 if self.num_spines else radix


def default_switch(catalog: Catalog, role: SwitchRole) -> Switch:
    """The catalog switch planned for ``role`` when the spec names none."""
    for switch in catalog.switches:
        if role in switch.default_roles:
            return switch
    raise CatalogError(f"switches.toml: no switch has default_roles = [{role!r}]; add one")


def _compute_switch(net: NetworkSpec, catalog: Catalog) -> Switch:
    role: SwitchRole = "compute-infiniband" if net.fabric == "infiniband" else "compute-roce"
    switch = catalog.switches[net.switch] if net.switch else default_switch(catalog, role)
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
    switch = _compute_switch(net, catalog)
    nic = catalog.nics[compute.node.compute_nic]
    if net.link_aggregation and net.topology != "single-switch":
        raise CapacityError(
            "network.link_aggregation: only meaningful with topology: single-switch; remove it"
        )
    params = FabricParams.from_spec(
        net,
        switch=switch,
        nics_per_node=net.nics_per_node or compute.node.num_compute_nics,
        nic_gbit_per_s=net.nic_gbit_per_s or nic.port_gbit_per_s,
    )
    cabled = cabled_nodes(params, compute, net.spares)
    shape = size_fabric(params, num_nodes=cabled)
    design = _fabric_design(net, params, shape, compute)
    pool = compute.num_nodes - cabled if net.spares == "spare-pool" else 0
    pool_links = pool * params.nics_per_node if shape.radix else 0
    return design.model_copy(
        update={
            "spares": net.spares,
            "num_cold_spares": compute.num_nodes - cabled - pool,
            "num_spare_pool_links": pool_links,
            "num_spare_pool_leaves": math.ceil(pool_links / shape.radix) if pool_links else 0,
        }
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
                if size_fabric(params, num_nodes=mid).connectivity.num_switches == base:
                    low = mid
                else:
                    high = mid - 1
            return low
        case _:
            assert_never(spares)


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


def _two_tier(name: str, switch: Switch, speed: float, ports: int) -> SupportFabric:
    """A non-blocking two-tier fabric of ``switch`` for ``ports`` endpoints at ``speed``."""
    radix = switch.radix_at(speed)
    if radix is None:
        radix = max(m.num_ports for m in switch.port_modes)
    if ports <= radix:
        return SupportFabric(
            name=name,
            switch=switch,
            port_gbit_per_s=speed,
            num_endpoint_ports=ports,
            num_leaves=1 if ports else 0,
            num_spines=0,
            num_uplinks=0,
        )
    half = radix // 2
    leaves = math.ceil(ports / half)
    spines = max(1, math.ceil(leaves * half / radix))
    return SupportFabric(
        name=name,
        switch=switch,
        port_gbit_per_s=speed,
        num_endpoint_ports=ports,
        num_leaves=leaves,
        num_spines=spines,
        num_uplinks=leaves * half,
    )


def _oob(switch: Switch, ports: int) -> SupportFabric:
    """Out-of-band: 1 GbE access switches, each with its 100 GbE uplinks to the in-band core."""
    radix = switch.radix_at(1) or 48
    leaves = math.ceil(ports / radix)
    return SupportFabric(
        name="out-of-band",
        switch=switch,
        port_gbit_per_s=1,
        num_endpoint_ports=ports,
        num_leaves=leaves,
        num_spines=0,
        num_uplinks=leaves * max(1, switch.uplink_ports // 2),
    )


def has_storage_fabric(spec: ClusterSpec, compute: ComputeDesign, storage: StorageDesign) -> bool:
    """A separate storage fabric, as in the SuperPOD, for a parallel file system shared by
    several nodes; a single NFS server or a one-node cluster uses the in-band network."""
    return (
        spec.network.storage_fabric
        and compute.node.num_storage_ports > 0
        and storage.block.parallel
        and compute.num_nodes > 1
    )


def design_support_fabrics(
    spec: ClusterSpec,
    compute: ComputeDesign,
    fabric: FabricDesign,
    storage: StorageDesign,
    catalog: Catalog,
    num_pdus: int,
    num_mgmt_servers: int,
) -> list[SupportFabric]:
    """Storage, in-band and out-of-band fabrics (DGX SuperPOD RA's four-fabric layout).

    Out-of-band ports: every node BMC, every compute switch, storage server and management
    server, and every metered PDU (``num_pdus``, one per feed circuit).
    """
    node = compute.node
    fabrics: list[SupportFabric] = []
    if has_storage_fabric(spec, compute, storage):
        role: SwitchRole = (
            "compute-infiniband" if spec.network.fabric == "infiniband" else "compute-roce"
        )
        switch = default_switch(catalog, role)
        speed = node.storage_port_gbit_per_s
        ports = (
            compute.num_nodes * node.num_storage_ports
            + storage.num_blocks * storage.block.num_ports
        )
        fabrics.append(_two_tier("storage", switch, speed, ports))
    inband = default_switch(catalog, "in-band")
    inband_ports = compute.num_nodes * node.num_inband_ports + num_mgmt_servers * 2
    if not has_storage_fabric(spec, compute, storage):
        inband_ports += storage.num_blocks * storage.block.num_ports
    # Support switches have a management port too; in-band is counted before its OOB uplinks.
    support_switches = sum(f.num_switches for f in fabrics)
    support_switches += _two_tier("in-band", inband, 100, inband_ports).num_switches
    oob_ports = (
        compute.num_nodes
        + fabric.num_switches
        + support_switches
        + storage.num_blocks
        + num_mgmt_servers
        + num_pdus
    )
    oob = _oob(default_switch(catalog, "out-of-band"), oob_ports)
    inband_ports += oob.num_uplinks
    fabrics.append(_two_tier("in-band", inband, 100, inband_ports))
    fabrics.append(oob)
    return fabrics
