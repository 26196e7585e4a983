"""NetBox CSVs: documented import fields only, every reference resolves inside the export
(racks, device types, roles, interfaces, power ports, outlets, feeds), rack positions fit and
do not overlap, and the cable counts and media are the design's link classes."""

from __future__ import annotations

import csv
import io
import math

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.design import Design, plan
from clusterforge.generate import render
from clusterforge.spec import load_spec
from tests.generate.conftest import spec_paths

_CABLE_FIELDS = {
    "side_a_site",
    "side_a_device",
    "side_a_type",
    "side_a_name",
    "side_b_site",
    "side_b_device",
    "side_b_type",
    "side_b_name",
    "type",
    "status",
    "label",
    "length",
    "length_unit",
    "description",
}

# Importable fields per object (NetBox 4.6, dcim/forms/bulk_import.py: the *ImportForm classes).
NETBOX_FIELDS = {
    "01-manufacturers.csv": {"name", "slug", "description"},
    "02-device-roles.csv": {"name", "slug", "color", "description"},
    "03-device-types.csv": {
        "manufacturer",
        "default_platform",
        "model",
        "slug",
        "part_number",
        "u_height",
        "exclude_from_utilization",
        "is_full_depth",
        "subdevice_role",
        "airflow",
        "cooling_method",
        "weight",
        "weight_unit",
        "end_of_life",
    },
    "04-sites.csv": {"name", "slug", "status"},
    "05-rack-roles.csv": {"name", "slug", "color"},
    "06-power-panels.csv": {"site", "location", "name", "description"},
    "07-racks.csv": {
        "site",
        "location",
        "group",
        "name",
        "facility_id",
        "tenant",
        "status",
        "role",
        "rack_type",
        "form_factor",
        "serial",
        "asset_tag",
        "width",
        "u_height",
        "desc_units",
        "mounting_depth",
        "airflow",
        "weight",
        "max_weight",
        "weight_unit",
        "description",
    },
    "08-power-feeds.csv": {
        "site",
        "power_panel",
        "location",
        "rack",
        "name",
        "status",
        "type",
        "mark_connected",
        "supply",
        "phase",
        "voltage",
        "amperage",
        "max_utilization",
        "tenant",
        "description",
    },
    "09-devices.csv": {
        "name",
        "role",
        "tenant",
        "manufacturer",
        "device_type",
        "platform",
        "serial",
        "asset_tag",
        "status",
        "site",
        "location",
        "rack",
        "position",
        "face",
        "airflow",
        "description",
    },
    "10-interfaces.csv": {"device", "name", "type", "description", "mgmt_only"},
    "11-power-ports.csv": {
        "device",
        "name",
        "label",
        "type",
        "mark_connected",
        "maximum_draw",
        "allocated_draw",
        "description",
    },
    "12-power-outlets.csv": {
        "device",
        "name",
        "label",
        "type",
        "color",
        "mark_connected",
        "power_port",
        "feed_leg",
        "description",
    },
    "13-cables.csv": _CABLE_FIELDS,
    # side_X_power_panel: cables to dcim.powerfeed (NetBox 4.6 CableImportForm).
    "14-power-feed-cables.csv": _CABLE_FIELDS | {"side_a_power_panel", "side_b_power_panel"},
}
# NetBox choices (dcim/choices.py) for the values we write.
POWER_PORT_TYPES = {"iec-60320-c14", "iec-60320-c20", "iec-60309-p-n-e-6h", "iec-60309-3p-n-e-6h"}
POWER_OUTLET_TYPES = {"iec-60320-c13", "iec-60320-c19"}
FEED_LEGS = {"", "A", "B", "C"}


def _tables(design: Design) -> dict[str, list[dict[str, str]]]:
    files = render(design, ["inventory"])
    return {f.path.split("/")[-1]: list(csv.DictReader(io.StringIO(f.content))) for f in files}


