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
never a silent choice.

Parts: each medium is bought as catalog parts (media.toml ``[[part]]``, one ordering part
number each).  An optical link needs a transceiver at each end, the one made for that end's
cage: a finned-top twin-port OSFP in a Quantum-2 / Spectrum-4 switch carries two 400G links
(four 200G over splitter fibres), a flat-top twin-port OSFP in a DGX H100 carries two, a
ConnectX-7 OSFP or QSFP112 port takes a single-port module; plus a fibre per link (a splitter
fibre per two 200G links).  Copper and active optical cables bring their own plugs: one per
link, or a splitter for the links of one twin-port cage.  Modules per end = links / links per
module, rounded up over the class.  A combination the catalog lacks is an error naming the row
to add.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Cage, Catalog, Medium, Part
from clusterforge.design.facility.racks import Layout
from clusterforge.errors import CapacityError, CatalogError

__all__ = [
    "CORE_BLOCK_RUN_M",
    "IN_RACK_M",
    "LinkClass",
    "LinkEnd",
    "MediaCount",
    "PartCount",
    "cable_for",
    "fiber_media",
    "is_orderable",
    "link_class",
    "medium_parts",
    "orderable_media",
    "pick_media",
    "run_lengths_m",
    "transceiver_for",
]

VERTICAL_DROP_M = 2.0
SLACK = 1.15
IN_RACK_M = 1.5
CORE_BLOCK_RUN_M = 5.0  # between neighbouring racks of the core block


@dataclass(frozen=True)
class LinkEnd:
    """One end of a link class: what it is, the cage its plugs go into, and how many of the
    class's links one module in that cage carries (2 on a twin-port OSFP at 400G)."""

    name: str
    cage: Cage | None
    ports_per_module: int = 1


class PartCount(BaseModel):
    """How many of one orderable part a link class needs, at the part's catalog price."""

    model_config = ConfigDict(frozen=True)
    part: str = Field(description="Ordering part number (media.toml [[part]] id)")
    kind: Literal["transceiver", "cable"]
    quantity: int
    unit_usd: float
    power_w: float = Field(description="Power of all ``quantity`` units, W")

    @property
    def extended_usd(self) -> float:
        return self.quantity * self.unit_usd


class MediaCount(BaseModel):
    model_config = ConfigDict(frozen=True)
    medium: str
    netbox_type: str
    num_links: int
    num_transceivers: int = Field(description="Modules, twin-port modules counted once")
    num_optical_ends: int
    optics_power_w: float
    cost_usd: float
    parts: list[PartCount] = Field(description="The orderable parts behind these links")
    missing_parts: str = Field(
        "", description="Why no parts could be chosen (the catalog lacks one); empty when priced"
    )


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


def transceiver_for(catalog: Catalog, medium: str, end: LinkEnd, gbit_per_s: float) -> Part:
    """The transceiver of ``medium`` that plugs into ``end``'s cage and serves exactly the
    links one of its cages carries at ``gbit_per_s`` (two on a twin-port OSFP at 400G)."""
    if end.cage is None:
        raise CatalogError(
            f"cabling: the {end.name} end has no cage in the catalog, so no {medium} "
            "transceiver can be ordered for it; set `cage` on its switch (switches.toml) or "
            "NIC (nics.toml) row"
        )
    for part in catalog.parts:
        if (
            part.kind == "transceiver"
            and medium in part.media
            and part.cages == [end.cage]
            and part.links_at(gbit_per_s) == end.ports_per_module
        ):
            return part
    raise CatalogError(
        f"cabling: no transceiver of medium {medium!r} in media.toml fits the {end.name} end's "
        f"{end.cage} cage at {gbit_per_s:g} Gb/s with {end.ports_per_module} link(s) per "
        "module; add a [[part]] row for it"
    )


def cable_for(
    catalog: Catalog, medium: Medium, ends: tuple[LinkEnd, LinkEnd], gbit_per_s: float
) -> Part:
    """The cable of one link: the fibre between two transceivers, or the DAC, ACC, AOC or
    Cat6 cord whose own plugs fit both ends' cages (a splitter when one end is twin-port)."""
    want = [] if medium.pluggable_optics else sorted(e.cage or "" for e in ends)
    fits = [
        part
        for part in catalog.parts
        if part.kind == "cable"
        and medium.id in part.media
        and sorted(part.cages) == want
        and part.links_at(gbit_per_s) is not None
    ]
    if not fits:
        cages = " and ".join(f"{e.name} ({e.cage})" for e in ends)
        raise CatalogError(
            f"cabling: no {medium.id!r} cable in media.toml joins {cages} at {gbit_per_s:g} "
            "Gb/s; add a [[part]] row for it"
        )
    widest = max(e.ports_per_module for e in ends)
    return next((p for p in fits if p.links_at(gbit_per_s) == widest), fits[0])


