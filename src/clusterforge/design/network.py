"""Network design: the compute fabric and the storage, in-band and out-of-band fabrics.

The compute fabric comes from :func:`clusterforge.design.fabric.size_fabric`; this module adds
the derived figures (bisection, hops, per-GPU bandwidth, link counts per tier) and sizes the
three support fabrics of a DGX SuperPOD (design.md §1.1: storage on its own leaf/spine,
in-band on SN4600C, out-of-band on SN2201).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, Switch
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric import Connectivity, FabricShape, size_fabric
from clusterforge.design.storage import StorageDesign
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec

__all__ = ["FabricDesign", "SupportFabric", "design_compute_fabric", "design_support_fabrics"]

DEFAULT_SWITCH = {"infiniband": "qm9700", "roce": "sn5600"}


class FabricDesign(BaseModel):
    """The compute (back-end) fabric with every count a buyer needs."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    topology: str
    fabric: str
    switch: Switch
    nics_per_node: int
    nic_gbit_per_s: float
    gbit_per_s_per_gpu: float
    tiers: int
    radix: int = Field(description="Switch ports at the NIC speed")
    leaf_down_ports: int
    leaf_up_ports: int
    oversubscription: float
    core_oversubscription: float = Field(1.0, description="Spine down:up toward the core (3 tiers)")
    num_leaves: int
    num_spines: int
    num_cores: int
    num_switches: int
    num_groups: int = Field(0, description="Dragonfly groups (0 for other topologies)")
    num_planes: int = Field(1, description="Independent fabric planes")
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
    link_aggregation: bool = False
    lossless: bool = Field(True, description="Credit-based (IB) or PFC (RoCE) flow control")
    connectivity: Connectivity = Field(exclude=True, repr=False)


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


def design_compute_fabric(
    spec: ClusterSpec, compute: ComputeDesign, catalog: Catalog
) -> FabricDesign:
    """Size the compute fabric for every node (spares are cabled too)."""
    net = spec.network
    switch = catalog.switches[net.switch or DEFAULT_SWITCH[net.fabric]]
    expected = "infiniband" if net.fabric == "infiniband" else "ethernet"
    if switch.fabric != expected:
        raise CapacityError(
            f"network.switch: {switch.id!r} is an {switch.fabric} switch but network.fabric is "
            f"{net.fabric!r}; pick a matching switch (e.g. {DEFAULT_SWITCH[net.fabric]!r})"
        )
    nic = catalog.nics[compute.node.compute_nic]
    nics = net.nics_per_node or compute.node.num_compute_nics
    speed = net.nic_gbit_per_s or nic.port_gbit_per_s
    if net.link_aggregation and net.topology != "single-switch":
        raise CapacityError(
            "network.link_aggregation: only meaningful with topology: single-switch; remove it"
        )
    shape = size_fabric(
        topology=net.topology,
        num_nodes=compute.num_nodes,
        nics_per_node=nics,
        switch=switch,
        nic_gbit_per_s=speed,
        oversubscription=net.oversubscription,
        tiers=net.tiers,
        reserve_ufm_port=net.reserve_ufm_port,
        link_aggregation=net.link_aggregation,
        dragonfly_routers_per_group=net.dragonfly_routers_per_group,
        planes=net.planes,
        core_oversubscription=net.core_oversubscription,
    )
    design = _fabric_design(net.topology, net.fabric, switch, shape, speed, compute)
    lossless = net.lossless if net.lossless is not None else net.fabric == "infiniband"
    core = net.core_oversubscription if shape.tiers == 3 else 1.0
    return design.model_copy(update={"lossless": lossless, "core_oversubscription": core})


def _fabric_design(
    topology: str,
    fabric: str,
    switch: Switch,
    shape: FabricShape,
    speed: float,
    compute: ComputeDesign,
) -> FabricDesign:
    c = shape.connectivity
    _, _, n, tier = c.switch_links()
    endpoints = c.num_nodes * c.nics_per_node
    return FabricDesign(
        topology=topology,
        fabric=fabric,
        switch=switch,
        nics_per_node=c.nics_per_node,
        nic_gbit_per_s=speed,
        gbit_per_s_per_gpu=c.nics_per_node * speed / compute.gpus_per_node,
        tiers=shape.tiers,
        radix=shape.radix,
        leaf_down_ports=shape.leaf_down_ports,
        leaf_up_ports=shape.leaf_up_ports,
        oversubscription=shape.oversubscription,
        num_leaves=c.num_leaves,
        num_spines=c.num_spines,
        num_cores=c.num_cores,
        num_switches=c.num_switches,
        num_groups=c.num_groups,
        num_planes=c.num_planes,
        num_node_links=endpoints,
        num_leaf_spine_links=int(n[tier == 0].sum()),
        num_spine_core_links=int(n[tier == 1].sum()),
        num_local_links=int(n[tier == 2].sum()),
        num_global_links=int(n[tier == 3].sum()),
        num_ufm_links=4 if c.reserved_slots else 0,
        ports_used=_ports_used(c),
        bisection_gbit_per_s=_bisection_gbit_per_s(shape, speed),
        max_switch_hops=_max_switch_hops(shape),
        link_aggregation=c.link_aggregation,
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
    """One-way bandwidth across the worst bisection (design.md §2.2: N·B/(2r) for a Clos).

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
    if spec.network.storage_fabric and node.num_storage_ports:
        switch = catalog.switches[DEFAULT_SWITCH[spec.network.fabric]]
        speed = node.storage_port_gbit_per_s
        ports = (
            compute.num_nodes * node.num_storage_ports
            + storage.num_blocks * storage.block.num_ports
        )
        fabrics.append(_two_tier("storage", switch, speed, ports))
    inband = catalog.switches["sn4600c"]
    inband_ports = compute.num_nodes * node.num_inband_ports + num_mgmt_servers * 2
    if not spec.network.storage_fabric:
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
    oob = _oob(catalog.switches["sn2201"], oob_ports)
    inband_ports += oob.num_uplinks
    fabrics.append(_two_tier("in-band", inband, 100, inband_ports))
    fabrics.append(oob)
    return fabrics
