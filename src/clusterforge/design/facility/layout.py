"""Racks and elevations: how many nodes a rack holds, and the whole hall laid out.

Density: nodes per rack = min(⌊limit / node max kW⌋, ⌊usable U / node U⌋), sized on *max*
power, not typical (a rack's breakers and cooling must carry the worst case, NEC 210.19 /
ASHRAE TC 9.9), where the limit is the contracted rack power capped by the best cooling band
the facility offers.  A rack-scale system (NVL72: its catalog row says how many trays make
one system) is one fixed rack with its own power shelves, circuits and CDU, never split.

Floor plan and placement: :mod:`clusterforge.design.facility.floorplan` (zones, pods, the core
block) and :mod:`clusterforge.design.facility.placement` (devices into racks).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from clusterforge.catalog import Catalog
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.cooling import COOLING_BAND_KW
from clusterforge.design.facility.floorplan import CORE, FloorPlan, gpu_rack_blocks, plan_floor
from clusterforge.design.facility.placement import Placer
from clusterforge.design.facility.power import propose_power_cap
from clusterforge.design.facility.racks import (
    CDU_U,
    PATCH_PANEL_U,
    Density,
    Layout,
    Rack,
    RackDevice,
    power_entry,
    rack_circuit,
)
from clusterforge.design.storage import StorageDesign
from clusterforge.errors import CapacityError
from clusterforge.spec import ClusterSpec

__all__ = [
    "MAX_RACKS",
    "Density",
    "Layout",
    "Rack",
    "RackDevice",
    "check_rack_budget",
    "choose_density",
    "lay_out",
    "limited_node_kw",
]

NETWORK_RACK_KW = 20.0  # switch racks stay air-cooled without containment (ASHRAE TC 9.9)
MAX_RACKS = 200_000  # far beyond the largest sites (a 100k-GPU hall has a few thousand racks)


def choose_density(spec: ClusterSpec, compute: ComputeDesign) -> Density:
    """Nodes per rack under the power cap, the cooling band and the rack height."""
    f, node = spec.facility, compute.node
    liquid = node.cooling == "liquid"
    bands = [
        COOLING_BAND_KW[m]
        for m in f.cooling_available
        if not (liquid and m in ("air", "rear-door"))
    ]
    if not f.cooling_available:
        raise CapacityError(
            "facility.cooling_available: the list is empty; name at least one method (air, "
            "rear-door, direct-to-chip, immersion)"
        )
    if not bands:
        raise CapacityError(
            f"facility.cooling_available: {node.id} is liquid-cooled but the facility offers only "
            f"{', '.join(f.cooling_available)}; add direct-to-chip or immersion",
            fix={"facility.cooling_available": [*f.cooling_available, "direct-to-chip"]},
        )
    limit = min(f.max_rack_kw, max(bands))
    limited_by = "facility.max_rack_kw" if f.max_rack_kw <= max(bands) else "cooling band"
    usable_u = f.rack_u - PATCH_PANEL_U - (CDU_U if liquid else 0)
    if node.rack_scale_nodes:
        return _rack_scale_density(spec, compute, limit, limited_by, usable_u)
    cap = None
    node_kw = limited_node_kw(compute)
    if node_kw > limit:
        cap = propose_power_cap(
            node_kw, node.num_gpus, compute.gpu.tdp_w, limit, limited_by, compute.gpu_power_limit_w
        )
        if not f.allow_power_capping:
            raise CapacityError(
                f"{limited_by}: {limit:g} kW per rack is below one {node.id} node "
                f"({node_kw:g} kW max); raise it, add a cooling method, or set "
                f"facility.allow_power_capping: true to cap each GPU at "
                f"{cap.gpu_power_limit_w:.0f} W (about {1 - cap.throughput_factor:.0%} less throughput)",
                fix=_room_for(spec, node_kw),
            )
        node_kw = cap.node_max_kw
    by_power = math.floor(limit / node_kw + 1e-9)
    by_u = usable_u // node.u_height
    if by_u < 1:
        raise CapacityError(f"facility.rack_u: {f.rack_u} U cannot hold a {node.u_height} U node")
    if by_u < by_power:
        limited_by = "facility.rack_u"
    return Density(
        nodes_per_rack=min(by_power, by_u),
        node_max_kw=node_kw,
        limit_kw=limit,
        limited_by=limited_by,
        power_cap=cap,
        usable_u=usable_u,
    )


def _room_for(spec: ClusterSpec, kw: float) -> dict[str, Any]:
    """The facility change that makes room for ``kw`` in one rack: the rack cap raised to it
    and, where no offered cooling method removes that much, the cheapest one that does."""
    f = spec.facility
    fix: dict[str, Any] = {}
    if f.max_rack_kw < kw:
        fix["facility.max_rack_kw"] = math.ceil(kw)
    if not any(COOLING_BAND_KW[m] >= kw for m in f.cooling_available):
        method = next((m for m, band in COOLING_BAND_KW.items() if band >= kw), "immersion")
        fix["facility.cooling_available"] = [*f.cooling_available, method]
    return fix


def limited_node_kw(compute: ComputeDesign) -> float:
    """A node's max draw with its GPUs at the spec's ``gpu_power_limit_w``: each GPU draws at
    most its limit instead of its TDP (the board power the limit caps, ``nvidia-smi -pl``)."""
    node, limit_w = compute.node, compute.gpu_power_limit_w
    if limit_w is None:
        return node.max_kw
    return node.max_kw - node.num_gpus * (compute.gpu.tdp_w - limit_w) / 1000


def _rack_scale_density(
    spec: ClusterSpec, compute: ComputeDesign, limit: float, limited_by: str, usable_u: int
) -> Density:
    node = compute.node
    node_kw = limited_node_kw(compute)
    rack_kw = node.rack_scale_nodes * node_kw + node.rack_overhead_kw
    if rack_kw > limit + 1e-9:
        raise CapacityError(
            f"{limited_by}: {limit:g} kW per rack cannot hold one {node.id} rack-scale system "
            f"({rack_kw:g} kW; it cannot be split); raise facility.max_rack_kw to at least "
            f"{math.ceil(rack_kw)} and offer direct-to-chip cooling",
            fix=_room_for(spec, rack_kw),
        )
    return Density(
        nodes_per_rack=node.rack_scale_nodes,
        node_max_kw=node_kw,
        limit_kw=limit,
        limited_by="rack-scale system",
        usable_u=usable_u,
    )


def _gpu_rack_kw(compute: ComputeDesign, density: Density, num_nodes: int) -> float:
    return num_nodes * density.node_max_kw + compute.node.rack_overhead_kw


def gpu_rack_whips(
    spec: ClusterSpec,
    compute: ComputeDesign,
    fabric: FabricDesign,
    density: Density,
    catalog: Catalog,
) -> np.ndarray:
    """Power whips (a PDU or power shelf each) of each GPU rack in floor order: known before
    any device is placed, since a GPU rack's load is its nodes' (:func:`rack_circuit`)."""
    blocks = gpu_rack_blocks(compute, fabric.connectivity, density.nodes_per_rack)
    sizes = {len(b) for b in blocks}
    entry = power_entry("gpu", compute.node)
    whips = {
        n: rack_circuit(catalog, spec.facility, entry, _gpu_rack_kw(compute, density, n))
        for n in sizes
    }
    return np.array([whips[len(b)].num_whips for b in blocks], dtype=np.int64)


def lay_out(
    spec: ClusterSpec,
    compute: ComputeDesign,
    fabric: FabricDesign,
    support: list[SupportFabric],
    storage: StorageDesign,
    catalog: Catalog,
    density: Density,
    num_mgmt_servers: int,
    *,
    reuse: Layout | None = None,
) -> Layout:
    """Place every device zone by zone (see :mod:`clusterforge.design.facility.floorplan`); returns
    racks in floor order plus index arrays for cabling.

    ``reuse``: a layout made with other support fabrics; returned as it is when those
    fabrics differ in nothing the placement reads (:func:`placement_key`), e.g. a few more
    out-of-band ports that move no leaf."""
    gpu_whips = gpu_rack_whips(spec, compute, fabric, density, catalog)
    check_rack_budget(spec, len(gpu_whips), fabric, support, storage)
    floor = plan_floor(
        compute, fabric, support, density.nodes_per_rack, gpu_whips.astype(np.float64)
    )
    key = placement_key(support, floor)
    if reuse is not None and reuse.placement_key == key:
        return reuse
    network_limit = min(spec.facility.max_rack_kw, NETWORK_RACK_KW)
    placer = Placer(spec, compute, fabric, support, density, floor, network_limit, catalog)
    for slot in floor.slots:
        if slot == CORE:
            placer.core(storage, catalog, num_mgmt_servers)
        else:
            placer.zone(slot)
    return replace(placer.layout(), placement_key=key)


def placement_key(
    support: list[SupportFabric], floor: FloorPlan
) -> tuple[tuple[str, str, int, int, bytes], ...]:
    """All the placement reads of the support fabrics: each one's name, switch model and
    leaf and switch counts, and the floor slot of each of its leaves."""
    return tuple(
        (
            f.name,
            f.switch.id,
            f.num_leaves,
            f.num_switches,
            floor.support_leaf_zone[f.name].tobytes(),
        )
        for f in support
    )


def check_rack_budget(
    spec: ClusterSpec,
    num_gpu_racks: int,
    fabric: FabricDesign,
    support: list[SupportFabric],
    storage: StorageDesign,
) -> None:
    """Refuse a design of more than MAX_RACKS racks before any device is made (closed form
    over the counts), so that an absurd count fails at once with a clear message."""
    usable = spec.facility.rack_u - PATCH_PANEL_U
    switch_u = fabric.num_switches * fabric.switch.u_height
    switch_u += sum(f.num_switches * f.switch.u_height for f in support)
    storage_u = storage.num_blocks * storage.block.u_height
    racks = {
        "num_gpus": num_gpu_racks,
        "network": math.ceil(switch_u / usable),
        "storage.num_blocks": math.ceil(storage_u / usable),
    }
    if sum(racks.values()) > MAX_RACKS:
        cause = max(racks, key=lambda k: racks[k])
        raise CapacityError(
            f"{cause}: the design needs about {sum(racks.values()):,} racks ({racks[cause]:,} "
            f"for {cause}), more than the {MAX_RACKS:,} racks of the largest sites planned "
            "here; lower the count or plan several sites"
        )