@pytest.fixture(scope="module")
def tables(lab_design: Design) -> dict[str, list[dict[str, str]]]:
    return _tables(lab_design)


def test_only_documented_netbox_fields(lab_design: Design) -> None:
    for f in render(lab_design, ["inventory"]):
        name = f.path.split("/")[-1]
        header = next(csv.reader(io.StringIO(f.content)))
        assert set(header) <= NETBOX_FIELDS[name], name


def test_references_resolve(tables: dict[str, list[dict[str, str]]]) -> None:
    racks = {r["name"] for r in tables["07-racks.csv"]}
    types = {t["model"] for t in tables["03-device-types.csv"]}
    roles = {r["slug"] for r in tables["02-device-roles.csv"]}
    rack_roles = {r["slug"] for r in tables["05-rack-roles.csv"]}
    panels = {p["name"] for p in tables["06-power-panels.csv"]}
    assert {r["role"] for r in tables["07-racks.csv"]} <= rack_roles
    for d in tables["09-devices.csv"]:
        assert d["rack"] in racks and d["device_type"] in types and d["role"] in roles, d
    for feed in tables["08-power-feeds.csv"]:
        assert feed["rack"] in racks and feed["power_panel"] in panels
    names = [d["name"] for d in tables["09-devices.csv"]]
    assert len(names) == len(set(names)), "device names must be unique per site"


def test_rack_positions_fit_and_do_not_overlap(tables: dict[str, list[dict[str, str]]]) -> None:
    heights = {t["model"]: int(t["u_height"]) for t in tables["03-device-types.csv"]}
    rack_u = {r["name"]: int(r["u_height"]) for r in tables["07-racks.csv"]}
    used: dict[str, set[int]] = {}
    for d in tables["09-devices.csv"]:
        if not d["position"]:
            continue
        first, height = int(d["position"]), heights[d["device_type"]]
        units = set(range(first, first + height))
        assert first >= 1 and first + height - 1 <= rack_u[d["rack"]], d
        assert not units & used.setdefault(d["rack"], set()), d
        used[d["rack"]] |= units


def test_files_are_in_dependency_order(lab_design: Design) -> None:
    """Each file only names objects of the files before it (NetBox's import order)."""
    names = [f.path.split("/")[-1] for f in render(lab_design, ["inventory"])]
    assert names == sorted(names) == list(NETBOX_FIELDS)


def _data_cables(tables: dict[str, list[dict[str, str]]]) -> list[dict[str, str]]:
    return [c for c in tables["13-cables.csv"] if c["side_a_type"] == "dcim.interface"]


def test_cables_join_declared_interfaces_once(
    tables: dict[str, list[dict[str, str]]], lab_design: Design
) -> None:
    interfaces = {(i["device"], i["name"]) for i in tables["10-interfaces.csv"]}
    ends = []
    for c in _data_cables(tables):
        assert c["side_b_type"] == "dcim.interface"
        ends += [(c["side_a_device"], c["side_a_name"]), (c["side_b_device"], c["side_b_name"])]
    assert len(ends) == len(set(ends)), "an interface is cabled twice"
    assert set(ends) == interfaces
    fabric = lab_design.fabric
    expected = fabric.num_node_links + fabric.num_leaf_spine_links + fabric.num_spine_core_links
    compute = [c for c in _data_cables(tables) if c["description"].startswith("compute ")]
    assert len(compute) == expected
    devices = {d["name"] for d in tables["09-devices.csv"]}
    assert {device for device, _ in ends} <= devices


def _oob_devices(design: Design) -> int:
    pdus = sum(1 for r in design.racks for d in r.devices if d.kind in ("pdu", "power-shelf"))
    return (
        design.compute.num_nodes
        + design.fabric.num_switches
        + sum(f.num_switches for f in design.support_fabrics)
        + design.storage.num_blocks
        + design.num_mgmt_servers
        + pdus
    )


