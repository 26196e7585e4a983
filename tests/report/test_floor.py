"""The floor plan to scale (floor.svg): the hall keeps its proportions, every rack is drawn,
a long hall gets an enlarged detail."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.design.facility.hall import hall_of
from clusterforge.report.floor import floor_picture, floor_svg
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES
from tests.report.pictures import NS, group, ids, png_size, points, svg_root


def _drawn_ratio(root, gid: str) -> float:
    xs, ys = zip(*points(root, gid), strict=True)
    return (max(xs) - min(xs)) / (max(ys) - min(ys))


@pytest.mark.parametrize(
    "example", ["colossus-100k-h100.yaml", "colo-512-h100.yaml", "gb200-nvl72-pod.yaml"]
)
def test_the_hall_is_drawn_with_its_own_aspect_ratio(example):
    """Equal axes: drawn long side over short side is the hall's, 46:1 for 9.6 m x 444 m."""
    design = plan(load_spec(EXAMPLES / example))
    hall = hall_of(design.racks, design.spec.facility)
    root = svg_root(floor_svg(design))
    assert _drawn_ratio(root, "hall") == pytest.approx(hall.aspect_ratio, rel=0.01)
    if example.startswith("colossus"):
        assert hall.aspect_ratio == pytest.approx(444 / 9.6)
        assert ids(root, "detail-hall")  # the strip is too thin to read: a detail follows
        ratio = _drawn_ratio(root, "detail-hall")
        assert ratio > 1  # the detail is still to scale: its window, not the whole hall
    else:
        assert not ids(root, "detail-")


def test_every_rack_is_a_rectangle_and_network_racks_are_marked():
    design = plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    root = svg_root(floor_svg(design))
    assert len(group(root, "floor-racks").findall("svg:path", NS)) == len(design.racks)
    network = sum(1 for r in design.racks if r.role == "network")
    assert len(group(root, "network-racks").findall("svg:path", NS)) == network
    assert len(group(root, "aisles").findall("svg:path", NS)) == 5 + 1  # 5 rows, 6 gaps


def test_floor_png_is_a_picture():
    design = plan(load_spec(EXAMPLES / "lab-8-gpu.yaml"))
    width, height = png_size(floor_picture(design, "png"))
    assert width > 1000 and 200 < height < width
