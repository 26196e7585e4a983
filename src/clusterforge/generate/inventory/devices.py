"""NetBox rows for what holds the cabling: manufacturers, roles, device types, racks, power
feeds and devices, the out-of-band network's bastion included (the columns of NetBox's ``ManufacturerImportForm``, ``DeviceRoleImportForm``,
``DeviceTypeImportForm``, ``RackImportForm``, ``PowerFeedImportForm`` and
``DeviceImportForm``, NetBox 4.6 ``dcim/forms/bulk_import.py``).

Rows are tuples in the order of the matching ``*_FIELDS`` columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from clusterforge.catalog import Catalog
from clusterforge.design import Design
from clusterforge.design.facility.layout import RackDevice
from clusterforge.generate.common import checked_name
from clusterforge.generate.inventory.ports import STATUS, rack_device_names
from clusterforge.generate.inventory.power import feed_name, power_panel

__all__ = [
    "DEVICE_FIELDS",
    "DEVICE_TYPE_FIELDS",
    "FALLBACK_MANUFACTURER",
    "POWER_FEED_FIELDS",
    "RACK_FIELDS",
    "Bastion",
    "bastion",
    "device_rows",
    "device_type_rows",
    "manufacturer_rows",
    "power_feed_rows",
    "rack_rows",
    "role_rows",
    "site_name",
    "slug",
]

FALLBACK_MANUFACTURER = "Generic"  # for rack items the catalog does not list
RACK_WIDTH_IN = 19  # EIA-310 rack; NetBox needs a width when no rack type is given
ROLE_COLORS = {"compute": "76b900", "leaf": "2196f3", "spine": "3f51b5", "core": "673ab7"}
DEFAULT_COLOR = "9e9e9e"
BASTION_MODEL = "bastion-vpn"  # catalog facility item
BASTION_NAME = "bastion-01"
BASTION_ROLE = "bastion"

DEVICE_TYPE_FIELDS = ("manufacturer", "model", "slug", "u_height", "is_full_depth")
RACK_FIELDS = (
    "site", "name", "status", "role", "facility_id", "width", "u_height", "description",
)  # fmt: skip
POWER_FEED_FIELDS = (
    "site", "power_panel", "name", "rack", "status", "type", "supply", "phase", "voltage",
    "amperage", "max_utilization",
)  # fmt: skip
DEVICE_FIELDS = (
    "name", "role", "manufacturer", "device_type", "status", "site", "rack", "position",
    "face", "description",
)  # fmt: skip


class DeviceType(NamedTuple):
    manufacturer: str
    model: str
    slug: str
    u_height: int
    is_full_depth: str


def slug(text: str) -> str:
    """NetBox slug of a name: lower case, ``-`` for spaces and underscores."""
    return checked_name(text.lower().replace(" ", "-").replace("_", "-"), "slug")


def site_name(design: Design) -> str:
    return checked_name(design.spec.name, "site name")


def _catalog_entry(catalog: Catalog, model_id: str) -> tuple[str, str] | None:
    """(name, manufacturer) of a catalog item, None when the catalog does not list it."""
    for table in (catalog.nodes, catalog.switches, catalog.storage, catalog.facility):
        if model_id in table:
            row = table[model_id]
            return str(row.name), str(row.manufacturer)
    return None


def _device_type(catalog: Catalog, d: RackDevice) -> DeviceType:
    """The NetBox device type of a rack device.  The NVLink switch trays of a rack-scale
    system share the node's catalog row but not its height, so they get their own type."""
    entry = _catalog_entry(catalog, d.model)
    name, manufacturer = entry or (d.model, FALLBACK_MANUFACTURER)
    type_slug = d.model
    if d.role == "nvlink":
        name, type_slug = f"NVLink switch tray ({d.model})", f"{d.model}-nvlink-tray"
    full_depth = "true" if d.u_height > 0 else "false"
    return DeviceType(manufacturer, name, slug(type_slug), d.u_height, full_depth)


def _device_types(design: Design) -> dict[tuple[str, bool], DeviceType]:
    """Device type of each (catalog model, is NVLink tray), the first device's height."""
    types: dict[tuple[str, bool], DeviceType] = {}
    for rack in design.racks:
        for d in rack.devices:
            key = (d.model, d.role == "nvlink")
            if key not in types:
                types[key] = _device_type(design.catalog, d)
    return types


