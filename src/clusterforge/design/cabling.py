"""Cabling: every link class with its count, speed, run lengths, media and transceivers.

Run length between racks ≈ (Manhattan distance along the trays + 2 × vertical drop) × slack
(design.md §3.5 heuristic: +10-20 %; we take 2 m drops and 15 %), 1.5 m inside one rack.
Medium by reach (design.md §3.5 media rule): ≤ 3 m passive DAC, ≤ 5 m active copper, ≤ 10 m
active optical cable (neighbouring racks; longer runs are structured fibre through patch panels), ≤ 50 m multimode SR4, ≤ 100 m DR4, ≤ 500 m DR4-500, ≤ 2 km FR4.  Optical links need a transceiver at each end; twin-port
OSFP cages carry two 400G links in one module (QM9700, SN5600 at 400G; DGX H100 node side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, Medium
from clusterforge.design.compute import ComputeDesign
from clusterforge.design.layout import Layout
from clusterforge.design.network import FabricDesign, SupportFabric
from clusterforge.design.storage import StorageDesign

__all__ = [
    "LinkClass",
    "MediaCount",
    "design_cabling",
    "pick_media",
    "run_lengths_m",
    "speed_factor",
]

VERTICAL_DROP_M = 2.0
SLACK = 1.15
IN_RACK_M = 1.5
CORE_BLOCK_RUN_M = 5.0  # between racks of the core block (support fabrics, storage)


class MediaCount(BaseModel):
    model_config = ConfigDict(frozen=True)
    medium: str
    netbox_type: str
    num_links: int
    num_transceivers: int = Field(description="Modules, twin-port modules counted once")
    num_optical_ends: int
    optics_power_w: float
    cost_usd: float


class LinkClass(BaseModel):
    """One class of links, e.g. compute node→leaf."""

    model_config = ConfigDict(frozen=True)
    fabric: str
    name: str
    endpoint_a: str
    endpoint_b: str
    num_links: int
    gbit_per_s: float
    length_m_median: float
    length_m_max: float
    media: list[MediaCount]

    @property
    def cost_usd(self) -> float:
        return sum(m.cost_usd for m in self.media)


def run_lengths_m(layout: Layout, rack_a: np.ndarray, rack_b: np.ndarray) -> np.ndarray:
    """Cable run between racks (vectorized)."""
    x = np.array([r.x_m for r in layout.racks])
    y = np.array([r.y_m for r in layout.racks])
    manhattan = np.abs(x[rack_a] - x[rack_b]) + np.abs(y[rack_a] - y[rack_b])
    run = (manhattan + 2 * VERTICAL_DROP_M) * SLACK
    return np.where(rack_a == rack_b, IN_RACK_M, run)


def pick_media(lengths_m: np.ndarray, media: Sequence[Medium]) -> np.ndarray:
    """Index into ``media`` (sorted by reach) of the cheapest medium that reaches each run."""
    reaches = np.array([m.max_reach_m for m in media])
    idx = np.searchsorted(reaches, lengths_m, side="left")
    return np.minimum(idx, len(media) - 1)


def speed_factor(gbit_per_s: float) -> float:
    """Price and power of a transceiver end relative to the catalog's 400G figure.

    Optics scale roughly with lane count (a 100G SR4 module draws ~2.5 W against ~9 W at 400G,
    NVIDIA LinkX figures) [D]; a floor of 0.25 stands for the fixed cost of a module [U].
    """
    return max(gbit_per_s / 400.0, 0.25)


def _media_counts(
    lengths: np.ndarray,
    weights: np.ndarray,
    media: Sequence[Medium],
    ports_per_module_a: int,
    ports_per_module_b: int,
    gbit_per_s: float = 400.0,
) -> list[MediaCount]:
    chosen = pick_media(lengths, media)
    scale = speed_factor(gbit_per_s)
    out = []
    for i, medium in enumerate(media):
        links = int(weights[chosen == i].sum())
        if not links:
            continue
        ends = 2 * links if medium.pluggable_optics else 0
        modules = (
            (math.ceil(links / ports_per_module_a) + math.ceil(links / ports_per_module_b))
            if medium.pluggable_optics
            else 0
        )
        out.append(
            MediaCount(
                medium=medium.id,
                netbox_type=medium.netbox_type,
                num_links=links,
                num_transceivers=modules,
                num_optical_ends=ends,
                optics_power_w=2 * links * medium.power_w_per_end * scale,
                cost_usd=ends * medium.price_usd_per_end * scale + links * medium.cable_price_usd,
            )
        )
    return out


def _link_class(
    fabric: str,
    name: str,
    a: str,
    b: str,
    speed: float,
    lengths: np.ndarray,
    weights: np.ndarray,
    media: Sequence[Medium],
    ppm_a: int = 1,
    ppm_b: int = 1,
) -> LinkClass:
    return LinkClass(
        fabric=fabric,
        name=name,
        endpoint_a=a,
        endpoint_b=b,
        num_links=int(weights.sum()),
        gbit_per_s=speed,
        length_m_median=float(np.median(lengths)) if lengths.size else 0.0,
        length_m_max=float(lengths.max()) if lengths.size else 0.0,
        media=_media_counts(lengths, weights, media, ppm_a, ppm_b, speed),
    )


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
    fiber_media = sorted((m for m in catalog.media if m.id != "cat6"), key=lambda m: m.max_reach_m)
    c = fabric.connectivity
    mode = fabric.switch.mode_at(fabric.nic_gbit_per_s)
    sw_ppm = mode.ports_per_cage if mode else 1
    node = compute.node
    node_ppm = (
        node.num_compute_nics // node.compute_nic_twin_cages if node.compute_nic_twin_cages else 1
    )
    classes = []
    n_node, _, n_leaf = c.node_links()
    lengths = run_lengths_m(layout, layout.node_rack[n_node], layout.switch_rack[n_leaf])
    classes.append(
        _link_class(
            "compute",
            "node-leaf",
            "node NIC",
            "leaf",
            fabric.nic_gbit_per_s,
            lengths,
            np.ones(lengths.size),
            fiber_media,
            node_ppm,
            sw_ppm,
        )
    )
    if fabric.num_ufm_links:
        classes.append(
            _link_class(
                "compute",
                "ufm-leaf",
                "UFM appliance",
                "leaf",
                fabric.nic_gbit_per_s,
                np.full(1, 10.0),
                np.array([fabric.num_ufm_links]),
                fiber_media,
                1,
                sw_ppm,
            )
        )
    a, b, n, tier = c.switch_links()
    for t in np.unique(tier):
        sel = tier == t
        lengths = run_lengths_m(layout, layout.switch_rack[a[sel]], layout.switch_rack[b[sel]])
        name, end_a, end_b = TIER_NAMES[int(t)]
        classes.append(
            _link_class(
                "compute",
                name,
                end_a,
                end_b,
                fabric.nic_gbit_per_s,
                lengths,
                n[sel].astype(float),
                fiber_media,
                sw_ppm,
                sw_ppm,
            )
        )
    classes += _support_cabling(compute, support, storage, layout, catalog, fiber_media)
    return classes


def _support_cabling(
    compute: ComputeDesign,
    support: list[SupportFabric],
    storage: StorageDesign,
    layout: Layout,
    catalog: Catalog,
    fiber_media: Sequence[Medium],
) -> list[LinkClass]:
    """Support fabrics: node ports run to the core block; links inside the core block are short."""
    to_core = run_lengths_m(
        layout, layout.node_rack, np.full(layout.node_rack.size, layout.core_rack)
    )
    node = compute.node
    classes = []
    for fab in support:
        if fab.name == "out-of-band":
            copper = [catalog.media["cat6"]]
            lengths = np.concatenate(
                [to_core, np.full(fab.num_endpoint_ports - to_core.size, CORE_BLOCK_RUN_M)]
            )
            classes.append(
                _link_class(
                    fab.name,
                    "device-oob",
                    "BMC / mgmt port",
                    "oob switch",
                    1,
                    lengths,
                    np.ones(lengths.size),
                    copper,
                )
            )
            continue
        per_node = node.num_storage_ports if fab.name == "storage" else node.num_inband_ports
        lengths = np.repeat(to_core, per_node)
        other = fab.num_endpoint_ports - lengths.size
        lengths = np.concatenate([lengths, np.full(max(other, 0), CORE_BLOCK_RUN_M)])
        classes.append(
            _link_class(
                fab.name,
                "endpoint-leaf",
                "node / storage port",
                f"{fab.name} leaf",
                fab.port_gbit_per_s,
                lengths,
                np.ones(lengths.size),
                fiber_media,
            )
        )
        if fab.num_uplinks:
            ups = np.full(fab.num_uplinks, CORE_BLOCK_RUN_M)
            classes.append(
                _link_class(
                    fab.name,
                    "leaf-spine",
                    f"{fab.name} leaf",
                    f"{fab.name} spine",
                    fab.port_gbit_per_s,
                    ups,
                    np.ones(ups.size),
                    fiber_media,
                )
            )
    return classes
