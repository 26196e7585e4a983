"""NetBox CSVs: documented import fields only, and every reference resolves inside the export
(racks, device types, roles, interfaces), with rack positions that fit and do not overlap."""

from __future__ import annotations

import csv
import io
import math

import pytest

from clusterforge.design import Design
from clusterforge.generate import render

# Importable fields per object (design.md §5.1, netbox/dcim/forms/bulk_import.py).
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
    "11-cables.csv": {
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
    },
}


@pytest.fixture(scope="module")
def tables(lab_design: Design) -> dict[str, list[dict[str, str]]]:
    files = render(lab_design, ["inventory"])
    return {f.path.split("/")[-1]: list(csv.DictReader(io.StringIO(f.content))) for f in files}


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


def test_cables_join_declared_interfaces_once(
    tables: dict[str, list[dict[str, str]]], lab_design: Design
) -> None:
    interfaces = {(i["device"], i["name"]) for i in tables["10-interfaces.csv"]}
    ends = []
    for c in tables["11-cables.csv"]:
        ends += [(c["side_a_device"], c["side_a_name"]), (c["side_b_device"], c["side_b_name"])]
    assert len(ends) == len(set(ends)), "an interface is cabled twice"
    assert set(ends) == interfaces
    fabric = lab_design.fabric
    expected = fabric.num_node_links + fabric.num_leaf_spine_links + fabric.num_spine_core_links
    assert len(tables["11-cables.csv"]) == expected
    devices = {d["name"] for d in tables["09-devices.csv"]}
    assert {device for device, _ in ends} <= devices


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
