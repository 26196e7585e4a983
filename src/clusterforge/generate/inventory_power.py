"""Rack power in NetBox: PDU inlets and outlets, device PSUs, and the cables between them.

Each rack's PDUs (``pdu-a1``, ``pdu-b1``, ...: one per circuit of each feed, as the layout
places them) take their feed on an IEC 60309 inlet, three-phase or single-phase as the
facility's circuits.  Every device PSU gets its own outlet: PSU ``i`` of a device goes to
feed side A when ``i`` is even and B when odd (an N+N split across the two feeds, so either
feed alone keeps the device up, design.md §4.3), and the PDUs of one side share the PSUs
round-robin.  Outlets of a three-phase PDU rotate over legs A, B, C to balance the phases.

Draw per PSU (NetBox ``allocated_draw``, W) is the device's maximum over its PSUs, since
redundant supplies share the load; ``maximum_draw`` is the PSU rating.  Switches, storage
and servers have two PSUs (the catalog records no PSU count for them); GB200 trays
(``num_psus = 0``) draw from the rack's busbar power shelves and get no PSU here.

Feed-to-PDU cables terminate on ``dcim.powerfeed``, which NetBox's cable import resolves by
``side_a_power_panel`` only since PR #21873 (issue #21783); they sit in their own file so an
older NetBox can skip it and connect the feeds in the UI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterforge.catalog import load_catalog
from clusterforge.design import Design
from clusterforge.design.cabling import IN_RACK_M
from clusterforge.design.layout import Rack, RackDevice
from clusterforge.generate.inventory_ports import rack_device_names

__all__ = [
    "Pdu",
    "PowerPlan",
    "feed_cable_rows",
    "feed_name",
    "power_cable_rows",
    "power_outlet_rows",
    "power_panel",
    "power_plan",
    "power_port_rows",
]

DEFAULT_PSUS = 2  # redundant pair for switches, storage and servers
LARGE_PSU_W = 2000  # at or above this a PSU takes a C19/C20 cord, below a C13/C14
PDU_INLET = "inlet"
STATUS = "planned"


@dataclass(frozen=True)
class Psu:
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


@dataclass(frozen=True)
class Pdu:
    name: str
    feed: str
    power_panel: str
    phases: int


@dataclass(frozen=True)
class PowerPlan:
    pdus: list[Pdu]
    psus: list[Psu]


def feed_name(rack: Rack, side: str, circuit: int) -> str:
    """The power feed of ``rack`` on feed ``side`` ("a" or "b"), circuit ``circuit`` (0-based)."""
    return f"{rack.name}-{side.upper()}{circuit + 1}"


def power_panel(side: str) -> str:
    """Feed side A comes from panel ``pp-a``, side B from ``pp-b``."""
    return f"pp-{side}"


def _psu_ratings_w(d: RackDevice) -> tuple[int, int]:
    """(number of PSUs, rating of each in W) of a rack device; (0, 0) when it has none."""
    catalog = load_catalog()
    if d.kind == "node" and d.model in catalog.nodes.ids():
        node = catalog.nodes[d.model]
        return node.num_psus, round(node.psu_kw * 1000)
    if d.kind == "switch" and d.model in catalog.switches.ids():
        return DEFAULT_PSUS, round(d.max_kw * 1000)
    if d.kind in ("storage", "server") and d.max_kw > 0:
        return DEFAULT_PSUS, round(d.max_kw * 1000)
    return 0, 0


def _rack_psus(rack: Rack, names: dict[tuple[str, str], str]) -> list[Psu]:
    c = rack.circuit
    sides = "ab"[: c.num_feeds]
    next_circuit = dict.fromkeys(sides, 0)
    outlets: dict[str, int] = {}
    psus = []
    for d in rack.devices:
        count, rating_w = _psu_ratings_w(d)
        for i in range(count):
            side = sides[i % len(sides)]
            pdu = names[(rack.name, f"pdu-{side}{next_circuit[side] % c.circuits_per_feed + 1}")]
            next_circuit[side] += 1
            outlets[pdu] = outlets.get(pdu, 0) + 1
            n = outlets[pdu]
            allocated = min(rating_w, round(d.max_kw * 1000 / count))
            psus.append(
                Psu(
                    device=names[(rack.name, d.name)],
                    name=f"psu{i + 1}",
                    maximum_draw_w=rating_w,
                    allocated_draw_w=allocated,
                    pdu=pdu,
                    outlet=f"outlet{n}",
                    feed_leg="ABC"[(n - 1) % 3] if c.phases == 3 else "",
                )
            )
    return psus


def power_plan(design: Design) -> PowerPlan:
    """Every PDU with its feed, and every PSU with the outlet it plugs into."""
    names = rack_device_names(design)
    pdus: list[Pdu] = []
    psus: list[Psu] = []
    for rack in design.racks:
        c = rack.circuit
        pdus += [
            Pdu(
                names[(rack.name, f"pdu-{side}{circuit + 1}")],
                feed_name(rack, side, circuit),
                power_panel(side),
                c.phases,
            )
            for side in "ab"[: c.num_feeds]
            for circuit in range(c.circuits_per_feed)
        ]
        psus += _rack_psus(rack, names)
    return PowerPlan(pdus=pdus, psus=psus)


def power_port_rows(plan: PowerPlan) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        {
            "device": pdu.name,
            "name": PDU_INLET,
            "type": "iec-60309-3p-n-e-6h" if pdu.phases == 3 else "iec-60309-p-n-e-6h",
            "maximum_draw": "",
            "allocated_draw": "",
            "description": f"from feed {pdu.feed}",
        }
        for pdu in plan.pdus
    ]
    rows += [
        {
            "device": p.device,
            "name": p.name,
            "type": "iec-60320-c20" if p.large else "iec-60320-c14",
            "maximum_draw": p.maximum_draw_w,
            "allocated_draw": p.allocated_draw_w,
            "description": f"to {p.pdu}:{p.outlet}",
        }
        for p in plan.psus
    ]
    return rows


def power_outlet_rows(plan: PowerPlan) -> list[dict[str, Any]]:
    return [
        {
            "device": p.pdu,
            "name": p.outlet,
            "type": "iec-60320-c19" if p.large else "iec-60320-c13",
            "power_port": PDU_INLET,
            "feed_leg": p.feed_leg,
            "description": f"to {p.device}:{p.name}",
        }
        for p in plan.psus
    ]


def power_cable_rows(plan: PowerPlan) -> list[dict[str, Any]]:
    """PSU -> PDU outlet cords (both ends on devices: every NetBox version imports them)."""
    return [
        {
            "side_a_device": p.device,
            "side_a_type": "dcim.powerport",
            "side_a_name": p.name,
            "side_b_device": p.pdu,
            "side_b_type": "dcim.poweroutlet",
            "side_b_name": p.outlet,
            "type": "power",
            "status": STATUS,
            "length": f"{IN_RACK_M:g}",
            "length_unit": "m",
            "label": f"{p.device}:{p.name}",
            "description": "power cord",
        }
        for p in plan.psus
    ]


def feed_cable_rows(plan: PowerPlan) -> list[dict[str, Any]]:
    """Power feed -> PDU inlet (NetBox with PR #21873: ``side_a_power_panel``)."""
    return [
        {
            "side_a_power_panel": pdu.power_panel,
            "side_a_type": "dcim.powerfeed",
            "side_a_name": pdu.feed,
            "side_b_device": pdu.name,
            "side_b_type": "dcim.powerport",
            "side_b_name": PDU_INLET,
            "type": "power",
            "status": STATUS,
            "label": pdu.feed,
            "description": "rack power feed",
        }
        for pdu in plan.pdus
    ]
