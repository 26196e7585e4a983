"""Parts behind a link class: the transceiver for each end's cage, the cable, and the errors
that name the catalog row to add."""

from __future__ import annotations

import dataclasses

import pytest

from clusterforge.catalog import Catalog, Part, Table, load_catalog
from clusterforge.design.cabling.media import LinkEnd, medium_parts, orderable_media
from clusterforge.errors import CatalogError


def _without(catalog: Catalog, part_id: str) -> Catalog:
    rows = {k: v for k, v in catalog.parts.rows.items() if k != part_id}
    return dataclasses.replace(catalog, parts=Table(kind="part", rows=rows))


def test_a_missing_transceiver_names_the_row_to_add() -> None:
    catalog = _without(load_catalog(), "MMA4Z00-NS-FLT")
    twin = LinkEnd("node NIC", "osfp-flat", 2)
    leaf = LinkEnd("leaf", "osfp-finned", 2)
    with pytest.raises(CatalogError, match=r"osfp-flat cage at 400 Gb/s with 2 link.*\[\[part\]\]"):
        medium_parts(catalog, catalog.media["mmf-sr4"], (twin, leaf), 400, 8)


def test_an_end_without_a_cage_says_which_row_to_fix(catalog: Catalog) -> None:
    with pytest.raises(CatalogError, match="set `cage`"):
        medium_parts(
            catalog, catalog.media["mmf-sr4"], (LinkEnd("leaf", None), LinkEnd("x", "qsfp")), 400, 1
        )


def test_twin_port_ends_need_half_as_many_modules(catalog: Catalog) -> None:
    nic = LinkEnd("node NIC", "osfp-flat", 1)
    leaf = LinkEnd("leaf", "osfp-finned", 2)
    parts = medium_parts(catalog, catalog.media["smf-dr4"], (nic, leaf), 400, 7)
    assert {p.part: p.quantity for p in parts} == {
        "MMS4X00-NS400": 7,
        "MMS4X00-NS": 4,  # 7 links on twin-port cages: the last cage carries one
        "MFP7E30-N0xx": 7,
    }


def test_a_medium_without_parts_for_the_cages_is_skipped(catalog: Catalog) -> None:
    leaf = LinkEnd("leaf", "osfp-finned", 4)
    spine = LinkEnd("spine", "osfp-finned", 4)
    media = [catalog.media[m] for m in ("dac", "aoc", "mmf-sr4")]
    # no NVIDIA AOC joins two twin-port cages split to 200G: the 10 m runs go to SR4
    assert [m.id for m in orderable_media(catalog, media, (leaf, spine), 200)] == ["mmf-sr4"]


def test_a_transceiver_row_with_two_cages_is_refused() -> None:
    row = load_catalog().parts["MMA4Z00-NS"].model_dump()
    row["cages"] = ["osfp-finned", "qsfp"]
    with pytest.raises(ValueError, match="exactly one cage"):
        Part.model_validate(row)


def test_runs_beyond_every_orderable_medium_are_unpriced_not_refused():
    """200G NICs in DGX H100 flat-top cages: the catalog's only part at that speed for those
    cages is a DAC of 3 m; the longer runs are cabled with the media that reach them and show
    as unpriced lines naming the part to add (the design used to be refused)."""
    from tests.netsim.designs import make_design

    d = make_design(network={"nic_gbit_per_s": 200})
    node_leaf = next(c for c in d.cabling if c.fabric == "compute" and c.name == "node-leaf")
    assert sum(m.num_links for m in node_leaf.media) == node_leaf.num_links
    assert all("add a [[part]] row" in m.missing_parts or "add " in m.missing_parts
               for m in node_leaf.media if m.medium != "dac")  # fmt: skip
    assert any(line.item.startswith("unpriced-") for line in d.bom)
