"""Compute-fabric sizing: leaves, spines, cores or dragonfly routers, from first principles.

Every topology is reduced to one :class:`Connectivity`: which leaf each node NIC plugs into and
an edge list of switch-to-switch bundles.  The simulator and the generators read that, never
the topology name, so a new topology only has to produce a Connectivity.

Switch ids are global: leaves ``[0, L)``, spines ``[L, L+S)``, cores ``[L+S, L+S+C)``; dragonfly
routers are leaves.  Formulas (NVIDIA DGX SuperPOD reference architecture; Al-Fares et al.,
SIGCOMM 2008; Kim et al., ISCA 2008):

* leaf ports: radix R at the NIC speed, ``d`` down and ``u`` up, oversubscription ``r = d/u``,
  so ``d = R·r/(r+1)`` (folded Clos);
* 1 tier: a single leaf when every node port fits on it (smallest fabric that fits);
* 2-tier: each leaf sends the same number of links to every spine ("equal links from each leaf
  to each spine"), so the spine count S divides ``u`` and ``S·R ≥ L·u``; feasible while
  ``L ≤ R``.  This reproduces NVIDIA's DGX H100 SuperPOD compute-fabric table (1-4 SUs: 4, 8,
  16, 16 spines);
* 3-tier: pods of ``R/2`` leaves and ``u`` spines (each spine R/2 down, R/2 up), spine j of every
  pod joins core group j; a full k-ary fat tree (Al-Fares 2008) has k³/4 hosts, 5k²/4 switches;
* dragonfly (Kim et al. 2008): router radix ``k = p + a + h − 1``, balanced ``a = 2p = 2h``,
  at most ``a·h + 1`` groups, ``N = a·p·(a·h+1)`` terminals.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, assert_never

from clusterforge.catalog import Switch
from clusterforge.design.fabric.clos import (
    ClosPorts,
    FabricShape,
    clos,
    dragonfly,
    leaf_ports,
    no_fabric,
    rail_only,
    single_switch,
    smallest_divisor_at_least,
)
from clusterforge.design.fabric.connectivity import Connectivity
from clusterforge.errors import CapacityError
from clusterforge.spec import Topology

if TYPE_CHECKING:
    from clusterforge.spec import NetworkSpec

__all__ = [
    "Connectivity",
    "FabricParams",
    "FabricShape",
    "size_fabric",
    "smallest_divisor_at_least",
]


@dataclass(frozen=True)
class FabricParams:
    """What a compute fabric is built from, independent of how many nodes it joins.

    ``nics_per_node`` and ``nic_gbit_per_s`` are resolved (the spec's values or the node's).
    With ``planes`` > 1 (Clos topologies only) each plane is sized for ``nics_per_node /
    planes`` NICs per node and replicated: NIC i joins plane i mod planes, and planes share no
    switch (multi-plane designs such as Alibaba HPN's dual plane, SIGCOMM 2024 §4).
    """

    topology: Topology
    switch: Switch
    nics_per_node: int
    nic_gbit_per_s: float
    oversubscription: float = 1.0
    tiers: int | None = None
    reserve_ufm_port: bool = False
    link_aggregation: bool = False
    dragonfly_routers_per_group: int | None = None
    planes: int = 1
    core_oversubscription: float = 1.0

    @classmethod
    def from_spec(
        cls, net: NetworkSpec, *, switch: Switch, nics_per_node: int, nic_gbit_per_s: float
    ) -> FabricParams:
        return cls(
            topology=net.topology,
            switch=switch,
            nics_per_node=nics_per_node,
            nic_gbit_per_s=nic_gbit_per_s,
            oversubscription=net.oversubscription,
            tiers=net.tiers,
            reserve_ufm_port=net.reserve_ufm_port,
            link_aggregation=net.link_aggregation,
            dragonfly_routers_per_group=net.dragonfly_routers_per_group,
            planes=net.planes,
            core_oversubscription=net.core_oversubscription,
        )


def _radix(p: FabricParams) -> int:
    radix = p.switch.radix_at(p.nic_gbit_per_s)
    if radix is None:
        speeds = ", ".join(f"{m.port_gbit_per_s:g}" for m in p.switch.port_modes)
        raise CapacityError(
            f"network.nic_gbit_per_s: switch {p.switch.id!r} has no {p.nic_gbit_per_s:g} Gb/s "
            f"ports (it offers {speeds} Gb/s); change the NIC speed or network.switch"
        )
    return radix


def _check_bounds(p: FabricParams, num_nodes: int, radix: int) -> None:
    """Refuse fabrics no switch tier can join before any per-port work is done, so that the
    cost of sizing never grows with an absurd input.  A 3-tier Clos of radix R joins at most
    R³/4 endpoints (Al-Fares et al. 2008 §2.2) and a node cannot use more NICs than a leaf
    has ports."""
    if p.nics_per_node > radix:
        raise CapacityError(
            f"network.nics_per_node: {p.nics_per_node} NICs per node exceed the {radix} ports of "
            f"a {p.switch.id} leaf; use the node's own NIC count"
        )
    limit = p.planes * radix**3 // 4
    clos = p.topology in ("rail-optimized", "leaf-spine", "fat-tree")
    if clos and num_nodes * p.nics_per_node > limit:
        raise CapacityError(
            f"network: {num_nodes:,} nodes x {p.nics_per_node} NICs exceed the {limit:,} "
            f"endpoints that {p.planes} plane(s) of 3-tier radix-{radix} Clos can join; use a "
            "larger-radix switch, more planes or fewer GPUs",
            fix={"network.planes": -(-num_nodes * p.nics_per_node // (radix**3 // 4))},
        )


def size_fabric(p: FabricParams, *, num_nodes: int) -> FabricShape:
    """Size the compute fabric that joins ``num_nodes`` nodes built from ``p``.

    One node needs no fabric at all: its GPUs talk over NVLink/PCIe inside the chassis.
    """
    if num_nodes <= 1:
        return no_fabric(num_nodes)
    radix = _radix(p)
    _check_bounds(p, num_nodes, radix)
    if p.planes > 1:
        return _multi_plane(p, num_nodes)
    down, up = leaf_ports(radix, p.oversubscription)
    match p.topology:
        case "single-switch":
            return single_switch(num_nodes, p.nics_per_node, radix, p.switch, p.link_aggregation)
        case "dragonfly":
            return dragonfly(num_nodes, p.nics_per_node, radix, p.dragonfly_routers_per_group)
        case "rail-only":
            return rail_only(num_nodes, p.nics_per_node, radix, down, up, p.oversubscription)
        case "rail-optimized" | "leaf-spine" | "fat-tree":
            return _clos_of(p, num_nodes, radix, down, up)
        case _:
            assert_never(p.topology)


def _clos_of(p: FabricParams, num_nodes: int, radix: int, down: int, up: int) -> FabricShape:
    rail = p.topology == "rail-optimized"
    nodes_per_group = down if rail else down // p.nics_per_node
    if nodes_per_group < 1:
        raise CapacityError(
            f"network.nics_per_node: {p.nics_per_node} NICs do not fit the {down} down ports of "
            f"a {p.switch.id} leaf; use topology: rail-optimized or fewer NICs per node"
        )
    ports = ClosPorts(
        nics_per_node=p.nics_per_node,
        radix=radix,
        down=down,
        up=up,
        nodes_per_group=nodes_per_group,
        leaves_per_group=p.nics_per_node if rail else 1,
        rail_optimized=rail,
        reserved_slots=1 if p.reserve_ufm_port and rail else 0,
        oversubscription=p.oversubscription,
        core_oversubscription=p.core_oversubscription,
    )
    return clos(ports, num_nodes=num_nodes, tiers=p.tiers)


def _multi_plane(p: FabricParams, num_nodes: int) -> FabricShape:
    if p.topology not in ("rail-optimized", "leaf-spine", "fat-tree"):
        raise CapacityError(
            f"network.planes: {p.planes} planes need a Clos topology (rail-optimized, "
            f"leaf-spine, fat-tree), not {p.topology!r}; set planes: 1"
        )
    if p.nics_per_node % p.planes:
        raise CapacityError(
            f"network.planes: {p.planes} planes do not divide {p.nics_per_node} NICs per node; "
            "use a divisor of the NIC count"
        )
    one = size_fabric(
        replace(p, planes=1, nics_per_node=p.nics_per_node // p.planes), num_nodes=num_nodes
    )
    c = one.connectivity
    conn = replace(
        c,
        nics_per_node=p.nics_per_node,
        num_leaves=c.num_leaves * p.planes,
        num_spines=c.num_spines * p.planes,
        num_cores=c.num_cores * p.planes,
        num_planes=p.planes,
    )
    return replace(one, connectivity=conn)
