"""Sizing of the Clos topologies (rail-optimized, leaf-spine, fat-tree) and of the others
(single switch, rail-only, dragonfly) as :class:`FabricShape` values.

Formulas: leaf ports d = R·r/(r+1) (folded Clos, Al-Fares et al., SIGCOMM 2008 §2); a 2-tier
Clos with equal links from each leaf to each spine (S divides u, S·R ≥ L·u, L ≤ R; this
reproduces NVIDIA's DGX SuperPOD H100 compute-fabric table); 3-tier pods of R/2 leaves; a
balanced dragonfly a = 2p = 2h, k = p + a + h − 1 (Kim et al., ISCA 2008); rail-only (Wang
et al., arXiv 2307.12169).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from clusterforge.catalog import Switch
from clusterforge.design.fabric.connectivity import Connectivity
from clusterforge.errors import CapacityError

__all__ = [
    "ClosPorts",
    "FabricShape",
    "clos",
    "dragonfly",
    "leaf_ports",
    "no_fabric",
    "rail_only",
    "single_switch",
    "smallest_divisor_at_least",
]


@dataclass(frozen=True)
class FabricShape:
    """Sizing result of one fabric: the connectivity plus the port arithmetic behind it."""

    connectivity: Connectivity
    tiers: int
    radix: int
    leaf_down_ports: int
    leaf_up_ports: int
    oversubscription: float
    notes: tuple[str, ...] = ()


def smallest_divisor_at_least(n: int, lower: float) -> int:
    """Smallest divisor of ``n`` that is ≥ ``lower`` (n itself if none smaller)."""
    for d in range(max(1, math.ceil(lower)), n + 1):
        if n % d == 0:
            return d
    return n


def leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """(down, up) ports of a leaf for oversubscription r: d = R·r/(r+1), so that d/u = r
    (folded Clos, Al-Fares et al. 2008 §2)."""
    down = int(radix * oversubscription / (oversubscription + 1))
    return down, radix - down


def _two_tier_spines(num_leaves: int, up: int, radix: int) -> int | None:
    """Spines for a 2-tier Clos with equal links leaf→spine, or None if 2 tiers cannot do it."""
    if num_leaves > radix or up == 0:
        return None
    return smallest_divisor_at_least(up, num_leaves * up / radix)


@dataclass(frozen=True)
class ClosPorts:
    """The port arithmetic of one Clos plane: what every tier is sized from."""

    nics_per_node: int
    radix: int
    down: int  # leaf ports toward nodes
    up: int  # leaf ports toward spines
    nodes_per_group: int  # nodes sharing one set of leaves (SU, ToR group)
    leaves_per_group: int  # rails per SU; 1 for a top-of-rack leaf
    rail_optimized: bool
    reserved_slots: int  # node slots held for UFM appliances
    oversubscription: float
    core_oversubscription: float = 1.0

    def shape(self, conn: Connectivity, tiers: int) -> FabricShape:
        return FabricShape(conn, tiers, self.radix, self.down, self.up, self.oversubscription)


def clos(ports: ClosPorts, *, num_nodes: int, tiers: int | None) -> FabricShape:
    """The smallest Clos (or exactly ``tiers`` tiers) that joins ``num_nodes`` nodes.

    When every node port fits on one switch, that switch is the smallest fabric whatever the
    flavour: a lone leaf has no up-links to keep, so all its ports face nodes (64 NDR NICs on
    one 64-port QM9700), and every pair of GPUs is one hop apart, rails or not.
    """
    one_switch = num_nodes * ports.nics_per_node <= ports.radix and not ports.reserved_slots
    if tiers == 1 or (tiers is None and one_switch):
        return _one_leaf(num_nodes, ports.nics_per_node, ports.radix)
    num_groups = math.ceil((num_nodes + ports.reserved_slots) / ports.nodes_per_group)
    num_leaves = num_groups * ports.leaves_per_group
    common: dict[str, Any] = dict(
        num_nodes=num_nodes,
        nics_per_node=ports.nics_per_node,
        rail_optimized=ports.rail_optimized,
        num_leaves=num_leaves,
        nodes_per_leaf_group=ports.nodes_per_group,
        leaves_per_group=ports.leaves_per_group,
        reserved_slots=ports.reserved_slots,
    )
    if num_leaves == 1 and tiers is None:
        return ports.shape(Connectivity(kind="clos", **common), 1)
    radix, up = ports.radix, ports.up
    spines = _two_tier_spines(num_leaves, up, radix) if tiers in (None, 2) else None
    if spines is not None:
        conn = Connectivity(
            kind="clos",
            num_spines=spines,
            leaves_per_pod=num_leaves,
            spines_per_pod=spines,
            links_leaf_spine=up // spines,
            **common,
        )
        return ports.shape(conn, 2)
    if tiers == 2:
        raise CapacityError(
            f"network.tiers: 2 tiers reach at most {radix} leaves of radix {radix}, this design "
            f"needs {num_leaves}; set tiers: 3, a larger-radix switch, or fewer GPUs"
        )
    return _three_tier(ports, common, num_leaves)


def _one_leaf(num_nodes: int, nics: int, radix: int) -> FabricShape:
    """One tier: a single switch with every port facing a node (no up-links to keep)."""
    ports = num_nodes * nics
    if ports > radix:
        raise CapacityError(
            f"network.tiers: one switch tier holds {radix} ports at this speed, this design "
            f"needs {ports}; set tiers: 2 or leave tiers unset (smallest that fits)"
        )
    conn = Connectivity(
        kind="clos",
        num_nodes=num_nodes,
        nics_per_node=nics,
        rail_optimized=False,
        num_leaves=1,
        nodes_per_leaf_group=num_nodes,
    )
    return FabricShape(conn, 1, radix, ports, 0, 1.0)


def _three_tier(ports: ClosPorts, common: dict[str, Any], num_leaves: int) -> FabricShape:
    radix, up, leaves_per_group = ports.radix, ports.up, ports.leaves_per_group
    half = radix // 2
    # A pod holds whole leaf groups (SUs) and at most R/2 leaves: each spine has R/2 down ports.
    groups_per_pod = max(1, half // leaves_per_group)
    leaves_per_pod = groups_per_pod * leaves_per_group
    num_pods = math.ceil(num_leaves / leaves_per_pod)
    spines_per_pod = smallest_divisor_at_least(up, up * leaves_per_pod / half)
    links_leaf_spine = up // spines_per_pod
    num_spines = num_pods * spines_per_pod
    # As many up as down (non-blocking spine tier) unless the core is oversubscribed, as between
    # Meta's AI zones (ATSW, ~7:1; Gangidi et al., SIGCOMM 2024 §3): then spine up-links =
    # down-links / r_core.
    spine_down = leaves_per_pod * links_leaf_spine
    spine_up = max(1, math.ceil(spine_down / ports.core_oversubscription))
    cores_per_group = smallest_divisor_at_least(spine_up, num_pods * spine_up / radix)
    if num_pods * spine_up / cores_per_group > radix:
        raise CapacityError(
            f"network: {num_leaves} leaves exceed what a 3-tier fabric of radix-{radix} switches "
            f"can join (at most {radix**3 // 4} endpoints); use a larger-radix switch, "
            "oversubscription, or topology: dragonfly"
        )
    conn = Connectivity(
        kind="clos",
        num_spines=num_spines,
        num_cores=spines_per_pod * cores_per_group,
        leaves_per_pod=leaves_per_pod,
        spines_per_pod=spines_per_pod,
        links_leaf_spine=links_leaf_spine,
        cores_per_group=cores_per_group,
        links_spine_core=spine_up // cores_per_group,
        **common,
    )
    return ports.shape(conn, 3)


def no_fabric(num_nodes: int) -> FabricShape:
    """No switch: one node (or none) talks over NVLink/PCIe inside its chassis; no NIC of it
    is cabled to a compute fabric (``nics_per_node`` 0), its NICs stay free."""
    conn = Connectivity(
        kind="single-switch",
        num_nodes=num_nodes,
        nics_per_node=0,
        rail_optimized=False,
        num_leaves=0,
        nodes_per_leaf_group=max(num_nodes, 1),
    )
    return FabricShape(conn, 0, 0, 0, 0, 1.0, notes=("one node: no compute fabric",))


def single_switch(
    num_nodes: int, nics: int, radix: int, switch: Switch, link_aggregation: bool
) -> FabricShape:
    ports = num_nodes * nics
    if ports > radix:
        raise CapacityError(
            f"network.topology: single-switch needs {ports} ports but {switch.id} has {radix} at "
            "this speed; use leaf-spine or rail-optimized, or a larger (chassis) switch"
        )
    conn = Connectivity(
        kind="single-switch",
        num_nodes=num_nodes,
        nics_per_node=nics,
        rail_optimized=False,
        num_leaves=1,
        nodes_per_leaf_group=num_nodes,
        link_aggregation=link_aggregation,
    )
    return FabricShape(conn, 1, radix, ports, 0, 1.0)


def rail_only(
    num_nodes: int, nics: int, radix: int, down: int, up: int, oversubscription: float
) -> FabricShape:
    """Rail-only (Wang et al., arXiv 2307.12169): one Clos per rail, no spine across rails."""
    leaves_per_rail = math.ceil(num_nodes / (radix if num_nodes <= radix else down))
    spines = 0
    nodes_per_leaf = num_nodes if leaves_per_rail == 1 else down
    if leaves_per_rail > 1:
        spines = _two_tier_spines(leaves_per_rail, up, radix) or 0
        if spines == 0:
            raise CapacityError(
                f"network.topology: rail-only with 2-tier rails reaches {radix * radix // 2} nodes "
                f"per rail at radix {radix}; this design has {num_nodes}"
            )
    conn = Connectivity(
        kind="rail-only",
        num_nodes=num_nodes,
        nics_per_node=nics,
        rail_optimized=True,
        num_leaves=leaves_per_rail * nics,
        num_spines=spines * nics,
        nodes_per_leaf_group=nodes_per_leaf,
        leaves_per_rail=leaves_per_rail,
        spines_per_rail=spines,
        links_leaf_spine=(up // spines) if spines else 0,
    )
    tiers = 2 if spines else 1
    return FabricShape(conn, tiers, radix, nodes_per_leaf, up if spines else 0, oversubscription)


def dragonfly(num_nodes: int, nics: int, radix: int, routers_per_group: int | None) -> FabricShape:
    """Balanced dragonfly a = 2p = 2h with k = p + a + h − 1 ≤ R (Kim et al. 2008)."""
    p = (radix + 1) // 4
    a = routers_per_group or 2 * p
    h = p
    if p + a + h - 1 > radix:
        raise CapacityError(
            f"network.dragonfly_routers_per_group: {a} routers per group need radix "
            f"{p + a + h - 1} > {radix}; use at most {radix - 2 * p + 1}"
        )
    endpoints = num_nodes * nics
    groups = max(1, math.ceil(endpoints / (a * p)))
    if groups > a * h + 1:
        raise CapacityError(
            f"network.topology: a dragonfly of radix {radix} reaches {a * p * (a * h + 1)} "
            f"endpoints; this design has {endpoints}"
        )
    per_pair = (a * h) // (groups - 1) if groups > 1 else 0
    conn = Connectivity(
        kind="dragonfly",
        num_nodes=num_nodes,
        nics_per_node=nics,
        rail_optimized=False,
        num_leaves=groups * a,
        routers_per_group=a,
        terminals_per_router=p,
        global_links_per_router=h,
        num_groups=groups,
        links_per_group_pair=per_pair,
    )
    return FabricShape(conn, 2, radix, p, a - 1 + h, 1.0)
