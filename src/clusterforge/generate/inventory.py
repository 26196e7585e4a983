"""NetBox bulk-import CSVs from the design's racks and compute-fabric cabling.

Field names and import order follow design.md §5.1 (netbox/dcim/forms/bulk_import.py):
manufacturers → device roles → device types → sites → rack roles → power panels → racks →
power feeds → devices → interfaces → cables.  The files are numbered in that order.
NetBox computes a feed's power as ``voltage × amperage × max_utilization (× √3 for three
phases)``, the same formula the design sizes circuits with.

Cables: every compute-fabric link (node HCA → leaf port, leaf → spine, spine → core, dragonfly
links) with its length and medium chosen as the design's cabling stage chose them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from clusterforge.catalog import load_catalog
from clusterforge.design import Design
from clusterforge.generate.common import GeneratedFile, checked_name
from clusterforge.generate.inventory_ports import cable_rows, interface_rows

__all__ = ["MANUFACTURER", "inventory_files"]

MANUFACTURER = "Generic"  # the catalog records no manufacturer per model yet
STATUS = "planned"
RACK_WIDTH_IN = 19
ROLE_COLORS = {"compute": "76b900", "leaf": "2196f3", "spine": "3f51b5", "core": "673ab7"}
DEFAULT_COLOR = "9e9e9e"


def _csv(header: Sequence[str], rows: Iterable[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=list(header), lineterminator="\n", extrasaction="raise"
    )
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return buffer.getvalue()


def _slug(text: str) -> str:
    return checked_name(text.lower().replace(" ", "-").replace("_", "-"), "slug")


def _model_name(model_id: str) -> str:
    catalog = load_catalog()
    for table in (catalog.nodes, catalog.switches, catalog.storage, catalog.facility):
        if model_id in table.ids():
            return str(table[model_id].name)
    return model_id


def _device_name(rack: str, name: str, duplicated: set[str]) -> str:
    """Per-rack items (PDUs, patch panels, CDUs) repeat their name in every rack."""
    return checked_name(f"{rack}-{name}" if name in duplicated else name, "device name")


def _devices(design: Design) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for rack in design.racks:
        for d in rack.devices:
            counts[d.name] = counts.get(d.name, 0) + 1
    duplicated = {n for n, c in counts.items() if c > 1}
    rows = []
    for rack in design.racks:
        for d in rack.devices:
            racked = d.u_height > 0 and d.u_position > 0
            rows.append(
                {
                    "name": _device_name(rack.name, d.name, duplicated),
                    "role": _slug(d.role),
                    "manufacturer": MANUFACTURER,
                    "device_type": _model_name(d.model),
                    "status": STATUS,
                    "site": design.spec.name,
                    "rack": rack.name,
                    "position": d.u_position if racked else "",
                    "face": "front" if racked else "",
                    "description": f"{d.kind}, {d.max_kw:g} kW max",
                }
            )
    return rows


def _device_types(design: Design) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for rack in design.racks:
        for d in rack.devices:
            seen.setdefault(
                d.model,
                {
                    "manufacturer": MANUFACTURER,
                    "model": _model_name(d.model),
                    "slug": _slug(d.model),
                    "u_height": d.u_height,
                    "is_full_depth": "true" if d.u_height > 0 else "false",
                },
            )
    return list(seen.values())


def _roles(design: Design) -> list[dict[str, Any]]:
    roles = sorted({_slug(d.role) for r in design.racks for d in r.devices})
    return [{"name": r, "slug": r, "color": ROLE_COLORS.get(r, DEFAULT_COLOR)} for r in roles]


def _racks(design: Design) -> list[dict[str, Any]]:
    f = design.spec.facility
    return [
        {
            "site": design.spec.name,
            "name": checked_name(r.name, "rack name"),
            "status": STATUS,
            "role": _slug(f"{r.role}-rack"),
            "facility_id": f"row{r.row}-pos{r.position}",
            "width": RACK_WIDTH_IN,
            "u_height": f.rack_u,
            "description": f"{r.cooling.method} cooling, {r.max_kw:.1f} kW max load",
        }
        for r in design.racks
    ]


def _power_feeds(design: Design) -> list[dict[str, Any]]:
    f = design.spec.facility
    rows = []
    for r in design.racks:
        c = r.circuit
        for feed in range(c.num_feeds):
            side = "AB"[feed]
            for circuit in range(c.circuits_per_feed):
                rows.append(
                    {
                        "site": design.spec.name,
                        "power_panel": f"pp-{side.lower()}",
                        "name": f"{r.name}-{side}{circuit + 1}",
                        "rack": r.name,
                        "status": STATUS,
                        "type": "primary" if feed == 0 else "redundant",
                        "supply": "ac",
                        "phase": "three-phase" if c.phases == 3 else "single-phase",
                        "voltage": f"{c.voltage_v:g}",
                        "amperage": f"{c.breaker_a:g}",
                        "max_utilization": round(f.continuous_load_factor * 100),
                    }
                )
    return rows


def inventory_files(design: Design) -> list[GeneratedFile]:
    """Every NetBox CSV for ``design``, paths under ``inventory/``."""
    site = checked_name(design.spec.name, "site name")
    rack_roles = sorted({_slug(f"{r.role}-rack") for r in design.racks})
    files = {
        "01-manufacturers.csv": _csv(
            ["name", "slug"], [{"name": MANUFACTURER, "slug": _slug(MANUFACTURER)}]
        ),
        "02-device-roles.csv": _csv(["name", "slug", "color"], _roles(design)),
        "03-device-types.csv": _csv(
            ["manufacturer", "model", "slug", "u_height", "is_full_depth"], _device_types(design)
        ),
        "04-sites.csv": _csv(
            ["name", "slug", "status"], [{"name": site, "slug": site, "status": STATUS}]
        ),
        "05-rack-roles.csv": _csv(
            ["name", "slug", "color"],
            [{"name": r, "slug": r, "color": DEFAULT_COLOR} for r in rack_roles],
        ),
        "06-power-panels.csv": _csv(
            ["site", "name"], [{"site": site, "name": f"pp-{s}"} for s in "ab"]
        ),
        "07-racks.csv": _csv(
            ["site", "name", "status", "role", "facility_id", "width", "u_height", "description"],
            _racks(design),
        ),
        "08-power-feeds.csv": _csv(
            [
                "site",
                "power_panel",
                "name",
                "rack",
                "status",
                "type",
                "supply",
                "phase",
                "voltage",
                "amperage",
                "max_utilization",
            ],
            _power_feeds(design),
        ),
        "09-devices.csv": _csv(
            [
                "name",
                "role",
                "manufacturer",
                "device_type",
                "status",
                "site",
                "rack",
                "position",
                "face",
                "description",
            ],
            _devices(design),
        ),
        "10-interfaces.csv": _csv(
            ["device", "name", "type", "description"], interface_rows(design)
        ),
        "11-cables.csv": _csv(
            [
                "side_a_device",
                "side_a_type",
                "side_a_name",
                "side_b_device",
                "side_b_type",
                "side_b_name",
                "type",
                "status",
                "length",
                "length_unit",
                "label",
            ],
            cable_rows(design),
        ),
    }
    return [GeneratedFile(f"inventory/{name}", text) for name, text in files.items()]
