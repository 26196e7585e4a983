"""Cabling: every link class of the compute and support fabrics (media: :mod:`.media`).

Compute links run between the racks the layout recorded for each node and switch; support
fabrics (storage, in-band, out-of-band) hand out their leaf ports in floor order, as the floor
plan placed their leaves, so each endpoint cables to the leaf beside its zone
(:mod:`clusterforge.design.cabling.support`).  Every class reports its longest run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from clusterforge.catalog import Cage, Catalog, Medium
from clusterforge.design.cabling.media import (
    CORE_BLOCK_RUN_M,
    IN_RACK_M,
    LinkClass,
    LinkEnd,
    MediaCount,
    fiber_media,
    link_class,
    pick_media,
    run_lengths_m,
)
from clusterforge.design.cabling.support import support_cabling
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.fabric.network import FabricDesign
from clusterforge.design.fabric.support import SupportFabric
from clusterforge.design.facility.racks import Layout
from clusterforge.design.storage import StorageDesign

__all__ = [
    "CORE_BLOCK_RUN_M",
    "IN_RACK_M",
    "TIER_NAMES",
    "LinkClass",
    "LinkEnd",
    "MediaCount",
    "design_cabling",
    "fiber_media",
    "longest_runs_m",
    "pick_media",
    "run_lengths_m",
]

UFM_RUN_M = 10.0  # UFM appliances stand in the core block beside the first leaves [U]
# UFM Enterprise appliances take their fabric links on ConnectX adapters with QSFP cages
# (NVIDIA UFM Enterprise Appliance user manual) [S]
UFM_CAGE: Cage = "qsfp"

TIER_NAMES = {
    0: ("leaf-spine", "leaf", "spine"),
    1: ("spine-core", "spine", "core"),
    2: ("dragonfly-local", "router", "router"),
    3: ("dragonfly-global", "router", "router"),
}


def design_cabling(
    compute: ComputeDesign,
    fabric: FabricDesign,
    support: list[SupportFabric],
    storage: StorageDesign,
    layout: Layout,
    catalog: Catalog,
) -> list[LinkClass]:
    """Every link class of the compute and support fabrics."""
    classes = _compute_cabling(compute, fabric, layout, catalog)
    return classes + support_cabling(compute, support, storage, layout, catalog)


def _compute_cabling(
    compute: ComputeDesign, fabric: FabricDesign, layout: Layout, catalog: Catalog
) -> list[LinkClass]:
    c = fabric.connectivity
    if not fabric.radix:
        return []
    speed = fabric.nic_gbit_per_s
    media = fiber_media(catalog, speed)
    mode = fabric.switch.mode_at(speed)
    node = compute.node
    twin = node.compute_nic_twin_cages
    nic_cage = catalog.nics[node.compute_nic].cage
    nic = LinkEnd("node NIC", nic_cage, node.num_compute_nics // twin if twin else 1)
    cage = fabric.switch.cage

    def sw(role: str) -> LinkEnd:
        return LinkEnd(role, cage, mode.ports_per_cage if mode else 1)

    n_node, _, n_leaf = c.node_links()
    lengths = run_lengths_m(layout, layout.node_rack[n_node], layout.switch_rack[n_leaf])
    classes = [
        link_class("compute", "node-leaf", (nic, sw("leaf")), speed, lengths, media, catalog)
    ]
    if fabric.num_ufm_links:
        ufm = LinkEnd("UFM appliance", UFM_CAGE)
        runs = np.full(fabric.num_ufm_links, UFM_RUN_M)
        classes.append(
            link_class("compute", "ufm-leaf", (ufm, sw("leaf")), speed, runs, media, catalog)
        )
    if fabric.num_spare_pool_links:
        spare = LinkEnd("spare node NIC", nic.cage, nic.ports_per_module)
        classes.append(_spare_pool_class(fabric, layout, media, (spare, sw("pool leaf")), catalog))
    a, b, n, tier = c.switch_links()
    for t in np.unique(tier):
        sel = tier == t
        lengths = run_lengths_m(layout, layout.switch_rack[a[sel]], layout.switch_rack[b[sel]])
        name, end_a, end_b = TIER_NAMES[int(t)]
        ends = (sw(end_a), sw(end_b))
        weights = n[sel].astype(float)
        classes.append(
            link_class("compute", name, ends, speed, lengths, media, catalog, weights=weights)
        )
    return classes


def _spare_pool_class(
    fabric: FabricDesign,
    layout: Layout,
    media: Sequence[Medium],
    ends: tuple[LinkEnd, LinkEnd],
    catalog: Catalog,
) -> LinkClass:
    """Spare nodes after the cabled ones, NIC by NIC onto the pool's leaves in order."""
    c = fabric.connectivity
    port = np.arange(fabric.num_spare_pool_links)
    node = c.num_nodes + port // c.nics_per_node
    leaf = np.minimum(port // fabric.radix, fabric.num_spare_pool_leaves - 1)
    lengths = run_lengths_m(layout, layout.node_rack[node], layout.pool_leaf_rack[leaf])
    speed = fabric.nic_gbit_per_s
    return link_class("compute", "spare-pool", ends, speed, lengths, media, catalog)


def longest_runs_m(cabling: Sequence[LinkClass]) -> dict[str, float]:
    """Longest run of each link class, m (``fabric/class``)."""
    return {f"{c.fabric}/{c.name}": c.length_m_max for c in cabling}
