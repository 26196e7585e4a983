"""The optics and cabling lines of the bill of materials can be ordered as printed: one line per
ordering part number at that part's own catalog price, and counts that match the link ends."""

from __future__ import annotations

from functools import cache

import pytest

from clusterforge.design import plan
from clusterforge.design.result import Design
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES, make_spec

EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))


@cache
def _design(name: str) -> Design:
    return plan(load_spec(EXAMPLES / name))


def _media_lines(design: Design) -> list:
    return [line for line in design.bom if line.category in ("optics", "cabling")]


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_every_optics_and_cable_line_is_one_part_at_its_own_price(name: str) -> None:
    design = _design(name)
    lines = _media_lines(design)
    assert lines
    items = [line.item for line in lines]
    assert len(items) == len(set(items))  # a part number appears once
    for line in lines:
        part = design.catalog.parts[line.item]  # the item is an ordering part number
        assert "class" not in line.description.lower()
        assert line.unit_usd == part.price_usd  # never an average over parts
        assert part.price_date in line.source and part.price_source in line.source
        expect = "optics" if part.kind == "transceiver" else "cabling"
        assert line.category == expect


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_bom_counts_are_the_link_classes_parts(name: str) -> None:
    design = _design(name)
    want: dict[str, int] = {}
    for c in design.cabling:
        for m in c.media:
            for p in m.parts:
                want[p.part] = want.get(p.part, 0) + p.quantity
    assert {line.item: line.quantity for line in _media_lines(design)} == want


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_modules_times_links_per_module_cover_every_link_end(name: str) -> None:
    """Per link class and medium: modules x links each serves = 2 x links, up to one
    part-filled module per end (a leaf's last twin-port cage may carry one link)."""
    design = _design(name)
    for c in design.cabling:
        for m in c.media:
            served = 0
            slack = 0
            for p in m.parts:
                if p.kind != "transceiver":
                    continue
                per_module = design.catalog.parts[p.part].links_at(c.gbit_per_s)
                assert per_module is not None
                served += p.quantity * per_module
                slack = max(slack, 2 * (per_module - 1))  # one per end
            assert m.num_optical_ends <= served <= m.num_optical_ends + slack, (c.name, m)
            assert m.num_transceivers == sum(p.quantity for p in m.parts if p.kind == "transceiver")


@pytest.mark.parametrize("name", ["colo-512-h100.yaml", "gb200-nvl72-pod.yaml"])
def test_module_ports_add_up_exactly_to_the_optical_link_ends(name: str) -> None:
    design = _design(name)
    ends = sum(m.num_optical_ends for c in design.cabling for m in c.media)
    served = sum(
        p.quantity * design.catalog.parts[p.part].links_at(c.gbit_per_s)
        for c in design.cabling
        for m in c.media
        for p in m.parts
        if p.kind == "transceiver"
    )
    assert served == ends


def _parts_of(design: Design, fabric: str, name: str) -> dict[str, int]:
    c = next(c for c in design.cabling if c.fabric == fabric and c.name == name)
    return {p.part: p.quantity for m in c.media for p in m.parts}


def test_dgx_h100_twin_cages_take_flat_twin_modules_and_the_switch_finned_ones() -> None:
    d = _design("colo-512-h100.yaml")
    parts = _parts_of(d, "compute", "node-leaf")
    # 512 links: 8 NIC ports per node on 4 flat-top twin-port cages, 2 links per QM9700 cage
    assert parts == {"MMA4Z00-NS-FLT": 256, "MMA4Z00-NS": 256, "MFP7E10-N0xx": 512}
    spine = _parts_of(d, "compute", "leaf-spine")
    assert spine == {"MMA4Z00-NS": 512, "MFP7E10-N0xx": 512}  # 2 ends x 512 links / 2
    storage = _parts_of(d, "storage", "endpoint-leaf")
    assert storage["MMA1Z00-NS400"] == 144 and storage["MMA4Z00-NS"] == 72


def test_connectx7_osfp_ports_take_single_port_flat_top_modules() -> None:
    parts = _parts_of(_design("gb200-nvl72-pod.yaml"), "compute", "node-leaf")
    assert parts == {"MMA4Z00-NS400": 576, "MMA4Z00-NS": 288, "MFP7E10-N0xx": 576}


def test_100g_in_band_runs_name_100g_parts() -> None:
    d = _design("colo-512-h100.yaml")
    parts = _parts_of(d, "in-band", "endpoint-leaf")
    assert set(parts) == {"MCP1600-C0xx", "MFA1A00-Cxxx", "MMA1B00-C100D", "OM4-MPO12-UPC"}
    for part_id in parts:
        assert d.catalog.parts[part_id].links_at(100) == 1


def test_200g_breakout_counts_four_links_per_switch_module() -> None:
    parts = _parts_of(_design("seed-design-a.yaml"), "storage", "endpoint-leaf")
    # 60 multimode links: one QSFP112 module per host, a twin-port module per 4 on the switch,
    # a 1:2 splitter fibre per 2 links
    assert parts["MMA1Z00-NS400"] == 60 and parts["MMA4Z00-NS"] == 15
    assert parts["MFP7E20-N0xx"] == 30


def test_links_no_catalog_part_fits_show_as_an_unpriced_line() -> None:
    """800G XDR optics have no [[part]] row yet: the BOM says so instead of pricing nothing."""
    d = plan(make_spec(node="dgx-b300", num_gpus=64))
    unpriced = [line for line in d.bom if line.item.startswith("unpriced-")]
    assert unpriced and all(line.unit_usd == 0 for line in unpriced)
    assert all("[[part]]" in line.source for line in unpriced)