@pytest.mark.parametrize("spec", spec_paths(), ids=lambda p: p.stem)
def test_cable_counts_and_media_are_the_design_link_classes(spec: object) -> None:
    """Per fabric and link class, the exported cables are the design's: same count and the
    same NetBox cable type per medium.  Out-of-band cables every real device up to the OOB
    leaves' ports (the design counts PDUs from a rack estimate)."""
    design = plan(load_spec(spec))  # type: ignore[arg-type]
    tables = _tables(design)
    exported: dict[tuple[str, str], dict[str, int]] = {}
    for c in _data_cables(tables):
        fabric, link_class = c["description"].split(" ", 1)
        media = exported.setdefault((fabric, link_class), {})
        media[c["type"]] = media.get(c["type"], 0) + 1
    for lc in design.cabling:
        if lc.name == "ufm-leaf":
            continue  # UFM appliances are not racked devices of the layout
        if lc.fabric == "out-of-band":
            oob = next(f for f in design.support_fabrics if f.name == "out-of-band")
            radix = oob.switch.radix_at(1) or 48
            got = sum(exported[(lc.fabric, lc.name)].values())
            assert got == min(_oob_devices(design), oob.num_leaves * radix)
            continue
        want: dict[str, int] = {}
        for m in lc.media:
            want[m.netbox_type] = want.get(m.netbox_type, 0) + m.num_links
        assert exported[(lc.fabric, lc.name)] == want, (lc.fabric, lc.name)
    storage = [lc for lc in design.cabling if lc.fabric == "storage"]
    assert sum(lc.num_links for lc in storage) == sum(
        n for (fabric, _), m in exported.items() if fabric == "storage" for n in m.values()
    )


@pytest.mark.parametrize("spec", spec_paths(), ids=lambda p: p.stem)
def test_every_reference_resolves(spec: object) -> None:
    """Every device, port, outlet and feed a row names exists in an earlier file."""
    tables = _tables(plan(load_spec(spec)))  # type: ignore[arg-type]
    manufacturers = {m["name"] for m in tables["01-manufacturers.csv"]}
    types = {(t["manufacturer"], t["model"]) for t in tables["03-device-types.csv"]}
    assert {m for m, _ in types} <= manufacturers
    devices = {d["name"]: d for d in tables["09-devices.csv"]}
    assert len(devices) == len(tables["09-devices.csv"])
    for d in devices.values():
        assert (d["manufacturer"], d["device_type"]) in types, d
    files = {
        "dcim.interface": "10-interfaces.csv",
        "dcim.powerport": "11-power-ports.csv",
        "dcim.poweroutlet": "12-power-outlets.csv",
    }
    kinds = {kind: {(r["device"], r["name"]) for r in tables[f]} for kind, f in files.items()}
    for kind, ports in kinds.items():
        assert len(ports) == len(tables[files[kind]]), f"{kind} declared twice"
        assert {device for device, _ in ports} <= set(devices), kind
    for p in tables["11-power-ports.csv"]:
        assert p["type"] in POWER_PORT_TYPES
        if p["allocated_draw"]:
            assert 0 < int(p["allocated_draw"]) <= int(p["maximum_draw"]), p
    for o in tables["12-power-outlets.csv"]:
        assert o["type"] in POWER_OUTLET_TYPES and o["feed_leg"] in FEED_LEGS
        assert (o["device"], o["power_port"]) in kinds["dcim.powerport"]
    ends = []
    for c in tables["13-cables.csv"]:
        for side in "ab":
            end = (c[f"side_{side}_device"], c[f"side_{side}_name"])
            assert end in kinds[c[f"side_{side}_type"]], c
            ends.append(end)
    feeds = {(f["power_panel"], f["name"]) for f in tables["08-power-feeds.csv"]}
    for c in tables["14-power-feed-cables.csv"]:
        assert c["side_a_type"] == "dcim.powerfeed"
        assert (c["side_a_power_panel"], c["side_a_name"]) in feeds
        assert (c["side_b_device"], c["side_b_name"]) in kinds["dcim.powerport"]
        ends.append((c["side_b_device"], c["side_b_name"]))
    assert len(ends) == len(set(ends)), "a port is cabled twice"
    assert len(tables["14-power-feed-cables.csv"]) == len(feeds), "every feed reaches a PDU"


