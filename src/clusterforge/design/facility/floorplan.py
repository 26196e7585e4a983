"""Floor plan: the order in which racks stand and which switches each network rack holds.

Halls are built zone by zone (NVIDIA's DGX SuperPOD reference architecture lays out each
scalable unit as a row of compute racks with its network racks; ANSI/TIA-942-B §6 names the
end-of-row and middle-of-row distribution areas that serve one row).  Here:

* a **zone** is one node group of the compute fabric (a scalable unit of rail leaves, a
  top-of-rack group, a dragonfly group); its network rack stands in the middle of its GPU
  racks (middle-of-row) and holds the zone's leaves and the support-fabric (storage, in-band,
  out-of-band) leaves that serve it, so that node cables stay within the row;
* a **pod** of a 3-tier Clos is a run of zones; its spines stand in a network rack in the
  middle of the pod, so leaf-spine runs stay inside the pod;
* the **core block** (core switches, the spines of a 2-tier fabric, support spines,
  storage, management servers) stands in the middle of the hall, which halves the longest
  run to it.

A rack-scale system (GB200 NVL72: 18 compute trays and 9 NVLink switch trays) is one rack
and is never split: GPU racks hold whole systems, whatever the node groups are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.connectivity import Connectivity
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.support import SupportFabric

__all__ = ["CORE", "FloorPlan", "gpu_rack_blocks", "plan_floor"]

CORE = -1  # slot id of the core block


@dataclass(frozen=True)
class FloorPlan:
    """Where each switch goes: ``slots`` lists zone ids in floor order (CORE = core block);
    the ``*_zone`` arrays give the slot (a zone id or CORE) of each switch."""

    blocks: list[Sequence[int]]  # node indices of each GPU rack, in floor order
    block_zone: np.ndarray  # zone of each GPU rack
    slots: list[int]
    leaf_zone: np.ndarray  # compute leaves
    spine_zone: np.ndarray  # compute spines (CORE unless a 3-tier pod holds them)
    support_leaf_zone: dict[str, np.ndarray] = field(default_factory=dict)


def gpu_rack_blocks(
    compute: ComputeDesign, c: Connectivity, nodes_per_rack: int
) -> list[Sequence[int]]:
    """Node indices of the GPU racks: whole rack-scale systems (with their in-rack spares,
    :meth:`ComputeDesign.rack_scale_blocks`), or chunks of ``nodes_per_rack`` that never
    straddle two node groups."""
    n = compute.num_nodes
    if compute.node.rack_scale_nodes:
        return list(compute.rack_scale_blocks())
    groups = c.group_of(np.arange(n))
    cuts = np.flatnonzero(np.diff(groups)) + 1
    starts, ends = [0, *cuts.tolist()], [*cuts.tolist(), n]
    return [
        range(a, min(a + nodes_per_rack, e))
        for s, e in zip(starts, ends, strict=True)
        for a in range(s, e, nodes_per_rack)
    ]


def _leaf_zone(c: Connectivity, node_zone: np.ndarray, last: int) -> np.ndarray:
    """Zone of each compute leaf: the zone of the first node cabled to it (empty leaves of a
    partly populated unit join the last zone)."""
    if c.num_leaves == 0:
        return np.zeros(0, dtype=np.int64)
    node, _, leaf = c.node_links()
    first = np.full(c.num_leaves, node_zone.size, dtype=np.int64)
    np.minimum.at(first, leaf, node)
    zones = np.full(c.num_leaves, last, dtype=np.int64)
    cabled = first < node_zone.size
    zones[cabled] = node_zone[first[cabled]]
    return zones


def _spine_zone(c: Connectivity, leaf_zone: np.ndarray) -> np.ndarray:
    """3-tier Clos: each spine stands in the middle zone of its pod; otherwise the core."""
    spines = np.full(c.num_spines, CORE, dtype=np.int64)
    if not (c.kind == "clos" and c.num_cores and c.num_spines):
        return spines
    per_plane_leaves = c.num_leaves // c.num_planes
    per_plane_spines = c.num_spines // c.num_planes
    leaf_pod = (np.arange(c.num_leaves) % per_plane_leaves) // c.leaves_per_pod
    spine_pod = (np.arange(c.num_spines) % per_plane_spines) // c.spines_per_pod
    for pod in np.unique(spine_pod):
        zones = np.sort(leaf_zone[leaf_pod == pod])
        if zones.size:
            spines[spine_pod == pod] = zones[zones.size // 2]
    return spines


def _slots(zones: list[int], leaf_pod_start: list[int]) -> list[int]:
    """Zones in floor order with the core block in the middle, at a pod boundary if any."""
    if not zones:
        return [CORE]
    middle = (len(zones) + 1) // 2
    inner = [z for z in leaf_pod_start if z > 0]
    if inner:
        middle = min(inner, key=lambda z: abs(z - middle))
    return [*zones[:middle], CORE, *zones[middle:]]


def _home(weights: np.ndarray, slots: list[int], num_leaves: int, per_leaf: int) -> np.ndarray:
    """Slot of each support leaf when ports are handed out in floor order, ``per_leaf`` to a
    leaf: leaf j stands where the middle of its block of ports lies."""
    if num_leaves == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(weights)
    middle = np.arange(num_leaves) * per_leaf + per_leaf // 2
    index = np.minimum(np.searchsorted(ends, middle, side="right"), len(slots) - 1)
    return np.asarray(slots, dtype=np.int64)[index]


def _support_weights(
    fab: SupportFabric, zone_nodes: np.ndarray, extra: np.ndarray, per_node: int
) -> np.ndarray:
    """Endpoint ports of ``fab`` in each slot (the core slot takes what the zones do not)."""
    zone_ports = zone_nodes * per_node + extra
    core = max(fab.num_endpoint_ports - int(zone_ports.sum()), 0)
    return np.append(zone_ports, core)


def plan_floor(
    compute: ComputeDesign,
    fabric: FabricDesign,
    support: list[SupportFabric],
    nodes_per_rack: int,
    gpu_rack_whips: np.ndarray,
) -> FloorPlan:
    """Zones, the core block's place and the home of every switch (no device is made here:
    the cost is one pass over nodes and switches)."""
    c = fabric.connectivity
    blocks = gpu_rack_blocks(compute, c, nodes_per_rack)
    first_nodes = np.array([b[0] for b in blocks], dtype=np.int64)
    block_zone = c.group_of(first_nodes) if c.nics_per_node else np.zeros(len(blocks), int)
    _, block_zone = np.unique(block_zone, return_inverse=True)
    zones = list(range(int(block_zone.max()) + 1)) if len(blocks) else []
    node_zone = np.repeat(block_zone, [len(b) for b in blocks])
    if compute.num_spares_per_nvlink_domain:  # racks hold training trays and later spares
        node_zone[np.concatenate([np.asarray(b) for b in blocks])] = node_zone.copy()
    leaf_zone = _leaf_zone(c, node_zone, zones[-1] if zones else 0)
    spine_zone = _spine_zone(c, leaf_zone)
    pod_starts = _pod_starts(c, leaf_zone)
    slots = _slots(zones, pod_starts)
    order = [z for z in slots if z != CORE]
    zone_nodes = np.bincount(node_zone, minlength=len(zones))[order]
    zone_leaves = np.bincount(leaf_zone, minlength=len(zones))[order]
    zone_whips = np.bincount(block_zone, weights=gpu_rack_whips, minlength=len(zones))[order]
    zone_spines = np.bincount(spine_zone[spine_zone != CORE], minlength=len(zones))[order]
    devices = zone_leaves + zone_spines + zone_whips.astype(np.int64)
    homes = _support_homes(support, compute, slots, zone_nodes, devices)
    return FloorPlan(blocks, block_zone, slots, leaf_zone, spine_zone, homes)


def _support_homes(
    support: list[SupportFabric],
    compute: ComputeDesign,
    slots: list[int],
    zone_nodes: np.ndarray,
    zone_devices: np.ndarray,
) -> dict[str, np.ndarray]:
    """Slot of every support leaf.  Out-of-band ports per zone: its nodes, compute switches
    and PDUs (``zone_devices``) and the storage and in-band leaves standing there; in-band
    ports include the out-of-band leaves' up-links, so the fabrics are placed twice."""
    oob_fabric = next((f for f in support if f.name == "out-of-band"), None)
    oob_up = oob_fabric.num_uplinks // max(oob_fabric.num_leaves, 1) if oob_fabric else 0
    inband_extra = 0 * zone_nodes
    homes: dict[str, np.ndarray] = {}
    for _ in range(2 if oob_fabric else 1):
        oob_extra = zone_devices
        for fab in support:
            extra = (
                oob_extra
                if fab.name == "out-of-band"
                else inband_extra
                if fab.carries_inband
                else 0 * zone_nodes
            )
            weights = _support_weights(fab, zone_nodes, extra, fab.ports_per_node)
            weights = np.insert(weights[:-1], slots.index(CORE), weights[-1])
            homed = _home(weights, slots, fab.num_leaves, fab.ports_per_leaf)
            homes[fab.name] = homed
            if fab.name != "out-of-band":
                oob_extra = oob_extra + np.bincount(homed[homed != CORE], minlength=len(zone_nodes))
        oob_home = homes.get("out-of-band", np.zeros(0, dtype=np.int64))
        inband_extra = np.bincount(oob_home[oob_home != CORE], minlength=len(zone_nodes)) * oob_up
    return homes


def _pod_starts(c: Connectivity, leaf_zone: np.ndarray) -> list[int]:
    """First zone of each pod of a 3-tier Clos (the core block goes between two pods)."""
    if not (c.kind == "clos" and c.num_cores and c.leaves_per_pod):
        return []
    per_plane = c.num_leaves // c.num_planes
    starts = leaf_zone[: per_plane : c.leaves_per_pod]
    return sorted({int(z) for z in starts})