class Bastion(NamedTuple):
    """The VPN/SSH bastion in front of the out-of-band network (``management.bmc_access``):
    in the head node's rack, unpositioned (the rack layout reserves no unit for it)."""

    name: str
    rack: str
    device_type: DeviceType
    max_kw: float


def bastion(design: Design) -> Bastion | None:
    """The bastion of a design whose BMC network is reached only through one, else None."""
    if design.spec.management.bmc_access != "bastion":
        return None
    racks = [r.name for r in design.racks for d in r.devices if d.role == "management"]
    row = design.catalog.facility[BASTION_MODEL]
    dtype = DeviceType(row.manufacturer, row.name, slug(row.id), row.u_height, "false")
    rack = racks[0] if racks else design.racks[0].name
    return Bastion(BASTION_NAME, checked_name(rack, "rack name"), dtype, row.power_kw)


def _all_device_types(design: Design) -> list[DeviceType]:
    extra = bastion(design)
    return [*_device_types(design).values(), *([extra.device_type] if extra else [])]


def device_type_rows(design: Design) -> list[DeviceType]:
    """One row per device type, first seen first (columns of :data:`DEVICE_TYPE_FIELDS`)."""
    rows: dict[str, DeviceType] = {}
    for t in _all_device_types(design):
        rows.setdefault(t.slug, t)
    return list(rows.values())


def manufacturer_rows(design: Design) -> list[tuple[str, str]]:
    names = sorted({t.manufacturer for t in _all_device_types(design)})
    return [(n, slug(n)) for n in names]


def role_rows(design: Design) -> list[tuple[str, str, str]]:
    roles = {slug(d.role) for r in design.racks for d in r.devices}
    if bastion(design):
        roles.add(BASTION_ROLE)
    return [(r, r, ROLE_COLORS.get(r, DEFAULT_COLOR)) for r in sorted(roles)]


def rack_rows(design: Design) -> Iterator[tuple[object, ...]]:
    """Columns of :data:`RACK_FIELDS`."""
    site, rack_u = site_name(design), design.spec.facility.rack_u
    for r in design.racks:
        yield (
            site, checked_name(r.name, "rack name"), STATUS, slug(f"{r.role}-rack"),
            f"row{r.row}-pos{r.position}", RACK_WIDTH_IN, rack_u,
            f"{r.cooling.method} cooling, {r.max_kw:.1f} kW max load",
        )  # fmt: skip


def power_feed_rows(design: Design) -> Iterator[tuple[object, ...]]:
    """Every circuit of every rack feed (columns of :data:`POWER_FEED_FIELDS`)."""
    site = site_name(design)
    utilization_pct = round(design.spec.facility.continuous_load_factor * 100)
    for r in design.racks:
        c = r.circuit
        phase = "three-phase" if c.phases == 3 else "single-phase"
        for feed, side in enumerate("ab"[: c.num_feeds]):
            kind = "primary" if feed == 0 else "redundant"
            for circuit in range(c.circuits_per_feed):
                yield (
                    site, power_panel(side), feed_name(r, side, circuit), r.name, STATUS, kind,
                    "ac", phase, f"{c.voltage_v:g}", f"{c.breaker_a:g}", utilization_pct,
                )  # fmt: skip


def device_rows(design: Design) -> Iterator[tuple[object, ...]]:
    """Every rack device (columns of :data:`DEVICE_FIELDS`); zero-U items get no position."""
    names = rack_device_names(design)
    types = _device_types(design)
    site = site_name(design)
    roles: dict[str, str] = {}
    for rack in design.racks:
        for d in rack.devices:
            role = roles.get(d.role) or roles.setdefault(d.role, slug(d.role))
            racked = d.u_height > 0 and d.u_position > 0
            dtype = types[(d.model, d.role == "nvlink")]
            yield (
                names[(rack.name, d.name)], role, dtype.manufacturer, dtype.model,
                STATUS, site, rack.name, d.u_position if racked else "",
                "front" if racked else "", f"{d.kind}, {d.max_kw:g} kW max",
            )  # fmt: skip
    if extra := bastion(design):
        t = extra.device_type
        yield (
            extra.name, BASTION_ROLE, t.manufacturer, t.model, STATUS, site, extra.rack, "", "",
            f"VPN/SSH bastion, the only way into the out-of-band network, {extra.max_kw:g} kW max",
        )  # fmt: skip