def test_manufacturers_come_from_the_catalog(tables: dict[str, list[dict[str, str]]]) -> None:
    catalog = load_catalog()
    by_name = {
        row.name: row.manufacturer
        for table in (catalog.nodes, catalog.switches, catalog.storage, catalog.facility)
        for row in table
    }
    for t in tables["03-device-types.csv"]:
        if t["model"] in by_name:
            assert t["manufacturer"] == by_name[t["model"]], t
    assert "NVIDIA" in {m["name"] for m in tables["01-manufacturers.csv"]}


def test_psus_split_across_both_feeds(
    tables: dict[str, list[dict[str, str]]], lab_design: Design
) -> None:
    """Every PSU is corded to an outlet of its own rack; a device with several PSUs draws
    from both the A and the B PDUs, so either feed alone keeps it up."""
    rack_of = {d["name"]: d["rack"] for d in tables["09-devices.csv"]}
    sides: dict[str, set[str]] = {}
    for c in tables["13-cables.csv"]:
        if c["side_a_type"] != "dcim.powerport":
            continue
        assert c["side_b_type"] == "dcim.poweroutlet"
        assert rack_of[c["side_a_device"]] == rack_of[c["side_b_device"]], c
        sides.setdefault(c["side_a_device"], set()).add(c["side_b_device"].split("-pdu-")[1][0])
    psus = load_catalog().nodes[lab_design.compute.node.id].num_psus
    cords = [c for c in tables["13-cables.csv"] if c["side_a_type"] == "dcim.powerport"]
    nodes = set(lab_design.compute.node_names)
    assert sum(c["side_a_device"] in nodes for c in cords) == psus * len(nodes)
    assert all(s == {"a", "b"} for s in sides.values()), sides


def test_feeds_carry_the_rack_load(
    tables: dict[str, list[dict[str, str]]], lab_design: Design
) -> None:
    """NetBox's available power (V x A x utilisation x sqrt(3)) of each feed covers the rack."""
    by_rack: dict[str, float] = {}
    for f in tables["08-power-feeds.csv"]:
        if f["type"] != "primary":
            continue
        root = math.sqrt(3) if f["phase"] == "three-phase" else 1.0
        watts = (
            float(f["voltage"]) * float(f["amperage"]) * float(f["max_utilization"]) / 100 * root
        )
        by_rack[f["rack"]] = by_rack.get(f["rack"], 0.0) + watts
    pf = lab_design.spec.facility.power_factor
    for rack in lab_design.racks:
        assert by_rack[rack.name] * pf / 1000 >= rack.circuit.load_kw - 1e-6, rack.name


def test_netbox_stands_an_nvl72_rack_as_the_vendor_builds_it():
    """09-devices.csv positions, bottom up: power shelves, 8 compute trays, 9 one-U NVLink
    switch trays, 10 compute trays, power shelves (NVIDIA DGX GB200 User Guide, "Hardware")."""
    import itertools

    from clusterforge.generate.inventory.files import inventory_files
    from tests.conftest import EXAMPLES

    design = plan(load_spec(EXAMPLES / "gb200-nvl72-pod.yaml"))
    text = next(f for f in inventory_files(design) if f.path.endswith("09-devices.csv")).content
    rack = next(r.name for r in design.racks if r.role == "gpu")
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["rack"] == rack and r["position"]]
    kinds = [r["role"] for r in sorted(rows, key=lambda r: int(r["position"]))
             if r["role"] in ("power", "compute", "nvlink")]  # fmt: skip
    runs = [(k, len(list(g))) for k, g in itertools.groupby(kinds)]
    assert runs == [("power", 4), ("compute", 8), ("nvlink", 9), ("compute", 10), ("power", 4)]
