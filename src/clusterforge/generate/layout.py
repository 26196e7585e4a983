"""Where each node sits: its scheduling tree (for Slurm, Kueue, Volcano), rack and NVLink block.

The fabric's :class:`~clusterforge.design.fabric.sizing.Connectivity` is a graph; schedulers want a
tree.  Level 0 groups the nodes that share their leaf switches (a scalable unit of rail
leaves, a top-of-rack leaf, a rail-only node group, a dragonfly group); level 1 stands for
the spines above a pod of level-0 groups; level 2 for the core switches above the pods.  A
tree switch that stands for several real switches lists them in ``members``.  Slurm's
topology/tree expects exactly this (topology.conf(5): leaf switches with nodes, switches
above them); a multi-spine Clos is one switch per tier for scheduling, since every spine of a
pod reaches every leaf of it.

A multi-plane Clos (``Connectivity.num_planes`` > 1) has the same tree: a node group (SU,
ToR group) holds the same nodes in every plane and planes share no switch, so each tree
switch stands for its leaves, spines or cores in *every* plane (plane p's copy of plane 0's
switch i is ``i + p·per_plane`` within its tier).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterforge.design import Design
from clusterforge.design.fabric.sizing import Connectivity
from clusterforge.generate.common import checked_name

__all__ = [
    "SPARE_GROUP",
    "NodePlacement",
    "TreeSwitch",
    "node_placements",
    "nodes_per_nvlink_block",
    "nvlink_blocks",
    "switch_tree",
]


@dataclass(frozen=True)
class TreeSwitch:
    """A switch of the scheduling tree: nodes (level 0) or child switches (levels 1, 2)."""

    name: str
    level: int
    nodes: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    members: tuple[str, ...] = ()  # the real fabric switches this one stands for


@dataclass(frozen=True)
class NodePlacement:
    """One GPU node with everything a scheduler or a dashboard labels it with."""

    name: str
    index: int
    spare: bool
    group: str  # level-0 tree switch
    pod: str | None  # level-1 tree switch, None for single-tier fabrics
    rack: str | None  # None while the design has no rack layout
    nvlink_block: str | None  # None when the NVLink domain is one node


def _group_prefix(c: Connectivity) -> str:
    if c.kind == "dragonfly":
        return "dfgroup"
    if c.kind == "rail-only":
        return "railgroup"
    if c.kind == "clos" and c.rail_optimized:
        return "su"
    return "leaf"


def _group_ids(c: Connectivity) -> np.ndarray:
    nodes = np.arange(c.num_nodes)
    if c.kind == "rail-only":
        return (nodes + c.reserved_slots) // c.nodes_per_leaf_group
    if c.kind == "single-switch":
        return np.zeros(c.num_nodes, dtype=np.int64)
    return c.group_of(nodes)


def _every_plane(c: Connectivity, ids: range, first: int, per_plane: int) -> list[int]:
    """Global ids of plane 0's switches ``ids`` and their copies in the other planes (one
    tier: ``first`` is its first id, ``per_plane`` its switches per plane)."""
    return [first + p * per_plane + (i - first) for p in range(c.num_planes) for i in ids]


def _group_members(c: Connectivity, group: int) -> tuple[str, ...]:
    """The real leaf switches (or routers) that a level-0 group stands for, in every plane."""
    ids: range | list[int]
    if c.kind == "dragonfly":
        ids = range(group * c.routers_per_group, (group + 1) * c.routers_per_group)
    elif c.kind == "rail-only":
        ids = range(group, c.num_leaves, c.leaves_per_rail)
    elif c.kind == "clos" and c.rail_optimized:
        ids = range(group * c.leaves_per_group, (group + 1) * c.leaves_per_group)
    else:
        ids = range(group, group + 1)
    if c.num_planes > 1:
        ids = _every_plane(c, ids, 0, c.num_leaves // c.num_planes)
    return tuple(c.switch_name(i) for i in ids)


def _pod_of_group(c: Connectivity, group: int) -> int:
    """Pod index of a level-0 group in a 3-tier Clos (pods hold whole groups)."""
    first_leaf = group * c.leaves_per_group if c.rail_optimized else group
    return first_leaf // c.leaves_per_pod


def _level0(c: Connectivity, names: list[str]) -> list[TreeSwitch]:
    groups = _group_ids(c)
    prefix = _group_prefix(c)
    switches = []
    for g in sorted(set(groups.tolist())):
        members = _group_members(c, g)
        name = members[0] if prefix == "leaf" else f"{prefix}-{g + 1:04d}"
        nodes = tuple(names[i] for i in np.flatnonzero(groups == g))
        switches.append(
            TreeSwitch(checked_name(name, "switch name"), 0, nodes=nodes, members=members)
        )
    return switches


def _upper_levels(c: Connectivity, level0: list[TreeSwitch]) -> list[TreeSwitch]:
    """Level 1 (spines) and level 2 (cores) above the level-0 groups."""
    if c.kind == "dragonfly":
        if c.num_groups <= 1:
            return []
        members = tuple(s.name for s in level0)
        return [TreeSwitch("global", 1, children=members, members=members)]
    if c.num_spines == 0:
        return []
    spine_names = tuple(c.switch_name(c.num_leaves + i) for i in range(c.num_spines))
    if c.num_cores == 0:
        return [
            TreeSwitch("spines", 1, children=tuple(s.name for s in level0), members=spine_names)
        ]
    return _three_tier(c, level0, spine_names)


def _three_tier(
    c: Connectivity, level0: list[TreeSwitch], spine_names: tuple[str, ...]
) -> list[TreeSwitch]:
    pods: dict[int, list[str]] = {}
    # Clos groups are numbered 0, 1, ... without gaps, so a group's id is its position.
    for group, switch in enumerate(level0):
        pods.setdefault(_pod_of_group(c, group), []).append(switch.name)
    spines = c.num_spines // c.num_planes
    tier1 = [
        TreeSwitch(
            f"pod-{p + 1:04d}",
            1,
            children=tuple(children),
            members=tuple(
                spine_names[i]
                for i in _every_plane(
                    c, range(p * c.spines_per_pod, (p + 1) * c.spines_per_pod), 0, spines
                )
            ),
        )
        for p, children in sorted(pods.items())
    ]
    core_names = tuple(c.switch_name(c.num_leaves + c.num_spines + i) for i in range(c.num_cores))
    tier2 = TreeSwitch("cores", 2, children=tuple(s.name for s in tier1), members=core_names)
    return [*tier1, tier2]


SPARE_GROUP = "spare-pool"


def switch_tree(design: Design) -> list[TreeSwitch]:
    """The scheduling tree of ``design``'s compute fabric, level 0 first.

    Spare nodes that the fabric does not cable with the training nodes (the nodes after the
    connectivity's ``num_nodes``: a spare pool on its own leaves, or cold spares cabled on
    swap) form their own level-0 group :data:`SPARE_GROUP` under no spine, so no job spans
    them and the training nodes.
    """
    c = design.fabric.connectivity
    names = [checked_name(n, "node name") for n in design.compute.node_names]
    level0 = _level0(c, names)
    tree = [*level0, *_upper_levels(c, level0)]
    if len(names) > c.num_nodes:
        tree.insert(len(level0), TreeSwitch(SPARE_GROUP, 0, nodes=tuple(names[c.num_nodes :])))
    return tree


def nodes_per_nvlink_block(design: Design) -> int:
    """Nodes that share one NVLink domain (18 trays of a GB200 NVL72 rack; 1 for an HGX)."""
    compute = design.compute
    return max(1, compute.nvlink_domain_gpus // compute.gpus_per_node)


def _racks_of_nodes(design: Design) -> dict[str, str]:
    return {
        device.name: rack.name
        for rack in design.racks
        for device in rack.devices
        if device.kind == "node"
    }


def nvlink_blocks(design: Design) -> dict[str, str]:
    """NVLink block of each node, for NVLink domains larger than a node (else empty).

    A rack-scale system (GB200/GB300 NVL72: 18 compute trays and their NVLink switch trays)
    is one rack, so a block is read from the design's racks, never assumed to be N
    consecutive nodes: the nodes of one rack, in node order, split into domains of
    :func:`nodes_per_nvlink_block` (a rack holds one domain; a partly filled last rack gives
    a smaller block).  Blocks are named after their rack (``nvl-<rack>``, with ``-<k>``
    when a rack holds several).  A design without racks falls back to consecutive nodes.
    """
    per_block = nodes_per_nvlink_block(design)
    if per_block == 1:
        return {}
    racks = _racks_of_nodes(design)
    names = design.compute.node_names
    by_rack: dict[str, list[str]] = {}
    for index, name in enumerate(names):
        by_rack.setdefault(racks.get(name) or f"{index // per_block + 1:04d}", []).append(name)
    blocks: dict[str, str] = {}
    for rack, members in by_rack.items():
        chunks = [members[i : i + per_block] for i in range(0, len(members), per_block)]
        for k, chunk in enumerate(chunks):
            block = f"nvl-{rack}" if len(chunks) == 1 else f"nvl-{rack}-{k + 1}"
            blocks.update(dict.fromkeys(chunk, checked_name(block, "NVLink block name")))
    return blocks


def node_placements(design: Design) -> list[NodePlacement]:
    """Every GPU node with its group, pod, rack and NVLink block, in node order."""
    tree = switch_tree(design)
    group_of = {node: s.name for s in tree if s.level == 0 for node in s.nodes}
    pod_of = {child: s.name for s in tree if s.level == 1 for child in s.children}
    racks = _racks_of_nodes(design)
    blocks = nvlink_blocks(design)
    compute = design.compute
    placements = []
    for index, name in enumerate(compute.node_names):
        group = group_of[name]
        rack = racks.get(name)
        placements.append(
            NodePlacement(
                name=name,
                index=index,
                spare=index >= compute.num_training_nodes,
                group=group,
                pod=pod_of.get(group),
                rack=checked_name(rack, "rack name") if rack is not None else None,
                nvlink_block=blocks.get(name),
            )
        )
    return placements
