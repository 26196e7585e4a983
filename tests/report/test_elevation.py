"""Rack elevation picture: valid SVG with one rectangle per racked device, at its U."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from clusterforge.design import plan
from clusterforge.report.elevation import U_PX, elevation_svg
from clusterforge.spec import default_spec

NS = {"svg": "http://www.w3.org/2000/svg"}


def test_every_racked_device_is_drawn():
    design = plan(default_spec())
    root = ET.fromstring(elevation_svg(design, max_racks=5))
    rects = root.findall(".//svg:rect[@class='device']", NS)
    expected = [d for r in design.racks[:5] for d in r.devices if d.u_height]
    assert [r.get("data-name") for r in rects] == [d.name for d in expected]
    node = next(r for r in rects if r.get("data-name") == "gpu-0001")
    assert float(node.get("height", 0)) == 8 * U_PX - 1  # an 8U DGX H100


def test_large_designs_are_truncated_with_a_note():
    design = plan(default_spec())
    svg = elevation_svg(design, max_racks=3)
    assert f"3 of {len(design.racks)} racks" in svg
