"""The switch graph of a fabric as counts and index arrays: :class:`Connectivity`.

Every topology is reduced to one Connectivity: which leaf each node NIC plugs into and an
edge list of switch-to-switch bundles.  The simulator and the generators read that, never the
topology name.  Switch ids are global: leaves ``[0, L)``, spines ``[L, L+S)``, cores
``[L+S, L+S+C)``; dragonfly routers are leaves; plane p of a multi-plane fabric owns the p-th
block of each tier.  Sizing (how many of each) lives in :mod:`clusterforge.design.fabric.sizing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal, assert_never

import numpy as np

__all__ = ["Connectivity", "ConnectivityKind"]

# How switches join the nodes: a folded Clos (leaf-spine, fat tree, rail-optimized), a
# dragonfly of router groups, one switch, or a rail-only fabric (one Clos per rail, no
# path between rails: Wang et al., "How to Build Low-cost Networks for Large Language
# Models (without Sacrificing Performance)", 2023).
ConnectivityKind = Literal["clos", "dragonfly", "single-switch", "rail-only"]


@dataclass(frozen=True)
class Connectivity:
    """The switch graph of one fabric, as counts and arrays (no object per link).

    ``node_slot`` shifts node indices when slots are reserved (UFM takes SU 0's slot 0).
    """

    kind: ConnectivityKind
    num_nodes: int
    nics_per_node: int
    rail_optimized: bool
    num_leaves: int
    num_spines: int = 0
    num_cores: int = 0
    nodes_per_leaf_group: int = 1  # nodes sharing one set of leaves (SU size, ToR size, rail size)
    leaves_per_group: int = 1  # leaves serving one node group (rails per SU; 1 for ToR)
    reserved_slots: int = 0
    # Clos upper tiers
    leaves_per_pod: int = 0
    spines_per_pod: int = 0
    links_leaf_spine: int = 0  # parallel links between a leaf and each spine of its pod
    cores_per_group: int = 0
    links_spine_core: int = 0
    # rail-only: each rail is its own Clos; leaves of rail r are [r*leaves_per_rail, ...)
    leaves_per_rail: int = 0
    spines_per_rail: int = 0
    # dragonfly
    routers_per_group: int = 0
    terminals_per_router: int = 0
    global_links_per_router: int = 0
    num_groups: int = 0
    links_per_group_pair: int = 0
    # link aggregation (single-switch 'design A'): NICs of a node bonded into one LAG
    link_aggregation: bool = False
    # independent planes (Clos only): NIC i joins plane i mod num_planes; the count fields
    # above are totals, the per-pod/per-group fields describe one plane
    num_planes: int = 1
    switch_names: tuple[str, ...] = field(default=(), repr=False)

    @property
    def num_switches(self) -> int:
        return self.num_leaves + self.num_spines + self.num_cores

    def plane_view(self) -> Connectivity:
        """One plane of a multi-plane fabric, with its own switch ids starting at 0."""
        p = self.num_planes
        return replace(
            self,
            num_planes=1,
            nics_per_node=self.nics_per_node // p,
            num_leaves=self.num_leaves // p,
            num_spines=self.num_spines // p,
            num_cores=self.num_cores // p,
        )

    def plane_of_switch(self, switch_id: np.ndarray) -> np.ndarray:
        """Plane of each switch id (0 for single-plane fabrics); vectorized."""
        ids = np.asarray(switch_id)
        lp, sp = self.num_leaves // self.num_planes, self.num_spines // self.num_planes
        cp = max(self.num_cores // self.num_planes, 1)
        return np.where(
            ids < self.num_leaves,
            ids // max(lp, 1),
            np.where(
                ids < self.num_leaves + self.num_spines,
                (ids - self.num_leaves) // max(sp, 1),
                (ids - self.num_leaves - self.num_spines) // cp,
            ),
        )

    def _to_global(self, plane: int, ids: np.ndarray) -> np.ndarray:
        """Map a plane view's switch ids to this fabric's global ids."""
        view = self.plane_view()
        lp, sp, cp = view.num_leaves, view.num_spines, view.num_cores
        return np.where(
            ids < lp,
            plane * lp + ids,
            np.where(
                ids < lp + sp,
                self.num_leaves + plane * sp + (ids - lp),
                self.num_leaves + self.num_spines + plane * cp + (ids - lp - sp),
            ),
        )

    def leaf_of(self, node: np.ndarray, nic: np.ndarray) -> np.ndarray:
        """Leaf id of each (node, nic) pair; vectorized over numpy arrays."""
        if self.num_planes > 1:
            nic = np.asarray(nic)
            plane = nic % self.num_planes
            local = self.plane_view().leaf_of(node, nic // self.num_planes)
            return np.asarray(plane * (self.num_leaves // self.num_planes) + local)
        slot = np.asarray(node) + self.reserved_slots
        nic = np.asarray(nic)
        match self.kind:
            case "single-switch":
                return np.zeros_like(slot)
            case "dragonfly":
                return np.asarray((slot * self.nics_per_node + nic) // self.terminals_per_router)
            case "rail-only":
                return np.asarray(nic * self.leaves_per_rail + slot // self.nodes_per_leaf_group)
            case "clos":
                group = slot // self.nodes_per_leaf_group
                if self.rail_optimized:
                    return np.asarray(group * self.leaves_per_group + nic)
                return np.asarray(group)
            case _:
                assert_never(self.kind)

    def switch_name(self, switch_id: int) -> str:
        """Stable host name of a switch: leaf-0001, spine-0001, core-0001 (router-0001 for a
        dragonfly)."""
        if switch_id < self.num_leaves:
            prefix = "router" if self.kind == "dragonfly" else "leaf"
            return f"{prefix}-{switch_id + 1:04d}"
        if switch_id < self.num_leaves + self.num_spines:
            return f"spine-{switch_id - self.num_leaves + 1:04d}"
        return f"core-{switch_id - self.num_leaves - self.num_spines + 1:04d}"

    def group_of(self, node: np.ndarray) -> np.ndarray:
        """Node group of each node: scalable unit (rail-optimized), ToR leaf (leaf-spine),
        dragonfly group; vectorized."""
        slot = np.asarray(node) + self.reserved_slots
        if self.kind == "dragonfly":
            per_group = self.routers_per_group * self.terminals_per_router
            return (slot * self.nics_per_node) // per_group
        return slot // max(1, self.nodes_per_leaf_group)

    def node_links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(node, nic, leaf) for every node NIC port."""
        node, nic = np.divmod(np.arange(self.num_nodes * self.nics_per_node), self.nics_per_node)
        return node, nic, self.leaf_of(node, nic)

    def switch_links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(switch_a, switch_b, num_links, tier) bundles; tier 0 = leaf-spine, 1 = spine-core,
        2 = dragonfly local, 3 = dragonfly global."""
        if self.num_planes > 1:
            view = self.plane_view()
            parts = [view.switch_links() for _ in range(self.num_planes)]
            a = np.concatenate([self._to_global(p, part[0]) for p, part in enumerate(parts)])
            b = np.concatenate([self._to_global(p, part[1]) for p, part in enumerate(parts)])
            return (
                a,
                b,
                np.concatenate([x[2] for x in parts]),
                np.concatenate([x[3] for x in parts]),
            )
        empty = np.zeros(0, dtype=np.int64)
        match self.kind:
            case "dragonfly":
                return _dragonfly_links(self)
            case "rail-only":
                return _rail_only_links(self)
            case "single-switch":
                return empty, empty, empty, empty
            case "clos":
                return _clos_links(self) if self.num_spines else (empty, empty, empty, empty)
            case _:
                assert_never(self.kind)


def _clos_links(c: Connectivity) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    leaf = np.repeat(np.arange(c.num_leaves), c.spines_per_pod)
    pod = leaf // c.leaves_per_pod
    spine = (
        c.num_leaves + pod * c.spines_per_pod + np.tile(np.arange(c.spines_per_pod), c.num_leaves)
    )
    a, b = [leaf], [spine]
    n = [np.full(leaf.size, c.links_leaf_spine)]
    t = [np.zeros(leaf.size, dtype=np.int64)]
    if c.num_cores:
        sp = np.repeat(np.arange(c.num_spines), c.cores_per_group)
        group = sp % c.spines_per_pod
        core_local = np.tile(np.arange(c.cores_per_group), c.num_spines)
        core = c.num_leaves + c.num_spines + group * c.cores_per_group + core_local
        a.append(c.num_leaves + sp)
        b.append(core)
        n.append(np.full(sp.size, c.links_spine_core))
        t.append(np.ones(sp.size, dtype=np.int64))
    return np.concatenate(a), np.concatenate(b), np.concatenate(n), np.concatenate(t)


def _rail_only_links(c: Connectivity) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if c.spines_per_rail == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    leaf = np.repeat(np.arange(c.num_leaves), c.spines_per_rail)
    rail = leaf // c.leaves_per_rail
    spine = (
        c.num_leaves
        + rail * c.spines_per_rail
        + np.tile(np.arange(c.spines_per_rail), c.num_leaves)
    )
    return leaf, spine, np.full(leaf.size, c.links_leaf_spine), np.zeros(leaf.size, dtype=np.int64)


def _dragonfly_links(c: Connectivity) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a_, g = c.routers_per_group, c.num_groups
    i, j = np.triu_indices(a_, k=1)
    base = (np.arange(g) * a_)[:, None]
    la, lb = (base + i).ravel(), (base + j).ravel()
    gi, gj = np.triu_indices(g, k=1)
    # Each group has a·h global ports ("slots"); its link number k to peer q (peers numbered
    # without itself) takes slot k·(g−1) + q, and slot s sits on router s // h.  With fewer than
    # a·h + 1 groups every pair gets m = ⌊a·h / (g−1)⌋ parallel links, and the round-robin puts
    # them on different routers, so no router's local links carry a whole pair's traffic.
    m, h = max(c.links_per_group_pair, 1), c.global_links_per_router
    k = np.arange(m)
    peers = max(c.num_groups - 1, 1)
    slot_a = (k[None, :] * peers + (gj - 1)[:, None]).ravel()
    slot_b = (k[None, :] * peers + gi[:, None]).ravel()
    ra = np.repeat(gi, m) * a_ + slot_a // h
    rb = np.repeat(gj, m) * a_ + slot_b // h
    pairs, counts = np.unique(np.stack([ra, rb]), axis=1, return_counts=True)
    ra, rb = pairs[0], pairs[1]
    a = np.concatenate([la, ra])
    b = np.concatenate([lb, rb])
    n = np.concatenate([np.ones(la.size, dtype=np.int64), counts])
    t = np.concatenate([np.full(la.size, 2), np.full(ra.size, 3)])
    return a, b, n, t
