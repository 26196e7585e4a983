"""Rack power in NetBox: PDU inlets and outlets, device PSUs, and the cables between them.

Each rack's PDUs (``pdu-a1``, ``pdu-b1``, ...: one per circuit of each feed, as the layout
places them) take their feed on an IEC 60309 inlet, three-phase or single-phase as the
facility's circuits.  Every device PSU gets its own outlet: PSU ``i`` of a device goes to
feed side A when ``i`` is even and B when odd (an N+N split across the two feeds, so either
feed alone keeps the device up: the dual power paths of Uptime Institute Tier III and IV),
and the PDUs of one side share the PSUs round-robin.  Outlets of a three-phase PDU rotate
over legs A, B, C to balance the phases.

Draw per PSU (NetBox ``allocated_draw``, W) is the device's maximum over its PSUs, since
redundant supplies share the load; ``maximum_draw`` is the PSU rating.  Switches, storage
and servers have two PSUs (the catalog records no PSU count for them); GB200 trays
(``num_psus = 0``) draw from the rack's busbar power shelves and get no PSU here.

Feed-to-PDU cables terminate on ``dcim.powerfeed``, which NetBox's cable import resolves by
``side_a_power_panel`` (NetBox 4.6, ``CableImportForm``); they sit in their own file so an
older NetBox can skip it and connect the feeds in the UI.

Rows are yielded rack by rack: nothing here holds the whole plan in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from clusterforge.design import Design
from clusterforge.design.cabling.links import IN_RACK_M
from clusterforge.design.facility.layout import Rack, RackDevice
from clusterforge.generate.inventory.ports import STATUS, rack_device_names

__all__ = [
    "FEED_CABLE_FIELDS",
    "POWER_OUTLET_FIELDS",
    "POWER_PORT_FIELDS",
    "Pdu",
    "Psu",
    "feed_cable_rows",
    "feed_name",
    "pdus",
    "power_cable_rows",
    "power_outlet_rows",
    "power_panel",
    "power_port_rows",
    "psus",
]

DEFAULT_PSUS = 2  # redundant pair for switches, storage and servers
LARGE_PSU_W = 2000  # at or above this a PSU takes a C19/C20 cord, below a C13/C14
PDU_INLET = "inlet"
# Column order (NetBox PowerPortImportForm, PowerOutletImportForm, CableImportForm).
POWER_PORT_FIELDS = ("device", "name", "type", "maximum_draw", "allocated_draw", "description")
POWER_OUTLET_FIELDS = ("device", "name", "type", "power_port", "feed_leg", "description")
FEED_CABLE_FIELDS = (
    "side_a_power_panel",
    "side_a_type",
    "side_a_name",
    "side_b_device",
    "side_b_type",
    "side_b_name",
    "type",
    "status",
    "label",
    "description",
)


class Psu(NamedTuple):
    """A device power supply and the PDU outlet it is corded to."""

    device: str
    name: str
    maximum_draw_w: int
    allocated_draw_w: int
    pdu: str
    outlet: str
    feed_leg: str  # "" for single-phase

    @property
    def large(self) -> bool:
        return self.maximum_draw_w >= LARGE_PSU_W


class Pdu(NamedTuple):
    """A rack PDU and the power feed on its inlet."""

    name: str
    feed: str
    power_panel: str
    phases: int


def feed_name(rack: Rack, side: str, circuit: int) -> str:
    """The power feed of ``rack`` on feed ``side`` ("a" or "b"), circuit ``circuit`` (0-based)."""
    return f"{rack.name}-{side.upper()}{circuit + 1}"


def power_panel(side: str) -> str:
    """Feed side A comes from panel ``pp-a``, side B from ``pp-b``."""
    return f"pp-{side}"


def _psu_ratings_w(design: Design, d: RackDevice) -> tuple[int, int]:
    """(number of PSUs, rating of each in W) of a rack device; (0, 0) when it has none."""
    catalog = design.catalog
    if d.kind == "node" and d.model in catalog.nodes:
        node = catalog.nodes[d.model]
        return node.num_psus, round(node.psu_kw * 1000)
    if d.kind == "switch" and d.model in catalog.switches:
        return DEFAULT_PSUS, round(d.max_kw * 1000)
    if d.kind in ("storage", "server") and d.max_kw > 0:
        return DEFAULT_PSUS, round(d.max_kw * 1000)
    return 0, 0


def _rack_psus(
    design: Design,
    rack: Rack,
    names: dict[tuple[str, str], str],
    ratings: dict[tuple[str, str, float], tuple[int, int]],
) -> Iterator[Psu]:
    c = rack.circuit
    sides = "ab"[: c.num_feeds]
    next_circuit = dict.fromkeys(sides, 0)
    outlets: dict[str, int] = {}
    for d in rack.devices:
        key = (d.kind, d.model, d.max_kw)
        if key not in ratings:
            ratings[key] = _psu_ratings_w(design, d)
        count, rating_w = ratings[key]
        for i in range(count):
            side = sides[i % len(sides)]
            pdu = names[(rack.name, f"pdu-{side}{next_circuit[side] % c.circuits_per_feed + 1}")]
            next_circuit[side] += 1
            n = outlets[pdu] = outlets.get(pdu, 0) + 1
            yield Psu(
                device=names[(rack.name, d.name)],
                name=f"psu{i + 1}",
                maximum_draw_w=rating_w,
                allocated_draw_w=min(rating_w, round(d.max_kw * 1000 / count)),
                pdu=pdu,
                outlet=f"outlet{n}",
                feed_leg="ABC"[(n - 1) % 3] if c.phases == 3 else "",
            )


def pdus(design: Design) -> Iterator[Pdu]:
    """Every rack PDU (or power shelf, the rack end of a busway circuit) with the feed on its
    inlet, rack by rack."""
    names = rack_device_names(design)
    for rack in design.racks:
        c = rack.circuit
        ends = {d.name for d in rack.devices if d.kind in ("pdu", "power-shelf")}
        for side in "ab"[: c.num_feeds]:
            for circuit in range(c.circuits_per_feed):
                pdu = f"pdu-{side}{circuit + 1}"
                yield Pdu(
                    names[(rack.name, pdu if pdu in ends else f"shelf-{side}{circuit + 1}")],
                    feed_name(rack, side, circuit),
                    power_panel(side),
                    c.phases,
                )


def psus(design: Design) -> Iterator[Psu]:
    """Every device PSU with the outlet it plugs into, rack by rack."""
    names = rack_device_names(design)
    ratings: dict[tuple[str, str, float], tuple[int, int]] = {}
    for rack in design.racks:
        yield from _rack_psus(design, rack, names, ratings)


def power_port_rows(design: Design) -> Iterator[tuple[object, ...]]:
    """PDU inlets, then device PSUs (columns of :data:`POWER_PORT_FIELDS`)."""
    for pdu in pdus(design):
        inlet = "iec-60309-3p-n-e-6h" if pdu.phases == 3 else "iec-60309-p-n-e-6h"
        yield (pdu.name, PDU_INLET, inlet, "", "", f"from feed {pdu.feed}")
    for p in psus(design):
        yield (
            p.device, p.name, "iec-60320-c20" if p.large else "iec-60320-c14",
            p.maximum_draw_w, p.allocated_draw_w, f"to {p.pdu}:{p.outlet}",
        )  # fmt: skip


def power_outlet_rows(design: Design) -> Iterator[tuple[str, ...]]:
    """One outlet per PSU (columns of :data:`POWER_OUTLET_FIELDS`)."""
    for p in psus(design):
        kind = "iec-60320-c19" if p.large else "iec-60320-c13"
        yield (p.pdu, p.outlet, kind, PDU_INLET, p.feed_leg, f"to {p.device}:{p.name}")


def power_cable_rows(design: Design) -> Iterator[tuple[str, ...]]:
    """PSU -> PDU outlet cords (both ends on devices: every NetBox version imports them),
    columns of ``CABLE_FIELDS``."""
    length = f"{IN_RACK_M:g}"
    for p in psus(design):
        yield (
            p.device, "dcim.powerport", p.name, p.pdu, "dcim.poweroutlet", p.outlet,
            "power", STATUS, length, "m", f"{p.device}:{p.name}", "power cord",
        )  # fmt: skip


def feed_cable_rows(design: Design) -> Iterator[tuple[str, ...]]:
    """Power feed -> PDU inlet (columns of :data:`FEED_CABLE_FIELDS`)."""
    for pdu in pdus(design):
        yield (
            pdu.power_panel, "dcim.powerfeed", pdu.feed, pdu.name, "dcim.powerport", PDU_INLET,
            "power", STATUS, pdu.feed, "rack power feed",
        )  # fmt: skip
