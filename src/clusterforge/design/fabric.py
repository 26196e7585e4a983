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

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, assert_never

from clusterforge.catalog import Switch
from clusterforge.design.connectivity import Connectivity
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


def _leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """(down, up) ports of a leaf for oversubscription r: d = R·r/(r+1), so that d/u = r
    (folded Clos, Al-Fares et al. 2008 §2)."""
    down = int(radix * oversubscription / (oversubscription + 1))
    return down, radix - down


def _two_tier_spines(num_leaves: int, up: int, radix: int) -> int | None:
    """Spines for a 2-tier Clos with equal links leaf→spine, or None if 2 tiers cannot do it."""
    if num_leaves > radix or up == 0:
        return None
    return smallest_divisor_at_least(up, num_leaves * up / radix)


def _clos(
    *,
    num_nodes: int,
    nics: int,
    radix: int,
    down: int,
    up: int,
    nodes_per_group: int,
    leaves_per_group: int,
    rail_optimized: bool,
    tiers: int | None,
    reserved_slots: int,
    oversubscription: float,
    core_oversubscription: float = 1.0,
) -> FabricShape:
    if tiers == 1:
        return _one_leaf(num_nodes, nics, radix)
    num_groups = math.ceil((num_nodes + reserved_slots) / nodes_per_group)
    num_leaves = num_groups * leaves_per_group
    common: dict[str, Any] = dict(
        num_nodes=num_nodes,
        nics_per_node=nics,
        rail_optimized=rail_optimized,
        num_leaves=num_leaves,
        nodes_per_leaf_group=nodes_per_group,
        leaves_per_group=leaves_per_group,
        reserved_slots=reserved_slots,
    )
    spines = _two_tier_spines(num_leaves, up, radix) if tiers in (None, 2) else None
    if num_leaves == 1 and tiers is None:
        conn = Connectivity(kind="clos", **common)
        return FabricShape(conn, 1, radix, down, up, oversubscription)
    if spines is not None:
        conn = Connectivity(
            kind="clos",
            num_spines=spines,
            leaves_per_pod=num_leaves,
            spines_per_pod=spines,
            links_leaf_spine=up // spines,
            **common,
        )
        return FabricShape(conn, 2, radix, down, up, oversubscription)
    if tiers == 2:
        raise CapacityError(
            f"network.tiers: 2 tiers reach at most {radix} leaves of radix {radix}, this design "
            f"needs {num_leaves}; set tiers: 3, a larger-radix switch, or fewer GPUs"
        )
    return _three_tier(
        common,
        num_leaves,
        radix,
        down,
        up,
        oversubscription,
        leaves_per_group,
        core_oversubscription,
    )


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


def _three_tier(
    common: dict[str, Any],
    num_leaves: int,
    radix: int,
    down: int,
    up: int,
    oversubscription: float,
    leaves_per_group: int,
    core_oversubscription: float = 1.0,
) -> FabricShape:
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
    spine_up = max(1, math.ceil(spine_down / core_oversubscription))
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
    return FabricShape(conn, 3, radix, down, up, oversubscription)


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
            "larger-radix switch, more planes or fewer GPUs"
        )


def size_fabric(p: FabricParams, *, num_nodes: int) -> FabricShape:
    """Size the compute fabric that joins ``num_nodes`` nodes built from ``p``.

    One node needs no fabric at all: its GPUs talk over NVLink/PCIe inside the chassis.
    """
    if num_nodes <= 1:
        return _no_fabric(num_nodes, p.nics_per_node)
    radix = _radix(p)
    _check_bounds(p, num_nodes, radix)
    if p.planes > 1:
        return _multi_plane(p, num_nodes)
    down, up = _leaf_ports(radix, p.oversubscription)
    match p.topology:
        case "single-switch":
            return _single_switch(num_nodes, p, radix)
        case "dragonfly":
            return _dragonfly(num_nodes, p.nics_per_node, radix, p.dragonfly_routers_per_group)
        case "rail-only":
            return _rail_only(num_nodes, p.nics_per_node, radix, down, up, p.oversubscription)
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
    return _clos(
        num_nodes=num_nodes,
        nics=p.nics_per_node,
        radix=radix,
        down=down,
        up=up,
        nodes_per_group=nodes_per_group,
        leaves_per_group=p.nics_per_node if rail else 1,
        rail_optimized=rail,
        tiers=p.tiers,
        reserved_slots=1 if p.reserve_ufm_port and rail else 0,
        oversubscription=p.oversubscription,
        core_oversubscription=p.core_oversubscription,
    )


def _no_fabric(num_nodes: int, nics: int) -> FabricShape:
    """No switch: zero or one node (its NICs stay free for storage or a later fabric)."""
    conn = Connectivity(
        kind="single-switch",
        num_nodes=0,
        nics_per_node=nics,
        rail_optimized=False,
        num_leaves=0,
        nodes_per_leaf_group=max(num_nodes, 1),
    )
    return FabricShape(conn, 0, 0, 0, 0, 1.0, notes=("one node: no compute fabric",))


def _single_switch(num_nodes: int, p: FabricParams, radix: int) -> FabricShape:
    nics, switch = p.nics_per_node, p.switch
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
        link_aggregation=p.link_aggregation,
    )
    return FabricShape(conn, 1, radix, ports, 0, 1.0)


def _rail_only(
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


def _dragonfly(num_nodes: int, nics: int, radix: int, routers_per_group: int | None) -> FabricShape:
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