def _part_count(part: Part, quantity: int) -> PartCount:
    return PartCount(
        part=part.id,
        kind=part.kind,
        quantity=quantity,
        unit_usd=part.price_usd,
        power_w=quantity * part.power_w,
    )


def medium_parts(
    catalog: Catalog,
    medium: Medium,
    ends: tuple[LinkEnd, LinkEnd],
    gbit_per_s: float,
    num_links: int,
) -> list[PartCount]:
    """What is ordered for ``num_links`` links of ``medium`` between ``ends``: a transceiver
    per end (twin-port modules counted once for their two links) and the cables."""
    units: list[Part] = []
    if medium.pluggable_optics:
        units += [transceiver_for(catalog, medium.id, end, gbit_per_s) for end in ends]
    units.append(cable_for(catalog, medium, ends, gbit_per_s))
    quantities: dict[str, int] = {}
    for part in units:  # both ends may take the same module: one count
        links_per_unit = part.links_at(gbit_per_s)
        assert links_per_unit is not None  # parts are only chosen for a speed they run
        need = math.ceil(num_links / links_per_unit)
        quantities[part.id] = quantities.get(part.id, 0) + need
    return [_part_count(catalog.parts[i], n) for i, n in quantities.items()]


def is_orderable(
    catalog: Catalog, medium: Medium, ends: tuple[LinkEnd, LinkEnd], gbit_per_s: float
) -> bool:
    """Whether the catalog has every part a link of ``medium`` between ``ends`` needs."""
    try:
        medium_parts(catalog, medium, ends, gbit_per_s, 1)
    except CatalogError:
        return False
    return True


def orderable_media(
    catalog: Catalog,
    media: Sequence[Medium],
    ends: tuple[LinkEnd, LinkEnd],
    gbit_per_s: float,
    longest_m: float = 0.0,
) -> list[Medium]:
    """The media of ``media`` whose parts the catalog has for ``ends`` at ``gbit_per_s`` (a
    medium with no part for these cages, e.g. an AOC between two 200G-split twin-port
    switch cages, is skipped: longer runs fall to the next medium). Runs up to ``longest_m``
    must still be cabled: when no orderable medium reaches that far, the media that do stay
    too, and their links show as an unpriced line naming the missing part
    (:func:`_media_counts`), never as a refused design."""
    fits = [medium for medium in media if is_orderable(catalog, medium, ends, gbit_per_s)]
    reach = max((m.max_reach_m for m in fits), default=0.0)
    if not fits or longest_m <= reach:
        return fits or list(media)
    return [m for m in media if m in fits or m.max_reach_m > reach]


def _media_counts(
    lengths: np.ndarray,
    weights: np.ndarray,
    media: Sequence[Medium],
    ends: tuple[LinkEnd, LinkEnd],
    gbit_per_s: float,
    catalog: Catalog,
    what: str,
) -> list[MediaCount]:
    chosen = pick_media(lengths, media, what=what)
    out = []
    for i, medium in enumerate(media):
        links = int(weights[chosen == i].sum())
        if not links:
            continue
        try:
            parts = medium_parts(catalog, medium, ends, gbit_per_s, links)
            missing = ""
        except CatalogError as exc:  # no part yet (e.g. 800G XDR optics): shown, not hidden
            parts, missing = [], str(exc)
        out.append(
            MediaCount(
                medium=medium.id,
                netbox_type=medium.netbox_type,
                num_links=links,
                num_transceivers=sum(p.quantity for p in parts if p.kind == "transceiver"),
                num_optical_ends=2 * links if medium.pluggable_optics else 0,
                optics_power_w=sum(p.power_w for p in parts),
                cost_usd=sum(p.extended_usd for p in parts),
                parts=parts,
                missing_parts=missing,
            )
        )
    return out


def link_class(
    fabric: str,
    name: str,
    ends: tuple[LinkEnd, LinkEnd],
    speed: float,
    lengths: np.ndarray,
    media: Sequence[Medium],
    catalog: Catalog,
    *,
    weights: np.ndarray | None = None,
) -> LinkClass:
    weights = np.ones(lengths.size) if weights is None else weights
    longest_m = float(lengths.max()) if lengths.size else 0.0
    media = orderable_media(catalog, media, ends, speed, longest_m)
    return LinkClass(
        fabric=fabric,
        name=name,
        endpoint_a=ends[0].name,
        endpoint_b=ends[1].name,
        num_links=int(weights.sum()),
        gbit_per_s=speed,
        length_m_median=float(np.median(lengths)) if lengths.size else 0.0,
        length_m_max=float(lengths.max()) if lengths.size else 0.0,
        media=_media_counts(
            lengths, weights, media, ends, speed, catalog, f"{fabric} {name} {speed:g}G"
        ),
    )
