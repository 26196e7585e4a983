"""NetBox bulk-import CSVs from the design's racks, fabrics and power.

Field names and import order follow design.md §5.1 (netbox/dcim/forms/bulk_import.py):
manufacturers → device roles → device types → sites → rack roles → power panels → racks →
power feeds → devices → interfaces → power ports → power outlets → cables → feed cables.
The files are numbered in that order; each only names objects of the files before it.
NetBox computes a feed's power as ``voltage × amperage × max_utilization (× √3 for three
phases)``, the same formula the design sizes circuits with.

Manufacturers are the catalog's (``Generic`` only for items the catalog does not list, the
patch panels).  Devices are every rack device of the layout: nodes, compute, storage,
in-band and out-of-band switches, storage blocks, management servers, CDUs, patch panels
and the zero-U PDUs.  Cables: the compute fabric (inventory_ports.py), the support fabrics
(inventory_support.py) and rack power (inventory_power.py).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from clusterforge.catalog import load_catalog
from clusterforge.design import Design
from clusterforge.design.layout import RackDevice
from clusterforge.generate.common import GeneratedFile, checked_name
from clusterforge.generate.inventory_ports import (
    cable_rows,
    compute_links,
    interface_rows,
    rack_device_names,
)
from clusterforge.generate.inventory_power import (
    feed_cable_rows,
    feed_name,
    power_cable_rows,
    power_outlet_rows,
    power_panel,
    power_plan,
    power_port_rows,
)
from clusterforge.generate.inventory_support import support_links

__all__ = ["FALLBACK_MANUFACTURER", "inventory_files"]

FALLBACK_MANUFACTURER = "Generic"  # for rack items the catalog does not list
STATUS = "planned"
RACK_WIDTH_IN = 19
ROLE_COLORS = {"compute": "76b900", "leaf": "2196f3", "spine": "3f51b5", "core": "673ab7"}
DEFAULT_COLOR = "9e9e9e"

CABLE_FIELDS = [
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
    "description",
]


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


def _catalog_row(model_id: str) -> Any | None:
    catalog = load_catalog()
    for table in (catalog.nodes, catalog.switches, catalog.storage, catalog.facility):
        if model_id in table.ids():
            return table[model_id]
    return None


def _device_type(d: RackDevice) -> dict[str, Any]:
    """The NetBox device type of a rack device.  The NVLink switch trays of a rack-scale
    system share the node's catalog row but not its height, so they get their own type."""
    row = _catalog_row(d.model)
    name = str(row.name) if row is not None else d.model
    slug = d.model
    if d.role == "nvlink":
        name, slug = f"{name} NVLink switch trays", f"{d.model}-nvlink-trays"
    return {
        "manufacturer": str(row.manufacturer) if row is not None else FALLBACK_MANUFACTURER,
        "model": name,
        "slug": _slug(slug),
        "u_height": d.u_height,
        "is_full_depth": "true" if d.u_height > 0 else "false",
    }


def _devices(design: Design) -> list[dict[str, Any]]:
    names = rack_device_names(design)
    rows = []
    for rack in design.racks:
        for d in rack.devices:
            racked = d.u_height > 0 and d.u_position > 0
            dtype = _device_type(d)
            rows.append(
                {
                    "name": names[(rack.name, d.name)],
                    "role": _slug(d.role),
                    "manufacturer": dtype["manufacturer"],
                    "device_type": dtype["model"],
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
            dtype = _device_type(d)
            seen.setdefault(dtype["slug"], dtype)
    return list(seen.values())


def _manufacturers(design: Design) -> list[dict[str, Any]]:
    names = sorted({t["manufacturer"] for t in _device_types(design)})
    return [{"name": n, "slug": _slug(n)} for n in names]


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
        for feed, side in enumerate("ab"[: c.num_feeds]):
            for circuit in range(c.circuits_per_feed):
                rows.append(
                    {
                        "site": design.spec.name,
                        "power_panel": power_panel(side),
                        "name": feed_name(r, side, circuit),
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
    links = compute_links(design) + support_links(design)
    power = power_plan(design)
    files = {
        "01-manufacturers.csv": _csv(["name", "slug"], _manufacturers(design)),
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
            ["site", "name"], [{"site": site, "name": power_panel(s)} for s in "ab"]
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
            ["device", "name", "type", "mgmt_only", "description"], interface_rows(links)
        ),
        "11-power-ports.csv": _csv(
            ["device", "name", "type", "maximum_draw", "allocated_draw", "description"],
            power_port_rows(power),
        ),
        "12-power-outlets.csv": _csv(
            ["device", "name", "type", "power_port", "feed_leg", "description"],
            power_outlet_rows(power),
        ),
        "13-cables.csv": _csv(CABLE_FIELDS, cable_rows(links) + power_cable_rows(power)),
        "14-power-feed-cables.csv": _csv(
            [
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
            ],
            feed_cable_rows(power),
        ),
    }
    return [GeneratedFile(f"inventory/{name}", text) for name, text in files.items()]
