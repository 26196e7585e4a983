"""NetBox bulk-import CSVs from the design's racks, fabrics and power.

One file per NetBox object type, numbered in the order NetBox needs them, each naming only
objects of the files before it: manufacturers → device roles → device types → sites → rack
roles → power panels → racks → power feeds → devices → interfaces → power ports → power
outlets → cables → feed cables.  Columns are the fields of NetBox's CSV bulk import forms
(NetBox 4.6 ``dcim/forms/bulk_import.py``; see the "Bulk import" page of NetBox's
documentation); every file imports through ``/<app>/<model>/import/`` as it is.  NetBox
computes a feed's power as ``voltage × amperage × max_utilization (× √3 for three phases)``,
the same formula the design sizes circuits with.

Manufacturers are the catalog's (``Generic`` only for items the catalog does not list, the
patch panels).  Devices are every rack device of the layout: nodes, compute, storage,
in-band and out-of-band switches, storage blocks, management servers, CDUs, patch panels
and the zero-U PDUs.  Cables: the compute fabric (inventory_ports.py), the support fabrics
(inventory_support.py) and rack power (inventory_power.py).

Files are :class:`~clusterforge.generate.streamed.StreamedFile`: their rows are produced
while they are written, so a 100,000-GPU design never holds its cable list in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain

from clusterforge.design import Design
from clusterforge.generate.common import checked_name
from clusterforge.generate.inventory.devices import (
    DEVICE_FIELDS,
    DEVICE_TYPE_FIELDS,
    POWER_FEED_FIELDS,
    RACK_FIELDS,
    device_rows,
    device_type_rows,
    manufacturer_rows,
    power_feed_rows,
    rack_rows,
    role_rows,
    site_name,
    slug,
)
from clusterforge.generate.inventory.ports import (
    CABLE_FIELDS,
    INTERFACE_FIELDS,
    STATUS,
    Link,
    cable_rows,
    compute_links,
    interface_rows,
)
from clusterforge.generate.inventory.power import (
    FEED_CABLE_FIELDS,
    POWER_OUTLET_FIELDS,
    POWER_PORT_FIELDS,
    feed_cable_rows,
    power_cable_rows,
    power_outlet_rows,
    power_panel,
    power_port_rows,
)
from clusterforge.generate.inventory.support import support_links
from clusterforge.generate.streamed import StreamedFile, csv_file

__all__ = ["INVENTORY_FILES", "NETBOX_MODELS", "inventory_files"]

DEFAULT_COLOR = "9e9e9e"

Rows = Iterable[Sequence[object]]


def _links(design: Design) -> Iterator[Link]:
    return chain(compute_links(design), support_links(design))


def _sites(design: Design) -> Rows:
    site = site_name(design)
    return [(site, site, STATUS)]


def _rack_roles(design: Design) -> Rows:
    roles = sorted({slug(f"{r.role}-rack") for r in design.racks})
    return [(r, r, DEFAULT_COLOR) for r in roles]


def _power_panels(design: Design) -> Rows:
    site = site_name(design)
    return [(site, power_panel(side)) for side in "ab"]


def _interfaces(design: Design) -> Rows:
    return interface_rows(_links(design))


def _cables(design: Design) -> Rows:
    return chain(cable_rows(_links(design)), power_cable_rows(design))


# (file name, NetBox model, columns, rows) in import order.  The model is the path of its
# import form (``/dcim/cables/import/``) and of its REST endpoint (``/api/dcim/cables/``).
INVENTORY_FILES: tuple[tuple[str, str, Sequence[str], Callable[[Design], Rows]], ...] = (
    ("01-manufacturers.csv", "dcim/manufacturers", ("name", "slug"), manufacturer_rows),
    ("02-device-roles.csv", "dcim/device-roles", ("name", "slug", "color"), role_rows),
    ("03-device-types.csv", "dcim/device-types", DEVICE_TYPE_FIELDS, device_type_rows),
    ("04-sites.csv", "dcim/sites", ("name", "slug", "status"), _sites),
    ("05-rack-roles.csv", "dcim/rack-roles", ("name", "slug", "color"), _rack_roles),
    ("06-power-panels.csv", "dcim/power-panels", ("site", "name"), _power_panels),
    ("07-racks.csv", "dcim/racks", RACK_FIELDS, rack_rows),
    ("08-power-feeds.csv", "dcim/power-feeds", POWER_FEED_FIELDS, power_feed_rows),
    ("09-devices.csv", "dcim/devices", DEVICE_FIELDS, device_rows),
    ("10-interfaces.csv", "dcim/interfaces", INTERFACE_FIELDS, _interfaces),
    ("11-power-ports.csv", "dcim/power-ports", POWER_PORT_FIELDS, power_port_rows),
    ("12-power-outlets.csv", "dcim/power-outlets", POWER_OUTLET_FIELDS, power_outlet_rows),
    ("13-cables.csv", "dcim/cables", CABLE_FIELDS, _cables),
    ("14-power-feed-cables.csv", "dcim/cables", FEED_CABLE_FIELDS, feed_cable_rows),
)
NETBOX_MODELS = {name: model for name, model, _, _ in INVENTORY_FILES}


def _bind(rows: Callable[[Design], Rows], design: Design) -> Callable[[], Rows]:
    return lambda: rows(design)


def inventory_files(design: Design) -> list[StreamedFile]:
    """Every NetBox CSV for ``design``, paths under ``inventory/``, rendered when written."""
    # Names are checked here, before anything is written: the rows are only rendered later,
    # while their file streams out.
    site_name(design)
    for rack in design.racks:
        checked_name(rack.name, "rack name")
        for device in rack.devices:
            checked_name(device.name, "device name")
    return [
        csv_file(f"inventory/{name}", header, _bind(rows, design))
        for name, _, header, rows in INVENTORY_FILES
    ]
