"""Link media: run lengths between racks and the medium, transceivers and cost of each run.

Run length between racks ≈ (Manhattan distance along the trays + 2 × vertical drop) × slack
(a routing heuristic: overhead trays follow rows and aisles, each end drops about 2 m, and
installers add 10-20 % slack; we take 15 %), 1.5 m inside one rack.

Medium: the cheapest catalog medium that is specified for the link's speed
(``min_gbit_per_s``-``max_gbit_per_s``) and reaches the run (``max_reach_m``).  NVIDIA's LinkX
families give passive copper up to 2-3 m and active copper up to about 5 m at 400/800G, then
SR4 multimode (50 m), DR4 single-mode (100 m / 500 m) and FR4 (2 km) transceivers with fibre;
active optical cables are a 200G-and-below choice.  1 GbE management runs are Cat6 copper,
100 m at most (TIA-568 channel, IEEE 802.3ab).  A run that no medium reaches is an error,
never a silent choice.  Optical links need a transceiver at each end; twin-port OSFP cages
carry two 400G links in one module (QM9700, SN5600 at 400G; DGX H100 node side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, Medium
from clusterforge.design.facility.racks import Layout
from clusterforge.errors import CapacityError

__all__ = [
    "CORE_BLOCK_RUN_M",
    "IN_RACK_M",
    "LinkClass",
    "MediaCount",
    "fiber_media",
    "link_class",
    "pick_media",
    "run_lengths_m",
    "speed_factor",
]

VERTICAL_DROP_M = 2.0
SLACK = 1.15
IN_RACK_M = 1.5
CORE_BLOCK_RUN_M = 5.0  # between neighbouring racks of the core block


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
    length_m_max: float = Field(description="Longest run of the class, m")
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


def fiber_media(catalog: Catalog, gbit_per_s: float | None = None) -> list[Medium]:
    """Media for data links (Cat6 excluded), by reach; only those specified for
    ``gbit_per_s`` when given."""
    media = [m for m in catalog.media if m.id != "cat6"]
    if gbit_per_s is not None:
        media = [m for m in media if m.min_gbit_per_s <= gbit_per_s <= m.max_gbit_per_s]
    return sorted(media, key=lambda m: m.max_reach_m)


def pick_media(lengths_m: np.ndarray, media: Sequence[Medium], *, what: str = "link") -> np.ndarray:
    """Index into ``media`` (sorted by reach) of the cheapest medium that reaches each run;
    a run beyond every medium's reach is a :class:`CapacityError`."""
    if not media:
        raise CapacityError(f"cabling: no catalog medium is specified for the {what} speed")
    reaches = np.array([m.max_reach_m for m in media])
    longest = float(lengths_m.max()) if lengths_m.size else 0.0
    if longest > reaches[-1]:
        raise CapacityError(
            f"cabling: a {what} run of {longest:.0f} m exceeds the {reaches[-1]:g} m reach of "
            f"{media[-1].id}, the longest-reaching medium for it; shorten the hall "
            "(facility.racks_per_row, facility.row_pitch_m) or split the site"
        )
    return np.searchsorted(reaches, lengths_m, side="left")


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
    ports_per_module: tuple[int, int],
    gbit_per_s: float,
    what: str,
) -> list[MediaCount]:
    chosen = pick_media(lengths, media, what=what)
    scale = speed_factor(gbit_per_s)
    out = []
    for i, medium in enumerate(media):
        links = int(weights[chosen == i].sum())
        if not links:
            continue
        optical = medium.pluggable_optics
        modules = sum(math.ceil(links / p) for p in ports_per_module) if optical else 0
        ends = 2 * links if optical else 0
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


def link_class(
    fabric: str,
    name: str,
    ends: tuple[str, str],
    speed: float,
    lengths: np.ndarray,
    media: Sequence[Medium],
    *,
    weights: np.ndarray | None = None,
    ports_per_module: tuple[int, int] = (1, 1),
) -> LinkClass:
    weights = np.ones(lengths.size) if weights is None else weights
    return LinkClass(
        fabric=fabric,
        name=name,
        endpoint_a=ends[0],
        endpoint_b=ends[1],
        num_links=int(weights.sum()),
        gbit_per_s=speed,
        length_m_median=float(np.median(lengths)) if lengths.size else 0.0,
        length_m_max=float(lengths.max()) if lengths.size else 0.0,
        media=_media_counts(
            lengths, weights, media, ports_per_module, speed, f"{fabric} {name} {speed:g}G"
        ),
    )
